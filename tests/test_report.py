"""analysis.report.render on the synthetic fixtures (tests/fixtures/results, tests/fixtures/nsys)
and the repository's predictions.toml and GAPS.toml."""
from __future__ import annotations

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
    assert "| 25.9 | 441,800 | 47 | 9,400 | 9,118 | 7,707 | 17,860 | 1,034 | " \
           "`k_dW1(const float *, const float *, float *, int, int, int)` |" in text
    assert "| 94.3 | 1,767,200 | 470 | 3,760 |" in text
    assert "| PushPop | `profile-epoch` |" in text
    assert "Summed kernel time: 1.706 ms" in text
    assert "10.00 measured (470 instances / 47 steps), 10 declared in run.json: match yes" in text
    assert "17.00 measured (799 instances / 47 steps), 17 declared in run.json: match yes" in text
    assert "Paths without profile CSVs: `graph`." in text


def test_predictions_match_on_the_fixtures(inputs):
    text = render(inputs)
    section = text.split("## Predictions", 1)[1].split("## Analysis", 1)[0]
    assert section.count("verdict: **match**") == 3
    assert "run.json paths.fused.median_ms = 1.962 ms" in section


def test_prediction_mismatch_names_the_deciding_row(inputs, tmp_path):
    preds = PREDICTIONS.read_text()
    preds = preds.replace('predicted = "dW1"', 'predicted = "fwd_hidden"')
    preds = preds.replace('predicted = "launch"', 'predicted = "kernel"')
    preds = preds.replace('predicted = "fused"', 'predicted = "unfused"')
    alt = tmp_path / "predictions.toml"
    alt.write_text(preds)
    text = render(inputs, predictions=alt)
    section = text.split("## Predictions", 1)[1].split("## Analysis", 1)[0]
    assert section.count("verdict: **mismatch**") == 3
    assert ("Deciding row: fused_cuda_gpu_kern_sum row `k_dW1`: 0.442 ms, 25.9% of kernel time; "
            "the predicted row `k_fwd_hidden_bias_relu`: 0.338 ms, 19.8%") in section
    assert "Deciding row: fused_cuda_api_sum rows cudaLaunchKernel: 1.767 ms over 470 calls" \
        in section
    assert "Deciding row: run.json paths.fused.median_ms = 1.962 ms" in section


def test_analysis_is_computed_from_the_numbers(inputs):
    text = render(inputs)
    analysis = text.split("## Analysis: what limits the epoch", 1)[1].split("## Plots", 1)[0]
    assert "Launch work fills the `fused` epoch" in analysis
    assert "`cudaLaunchKernel` totals 1.767 ms over 470 calls" in analysis
    assert "1.951 ms `profile-epoch` range" in analysis
    assert "`k_dW1`" in analysis
    assert "Next change:" in analysis and "Metric:" in analysis and "down from 470" in analysis


def test_kernel_bound_analysis(inputs):
    kern = inputs[1] / "fused_cuda_gpu_kern_sum.csv"
    lines = kern.read_text().splitlines()
    scaled = [lines[0]]
    for line in lines[1:]:
        first, total, rest = line.split(",", 2)
        scaled.append(f"{first},{int(total) * 4},{rest}")
    kern.write_text("\n".join(scaled) + "\n")
    text = render(inputs)
    assert "Kernel time fills the `fused` epoch" in text
    assert "Next change: make `k_dW1` faster" in text


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
    profile = inputs[1]
    shutil.copy(profile / "fused_cuda_gpu_kern_sum.csv", profile / "graph_cuda_gpu_kern_sum.csv")
    (profile / "graph_nvtx_sum.csv").write_text(
        (profile / "fused_nvtx_sum.csv").read_text().replace("1951300", "1712000"))
    (profile / "graph_cuda_api_sum.csv").write_text(
        "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        "88.0,1690000,1,1690000.0,1690000.0,1690000,1690000,0.0,cudaStreamSynchronize_v3020\n"
        "12.0,9100,1,9100.0,9100.0,9100,9100,0.0,cudaGraphLaunch_v10000\n"
        "0.1,3100,1,3100.0,3100.0,3100,3100,0.0,cudaMemcpyAsync_v3020\n")
    text = render(inputs)
    assert "### Path `graph`" in text
    assert "Paths without profile CSVs" not in text
    assert ("The `graph` path (gate: FAILED) was captured too: launch calls cudaGraphLaunch 1; "
            "range 1.712 ms; summed kernel time 1.706 ms.") in text
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
