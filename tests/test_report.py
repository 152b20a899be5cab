"""analysis.report.render on the fixtures and the repository's predictions.toml and GAPS.toml.

tests/fixtures/nsys holds real H200 CSVs (one profiled epoch each of the fused and unfused paths,
from an older build); tests/fixtures/results holds SYNTHETIC run.json, pytorch.json,
persistent_phases.json, sanitize.json, sweep.json, full60k/sweep.json and logs/nvidia-smi.csv
(invented timings, cases, counts and memory), so the epoch times quoted below are placeholders
while the profile numbers are measured ones. run.json has a fourth, synthetic `persistent` path
(one launch an epoch, no profile CSVs). The last test re-renders the committed RESULTS.md from the
committed results/ and profile/: those are real measurements."""
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


def tier_table(text: str) -> str:
    return text.split("### Tier", 1)[1].split("### Goals", 1)[0]


def test_tiers_failed_paths_and_ratios(inputs):
    text = render(inputs)
    assert "**The fused path's tier: gold**" in text
    tiers = tier_table(text)
    # Tiers only over paths that passed: the failed graph path has no row.
    assert "| graph |" not in tiers
    assert "| fused | gold | yes: 1.962 ms vs 3.176 ms (0.62×) |" in tiers
    assert "| persistent | gold | yes: 1.209 ms vs 3.176 ms (0.38×) |" in tiers
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
    text = render(inputs)
    assert "**The fused path's tier: none** (failed the gate)" in text
    assert "| fused |" not in tier_table(text)


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
    assert ("| `k_fwd_hidden_bias_relu` | 48.9 | 2,424,038 | 47 | 51,575.3 | 51,584 | 51,392 | "
            "51,712 | 65.6 | `mlp::k_fwd_hidden_bias_relu(int, int, int, const float *, "
            "const float *, const float *, float *)` |") in text
    # Two instances of one template keep their template argument: distinct labels.
    assert ("| `k_colsum<(Col)0>` | 2.6 | 128,993 | 47 | 2,744.5 | 2,752 | 2,496 | 2,784 | 39 | "
            "`void mlp::k_colsum<(mlp::Col)0>(int, int, const float *, float *)` |") in text
    assert "| `k_colsum<(Col)1>` | 2.5 | 125,120 |" in text
    for t in range(4):
        assert f"| `k_momentum_tensor<(Tensor){t}>` |" in text
    assert "| 57.3 | 2,907,885 | 470 | 6,187 | 5,755 | 4,447 | 65,875 | 3,172 | " \
           "`cudaLaunchKernel` |" in text
    assert "| 1.6 | 80,195 | 470 | 170.6 | 140 | 108 | 10,757 | 491.9 | `cuKernelGetName` |" in text
    assert "| 100 | 5,529,058 | 1 | 5,529,058 | 5,529,058 | 5,529,058 | PushPop | " \
           "`profile-epoch` |" in text
    assert "Captured range: `profile-epoch`, 5.529 ms." in text
    assert ":profile-epoch" not in text  # nsys's empty-domain prefix is not shown
    assert "Summed kernel time: 4.953 ms (89.6% of the range), over 470 kernel instances." in text
    assert "Summed kernel time: 5.290 ms (84.3% of the range), over 799 kernel instances." in text
    assert "Launch API calls: 470 calls, 2.908 ms; cudaLaunchKernel: 470 calls, 2.908 ms " \
           "(`cudaLaunchKernel`)." in text
    assert "What fills the epoch: kernel" in text
    assert "10.00 measured (470 instances / 47 steps), 10 per step declared in run.json: " \
           "match yes" in text
    assert "17.00 measured (799 instances / 47 steps), 17 per step declared in run.json: " \
           "match yes" in text
    assert "No profile of this run exists for these paths:" in text
    assert ("- `graph`: no profile of this run (`profile/graph_cuda_gpu_kern_sum.csv`, "
            "`profile/graph_cuda_api_sum.csv`, `profile/graph_nvtx_sum.csv` not found).") in text
    assert "- `persistent`: no profile of this run" in text
    assert "- `fused`: no profile" not in text


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
            "5.529 ms `profile-epoch` range of nvtx_sum, 89.6% of it, against 2.908 ms of launch "
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
            "2.908 ms over 470 calls (6.19 µs a call) inside the 5.529 ms `profile-epoch` range "
            "of nvtx_sum, 52.6% of it, while the GPU spent 1.238 ms in kernels, 22.4% of it.") \
        in analysis
    assert ("A kernel averages 2.63 µs (470 instances), against 6.19 µs of host time to launch "
            "one; 1 of 10 kernel rows average longer than a launch, the widest, "
            "`k_fwd_hidden_bias_relu`, 12.89 µs over 47 instances (0.606 ms).") in analysis
    assert "Next change: replay the epoch as one CUDA graph" in analysis
    assert "`cudaLaunchKernel` calls in the captured epoch, down from 470 toward 0" in analysis
    assert "down from 5.529 ms toward the summed kernel time of 1.238 ms." in analysis


def test_open_gaps_are_listed(inputs, tmp_path):
    text = render(inputs)
    gaps = text.split("## Open gaps", 1)[1]
    entries = report.load_gaps(GAPS)
    for g in entries:
        assert (f"**{g['title']}** (`{g['id']}`)" in gaps) == (g["status"] == "open"), g["id"]
    alt = tmp_path / "gaps.toml"
    alt.write_text('[[gap]]\nid = "a"\ntitle = "Open one"\nstatus = "open"\ndetail = "x"\n'
                   '[[gap]]\nid = "b"\ntitle = "Closed one"\nstatus = "closed"\ndetail = "y"\n')
    gaps = render(inputs, gaps=alt).split("## Open gaps", 1)[1]
    assert "**Open one** (`a`): x" in gaps and "Closed one" not in gaps


def test_without_pytorch_json_the_report_says_so(inputs):
    (inputs[0] / "pytorch.json").unlink()
    text = render(inputs)
    assert "PyTorch was not run" in text
    assert "| PyTorch | not run (no results/pytorch.json) |" in text
    assert "not evaluable: no passing PyTorch eager run" in text
    assert "**The fused path's tier: bronze**" in text


def test_without_profiles_the_report_still_renders(inputs):
    render(inputs)  # with profiles: the kernel plot is drawn
    assert (inputs[0] / "plots" / "fused_kernel_breakdown.png").exists()
    for f in inputs[1].glob("*.csv"):
        f.unlink()
    assert list(inputs[1].iterdir()) == []  # an empty profile/ folder, as the H200 run left it
    text = render(inputs)
    profiles = text.split("## Profiles", 1)[1].split("## Predictions", 1)[0]
    assert "No profile of this run exists for any path:" in profiles
    for name in ("fused", "unfused", "graph", "persistent"):
        assert (f"- `{name}`: no profile of this run (`profile/{name}_cuda_gpu_kern_sum.csv`, "
                f"`profile/{name}_cuda_api_sum.csv`, `profile/{name}_nvtx_sum.csv` not found).") \
            in profiles
    assert "### Path `" not in text
    assert ("The nsys capture of this run failed or was not run: there is no "
            "`results/logs/profile.log`.") in profiles
    sections = prediction_sections(text)
    filler = sections["Does kernel time or launch work fill the fused path's epoch?"]
    assert "Measured: **—**, verdict: **not measured in this run**." in filler
    assert ("Deciding input: no profile of this run: `profile/fused_cuda_gpu_kern_sum.csv` and "
            "`profile/fused_cuda_api_sum.csv` are missing.") in filler
    widest = sections["Which kernel row owns the most GPU time in the fused path's epoch?"]
    assert "verdict: **not measured in this run**" in widest
    assert "`profile/fused_cuda_gpu_kern_sum.csv` is missing." in widest
    # The run.json prediction is still measured.
    assert "verdict: **match**" in sections["Which path has the lower epoch time, fused or unfused?"]
    assert "No profile of this run exists, so no limit can be quoted" in analysis_of(text)
    assert "Graph evidence" not in text
    # The stale kernel plot of the earlier render is gone, and not linked.
    assert not (inputs[0] / "plots" / "fused_kernel_breakdown.png").exists()
    assert "fused_kernel_breakdown.png" not in text
    assert "No profile of the fused path in this run" in text


def test_empty_profile_dir_with_the_failed_capture_log(inputs):
    # As the H200 evidence run left it: profile/ empty, results/logs/profile.log ending on the
    # nsys exit status 143 line.
    results, profile, _ = inputs
    for f in profile.glob("*.csv"):
        f.unlink()
    (results / "logs" / "profile.log").write_text(
        "+ nsys profile --trace cuda,nvtx -o profile/.unfused-nsys-x/unfused build/mlp_train\n"
        "Generated:\n\t/work/main/profile/.unfused-nsys-x/unfused.nsys-rep\n"
        "error: nsys profile of path unfused failed (exit status 143): nsys profile --trace "
        "cuda,nvtx -o profile/.unfused-nsys-x/unfused build/mlp_train --data data\n")
    text = render(inputs)
    assert ("The nsys capture of this run failed; its log is `results/logs/profile.log`, which "
            "ends with `error: nsys profile of path unfused failed (exit status 143)`.") in text
    assert "No profile of this run exists for any path:" in text


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


def make_graph_capture(profile: Path) -> None:
    """A made-up successful graph capture: the fused kernels, the fused NVTX table with a
    5,012,000 ns range, one cudaGraphLaunch."""
    shutil.copy(profile / "fused_cuda_gpu_kern_sum.csv", profile / "graph_cuda_gpu_kern_sum.csv")
    nvtx = (profile / "fused_nvtx_sum.csv").read_text()
    assert nvtx.count("5529058") == 5  # total, avg, med, min, max
    (profile / "graph_nvtx_sum.csv").write_text(nvtx.replace("5529058", "5012000"))
    (profile / "graph_cuda_api_sum.csv").write_text(
        "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        "88.0,1690000,1,1690000.0,1690000.0,1690000,1690000,0.0,cudaStreamSynchronize_v3020\n"
        "12.0,9100,1,9100.0,9100.0,9100,9100,0.0,cudaGraphLaunch_v10000\n"
        "0.1,3100,1,3100.0,3100.0,3100,3100,0.0,cudaMemcpyAsync_v3020\n")


def test_graph_evidence_whenever_both_captures_exist(inputs):
    # The fused epoch of the fixtures is kernel-bound: the graph sentence still appears.
    make_graph_capture(inputs[1])
    text = render(inputs)
    assert "### Path `graph`" in text
    assert "- `graph`: no profile" not in text
    evidence = ("Graph evidence, from `fused_cuda_api_sum.csv` and `graph_cuda_api_sum.csv`: in "
                "its captured epoch the `fused` path (gate: passed) made cudaLaunchKernel 470 "
                "calls (2.908 ms); the `graph` path (gate: FAILED) made cudaGraphLaunch 1 call "
                "(0.009 ms). Captured range: 5.529 ms against 5.012 ms; summed kernel time: "
                "4.953 ms against 4.953 ms.")
    analysis = analysis_of(text)
    assert "Kernel time fills the `fused` epoch" in analysis and evidence in analysis
    graph = text.split("### Path `graph`", 1)[1]
    assert "10.00 measured (470 instances / 47 steps), 10 per step declared in run.json: " \
           "match yes" in graph
    assert "What fills the epoch: kernel" in graph
    # Launch-bound (fused kernels a quarter as long): the sentence is there too, with the
    # fused kernel time it now has.
    scale_kernel_times(inputs[1] / "fused_cuda_gpu_kern_sum.csv", 4)
    analysis = analysis_of(render(inputs))
    assert "Launch work fills the `fused` epoch" in analysis
    assert "summed kernel time: 1.238 ms against 4.953 ms." in analysis
    # Without the fused capture, no comparison.
    for f in inputs[1].glob("fused_*.csv"):
        f.unlink()
    assert "Graph evidence" not in render(inputs)


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
    # A fractional declaration (the persistent path's one launch an epoch) against a capture.
    run["paths"]["fused"]["launches_per_step"] = 10.0
    save_run(inputs, run)
    assert "10 per step declared in run.json: match yes" in render(inputs)
    run["paths"]["fused"]["launches_per_step"] = 1 / 47
    save_run(inputs, run)
    assert "1 per epoch (1/47 per step) declared in run.json: match NO" in render(inputs)


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


# ----------------------------------------------------------------------------- new inputs

def section(text: str, heading: str) -> str:
    """The text of one '## ' or '### ' section, up to the next heading of any level."""
    body = text.split(heading + "\n", 1)[1]
    return re.split(r"\n#{2,3} ", body, maxsplit=1)[0]


def test_per_path_checks_table(inputs):
    checks = section(render(inputs), "### Per-path checks (run.json)")
    assert ("| fused | passed | 10 per step | 0 (limit 0.01) | 0.0021 | yes | 84.17% | 0.08 pp "
            "| 41.700 |") in checks
    assert ("| graph | **FAILED**: training loss diverged (synthetic failure for the tests) | "
            "10 per step | 0.5 (limit 0.01) **over the limit** | 0.5 | **no** | 10.00% |") in checks
    assert ("| persistent | passed | 1 per epoch (1/47 per step) | 0.0034 (limit 0.01) | 3.8e-07 "
            "| yes | 84.01% | 0.05 pp | 1.190 |") in checks


def test_per_path_checks_absent_without_their_fields(inputs):
    run = run_json(inputs)
    for rec in run["paths"].values():
        for key in ("parity_vs_fused", "parity_limit", "parity_vs_fp64", "deterministic",
                    "accuracy_gap_pp", "test_accuracy_last5_mean", "warmup_epoch_ms"):
            rec.pop(key, None)
    save_run(inputs, run)
    assert "### Per-path checks" not in render(inputs)


def test_fmt_launches():
    assert report.fmt_launches(10, 47) == "10 per step"
    assert report.fmt_launches(10.0, 47) == "10 per step"
    assert report.fmt_launches(0.02127659574468085, 47) == "1 per epoch (1/47 per step)"
    assert report.fmt_launches(2 / 47, 47) == "2 per epoch (2/47 per step)"
    assert report.fmt_launches(0.03, 47) == "0.03 per step"
    assert report.fmt_launches(None, 47) == "—"


def goal_rows(text: str) -> list[str]:
    return [line for line in section(text, "### Goals (issue 6)").splitlines()
            if line.startswith("| ") and not line.startswith("| goal")]


def test_goals_table(inputs):
    rows = goal_rows(render(inputs))
    assert rows == [
        "| fastest path's median epoch ≤ 0.5 ms | `persistent` 1.209 ms | **MISSED** |",
        "| fastest path ≤ 0.01× the PyTorch eager median epoch | `persistent` 1.209 ms / "
        "10.354 ms = 0.117× | **MISSED** |",
        "| fastest path ≤ 0.1× the PyTorch cuda-graph median epoch | `persistent` 1.209 ms / "
        "1.617 ms = 0.747× | **MISSED** |",
        "| `fused` ≤ 0.1× the PyTorch eager median epoch and below the `unfused` median | "
        "1.962 ms / 10.354 ms = 0.19×; `unfused` 3.176 ms (0.62×) | **MISSED** |",
        "| epoch-time CV < 5% on every CUDA path | largest `graph` 2.15% (of 4 paths) | **MET** |",
    ]


def test_goals_unit():
    paths = {"fused": {"passed": True, "median_ms": 0.4, "cv_pct": 1.0},
             "unfused": {"passed": True, "median_ms": 3.0, "cv_pct": 6.0},
             "fast-but-failed": {"passed": False, "median_ms": 0.1, "cv_pct": 1.0}}
    variants = {"eager": {"passed": True, "median_ms": 50.0},
                "cuda-graph": {"passed": True, "median_ms": 5.0}}
    verdicts = [g["verdict"] for g in report.goals(paths, variants)]
    # The failed path is not the fastest: fused is, at 0.4 ms (0.008× eager, 0.08× graph).
    assert verdicts == ["MET", "MET", "MET", "MET", "MISSED"]
    assert "`fused` 0.400 ms" in report.goals(paths, variants)[0]["measured"]
    verdicts = [g["verdict"] for g in report.goals(paths, {})]
    assert verdicts == ["MET", "not evaluable", "not evaluable", "not evaluable", "MISSED"]
    paths["fused"]["passed"] = False
    paths["unfused"]["passed"] = False
    goals = report.goals(paths, variants)
    assert [g["verdict"] for g in goals][:4] == ["not evaluable"] * 4
    assert goals[0]["measured"] == "no CUDA path passed the gate"


def test_phases_table_and_sentence(inputs):
    phases = section(render(inputs), "## Where the persistent epoch's time goes")
    assert "From `results/persistent_phases.json`" in phases
    assert "| barriers only | 0.2000 | 4.26 | 2.5% | — |" in phases
    assert "| A (forward hidden) | 0.5000 | 10.64 | 1.0% | +6.38 |" in phases
    assert "| A+B+C (training) | 1.1750 | 25.00 | 0.5% | +20.74 |" in phases
    assert ("Above the barrier-only epoch (4.26 µs a step), A (forward hidden) costs 6.38 µs a "
            "step, B (logits, softmax, dH) costs 8.51 µs a step, C (gradients and update) costs "
            "10.64 µs a step; the phases sum to 25.53 µs a step, and with the barriers to "
            "29.79 µs a step. The full epoch, A+B+C (training), measured 25.00 µs a step: "
            "4.79 µs a step (16.1%) less than that sum.") in phases
    assert "median 1.209 ms an epoch, 25.72 µs a step" in phases


def test_sanitize_and_phases_sections_only_when_their_files_exist(inputs):
    results = inputs[0]
    text = render(inputs)
    assert "## Where the persistent epoch's time goes" in text
    san = section(text, "## Sanitizers (compute-sanitizer)")
    assert ("From `results/sanitize.json`: 3 runs: 2 errors in all, 1 with a non-zero exit: "
            "**not clean**.") in san
    assert "| racecheck | path fused | 2 | 99 | 80.0 |" in san
    assert "not run to completion" not in san

    (results / "persistent_phases.json").unlink()
    (results / "sanitize.json").unlink()
    text = render(inputs)
    assert "persistent epoch's time goes" not in text and "phase split" not in text
    san = section(text, "## Sanitizers (compute-sanitizer)")
    assert ("Sanitizers were not run to completion in this run (there is no "
            "`results/sanitize.json`).") in san
    assert "No sanitizer log exists either." in san

    (results / "logs" / "sanitize.log").write_text(
        "sanitize: memcheck  path fused\n          -> 0 errors, exit 0\n"
        "sanitize: memcheck  entry points (binding)\n          -> 0 errors, exit 0\n"
        "sanitize: racecheck path unfused\n")
    san = section(render(inputs), "## Sanitizers (compute-sanitizer)")
    assert ("The log of the attempt is `results/logs/sanitize.log`; the runs it records as "
            "finished:") in san
    assert "| memcheck | entry points (binding) | 0 | 0 |" in san
    assert "The log ends during `racecheck path unfused`, which has no result." in san


def test_loss_curve_against_float64(inputs):
    loss = section(render(inputs), "## Loss curve against float64")
    assert ("| epoch | float64 reference | CUDA fused | CUDA unfused | CUDA graph | "
            "CUDA persistent | PyTorch eager |") in loss
    assert ("| 4 | 0.54538 | 0.54538 (0%) | 0.54538 (+0.00018%) | **2.30259 (+322.20%)** | "
            "**0.56174 (+3.00%)** | 0.54538 (+0.00037%) |") in loss
    assert len([line for line in loss.splitlines() if re.match(r"\| \d+ \|", line)]) == 5
    assert "CUDA persistent, epoch 4 (+3.00%)." in loss
    run = run_json(inputs)
    del run["paths"]["graph"]
    run["paths"]["persistent"]["loss_per_epoch"] = run["reference_fp64"]["loss_per_epoch"]
    save_run(inputs, run)
    assert "No difference above 2%." in render(inputs)


def test_nvidia_smi_and_commit(inputs):
    text = render(inputs)
    assert "Run of 2026-11-30T19:00:00Z, commit `abc1234`." in text
    assert "GPU state at the start of the run, as `results/logs/nvidia-smi.csv` records it:" in text
    assert ("| name | driver_version | clocks.current.sm [MHz] | clocks.current.memory [MHz] | "
            "temperature.gpu |") in text
    assert "| NVIDIA H200 | 580.159.04 | 1980 MHz | 3201 MHz | 41 |" in text
    (inputs[0] / "logs" / "nvidia-smi.csv").unlink()
    assert "GPU state at the start" not in render(inputs)


@pytest.mark.parametrize("name,content", [
    ("persistent_phases.json", "{not json"),
    ("persistent_phases.json", '{"variants": []}'),
    ("persistent_phases.json", '{"variants": [{"phases": "x", "mask": 0}]}'),
    ("persistent_phases.json", '{"variants": [{"phases": "x", "mask": 0, "median_ms": 1},'
                               ' {"phases": "y", "mask": 0, "median_ms": 2}]}'),
    ("sanitize.json", '{"runs": [{"tool": "memcheck", "target": "t", "exit_code": 0}]}'),
    ("sanitize.json", '{"clean": true}'),
    ("logs/nvidia-smi.csv", "name, driver_version\n"),
    ("logs/nvidia-smi.csv", "name, driver_version\nNVIDIA H200\n"),
    ("sweep.json", "{not json"),
    ("sweep.json", '{"schema": 2}'),
    ("full60k/sweep.json", "[]"),
    ("full60k/sweep.json", '{"schema": 1, "config": {}}'),
])
def test_malformed_optional_inputs_exit_naming_the_file(inputs, name, content):
    (inputs[0] / name).write_text(content)
    with pytest.raises(SystemExit) as info:
        render(inputs)
    one_line_exit(info, name)
    assert not inputs[2].exists()
    assert not (inputs[0] / "plots").exists()


def test_kernel_plot_labels_are_distinct(inputs):
    run = run_json(inputs)
    profiles = report.load_profiles(run, inputs[1])
    _, _, kernel_rows = report._plot_inputs(run, None, profiles)
    labels = [label for label, _ in kernel_rows]
    assert len(labels) == 10 and len(set(labels)) == 10
    assert "k_colsum<(Col)0>" in labels and "k_colsum<(Col)1>" in labels


REAL_RESULTS = ROOT / "results"


@pytest.mark.skipif(not (REAL_RESULTS / "run.json").is_file(), reason="no results/run.json")
def test_real_results_render_with_an_empty_profile_dir(tmp_path):
    # Whatever run is committed in results/: it renders without profile CSVs, twice the same.
    results = tmp_path / "results"
    shutil.copytree(REAL_RESULTS, results, ignore=shutil.ignore_patterns("plots", "*.npy"))
    profile = tmp_path / "profile"
    profile.mkdir()
    out = tmp_path / "RESULTS.md"
    first = render((results, profile, out))
    assert "No profile of this run exists for any path:" in first
    assert "### Goals (issue 6)" in first
    assert "verdict: **not measured in this run**" in first
    assert first == render((results, profile, out))


def test_hints_from_run_json_are_rendered(inputs):
    import json
    run_path = inputs[0] / "run.json"
    run = json.loads(run_path.read_text())
    run["hints"] = ["case 1 is not implemented yet: write mlp_forward (stage 1) next"]
    run_path.write_text(json.dumps(run))
    text = render(inputs)
    assert "What to fix next" in text and "write mlp_forward (stage 1) next" in text


def test_pytorch_trace_rows_are_listed_when_the_trace_exists(inputs):
    import json
    profile_dir = inputs[1]
    events = [{"ph": "X", "cat": "kernel", "name": "ampere_sgemm_32x32", "ts": 0, "dur": 12.5},
              {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_32x32", "ts": 20, "dur": 12.5},
              {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 0, "dur": 5.0}]
    (profile_dir / "pytorch_eager_trace.json").write_text(json.dumps({"traceEvents": events}))
    text = render(inputs)
    assert "PyTorch eager, one epoch (torch.profiler)" in text
    assert "| ampere_sgemm_32x32 | 2 | 25.0 | 12.50 | 100.0% |" in text


def test_no_pytorch_trace_section_without_the_trace(inputs):
    assert "torch.profiler)" not in render(inputs)


def test_sanitize_log_parser_reads_interleaved_parallel_runs():
    from analysis.report import sanitize_log_runs
    text = ("sanitize: memcheck  path fused\n"
            "sanitize: racecheck path graph\n"
            "sanitize: memcheck  path unfused\n"
            "sanitize: racecheck path graph -> 0 errors, exit 0 (12.5 s)\n"
            "sanitize: memcheck  path fused -> 3 errors, exit 99 (40.0 s)\n")
    done, unfinished = sanitize_log_runs(text)
    assert [(r["tool"], r["target"], r["errors"], r["exit_code"]) for r in done] == [
        ("racecheck", "path graph", "0", "0"), ("memcheck", "path fused", "3", "99")]
    assert unfinished == {"tool": "memcheck", "target": "path unfused"}


# ----------------------------------------------------------------------------- sweep sections

MIB = 2 ** 20
RECIPE_POINT = "h256_b128"   # the fixture run.json's recipe: hidden 256, batch 128


def chapter(text: str, heading: str) -> str:
    """The text of one '## ' section with its '### ' subsections, up to the next '## '."""
    return text.split(heading + "\n", 1)[1].split("\n## ", 1)[0].strip()


def sweep_point(results: Path, name: str = "sweep.json") -> dict:
    doc = json.loads((results / name).read_text())
    return next(p for p in doc["points"] if p["label"] == RECIPE_POINT)


def test_sweep_fixtures_are_what_make_synthetic_writes(tmp_path):
    """The committed synthetic sweep.json files are reproducible from their script."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("make_synthetic",
                                                  FIXTURES / "make_synthetic.py")
    make_synthetic = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_synthetic)
    for path in make_synthetic.write_sweeps(tmp_path):
        rel = path.relative_to(tmp_path)
        assert (FIXTURES / "results" / rel).read_bytes() == path.read_bytes(), rel


def test_memory_and_cost_numbers_trace_to_the_inputs(inputs):
    results = inputs[0]
    text = render(inputs)
    mem = chapter(text, "## Memory and cost")
    point = sweep_point(results)
    led = point["memory"]["ledger"]
    total, opt = led["total_sgd_momentum_bytes"], led["optimizer_state_bytes"]
    assert mem.startswith("From `results/sweep.json` (run of 2026-01-01T00:00:00Z, commit "
                          "`synthetic`): its point `h256_b128`, run.json's recipe (hidden width "
                          "256, batch 128), trained for 20 epochs of 6,000 images (47 steps an "
                          "epoch)")
    # The ledger: bytes and MiB of each item, as sweep.json holds them.
    assert (f"| parameters | {point['n_params']:,} float32 values: the weights and biases | "
            f"{led['parameters_bytes']:,} | {led['parameters_bytes'] / MIB:.2f} |") in mem
    assert f"| data | {json.loads((results / 'sweep.json').read_text())['notes']['data']} |" in mem
    assert "| orders | 20 epoch orders of 6,000 int32 indices" in mem
    assert f"| **total** | the items above | {total:,} | {total / MIB:.2f} |" in mem
    # The measured peaks: the sweep point's from sweep.json, the training run's from run.json
    # and pytorch.json, each against the ledger.
    peak = point["memory"]["cuda_peak_used_bytes"]
    run_peak = run_json(inputs)["memory"]["peak_used_bytes"]
    torch = json.loads((results / "pytorch.json").read_text())["variants"]
    eager_peak = torch["eager"]["max_memory_allocated_bytes"]
    point_eager = point["memory"]["torch_max_memory_allocated_bytes"]["eager"]
    assert (f"| CUDA binary: device memory in use at its lowest free point (`cudaMemGetInfo`) | "
            f"{peak / MIB:.2f} MiB ({peak / total:.2f}× the ledger) | "
            f"{run_peak / MIB:.2f} MiB ({run_peak / total:.2f}× the ledger) |") in mem
    assert (f"| PyTorch eager: `torch.cuda.max_memory_allocated` | "
            f"{point_eager / MIB:.2f} MiB ({point_eager / total:.2f}× the ledger) | "
            f"{eager_peak / MIB:.2f} MiB ({eager_peak / total:.2f}× the ledger) |") in mem
    assert "the same ledger." in mem
    # Optimizer state: SGD, momentum, Adam, and the ledger total with each.
    assert "| plain SGD | none | 0 | 0.00 | " f"{(total - opt['sgd_momentum']) / MIB:.2f} |" in mem
    assert (f"| Adam | two moments per parameter | {opt['adam']:,} | {opt['adam'] / MIB:.2f} | "
            f"{(total - opt['sgd_momentum'] + opt['adam']) / MIB:.2f} |") in mem
    # Throughput and cost of the best CUDA path and the two PyTorch variants.
    best = point["best_cuda"]
    assert (f"| CUDA `{point['best_cuda_path']}`, the best path | {best['median_ms']:.3f} "
            f"({best['cv_pct']:.1f}%) | {round(best['images_per_s']):,} | {best['step_us']:.2f} | "
            f"{best['gpu_s_per_1000_images']:.6f} | — |") in mem
    graph = point["pytorch"]["cuda-graph"]
    assert (f"| PyTorch cuda-graph | {graph['median_ms']:.3f} ({graph['cv_pct']:.1f}%) | "
            f"{round(graph['images_per_s']):,} | {graph['step_us']:.2f} | "
            f"{graph['gpu_s_per_1000_images']:.5f} | "
            f"{1 / point['ratio_best_cuda_vs_cuda_graph']:.2f}× |") in mem
    assert "GPU-seconds per 1,000 images" in mem
    assert "is in [SWEEP.md](" in mem
    # A changed input changes the section.
    doc = json.loads((results / "sweep.json").read_text())
    sweep_point_of = {p["label"]: p for p in doc["points"]}[RECIPE_POINT]
    sweep_point_of["memory"]["cuda_peak_used_bytes"] = 3 * MIB
    (results / "sweep.json").write_text(json.dumps(doc))
    assert "| 3.00 MiB (" in chapter(render(inputs), "## Memory and cost")


def test_memory_without_measured_peaks_or_with_another_recipe(inputs):
    results = inputs[0]
    run = run_json(inputs)
    del run["memory"]                                   # an older run.json
    run["recipe"]["epochs"] = 10                        # another ledger (fewer orders)
    save_run(inputs, run)
    (results / "pytorch.json").unlink()
    mem = chapter(render(inputs), "## Memory and cost")
    rows = [line for line in mem.splitlines() if line.startswith("| CUDA binary")
            or line.startswith("| PyTorch eager: ")]
    assert all(line.endswith("| — |") for line in rows) and len(rows) == 2
    assert "`results/pytorch.json`, which does not exist." in mem
    from harness.sweep import ledger
    other = ledger(203530, 256, 128, 784, 10, 6000, 10000, 10)["total_sgd_momentum_bytes"]
    assert (f"The training run's recipe gives another ledger, {other / MIB:.2f} MiB in all"
            in mem)


def test_full_split_numbers_trace_to_its_sweep_json(inputs):
    results = inputs[0]
    text = render(inputs)
    full = chapter(text, "## The full 60,000-image train split")
    point, subset = sweep_point(results, "full60k/sweep.json"), sweep_point(results)
    assert full.startswith("From `results/full60k/sweep.json` (run of 2026-01-01T00:00:00Z, "
                           "commit `synthetic`): the point `h256_b128` (run.json's recipe) "
                           "trained on `data/full`, 60,000 training images an epoch, for 5 "
                           "epochs; beside it the same point of the shipped subset, from "
                           "`results/sweep.json`.")
    assert ("| | full split (`results/full60k/sweep.json`) | shipped subset "
            "(`results/sweep.json`) |") in full
    assert "| data folder | `data/full` | `data` |" in full
    assert "| training images an epoch | 60,000 | 6,000 |" in full
    assert "| epochs (the first a warm-up, not timed) | 5 | 20 |" in full
    assert f"| steps an epoch | {point['steps_per_epoch']} | 47 |" in full

    def median(m):
        return f"{m['median_ms']:.3f} ({m['cv_pct']:.1f}%)"

    assert (f"| its median epoch, ms (CV) | {median(point['best_cuda'])} | "
            f"{median(subset['best_cuda'])} |") in full
    assert (f"| its images/s | {round(point['best_cuda']['images_per_s']):,} | "
            f"{round(subset['best_cuda']['images_per_s']):,} |") in full
    assert (f"| PyTorch eager median epoch, ms (CV) | {median(point['pytorch']['eager'])} | "
            f"{median(subset['pytorch']['eager'])} |") in full
    assert (f"| best / eager median | {point['ratio_best_cuda_vs_eager']:.3g}× | "
            f"{subset['ratio_best_cuda_vs_eager']:.3g}× |") in full
    assert (f"| test accuracy, last epoch: best CUDA path | "
            f"{100 * point['best_cuda']['test_accuracy']:.2f}% | "
            f"{100 * subset['best_cuda']['test_accuracy']:.2f}% |") in full
    # Without the subset's sweep, the full split stands alone.
    (results / "sweep.json").unlink()
    full = chapter(render(inputs), "## The full 60,000-image train split")
    assert "; there is no `results/sweep.json` to set beside it." in full
    assert "| | full split (`results/full60k/sweep.json`) |\n|---|---:|\n" in full
    assert f"| its median epoch, ms (CV) | {median(point['best_cuda'])} |\n" in full


def test_without_the_sweeps_each_section_is_one_sentence(inputs):
    results = inputs[0]
    (results / "sweep.json").unlink()
    (results / "full60k" / "sweep.json").unlink()
    text = render(inputs)
    assert chapter(text, "## Memory and cost") == (
        "The width and batch sweep was not run: there is no `results/sweep.json` "
        "(`python -m harness.sweep` writes it), so no memory ledger, measured peak or cost is "
        "shown.")
    assert chapter(text, "## The full 60,000-image train split") == (
        "The full train split was not run: there is no `results/full60k/sweep.json` "
        "(`python -m harness.sweep --full --widths 256 --batches none --epochs 5 "
        "--results results/full60k` writes it).")
    assert "[SWEEP.md](" not in text                  # no link to a sweep that was not run
    assert "## Profiles (Nsight Systems, one epoch)" in text   # the rest still renders


def test_a_sweep_without_the_recipe_point_says_so(inputs):
    results = inputs[0]
    doc = json.loads((results / "full60k" / "sweep.json").read_text())
    doc["points"] = [p for p in doc["points"] if p["label"] != RECIPE_POINT]
    (results / "full60k" / "sweep.json").write_text(json.dumps(doc))
    full = chapter(render(inputs), "## The full 60,000-image train split")
    assert full == ("`results/full60k/sweep.json` has no point `h256_b128`, run.json's "
                            "recipe; the points it holds: none.")


def test_a_failed_recipe_point_lists_its_problems(inputs):
    results = inputs[0]
    doc = json.loads((results / "sweep.json").read_text())
    p = {q["label"]: q for q in doc["points"]}[RECIPE_POINT]
    p["status"], p["errors"] = "partial", ["pytorch cuda-graph: RuntimeError: capture failed"]
    p["pytorch"]["cuda-graph"] = {"passed": False, "error": "RuntimeError: capture failed"}
    p["ratio_best_cuda_vs_cuda_graph"] = None
    (results / "sweep.json").write_text(json.dumps(doc))
    mem = chapter(render(inputs), "## Memory and cost")
    assert ("Problems at `h256_b128` (status partial): pytorch cuda-graph: RuntimeError: "
            "capture failed.") in mem
    assert ("| PyTorch cuda-graph | failed: RuntimeError: capture failed | — | — | — | — |"
            in mem)


@pytest.mark.parametrize("name,edit,where", [
    ("sweep.json", lambda d: d["points"][1]["memory"]["ledger"].update(parameters_bytes="big"),
     "points[1].memory.ledger.'parameters_bytes'"),
    ("sweep.json", lambda d: d["points"][1]["memory"].update(
        torch_max_memory_allocated_bytes={"eager": "lots"}),
     "points[1].memory.torch_max_memory_allocated_bytes.'eager'"),
    ("full60k/sweep.json", lambda d: d["points"][0]["cuda"]["fused"].update(median_ms="fast"),
     "points[0].cuda.fused.'median_ms'"),
    ("run.json", lambda d: d.update(memory={"peak_used_bytes": "lots"}),
     "memory.peak_used_bytes is not a number"),
    ("pytorch.json", lambda d: d["variants"]["eager"].update(max_memory_allocated_bytes=[1]),
     "max_memory_allocated_bytes is not a number"),
])
def test_malformed_memory_and_sweep_fields_exit_naming_the_file(inputs, name, edit, where):
    path = inputs[0] / name
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(SystemExit) as info:
        render(inputs)
    assert where in one_line_exit(info, str(path))
    assert not inputs[2].exists()


# ----------------------------------------------------------------------------- the committed run

@pytest.mark.skipif(not (REAL_RESULTS / "run.json").is_file(),
                    reason="no results/run.json: no committed run to re-render")
def test_committed_results_md_rerenders_byte_for_byte(tmp_path):
    """RESULTS.md is what `python -m analysis.report` makes of the committed results/, profile/,
    predictions.toml and GAPS.toml. Rendered again into tmp_path, laid out as in the repository
    (RESULTS.md beside SWEEP.md, the plots in results/plots/) so that every relative link is the
    same, it must be the committed file byte for byte; the committed plots are left alone."""
    import difflib
    from harness.config import PROFILE_DIR
    out = tmp_path / "RESULTS.md"
    report.render(REAL_RESULTS, PROFILE_DIR, PREDICTIONS, GAPS, out,
                  plots_dir=tmp_path / "results" / "plots", sweep_md=tmp_path / "SWEEP.md")
    committed = (ROOT / "RESULTS.md").read_bytes()
    rendered = out.read_bytes()
    if rendered != committed:
        diff = difflib.unified_diff(committed.decode("utf-8", "replace").splitlines(),
                                    rendered.decode("utf-8", "replace").splitlines(),
                                    "RESULTS.md (committed)", "RESULTS.md (rendered)",
                                    lineterm="", n=1)
        pytest.fail("RESULTS.md differs from what its inputs render to (run "
                    "`python -m analysis.report`):\n" + "\n".join(list(diff)[:60]))


def test_ncu_counters_section_quotes_the_pages(inputs):
    from analysis.ncu_csv import read_counters
    text = render(inputs)
    assert "### Hardware counters (Nsight Compute)" not in text  # no results/ncu: no section
    shutil.copytree(FIXTURES / "ncu", inputs[0] / "ncu")
    text = render(inputs)
    sec = text[text.index("### Hardware counters (Nsight Compute)"):text.index("## Predictions")]
    [k] = read_counters(FIXTURES / "ncu" / "persistent_details.csv", FIXTURES / "ncu" / "persistent_raw.csv")
    row = next(line for line in sec.splitlines() if "`k_persistent_epoch`" in line)
    assert row.startswith("| persistent |")
    assert k["metrics"]["achieved occupancy"] in row and k["metrics"]["SM throughput"] in row
    reason, _, share = k["stalls"][0]
    assert f"{reason} {report.fmt_pct(share)}" in row
    assert f"- `{reason}`: " in sec
    # The persistent table comes first, then the fused path's two launches in ID order.
    kernels = [line.split("|")[2].strip() for line in sec.splitlines() if line.startswith("| persistent |")
               or line.startswith("| fused |")]
    assert kernels == ["`k_persistent_epoch`", "`k_fwd_hidden_bias_relu`", "`k_dW1`"]


def test_a_broken_ncu_page_stops_the_report_naming_it(inputs):
    (inputs[0] / "ncu").mkdir()
    (inputs[0] / "ncu" / "fused_details.csv").write_text("a,b\n1,2\n")
    with pytest.raises(SystemExit, match=r"fused_details\.csv: not an ncu details CSV"):
        render(inputs)
    assert not inputs[2].exists()


def test_phase_breakdown_takes_the_v3_staging_row(inputs):
    """A variant beyond the single phases (results/experiments/persistent_v4 timed mask 15, v3's
    scalar phase-C staging, beside v4): a row of its own, not a single phase, and the full-epoch
    comparison still uses mask 7."""
    phases_path = inputs[0] / "persistent_phases.json"
    doc = json.loads(phases_path.read_text())
    doc["variants"].append({"phases": "A+B+C, v3 scalar C staging", "mask": 15, "median_ms": 1.2889, "cv_pct": 0.5})
    phases_path.write_text(json.dumps(doc))
    out = report.phase_breakdown(doc, run_json(inputs))
    assert out["rows"][-1]["phases"] == "A+B+C, v3 scalar C staging"
    full = next(v for v in doc["variants"] if v["mask"] == 7)
    assert full["phases"] in out["sentence"]
    assert "v3 scalar" not in out["sentence"]
    assert "| A+B+C, v3 scalar C staging |" in render(inputs)


def test_phase_breakdown_compares_the_persistent2_rows_apart(inputs):
    """Rows with mask bit 32 time k_persistent2_epoch (two barriers): no cost 'above' the
    persistent kernel's barrier-only epoch, never a single phase, and one sentence setting the
    training row against the other persistent2 row in the same process."""
    phases_path = inputs[0] / "persistent_phases.json"
    doc = json.loads(phases_path.read_text())
    doc["variants"] += [{"phases": "persistent2, training", "mask": 39, "median_ms": 0.9, "cv_pct": 0.5},
                        {"phases": "persistent2, v4 scalar next-batch staging", "mask": 55, "median_ms": 1.0,
                         "cv_pct": 0.5}]
    phases_path.write_text(json.dumps(doc))
    out = report.phase_breakdown(doc, run_json(inputs))
    rows = {r["phases"]: r for r in out["rows"]}
    assert rows["persistent2, training"]["above"] == "—" and rows["persistent2, v4 scalar next-batch staging"]["above"] == "—"
    steps = run_json(inputs)["recipe"]["steps_per_epoch"]
    a, b = 900.0 / steps, 1000.0 / steps
    assert (f'"persistent2, training" {a:.2f} µs a step against "persistent2, v4 scalar next-batch staging" '
            f"{b:.2f} µs in the same process, {b - a:.2f} µs") in out["sentence"]
    assert out["sentence"].rstrip().endswith("less.")


def test_roofline_says_when_the_stepwise_gemms_accumulate_in_float64(inputs):
    """build.accumulate == "double" adds the half-rate caveat to the roofline's method, and the
    setup table names the accumulator; a build without the field (older runs) gets neither."""
    text = render(inputs)
    assert "float64 FMAs" not in text and "Stepwise GEMM accumulator" not in text
    run = run_json(inputs)
    run["build"]["accumulate"] = "double"
    save_run(inputs, run)
    text = render(inputs)
    assert "their multiply-adds are float64 FMAs" in text
    assert "| Stepwise GEMM accumulator | double (" in text
