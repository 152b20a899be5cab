"""analysis.nsys_csv readers and analysis.derive figures, on the synthetic fixtures and on
variants derived from them in the shapes real nsys output takes (older column names, other time
units, captured stdout with progress lines, quoted names with commas, domain-prefixed NVTX
ranges, versioned API names)."""
from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pytest

from analysis import derive
from analysis.nsys_csv import (API_COLUMNS, KERN_COLUMNS, NVTX_COLUMNS, kernel_base_name,
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

def test_base_kernel_fixture_reads_with_normalised_columns():
    kern = read_kern_sum(fixture("fused", "cuda_gpu_kern_sum"))
    assert list(kern.columns) == KERN_COLUMNS
    assert len(kern) == 10
    assert kern["instances"].sum() == 470
    assert kern.loc[0, "name"] == "k_dW1(const float *, const float *, float *, int, int, int)"
    assert kern.loc[0, "total_ns"] == 441800
    assert kern.loc[0, "time_pct"] == pytest.approx(25.9)
    templated = kern.loc[1, "name"]
    assert templated.startswith("void k_fwd_hidden_bias_relu<(int)16>(const float *, ")
    unfused = read_kern_sum(fixture("unfused", "cuda_gpu_kern_sum"))
    assert unfused["instances"].sum() == 799


def test_base_api_and_nvtx_fixtures():
    api = read_api_sum(fixture("fused", "cuda_api_sum"))
    assert list(api.columns) == API_COLUMNS
    assert api.loc[0, "name"] == "cudaLaunchKernel" and api.loc[0, "num_calls"] == 470
    nvtx = read_nvtx_sum(fixture("fused", "nvtx_sum"))
    assert list(nvtx.columns) == NVTX_COLUMNS
    assert nvtx.loc[0, "name"] == "profile-epoch" and nvtx.loc[0, "style"] == "PushPop"
    assert nvtx.loc[0, "total_ns"] == 1951300


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
    assert api.loc[0, "num_calls"] == 470 and api.loc[0, "total_ns"] == 1767200


def test_old_nvtx_names():
    cols = {"Time (%)": "Time(%)", "Total Time (ns)": "Total Time (ns)", "Instances": "Instances",
            "Avg (ns)": "Average", "Min (ns)": "Minimum", "Max (ns)": "Maximum",
            "StdDev (ns)": "StdDev", "Range": "Range"}
    nvtx = read_nvtx_sum(derive_variant(fixture("fused", "nvtx_sum"), cols))
    assert nvtx.loc[0, "name"] == "profile-epoch" and nvtx.loc[0, "total_ns"] == 1951300
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
    assert read_api_sum(text)["num_calls"].sum() == 474


def test_quoted_names_with_commas_and_quotes():
    header, rows = rows_of(fixture("fused", "cuda_gpu_kern_sum"))
    rows[0][-1] = 'void gemm<(Op)0, "x">(int, int, const float *)'
    kern = read_kern_sum(write_csv(header, rows))
    assert kern.loc[0, "name"] == 'void gemm<(Op)0, "x">(int, int, const float *)'
    assert kern.loc[0, "total_ns"] == 441800


@pytest.mark.parametrize("raw", [":profile-epoch", "mlp:profile-epoch", "[mlp]:profile-epoch",
                                 ":mlp:profile-epoch"])
def test_nvtx_domain_prefix_is_dropped_and_kept_raw(raw):
    header, rows = rows_of(fixture("fused", "nvtx_sum"))
    rows[0][-1] = raw
    nvtx = read_nvtx_sum(write_csv(header, rows))
    assert nvtx.loc[0, "name"] == "profile-epoch"
    assert nvtx.loc[0, "raw_name"] == raw
    assert derive.epoch_range_ns(nvtx) == 1951300


def test_row_number_column_trailing_commas_and_thousands_separators():
    header, rows = rows_of(fixture("fused", "nvtx_sum"))
    text = ("Row#," + ",".join(header) + ",\n"
            + "".join(f"{i + 1}," + ",".join(f'"{int(float(c)):,}"' if c.replace(".", "").isdigit()
                                            and float(c) >= 1000 else c for c in r) + ",\n"
                      for i, r in enumerate(rows)))
    nvtx = read_nvtx_sum(text)
    assert nvtx.loc[0, "total_ns"] == 1951300 and nvtx.loc[0, "name"] == "profile-epoch"


def test_header_only_gives_an_empty_frame():
    header, _ = rows_of(fixture("fused", "cuda_gpu_kern_sum"))
    kern = read_kern_sum(write_csv(header, []))
    assert list(kern.columns) == KERN_COLUMNS and kern.empty


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


def test_non_numeric_cell_raises_value_error(tmp_path):
    header, rows = rows_of(fixture("fused", "cuda_gpu_kern_sum"))
    rows[2][1] = "lots"
    bad = tmp_path / "k.csv"
    bad.write_text(write_csv(header, rows))
    with pytest.raises(ValueError, match=str(bad)):
        read_kern_sum(bad)


def test_kernel_base_name():
    assert kernel_base_name("k_dW1(const float *, int)") == "k_dW1"
    assert kernel_base_name("void k_fwd_hidden_bias_relu<(int)16>(const float *, int)") == \
        "k_fwd_hidden_bias_relu"
    assert kernel_base_name("void ns::gemm<(Op)0, float>(int, int, const float *)") == "gemm"
    assert kernel_base_name("k_plain") == "k_plain"


# ----------------------------------------------------------------------------- derive

def frames(path: str):
    return (read_kern_sum(fixture(path, "cuda_gpu_kern_sum")),
            read_api_sum(fixture(path, "cuda_api_sum")),
            read_nvtx_sum(fixture(path, "nvtx_sum")))


def test_derived_figures_of_the_fused_fixture():
    kern, api, nvtx = frames("fused")
    assert derive.epoch_range_ns(nvtx) == 1951300
    assert derive.summed_kernel_ns(kern) == 1706100
    wk = derive.widest_kernel(kern)
    assert wk["base"] == "k_dW1" and wk["total_ns"] == 441800
    assert wk["share"] == pytest.approx(441800 / 1706100)
    la = derive.largest_api(api)
    assert la["name"] == "cudaLaunchKernel" and la["num_calls"] == 470
    launch = derive.launch_calls(api)
    assert launch["calls"] == 470 and launch["total_ns"] == 1767200
    lps = derive.launches_per_step(kern, STEPS, 10)
    assert lps == {"launches_per_step_measured": 10.0, "declared": 10, "matches": True,
                   "kernel_instances": 470, "steps_per_epoch": STEPS}
    assert derive.launches_per_step(kern, STEPS, 17)["matches"] is False
    assert derive.launches_per_step(kern, STEPS, None)["matches"] is None
    assert derive.epoch_filler(kern, api)["filler"] == "launch"
    prof = derive.path_profile(kern, api, nvtx, STEPS, 10)
    assert prof["kernel_share_of_range"] == pytest.approx(1706100 / 1951300)


def test_unfused_fixture_matches_its_declared_17_launches():
    kern, api, nvtx = frames("unfused")
    lps = derive.launches_per_step(kern, STEPS, 17)
    assert lps["matches"] is True and lps["launches_per_step_measured"] == 17.0
    assert derive.launch_calls(api)["calls"] == 799


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
    assert launch["calls"] == 473 and launch["total_ns"] == 1767200 + 3000 + 2500
    assert derive.api_base_name("cudaLaunchKernel_v7000") == "cudaLaunchKernel"


def test_kernel_bound_epoch_is_reported_as_kernel():
    header, rows = rows_of(fixture("fused", "cuda_gpu_kern_sum"))
    rows = [[r[0], str(int(r[1]) * 4)] + r[2:] for r in rows]
    kern = read_kern_sum(write_csv(header, rows))
    api = read_api_sum(fixture("fused", "cuda_api_sum"))
    fill = derive.epoch_filler(kern, api)
    assert fill["filler"] == "kernel" and fill["kernel_ns"] == 4 * 1706100


def test_missing_epoch_range_gives_none():
    header, rows = rows_of(fixture("fused", "nvtx_sum"))
    rows[0][-1] = "something-else"
    nvtx = read_nvtx_sum(write_csv(header, rows))
    assert derive.epoch_range_ns(nvtx) is None
    kern, api, _ = frames("fused")
    prof = derive.path_profile(kern, api, nvtx, STEPS, 10)
    assert prof["range_ns"] is None and prof["kernel_share_of_range"] is None
    assert not math.isnan(prof["kernel_ns"])
