"""analysis.nsys_csv readers and analysis.derive figures, on the real H200 fixtures
(tests/fixtures/nsys: `nsys stats --format csv` of nsys 2025.3.1, one profiled epoch of the fused
and unfused paths) and on variants derived from them in the other shapes nsys output takes (older
column names, other time units, captured stdout with progress lines, quotes inside quoted names,
other NVTX domain prefixes, versioned API names, a Row# column and thousands separators, an empty
file). The numbers quoted below are those of the fixture files."""
from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path

import pytest

from analysis import derive
from analysis.labels import kernel_base_name, kernel_labels
from analysis.nsys_csv import (API_COLUMNS, KERN_COLUMNS, NVTX_COLUMNS, NsysCsvError,
                               read_api_sum, read_kern_sum, read_nvtx_sum)

NSYS = Path(__file__).resolve().parent / "fixtures" / "nsys"
STEPS = 47


def fixture(path: str, report: str) -> Path:
    return NSYS / f"{path}_{report}.csv"


def rows_of(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="") as fh:
        table = list(csv.reader(fh))
    return table[0], table[1:]


def write_csv(header, rows) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header] + rows)
    return buf.getvalue()


def derive_variant(base: Path, columns: dict[str, str], scale: dict[str, float] | None = None,
                   rename_values=None) -> str:
    """A CSV text made from a base fixture: keep the columns named in `columns` (old name ->
    new header, in that order), divide the cells of the columns in `scale` by the factor, and
    map names through `rename_values` (a function) for the last column."""
    header, rows = rows_of(base)
    scale = scale or {}
    idx = [header.index(c) for c in columns]
    out_rows = []
    for row in rows:
        new = []
        for c, i in zip(columns, idx):
            cell = row[i]
            if c in scale:
                cell = repr(float(cell) / scale[c])
            if rename_values is not None and i == len(header) - 1:
                cell = rename_values(cell)
            new.append(cell)
        out_rows.append(new)
    return write_csv(list(columns.values()), out_rows)


# ----------------------------------------------------------------------------- base fixtures

WIDEST_FUSED = ("mlp::k_fwd_hidden_bias_relu(int, int, int, const float *, const float *, "
                "const float *, float *)")


def test_base_kernel_fixture_reads_with_normalised_columns():
    kern = read_kern_sum(fixture("fused", "cuda_gpu_kern_sum"))
    assert list(kern.columns) == KERN_COLUMNS
    assert len(kern) == 10
    assert kern["instances"].sum() == 470
    assert kern.loc[0, "name"] == WIDEST_FUSED  # quoted in the file: it holds commas
    assert kern.loc[0, "total_ns"] == 2424038
    assert kern.loc[0, "time_pct"] == pytest.approx(48.9)
    assert kern.loc[0, "avg_ns"] == pytest.approx(51575.3)
    assert kern.loc[0, "med_ns"] == 51584 and kern.loc[0, "stddev_ns"] == pytest.approx(65.6)
    # Namespaced template instances: two rows of one template, told apart by the argument.
    assert kern.loc[5, "name"] == "void mlp::k_colsum<(mlp::Col)0>(int, int, const float *, float *)"
    assert kern.loc[6, "name"] == "void mlp::k_colsum<(mlp::Col)1>(int, int, const float *, float *)"
    assert kern["name"].is_unique
    unfused = read_kern_sum(fixture("unfused", "cuda_gpu_kern_sum"))
    assert len(unfused) == 17 and unfused["name"].is_unique
    assert unfused["instances"].sum() == 799
    assert (unfused["instances"] == STEPS).all()
    assert unfused.loc[0, "name"] == \
        "mlp::k_fwd_hidden_gemm(int, int, int, const float *, const float *, float *)"
    assert unfused["total_ns"].sum() == 5289505


def test_base_api_and_nvtx_fixtures():
    api = read_api_sum(fixture("fused", "cuda_api_sum"))
    assert list(api.columns) == API_COLUMNS
    assert api["name"].tolist() == ["cudaLaunchKernel", "cudaStreamSynchronize", "cuKernelGetName"]
    assert api["num_calls"].tolist() == [470, 1, 470]
    assert api["total_ns"].tolist() == [2907885, 2089279, 80195]
    assert api.loc[0, "avg_ns"] == pytest.approx(6187.0) and api.loc[0, "max_ns"] == 65875
    unfused = read_api_sum(fixture("unfused", "cuda_api_sum"))
    assert unfused["num_calls"].tolist() == [799, 1, 799]
    assert unfused.loc[0, "total_ns"] == 3683986
    nvtx = read_nvtx_sum(fixture("fused", "nvtx_sum"))
    assert list(nvtx.columns) == NVTX_COLUMNS
    assert nvtx.loc[0, "name"] == "profile-epoch" and nvtx.loc[0, "style"] == "PushPop"
    assert nvtx.loc[0, "raw_name"] == ":profile-epoch"  # the default domain's empty prefix
    assert nvtx.loc[0, "total_ns"] == 5529058 and nvtx.loc[0, "instances"] == 1
    assert read_nvtx_sum(fixture("unfused", "nvtx_sum")).loc[0, "total_ns"] == 6277366


# ----------------------------------------------------------------------------- derived formats

OLD_KERN = {"Time (%)": "Time(%)", "Total Time (ns)": "Total Time", "Instances": "Instances",
            "Avg (ns)": "Average", "Min (ns)": "Minimum", "Max (ns)": "Maximum",
            "StdDev (ns)": "StdDev", "Name": "Name"}


def test_old_column_names_without_units_or_median():
    text = derive_variant(fixture("fused", "cuda_gpu_kern_sum"), OLD_KERN)
    kern = read_kern_sum(text)
    base = read_kern_sum(fixture("fused", "cuda_gpu_kern_sum"))
    assert list(kern.columns) == KERN_COLUMNS
    assert kern["total_ns"].tolist() == base["total_ns"].tolist()
    assert kern["avg_ns"].tolist() == base["avg_ns"].tolist()
    assert kern["med_ns"].isna().all()
    assert kern["name"].tolist() == base["name"].tolist()


def test_old_api_names_calls_column():
    cols = {"Time (%)": "Time(%)", "Total Time (ns)": "Total Time (ns)", "Num Calls": "Calls",
            "Avg (ns)": "Average", "Min (ns)": "Minimum", "Max (ns)": "Maximum",
            "StdDev (ns)": "StdDev", "Name": "Name"}
    api = read_api_sum(derive_variant(fixture("fused", "cuda_api_sum"), cols))
    assert api.loc[0, "num_calls"] == 470 and api.loc[0, "total_ns"] == 2907885
    assert api.loc[2, "name"] == "cuKernelGetName" and api.loc[2, "num_calls"] == 470


def test_old_nvtx_names():
    cols = {"Time (%)": "Time(%)", "Total Time (ns)": "Total Time (ns)", "Instances": "Instances",
            "Avg (ns)": "Average", "Min (ns)": "Minimum", "Max (ns)": "Maximum",
            "StdDev (ns)": "StdDev", "Range": "Range"}
    nvtx = read_nvtx_sum(derive_variant(fixture("fused", "nvtx_sum"), cols))
    assert nvtx.loc[0, "name"] == "profile-epoch" and nvtx.loc[0, "total_ns"] == 5529058
    assert nvtx.loc[0, "raw_name"] == ":profile-epoch"
    assert nvtx.loc[0, "style"] == ""


@pytest.mark.parametrize("unit,factor", [("us", 1e3), ("ms", 1e6), ("s", 1e9)])
def test_time_units_convert_to_ns(unit, factor):
    header, _ = rows_of(fixture("fused", "cuda_gpu_kern_sum"))
    timed = [h for h in header if h.endswith("(ns)")]
    cols = {h: (h.replace("(ns)", f"({unit})") if h in timed else h) for h in header}
    text = derive_variant(fixture("fused", "cuda_gpu_kern_sum"), cols,
                          scale={h: factor for h in timed})
    assert f"Total Time ({unit})" in text
    kern = read_kern_sum(text)
    base = read_kern_sum(fixture("fused", "cuda_gpu_kern_sum"))
    for col in ("total_ns", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns"):
        assert kern[col].tolist() == pytest.approx(base[col].tolist(), rel=1e-12)
    assert kern["instances"].tolist() == base["instances"].tolist()


def progress(report: str, stem: str = "/tmp/nsys/fused") -> str:
    return (f"Processing [{stem}.sqlite] with [/opt/nvidia/nsight-systems/2025.3.1/host-linux-x64/"
            f"reports/{report}.py]... \n")


def test_stdout_with_progress_lines_and_blank_lines():
    text = ("\nGenerating SQLite file /tmp/nsys/fused.sqlite from /tmp/nsys/fused.nsys-rep\n"
            "Exporting 1234 events: [=================================================100%]\n\n"
            + progress("cuda_gpu_kern_sum") + "\n"
            + fixture("fused", "cuda_gpu_kern_sum").read_text() + "\n\n")
    kern = read_kern_sum(text)
    assert len(kern) == 10 and kern["instances"].sum() == 470


def test_stdout_bundle_of_three_reports_picks_each_table():
    text = "Generating SQLite file /tmp/nsys/fused.sqlite from /tmp/nsys/fused.nsys-rep\n"
    for report in ("nvtx_sum", "cuda_api_sum", "cuda_gpu_kern_sum"):
        text += progress(report) + fixture("fused", report).read_text()  # no blank line between
    assert read_kern_sum(text)["instances"].sum() == 470
    assert read_api_sum(text).loc[0, "num_calls"] == 470
    assert read_nvtx_sum(text).loc[0, "name"] == "profile-epoch"


def test_stdout_bundle_with_old_report_names():
    text = ""
    for report, old in (("cuda_api_sum", "cudaapisum"), ("cuda_gpu_kern_sum", "gpukernsum"),
                        ("nvtx_sum", "nvtxsum")):
        text += progress(old) + fixture("fused", report).read_text() + "\n"
    assert read_kern_sum(text)["instances"].sum() == 470
    assert read_api_sum(text)["num_calls"].sum() == 470 + 1 + 470


def test_stdout_as_nsys_2025_3_printed_it_for_a_capture_without_kernels():
    """The lines nsys 2025.3.1 printed on the H200 for the failed graph capture (its kernel
    report PROCESSED (EMPTY RESULTS), then SKIPPED), around the fixture's other two tables."""
    stem, reports = "/tmp/o/graph", "/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/reports"
    text = (f"Generating SQLite file {stem}.sqlite from {stem}.nsys-rep\n"
            f"Processing [{stem}.sqlite] with [{reports}/cuda_gpu_kern_sum.py] to "
            f"[{stem}_cuda_gpu_kern_sum.csv]... PROCESSED (EMPTY RESULTS)\n\n"
            f"SKIPPED: {stem}.sqlite does not contain CUDA kernel data.\n\n")
    for report in ("nvtx_sum", "cuda_api_sum"):
        text += (f"Processing [{stem}.sqlite] with [{reports}/{report}.py] to "
                 f"[{stem}_{report}.csv]... PROCESSED\n\n" + fixture("fused", report).read_text()
                 + "\n")
    assert read_nvtx_sum(text).loc[0, "total_ns"] == 5529058
    assert read_api_sum(text)["num_calls"].tolist() == [470, 1, 470]
    with pytest.raises(ValueError, match="^<text>: .*cuda_gpu_kern_sum"):
        read_kern_sum(text)  # neither the API nor the NVTX table passes for a kernel table


def test_quotes_inside_quoted_names():
    header, rows = rows_of(fixture("fused", "cuda_gpu_kern_sum"))
    rows[0][-1] = 'void mlp::gemm<(Op)0, "x">(int, int, const float *)'
    text = write_csv(header, rows)
    assert '"void mlp::gemm<(Op)0, ""x"">(int, int, const float *)"' in text
    kern = read_kern_sum(text)
    assert kern.loc[0, "name"] == 'void mlp::gemm<(Op)0, "x">(int, int, const float *)'
    assert kern.loc[0, "total_ns"] == 2424038
    assert kern.loc[1:, "name"].tolist() == read_kern_sum(fixture("fused", "cuda_gpu_kern_sum")) \
        .loc[1:, "name"].tolist()


@pytest.mark.parametrize("raw", ["profile-epoch", ":profile-epoch", "mlp:profile-epoch",
                                 "[mlp]:profile-epoch", ":mlp:profile-epoch"])
def test_nvtx_domain_prefix_is_dropped_and_kept_raw(raw):
    header, rows = rows_of(fixture("fused", "nvtx_sum"))
    rows[0][-1] = raw
    nvtx = read_nvtx_sum(write_csv(header, rows))
    assert nvtx.loc[0, "name"] == "profile-epoch"
    assert nvtx.loc[0, "raw_name"] == raw
    assert derive.epoch_range_ns(nvtx) == 5529058


def test_row_number_column_trailing_commas_and_thousands_separators():
    header, rows = rows_of(fixture("fused", "nvtx_sum"))
    text = ("Row#," + ",".join(header) + ",\n"
            + "".join(f"{i + 1}," + ",".join(f'"{int(float(c)):,}"' if c.replace(".", "").isdigit()
                                            and float(c) >= 1000 else c for c in r) + ",\n"
                      for i, r in enumerate(rows)))
    nvtx = read_nvtx_sum(text)
    assert '"5,529,058"' in text
    assert nvtx.loc[0, "total_ns"] == 5529058 and nvtx.loc[0, "name"] == "profile-epoch"


def test_header_only_is_an_error_naming_the_line():
    header, _ = rows_of(fixture("fused", "cuda_gpu_kern_sum"))
    with pytest.raises(NsysCsvError, match=r"^<text>: line 1: a header without data rows$"):
        read_kern_sum(write_csv(header, []))


def test_no_header_raises_value_error_naming_the_file(tmp_path):
    bad = tmp_path / "fused_cuda_gpu_kern_sum.csv"
    bad.write_text("SKIPPED: /tmp/fused.sqlite does not contain CUDA kernel data.\n")
    with pytest.raises(ValueError) as info:
        read_kern_sum(bad)
    msg = str(info.value)
    assert str(bad) in msg and "\n" not in msg
    # An API table is not a kernel table, and the other way round.
    with pytest.raises(ValueError):
        read_kern_sum(fixture("fused", "cuda_api_sum"))
    with pytest.raises(ValueError):
        read_api_sum(fixture("fused", "cuda_gpu_kern_sum"))
    with pytest.raises(ValueError, match="<text>"):
        read_nvtx_sum("a,b\n1,2\n")


@pytest.mark.parametrize("content", [b"", b"\n", b"\n\n"])
def test_empty_kern_sum_file_raises_one_line_value_error_naming_it(tmp_path, content):
    # What nsys 2025.3.1 left on the H200 when the graph capture held no kernels: a 0-byte
    # graph_cuda_gpu_kern_sum.csv (its stdout said "PROCESSED (EMPTY RESULTS)" and "SKIPPED").
    empty = tmp_path / "graph_cuda_gpu_kern_sum.csv"
    empty.write_bytes(content)
    for arg in (empty, str(empty)):
        with pytest.raises(ValueError) as info:
            read_kern_sum(arg)
        msg = str(info.value)
        assert msg.startswith(f"{empty}: ") and "\n" not in msg, msg
        assert "cuda_gpu_kern_sum" in msg and "header" in msg, msg
    with pytest.raises(ValueError, match=re.escape(str(empty))):
        read_api_sum(empty)
    with pytest.raises(ValueError, match=re.escape(str(empty))):
        read_nvtx_sum(empty)


def test_non_numeric_cell_raises_value_error(tmp_path):
    header, rows = rows_of(fixture("fused", "cuda_gpu_kern_sum"))
    rows[2][1] = "lots"
    bad = tmp_path / "k.csv"
    bad.write_text(write_csv(header, rows))
    with pytest.raises(ValueError, match=re.escape(str(bad))):
        read_kern_sum(bad)


def test_kernel_base_name():
    assert kernel_base_name("k_dW1(const float *, int)") == "k_dW1"
    assert kernel_base_name("k_plain") == "k_plain"
    # Template arguments are kept (namespace qualifiers dropped inside them), so two instances
    # of one template get distinct labels.
    assert kernel_base_name("void k_fwd_hidden_bias_relu<(int)16>(const float *, int)") == \
        "k_fwd_hidden_bias_relu<(int)16>"
    assert kernel_base_name("void ns::gemm<(Op)0, float>(int, int, const float *)") == \
        "gemm<(Op)0, float>"
    # The fixtures' shapes: namespaced, and namespaced templates on scoped-enum values.
    assert kernel_base_name("mlp::k_dW1(int, int, int, const float *, const float *, float *)") \
        == "k_dW1"
    assert kernel_base_name(WIDEST_FUSED) == "k_fwd_hidden_bias_relu"
    assert kernel_base_name("void mlp::k_colsum<(mlp::Col)0>(int, int, const float *, float *)") \
        == "k_colsum<(Col)0>"
    assert kernel_base_name("void mlp::k_colsum<(mlp::Col)1>(int, int, const float *, float *)") \
        == "k_colsum<(Col)1>"
    assert kernel_base_name("void mlp::k_momentum_tensor<(mlp::Tensor)3>(unsigned long, float, "
                            "float, float *, float *, const float *)") == "k_momentum_tensor<(Tensor)3>"
    # Nested template arguments; long ones are cut.
    assert kernel_base_name("void a::k<a::b::V<int>, 2>(int)") == "k<V<int>, 2>"
    long_name = ("void cub::DeviceReduceKernel<cub::DeviceReducePolicy<float, float, int>"
                 "::Policy600, float *, float *, int>(float *, int)")
    label = kernel_base_name(long_name)
    assert label.startswith("DeviceReduceKernel<DeviceReducePolicy<") and label.endswith("...>")
    assert len(label) <= len("DeviceReduceKernel<>") + 40


def test_kernel_labels_are_unique_in_every_fixture():
    for path in ("fused", "unfused"):
        names = read_kern_sum(fixture(path, "cuda_gpu_kern_sum"))["name"].tolist()
        labels = kernel_labels(names)
        assert len(set(labels)) == len(names), labels
    unfused = kernel_labels(read_kern_sum(fixture("unfused", "cuda_gpu_kern_sum"))["name"])
    assert sorted(x for x in unfused if x.startswith("k_momentum_tensor")) == \
        [f"k_momentum_tensor<(Tensor){i}>" for i in range(4)]
    assert sorted(x for x in unfused if x.startswith("k_add_bias")) == \
        ["k_add_bias<(Layer)0>", "k_add_bias<(Layer)1>"]
    # Overloads that share a label are numbered in table order.
    assert kernel_labels(["mlp::k(int)", "mlp::k(float)", "mlp::j(int)"]) == ["k #1", "k #2", "j"]


# ----------------------------------------------------------------------------- derive

def frames(path: str):
    return (read_kern_sum(fixture(path, "cuda_gpu_kern_sum")),
            read_api_sum(fixture(path, "cuda_api_sum")),
            read_nvtx_sum(fixture(path, "nvtx_sum")))


def test_derived_figures_of_the_fused_fixture():
    kern, api, nvtx = frames("fused")
    assert derive.epoch_range_ns(nvtx) == 5529058
    assert derive.epoch_range(nvtx)["raw_name"] == ":profile-epoch"
    assert derive.summed_kernel_ns(kern) == 4952652
    wk = derive.widest_kernel(kern)
    assert wk["name"] == WIDEST_FUSED
    assert wk["base"] == "k_fwd_hidden_bias_relu" and wk["total_ns"] == 2424038
    assert wk["share"] == pytest.approx(2424038 / 4952652)
    assert wk["avg_ns"] == pytest.approx(51575.3) and wk["instances"] == 47
    la = derive.largest_api(api)
    assert la["name"] == "cudaLaunchKernel" and la["num_calls"] == 470
    assert la["share"] == pytest.approx(2907885 / (2907885 + 2089279 + 80195))
    launch = derive.launch_calls(api)
    assert launch["calls"] == 470 and launch["total_ns"] == 2907885
    assert list(launch["by_api"]) == ["cudaLaunchKernel"]  # not cuKernelGetName
    assert derive.find_kernel_row(kern, "dW1")["total_ns"] == 602177
    lps = derive.launches_per_step(kern, STEPS, 10)
    assert lps == {"launches_per_step_measured": 10.0, "declared": 10, "matches": True,
                   "kernel_instances": 470, "steps_per_epoch": STEPS}
    assert derive.launches_per_step(kern, STEPS, 17)["matches"] is False
    assert derive.launches_per_step(kern, STEPS, None)["matches"] is None
    assert derive.launches_per_step(kern, STEPS, 10.0)["matches"] is True
    # A fractional declaration: the persistent path's one launch an epoch, 1/47 per step.
    one = kern.iloc[:1].assign(instances=1.0)
    assert derive.launches_per_step(one, STEPS, 1 / STEPS)["matches"] is True
    assert derive.launches_per_step(one, STEPS, 2 / STEPS)["matches"] is False
    assert derive.widest_kernel(kern)["base"] == "k_fwd_hidden_bias_relu"
    assert derive.find_kernel_row(kern, "k_colsum")["base"] == "k_colsum<(Col)0>"
    assert derive.epoch_filler(kern, api) == {"filler": "kernel", "kernel_ns": 4952652,
                                              "launch_ns": 2907885, "launch_calls": 470}
    prof = derive.path_profile(kern, api, nvtx, STEPS, 10)
    assert prof["kernel_share_of_range"] == pytest.approx(4952652 / 5529058)


def test_unfused_fixture_matches_its_declared_17_launches():
    kern, api, nvtx = frames("unfused")
    lps = derive.launches_per_step(kern, STEPS, 17)
    assert lps["matches"] is True and lps["launches_per_step_measured"] == 17.0
    assert derive.launch_calls(api)["calls"] == 799
    assert derive.epoch_range_ns(nvtx) == 6277366
    assert derive.summed_kernel_ns(kern) == 5289505
    assert derive.widest_kernel(kern)["base"] == "k_fwd_hidden_gemm"
    assert derive.epoch_filler(kern, api)["filler"] == "kernel"


def test_versioned_launch_api_names_match_by_prefix():
    rename = {"cudaLaunchKernel": "cudaLaunchKernel_v7000",
              "cudaStreamSynchronize": "cudaStreamSynchronize_v3020"}
    header, rows = rows_of(fixture("fused", "cuda_api_sum"))
    rows = [r[:-1] + [rename.get(r[-1], r[-1])] for r in rows]
    rows.append(["0.1", "3000", "2", "1500.0", "1500.0", "1400", "1600", "141.4",
                 "cudaGraphLaunch_v10000"])
    rows.append(["0.1", "2500", "1", "2500.0", "2500.0", "2500", "2500", "0.0",
                 "cudaLaunchCooperativeKernel_v9000"])
    api = read_api_sum(write_csv(header, rows))
    launch = derive.launch_calls(api)
    assert launch["by_api"]["cudaLaunchKernel"]["calls"] == 470
    assert launch["by_api"]["cudaLaunchKernel"]["rows"] == ["cudaLaunchKernel_v7000"]
    assert launch["by_api"]["cudaGraphLaunch"]["calls"] == 2
    assert launch["by_api"]["cudaLaunchCooperativeKernel"]["calls"] == 1
    assert launch["calls"] == 473 and launch["total_ns"] == 2907885 + 3000 + 2500
    assert derive.api_base_name("cudaLaunchKernel_v7000") == "cudaLaunchKernel"


def test_launch_bound_epoch_is_reported_as_launch():
    # The real fused epoch is kernel-bound (4.95 ms of kernels, 2.91 ms of cudaLaunchKernel);
    # kernels a quarter as long, launches unchanged, make it launch-bound.
    header, rows = rows_of(fixture("fused", "cuda_gpu_kern_sum"))
    rows = [[r[0], str(int(r[1]) // 4)] + r[2:] for r in rows]
    kern = read_kern_sum(write_csv(header, rows))
    api = read_api_sum(fixture("fused", "cuda_api_sum"))
    fill = derive.epoch_filler(kern, api)
    assert fill["filler"] == "launch" and fill["launch_ns"] == 2907885
    assert fill["kernel_ns"] == sum(int(r[1]) for r in rows) < 2907885


def test_missing_epoch_range_gives_none():
    header, rows = rows_of(fixture("fused", "nvtx_sum"))
    rows[0][-1] = "something-else"
    nvtx = read_nvtx_sum(write_csv(header, rows))
    assert derive.epoch_range_ns(nvtx) is None
    kern, api, _ = frames("fused")
    prof = derive.path_profile(kern, api, nvtx, STEPS, 10)
    assert prof["range_ns"] is None and prof["kernel_share_of_range"] is None
    assert not math.isnan(prof["kernel_ns"])
