"""The report's round-2 sections on fixtures: the PyTorch variants line and setup table, the three
PyTorch profiling studies (memory by optimizer, step time against batch, Linear kernels), the
distance to the floor with and without results/stationary_phases.json, skipped and reduced
paths and device caps (run.json of a smaller device), rendering another results folder into
another output, and SWEEP.md's note on PyTorch's fastest variant.

tests/fixtures/studies/ holds SYNTHETIC study files (README there); tests/fixtures/results the
synthetic run.json and friends the other report tests use."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from analysis import render as renderer
from analysis import report
from analysis.loaders import load_inputs
from analysis.sections import floor, sweep, torch_studies
from analysis.sections.profiles import MEASURES
from spec.files import ROOT

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PREDICTIONS, GAPS = ROOT / "predictions.toml", ROOT / "GAPS.toml"
STUDIES = ("torch_memory.json", "torch_batch_steps.json", "torch_linear_kernels.json")


@pytest.fixture
def results(tmp_path):
    res = tmp_path / "results"
    shutil.copytree(FIXTURES / "results", res)
    for name in STUDIES:
        shutil.copy(FIXTURES / "studies" / name, res / name)
    return res


def edit(path: Path, change) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def render(results: Path) -> str:
    out = results.parent / "out"
    report.render(results, results.parent / "no-profile", PREDICTIONS, GAPS, out / "RESULTS.md",
                  plots_dir=out / "plots")
    return (out / "RESULTS.md").read_text(encoding="utf-8")


def context(results: Path) -> dict:
    return renderer.results_context(load_inputs(results, results.parent / "no-profile",
                                                PREDICTIONS, GAPS, MEASURES))


def summary_lines(text: str) -> list[str]:
    """The summary's bullets, without the indented list of evidence from other commits."""
    return [ln for ln in text.split("## Summary\n", 1)[1].split("\n## ", 1)[0].strip().splitlines()
            if not ln.startswith("  - ")]


def add_stationary(results: Path, median_ms: float = 0.47) -> None:
    """A passing `stationary` path, the fastest: 0.47 ms over 47 steps = 10 µs a step."""
    def change(doc):
        rec = dict(doc["paths"]["persistent"])
        rec.update(median_ms=median_ms, mean_ms=median_ms, min_ms=median_ms, max_ms=median_ms)
        doc["paths"]["stationary"] = rec
    edit(results / "run.json", change)


# ----------------------------------------------------------------------------- PyTorch variants

def test_variants_line_names_what_ran_and_why_the_rest_did_not(results):
    def change(doc):
        doc["variants_run"] = list(doc["variants"])[:3]
        doc["variants_left_out"] = {"slow-variant": "its compile takes minutes; runs with --full"}
    edit(results / "pytorch.json", change)
    lines = summary_lines(render(results))
    line = next(ln for ln in lines if ln.startswith("- PyTorch variants run"))
    assert "`eager`, `eager-fused-sgd`, `cuda-graph`" in line
    assert "`slow-variant` (its compile takes minutes; runs with --full)" in line
    assert len(lines) <= 12


def test_compile_seconds_apart_and_graph_skips_flagged(results):
    def change(doc):
        doc["variants"]["compiled-reduce-overhead"] |= {"compile_seconds": 8.9,
                                                        "cudagraph_skips": 2}
        doc["variants"]["cuda-graph"] |= {"capture_seconds": 0.0054, "cudagraph_skips": 0}
    edit(results / "pytorch.json", change)
    text = render(results)
    table = text.split("### PyTorch variants: setup apart", 1)[1].split("### Tier", 1)[0]
    row = next(ln for ln in table.splitlines() if ln.startswith("| compiled-reduce-overhead |"))
    assert "| 8.9 |" in row and "**2: ran without its CUDA graphs**" in row
    graph = next(ln for ln in table.splitlines() if ln.startswith("| cuda-graph |"))
    assert "0.005" in graph and "ran without" not in graph
    assert context(results)["torch_variants"]["flagged"] == ["compiled-reduce-overhead"]


def test_no_setup_table_without_setup_seconds(results):
    def change(doc):
        for rec in doc["variants"].values():
            for k in ("compile_seconds", "capture_seconds", "setup_seconds"):
                rec.pop(k, None)
    edit(results / "pytorch.json", change)
    assert "### PyTorch variants: setup apart" not in render(results)


# ----------------------------------------------------------------------------- the studies

def test_memory_table_sets_each_group_beside_the_ledger_and_our_peak(results):
    ctx = context(results)
    mem = ctx["torch_memory"]
    doc = json.loads((results / "torch_memory.json").read_text())
    for r in mem["rows"]:
        for col, cell in zip(mem["cols"], r["cells"]):
            o = doc["optimizers"][col["key"]]
            assert cell["measured"] == o["groups_peak"][r["group"]]
            assert cell["ledger"] == o["ledger_bytes"].get(r["group"])
    assert [t["ledger_sum"] for t in mem["totals"]] == [2400, 3400, 4400]
    run = json.loads((results / "run.json").read_text())
    assert mem["ours_peak"] == run["memory"]["peak_used_bytes"]
    text = render(results)
    section = text.split("## PyTorch: memory", 1)[1].split("\n## ", 1)[0]
    assert "| gradients | 1,004 | 1,000 | 1,004 | 1,000 | 1,004 | 1,000 |" in section
    assert "| inputs (the batch and the train set) | 700 | — |" in section
    assert "torch_memory_adam.html" in section and "torch_memory.png" in section
    assert "the file records no commit" in section


def test_batch_sentence_is_computed_from_the_rows(results):
    bs = context(results)["torch_batch"]
    assert bs["work"] == 64 and bs["time"] == pytest.approx(1.2)
    assert bs["kernel"] == pytest.approx(4.0)
    assert (bs["busy_min"], bs["busy_max"]) == (0.025, 0.10)
    assert bs["host_share_min"] == pytest.approx(0.9) and bs["host_bound"]
    text = render(results)
    assert ("Why 64.00× the work is not 64.00× the time: from batch 32 to 2,048 the untraced "
            "step goes 1.20× (1000.0 → 1200.0 µs) and the summed kernel time 4.00×") in text
    assert "the step time is the host's issue time" in text


def test_batch_sentence_does_not_blame_the_host_when_the_gpu_is_busy(results):
    edit(results / "torch_batch_steps.json",
         lambda d: d["batches"][-1].update(host_us_per_step=500.0, gpu_busy_fraction=0.9))
    text = render(results)
    assert "the host is not what holds the larger batches' step" in text
    assert "the step time is the host's issue time" not in text


def test_linear_table_names_kernels_without_parameter_lists(results):
    ln = context(results)["torch_linear"]
    assert ln["batches"] == [32, 1024]
    names = [k["name"] for g in ln["groups"] for k in g["kernels"]]
    assert "gemm_test_kernel<64, 64>" in names and "Memset (Device)" in names
    back = next(g for g in ln["groups"] if g["batch"] == 1024 and g["layer"] == "fc1"
                and g["phase"] == "backward")
    assert back["gpu_us"] == pytest.approx(2.0)
    assert torch_studies.short_kernel("void f<(int)1>(a<b>, c)") == "f<(int)1>"


def test_studies_absent_render_not_measured_lines(results):
    for name in STUDIES:
        (results / name).unlink()
    text = render(results)
    assert "Not measured: there is no `" in text.split("## PyTorch: memory", 1)[1]
    assert text.count("Not measured: there is no") >= 3


def test_a_bad_study_field_is_one_line_exit_2(results, capsys):
    edit(results / "torch_memory.json",
         lambda d: d["optimizers"]["sgd"]["groups_peak"].update(inputs="many"))
    out = results.parent / "out"
    rc = report.main(["--results", str(results), "--out", str(out / "RESULTS.md")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "torch_memory.json" in err and "'inputs'" in err
    assert not (out / "RESULTS.md").exists()


# ----------------------------------------------------------------------------- the floor

def test_floor_for_stationary_without_its_phase_file_says_not_measured(results):
    add_stationary(results)
    ctx = context(results)
    fl = ctx["floor"]
    assert fl["path"] == "stationary" and fl["measured_us"] == pytest.approx(10.0)
    fma, sync, cluster, nbytes, rest = fl["terms"]
    assert fma["mflop"] == pytest.approx(105, rel=0.02)
    assert fma["us"] == pytest.approx(fma["count"] / 50e6)      # 50 TFLOP/s
    assert sync["us"] is None and sync["why"] == "no_file"
    assert cluster["term"] == "cluster_sync" and cluster["us"] is None and cluster["why"] == "no_file"
    assert nbytes["count"] == pytest.approx((6000 * 784 + 6000 * 4) / 47)
    assert nbytes["us"] == pytest.approx(nbytes["count"] / 4e6)  # 4000 GB/s
    assert rest["us"] == pytest.approx(10.0 - fma["us"] - nbytes["us"]) and not rest["complete"]
    text = render(results)
    assert "| cross-SM synchronisation | not measured: there is no `" in text
    assert "| cluster barriers | not measured: there is no `" in text
    assert "## Where the stationary epoch's time goes\n\nNot measured" in text
    assert ctx["summary"]["limit"] is None or ctx["summary"]["limit"]["source"] != "stationary"


def test_floor_and_summary_use_the_stationary_phases_when_present(results):
    add_stationary(results)
    shutil.copy(FIXTURES / "studies" / "stationary_phases.json", results)
    ctx = context(results)
    fl = ctx["floor"]
    sync, cluster, rest = fl["terms"][1], fl["terms"][2], fl["terms"][-1]
    assert sync["us"] == 4.0 and sync["phase"] == "counter wait"
    # both cluster barriers, slowest block, summed; the remainder is what no term counts
    assert cluster["us"] == pytest.approx(2.0) and cluster["count"] == 2
    assert cluster["phases"] == ["cluster barrier A", "cluster barrier B"]
    assert rest["us"] == pytest.approx(10.0 - sum(t["us"] for t in fl["terms"][:-1])) and rest["complete"]
    lim = ctx["summary"]["limit"]
    assert lim["source"] == "stationary" and lim["top"]["name"] == "counter wait"
    assert lim["top"]["share"] == pytest.approx(0.4)
    st = ctx["stationary"]
    assert st["variants"][1]["vs_shipped"] == pytest.approx(-0.05)
    text = render(results)
    line = next(ln for ln in summary_lines(text) if ln.startswith("- **What limits it**"))
    assert '"counter wait" takes 4.00 µs of its 10.00 µs a step (40.0%' in line
    assert "| counter wait | 4.00 | 3.00 | 40.0% |" in text
    assert '| cluster barriers | 2 a step ("cluster barrier A", "cluster barrier B" of `' in text
    assert "Wait skew" in text and "| nofence | 9.50 |" in text
    assert (results.parent / "out" / "plots" / "stationary_phases.png").is_file()


def test_floor_for_persistent_counts_three_barriers_from_its_barrier_row(results):
    ctx = context(results)
    fl = ctx["floor"]
    assert fl["path"] == "persistent"
    sync = fl["terms"][1]
    barrier_us = 0.2 * 1000 / 47
    assert sync["us"] == pytest.approx(barrier_us)
    assert sync["unit_cost"] == pytest.approx(barrier_us / 3) and sync["count"] == 3
    assert "3 grid barriers a step" in render(results)


def test_floor_without_ceilings_is_one_line(results):
    (results / "ceilings.json").unlink()
    assert "Not computed: there is no `" in render(results).split("## Distance to the floor", 1)[1]


# ----------------------------------------------------------------------------- smaller devices

def skip_persistent(doc):
    doc["paths"]["persistent"] = {"skipped": "needs 98 KB of shared memory per block, the "
                                             "device allows 64 KB", "config": None,
                                  "median_ms": None, "mean_ms": None}
    doc["paths"]["fused"]["config"] = "K chunk 512 (64 KB shared/block)"
    doc["device_limits"] = {"smem_per_block_optin": 65536, "sms": 40, "threads_per_sm": 1024,
                            "capped": {"MLP_CAP_SMEM_PER_BLOCK": 65536, "MLP_CAP_SMS": 40}}


def test_a_skipped_path_is_a_row_not_a_failure_and_caps_are_one_line(results):
    edit(results / "run.json", skip_persistent)
    ctx = context(results)
    assert "persistent" not in ctx["summary"]["failed_paths"]
    text = render(results)
    lines = summary_lines(text)
    gate = lines[0]
    assert "skipped on this device: `persistent` (needs 98 KB" in gate
    caps = next(ln for ln in lines if ln.startswith("- **Run under caps**"))
    assert "MLP_CAP_SMEM_PER_BLOCK=65536, MLP_CAP_SMS=40" in caps and "40 SMs" in caps
    assert "`fused` K chunk 512" in caps
    epoch = text.split("## Epoch time", 1)[1].split("### ", 1)[0]
    row = next(ln for ln in epoch.splitlines() if ln.startswith("| CUDA persistent |"))
    assert "skipped: needs 98 KB" in row and "FAILED" not in row
    assert "| CUDA fused (K chunk 512 (64 KB shared/block)) |" in epoch
    assert len(lines) <= 12


def test_the_gate_verdict_ignores_a_skipped_path_but_not_a_skipped_gated_one(results):
    edit(results / "run.json", skip_persistent)
    # the fixture's graph path fails on purpose; make it pass so only the skip is left
    edit(results / "run.json", lambda d: d["paths"]["graph"].update(passed=True, error=None))
    assert render(results).split("## Summary\n\n", 1)[1].startswith("- **Gate: PASS.**")
    edit(results / "run.json", lambda d: d["paths"].__setitem__(
        "fused", {"skipped": "synthetic", "config": None}))
    assert context(results)["summary"]["failed_paths"] == ["fused"]


def test_no_caps_line_when_nothing_is_capped(results):
    edit(results / "run.json", lambda d: d.update(device_limits={
        "smem_per_block_optin": 232448, "sms": 132, "threads_per_sm": 2048, "capped": {}}))
    assert "Run under caps" not in render(results)


def test_a_path_without_passed_or_skipped_is_a_schema_error(results, capsys):
    edit(results / "run.json", lambda d: d["paths"]["fused"].pop("passed"))
    rc = report.main(["--results", str(results), "--out", str(results.parent / "o.md")])
    assert rc == 2 and "paths.fused: missing key 'passed'" in capsys.readouterr().err


def test_another_results_folder_renders_into_its_own_output(results, capsys):
    """`--results DIR --out DIR/RESULTS.md`: PROFILES.md and plots beside it, and no profile
    of the repository's profile/ (DIR/profile is absent)."""
    edit(results / "run.json", skip_persistent)
    out = results / "RESULTS.md"
    assert report.main(["--results", str(results), "--out", str(out)]) == 0
    assert (results / "PROFILES.md").is_file() and (results / "plots" / "epoch_time.png").is_file()
    assert report.default_profile_dir(results) == results / "profile"
    assert report.default_profile_dir(ROOT / "results") == ROOT / "profile"
    text = out.read_text(encoding="utf-8")
    assert "Run under caps" in text
    assert context(results)["profiles"] == []


# ----------------------------------------------------------------------------- SWEEP.md

def test_sweep_names_pytorchs_fastest_variant_per_point():
    pts = [{"pytorch": {"eager": {"median_ms": 40.0}, "cuda-graph": {"median_ms": 5.0}}},
           {"pytorch": {"eager": {"median_ms": 4.0}, "cuda-graph": {"median_ms": 5.0}}},
           {"pytorch": {"cuda-graph": {"median_ms": 1.0, "passed": False}, "eager": None}}]
    assert sweep.fastest_torch(pts) == ["cuda-graph", "eager"]


def test_floor_module_reads_no_masks():
    text = Path(floor.__file__).read_text()
    assert "mask" not in text
