"""analysis.report.render on the fixtures and the repository's predictions.toml and GAPS.toml.

tests/fixtures/nsys holds real H200 CSVs (one profiled epoch each of the fused and unfused paths);
tests/fixtures/results holds SYNTHETIC run.json and pytorch.json (invented timings and cases), so
the epoch times quoted below are placeholders while the profile numbers are measured ones."""
from __future__ import annotations

import csv
import io
import json
import re
import shutil
from pathlib import Path

import pytest

from analysis import report
from harness.config import ROOT, TEMPLATES_DIR

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PREDICTIONS = ROOT / "predictions.toml"
GAPS = ROOT / "GAPS.toml"


@pytest.fixture
def inputs(tmp_path):
    """A writable copy of the fixture results and profile folders."""
    results = tmp_path / "results"
    profile = tmp_path / "profile"
    shutil.copytree(FIXTURES / "results", results)
    shutil.copytree(FIXTURES / "nsys", profile, ignore=shutil.ignore_patterns("*.md"))
    return results, profile, tmp_path / "RESULTS.md"


def render(inputs, predictions=PREDICTIONS, gaps=GAPS) -> str:
    results, profile, out = inputs
    report.render(results, profile, predictions, gaps, out)
    return out.read_text(encoding="utf-8")


def scale_kernel_times(kern_csv: Path, divisor: int) -> list[list[str]]:
    """Rewrite a cuda_gpu_kern_sum CSV with every "(ns)" column divided by `divisor` (integer
    cells stay integers, rounded down); returns the data rows written."""
    with open(kern_csv, newline="") as fh:
        header, *rows = list(csv.reader(fh))
    timed = [i for i, h in enumerate(header) if h.endswith("(ns)")]
    for row in rows:
        for i in timed:
            row[i] = (str(int(row[i]) // divisor) if row[i].isdigit()
                      else f"{float(row[i]) / divisor:.1f}")
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows([header] + rows)
    kern_csv.write_text(buf.getvalue())
    return rows


def run_json(inputs) -> dict:
    return json.loads((inputs[0] / "run.json").read_text())


def save_run(inputs, run: dict) -> None:
    (inputs[0] / "run.json").write_text(json.dumps(run, indent=2))


def test_render_succeeds_and_names_every_case(inputs):
    text = render(inputs)
    for case in run_json(inputs)["cases"]:
        assert f"| {case['name']} |" in text
    assert "NVIDIA H200" in text and "580.159.04" in text and "abc1234" in text
    assert "2026-11-30T19:00:00Z" in text
    assert "nvcc -O3 -arch=sm_90" in text and "build/mlp_train --data data" in text
    assert "| hidden_dim | 256 |" in text
    plots = inputs[0] / "plots"
    for name in ("loss_per_epoch.png", "epoch_time.png", "fused_kernel_breakdown.png"):
        assert (plots / name).read_bytes().startswith(b"\x89PNG")
        assert f"](results/plots/{name})" in text


def test_render_is_byte_identical_twice(inputs):
    first = render(inputs)
    pngs = {p.name: p.read_bytes() for p in (inputs[0] / "plots").glob("*.png")}
    second = render(inputs)
    assert first == second
    assert {p.name: p.read_bytes() for p in (inputs[0] / "plots").glob("*.png")} == pngs
    assert len(pngs) == 3


def test_tiers_failed_paths_and_ratios(inputs):
    text = render(inputs)
    assert "**The fused path's tier: gold**" in text
    assert "| graph | excluded: failed the gate |" in text
    assert "Failed paths, excluded from the tiers: `graph`." in text
    assert "| fused | passed | 19 | 1.961 | 1.962 | 1.921 | 1.999 | 1.44% | 0.19× |" in text
    assert "| PyTorch eager | passed | 19 |" in text


def test_tier_ladder_stops_where_a_rule_fails(inputs):
    run = run_json(inputs)
    run["paths"]["fused"]["cv_pct"] = 7.5
    save_run(inputs, run)
    assert "**The fused path's tier: silver**" in render(inputs)
    run["paths"]["unfused"]["passed"] = False
    save_run(inputs, run)
    text = render(inputs)
    assert "**The fused path's tier: none**" in text
    assert "not evaluable: no passing unfused path to compare with" in text
    run["paths"]["fused"]["passed"] = False
    save_run(inputs, run)
    assert "**The fused path's tier: none** (failed the gate)" in render(inputs)


def test_tier_unit():
    paths = {"fused": {"passed": True, "median_ms": 5.0, "cv_pct": 1.0},
             "unfused": {"passed": True, "median_ms": 6.0}}
    eager = {"passed": True, "median_ms": 10.0}
    assert report.tier_for("fused", paths, eager)["tier"] == "gold"
    assert report.tier_for("fused", paths, {"passed": True, "median_ms": 6.0})["tier"] == "silver"
    assert report.tier_for("fused", paths, {"passed": True, "median_ms": 5.2})["tier"] == "bronze"
    assert report.tier_for("fused", paths, None)["tier"] == "bronze"
    paths["unfused"]["median_ms"] = 4.0
    assert report.tier_for("fused", paths, eager)["tier"] == "none"


def test_profile_tables_quote_the_csvs(inputs):
    text = render(inputs)
    assert ("| 48.9 | 2,424,038 | 47 | 51,575.3 | 51,584 | 51,392 | 51,712 | 65.6 | "
            "`mlp::k_fwd_hidden_bias_relu(int, int, int, const float *, const float *, "
            "const float *, float *)` |") in text
    assert ("| 2.6 | 128,993 | 47 | 2,744.5 | 2,752 | 2,496 | 2,784 | 39 | "
            "`void mlp::k_colsum<(mlp::Col)0>(int, int, const float *, float *)` |") in text
    assert "| 57.3 | 2,907,885 | 470 | 6,187 | 5,755 | 4,447 | 65,875 | 3,172 | " \
           "`cudaLaunchKernel` |" in text
    assert "| 1.6 | 80,195 | 470 | 170.6 | 140 | 108 | 10,757 | 491.9 | `cuKernelGetName` |" in text
    assert "| 100 | 5,529,058 | 1 | 5,529,058 | 5,529,058 | 5,529,058 | PushPop | " \
           "`:profile-epoch` |" in text
    assert "Captured range: `:profile-epoch`, 5.529 ms." in text
    assert "Summed kernel time: 4.953 ms (89.6% of the range), over 470 kernel instances." in text
    assert "Summed kernel time: 5.290 ms (84.3% of the range), over 799 kernel instances." in text
    assert "Launch API calls: 470 calls, 2.908 ms; cudaLaunchKernel: 470 calls, 2.908 ms " \
           "(`cudaLaunchKernel`)." in text
    assert "What fills the epoch: kernel" in text
    assert "10.00 measured (470 instances / 47 steps), 10 declared in run.json: match yes" in text
    assert "17.00 measured (799 instances / 47 steps), 17 declared in run.json: match yes" in text
    assert "Paths without profile CSVs: `graph`." in text


def prediction_sections(text: str) -> dict[str, str]:
    """The Predictions section split per question, keyed by the question's first words."""
    section = text.split("## Predictions", 1)[1].split("## Analysis", 1)[0]
    parts = section.split("\n### ")[1:]
    return {part.split("\n", 1)[0]: part for part in parts}


def test_predictions_against_the_real_profile(inputs):
    # predictions.toml predicted a launch-bound fused epoch whose widest row is dW1; the H200
    # capture is kernel-bound and its widest row is the forward GEMM. The epoch-time prediction
    # is set against the synthetic run.json.
    sections = prediction_sections(render(inputs))
    faster = sections["Which path has the lower epoch time, fused or unfused?"]
    assert "Measured: **fused**, verdict: **match**" in faster
    assert "run.json paths.fused.median_ms = 1.962 ms" in faster
    filler = sections["Does kernel time or launch work fill the fused path's epoch?"]
    assert "Measured: **kernel**, verdict: **mismatch**" in filler
    assert ("Deciding row: fused_cuda_api_sum rows cudaLaunchKernel: 2.908 ms over 470 calls, "
            "against the summed kernel time of fused_cuda_gpu_kern_sum: 4.953 ms") in filler
    widest = sections["Which kernel row owns the most GPU time in the fused path's epoch?"]
    assert "Measured: **k_fwd_hidden_bias_relu**, verdict: **mismatch**" in widest
    assert ("Deciding row: fused_cuda_gpu_kern_sum row `k_fwd_hidden_bias_relu`: 2.424 ms, 48.9% "
            "of kernel time; the predicted row `k_dW1`: 0.602 ms, 12.2%") in widest


def test_prediction_verdicts_follow_the_predicted_values(inputs, tmp_path):
    preds = PREDICTIONS.read_text()
    for old, new in (('predicted = "dW1"', 'predicted = "fwd_hidden"'),
                     ('predicted = "launch"', 'predicted = "kernel"'),
                     ('predicted = "fused"', 'predicted = "unfused"')):
        assert preds.count(old) == 1, old
        preds = preds.replace(old, new)
    alt = tmp_path / "predictions.toml"
    alt.write_text(preds)
    sections = prediction_sections(render(inputs, predictions=alt))
    assert "verdict: **mismatch**" in sections["Which path has the lower epoch time, fused or unfused?"]
    assert "Deciding row: run.json paths.fused.median_ms = 1.962 ms" in \
        sections["Which path has the lower epoch time, fused or unfused?"]
    assert "verdict: **match**" in \
        sections["Does kernel time or launch work fill the fused path's epoch?"]
    widest = sections["Which kernel row owns the most GPU time in the fused path's epoch?"]
    assert "verdict: **match**" in widest
    assert ("Measured from: fused_cuda_gpu_kern_sum row `k_fwd_hidden_bias_relu`: 2.424 ms, "
            "48.9% of kernel time.") in widest


def analysis_of(text: str) -> str:
    return text.split("## Analysis: what limits the epoch", 1)[1].split("## Plots", 1)[0]


def test_analysis_is_computed_from_the_numbers(inputs):
    analysis = analysis_of(render(inputs))  # the real fused epoch: kernel-bound
    assert ("Kernel time fills the `fused` epoch: the GPU spent 4.953 ms in kernels inside the "
            "5.529 ms `:profile-epoch` range of nvtx_sum, 89.6% of it, against 2.908 ms of launch "
            "calls (470 calls in cuda_api_sum).") in analysis
    assert ("The widest kernel row, `k_fwd_hidden_bias_relu`, owns 2.424 ms (48.9% of kernel "
            "time, 47 instances, 51.58 µs each).") in analysis
    assert "Next change: make `k_fwd_hidden_bias_relu` faster" in analysis
    assert "Metric: that row's total time in cuda_gpu_kern_sum, down from 2.424 ms" in analysis
    assert "above the 2.908 ms of launch calls" in analysis


def test_launch_bound_analysis(inputs):
    # Kernels a quarter as long as measured (launches unchanged) make the fused epoch
    # launch-bound: 1.238 ms of kernels against 2.908 ms of cudaLaunchKernel.
    rows = scale_kernel_times(inputs[1] / "fused_cuda_gpu_kern_sum.csv", 4)
    assert sum(int(r[1]) for r in rows) == 1238161
    analysis = analysis_of(render(inputs))
    assert ("Launch work fills the `fused` epoch: the cuda_api_sum row `cudaLaunchKernel` totals "
            "2.908 ms over 470 calls (6.19 µs a call) inside the 5.529 ms `:profile-epoch` range "
            "of nvtx_sum, 52.6% of it, while the GPU spent 1.238 ms in kernels, 22.4% of it.") \
        in analysis
    assert ("A kernel averages 2.63 µs (470 instances), against 6.19 µs of host time to launch "
            "one; 1 of 10 kernel rows average longer than a launch, the widest, "
            "`k_fwd_hidden_bias_relu`, 12.89 µs over 47 instances (0.606 ms).") in analysis
    assert "Next change: replay the epoch as one CUDA graph" in analysis
    assert "`cudaLaunchKernel` calls in the captured epoch, down from 470 toward 0" in analysis
    assert "down from 5.529 ms toward the summed kernel time of 1.238 ms." in analysis


def test_open_gaps_are_listed(inputs):
    text = render(inputs)
    gaps = text.split("## Open gaps", 1)[1]
    for title in ("No external harness", "No shipped reference weights",
                  "TF32 tensor cores not used", "Persistent path not yet written",
                  "Sweeps not done"):
        assert title in gaps


def test_without_pytorch_json_the_report_says_so(inputs):
    (inputs[0] / "pytorch.json").unlink()
    text = render(inputs)
    assert "PyTorch was not run" in text
    assert "| PyTorch | not run (no results/pytorch.json) |" in text
    assert "not evaluable: no passing PyTorch eager run" in text
    assert "**The fused path's tier: bronze**" in text


def test_without_profiles_the_report_still_renders(inputs):
    for f in inputs[1].glob("*.csv"):
        f.unlink()
    text = render(inputs)
    assert "No profile CSVs were found" in text
    assert "verdict: **not measured**" in text
    assert not (inputs[0] / "plots" / "fused_kernel_breakdown.png").exists()


def one_line_exit(excinfo, name: str) -> str:
    msg = str(excinfo.value)
    assert name in msg and "\n" not in msg, msg
    return msg


def test_missing_run_json_exits_naming_it(inputs):
    (inputs[0] / "run.json").unlink()
    with pytest.raises(SystemExit) as info:
        render(inputs)
    one_line_exit(info, str(inputs[0] / "run.json"))
    assert not inputs[2].exists()


def test_malformed_inputs_exit_naming_the_file(inputs, tmp_path):
    results, profile, out = inputs
    (results / "pytorch.json").write_text("{not json")
    with pytest.raises(SystemExit) as info:
        render(inputs)
    one_line_exit(info, "pytorch.json")
    (results / "pytorch.json").unlink()

    (results / "run.json").write_text('{"schema": 1}')
    with pytest.raises(SystemExit) as info:
        render(inputs)
    one_line_exit(info, "run.json")
    shutil.copy(FIXTURES / "results" / "run.json", results / "run.json")

    bad_toml = tmp_path / "bad.toml"
    bad_toml.write_text("[[prediction]\n")
    with pytest.raises(SystemExit) as info:
        render(inputs, predictions=bad_toml)
    one_line_exit(info, "bad.toml")
    with pytest.raises(SystemExit) as info:
        render(inputs, gaps=tmp_path / "missing.toml")
    one_line_exit(info, "missing.toml")

    (profile / "unfused_cuda_api_sum.csv").write_text("garbage\n")
    with pytest.raises(SystemExit) as info:
        render(inputs)
    one_line_exit(info, "unfused_cuda_api_sum.csv")
    (profile / "unfused_cuda_api_sum.csv").unlink()
    with pytest.raises(SystemExit) as info:
        render(inputs)
    one_line_exit(info, "unfused_cuda_api_sum.csv")
    assert not out.exists()


def test_template_holds_no_numbers():
    text = (TEMPLATES_DIR / "RESULTS.md.j2").read_text()
    text = re.sub(r"\b(L2|[Ff]loat64)\b", "", text)
    assert re.findall(r"\d", text) == []


def test_main_renders(inputs, capsys):
    results, profile, out = inputs
    assert report.main(["--results", str(results), "--profile", str(profile),
                        "--out", str(out)]) == 0
    assert out.is_file() and "wrote" in capsys.readouterr().out


def test_graph_profile_is_quoted_in_the_analysis(inputs):
    # A made-up successful graph capture: the fused kernels, one cudaGraphLaunch. The graph
    # sentence belongs to the launch-bound analysis, so the fused kernels are shortened first
    # (as in test_launch_bound_analysis); the graph path keeps the measured ones.
    profile = inputs[1]
    shutil.copy(profile / "fused_cuda_gpu_kern_sum.csv", profile / "graph_cuda_gpu_kern_sum.csv")
    scale_kernel_times(profile / "fused_cuda_gpu_kern_sum.csv", 4)
    nvtx = (profile / "fused_nvtx_sum.csv").read_text()
    assert nvtx.count("5529058") == 5  # total, avg, med, min, max
    (profile / "graph_nvtx_sum.csv").write_text(nvtx.replace("5529058", "5012000"))
    (profile / "graph_cuda_api_sum.csv").write_text(
        "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        "88.0,1690000,1,1690000.0,1690000.0,1690000,1690000,0.0,cudaStreamSynchronize_v3020\n"
        "12.0,9100,1,9100.0,9100.0,9100,9100,0.0,cudaGraphLaunch_v10000\n"
        "0.1,3100,1,3100.0,3100.0,3100,3100,0.0,cudaMemcpyAsync_v3020\n")
    text = render(inputs)
    assert "### Path `graph`" in text
    assert "Paths without profile CSVs" not in text
    assert ("The `graph` path (gate: FAILED) was captured too: launch calls cudaGraphLaunch 1; "
            "range 5.012 ms; summed kernel time 4.953 ms.") in text
    graph = text.split("### Path `graph`", 1)[1]
    assert "10.00 measured (470 instances / 47 steps), 10 declared in run.json: match yes" in graph
    assert "What fills the epoch: kernel" in graph


def test_variant_errors_and_undeclared_launches(inputs):
    text = render(inputs)
    assert ("| PyTorch compiled-skipped-example | skipped: synthetic skipped variant for the tests "
            "| 0 | — |") in text
    assert "| graph | **FAILED**: training loss diverged" in text
    run = run_json(inputs)
    run["paths"]["fused"]["launches_per_step"] = -1  # as the submission path declares
    save_run(inputs, run)
    assert "10.00 measured (470 instances / 47 steps), — declared in run.json: " \
           "match no declaration" in render(inputs)


def test_empty_kernel_csv_of_a_failed_capture_exits_naming_it(inputs):
    # As the H200's graph capture left it: api and nvtx tables, a 0-byte kernel summary.
    results, profile, out = inputs
    (profile / "graph_cuda_gpu_kern_sum.csv").write_bytes(b"")
    shutil.copy(profile / "fused_cuda_api_sum.csv", profile / "graph_cuda_api_sum.csv")
    shutil.copy(profile / "fused_nvtx_sum.csv", profile / "graph_nvtx_sum.csv")
    with pytest.raises(SystemExit) as info:
        render(inputs)
    msg = one_line_exit(info, str(profile / "graph_cuda_gpu_kern_sum.csv"))
    assert msg.startswith("error: ") and "cuda_gpu_kern_sum" in msg
    assert not out.exists()
