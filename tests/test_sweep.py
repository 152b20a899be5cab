"""The width and batch sweep (harness/studies/sweep.py) and its report (analysis/sweep_report.py), on the CPU.

The per-point results are SYNTHETIC: tests/fixtures/sweep/fake.py writes them (the committed
fixture points under tests/fixtures/sweep/results/, and, standing in for build/mlp_train and the
PyTorch baseline, the points of the driver tests). None of their numbers is a measurement.
"""
from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from analysis import sweep_report
from harness.studies import sweep
from spec import layout
from spec.files import InputError

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "sweep"
FAKE = FIXTURES / "fake.py"
sys.path.insert(0, str(FIXTURES))
import fake  # noqa: E402  (tests/fixtures/sweep/fake.py)

sys.path.remove(str(FIXTURES))


@pytest.fixture(autouse=True)
def no_git(monkeypatch):
    """sweep.json records the commit and driver; the tests call neither git nor nvidia-smi."""
    monkeypatch.setattr("spec.provenance.git_commit", lambda: "test-commit")
    monkeypatch.setattr("spec.provenance.driver_version", lambda: "test-driver")


# ----------------------------------------------------------------------------- arithmetic

def test_metrics_arithmetic():
    m = sweep.metrics({"median_ms": 2.0, "cv_pct": 1.5, "test_accuracy": 0.85, "passed": True,
                       "error": ""}, train_size=6000, steps=47)
    assert m["images_per_s"] == pytest.approx(6000 / 0.002)           # 3,000,000
    assert m["step_us"] == pytest.approx(2000 / 47)
    assert m["gpu_s_per_1000_images"] == pytest.approx(0.002 / 6000 * 1000)
    assert m["passed"] and m["cv_pct"] == 1.5 and m["test_accuracy"] == 0.85
    # a pytorch.json entry has no "passed": it passes with a median and no error
    assert sweep.metrics({"median_ms": 5.0}, 6000, 47)["passed"]
    assert not sweep.metrics({"error": "skipped: x"}, 6000, 47)["passed"]
    # a CUDA path that says passed but has no median (NaN -> null) did not pass
    failed = sweep.metrics({"passed": True, "median_ms": None}, 6000, 47)
    assert not failed["passed"] and failed["images_per_s"] is None


def test_points_deduplicate_the_shared_point():
    pts = sweep.sweep_points()
    labels = [p["label"] for p in pts]
    assert sweep.WIDTHS == (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
    assert sweep.BATCHES == (32, 64, 128, 256, 512, 1024, 2048)
    assert sweep.EXTRA_POINTS == ((4096, 2048),)
    assert len(labels) == len(set(labels)) == 9 + 7 - 1 + 1
    shared = next(p for p in pts if p["label"] == "h256_b128")
    assert shared["sweeps"] == ["width", "batch"]
    assert labels[:9] == [f"h{w}_b128" for w in sweep.WIDTHS]
    assert pts[-1] == {"label": "h4096_b2048", "hidden": 4096, "batch": 2048, "sweeps": ["extra"]}
    assert sweep.sweep_points([64], [], extra_points=()) == [
        {"label": "h64_b128", "hidden": 64, "batch": 128, "sweeps": ["width"]}]
    # an extra point that is also a sweep point runs once, tagged with both
    both = sweep.sweep_points([256], [], extra_points=[(256, 128), (512, 64)])
    assert [(p["label"], p["sweeps"]) for p in both] == [("h256_b128", ["width", "extra"]),
                                                          ("h512_b64", ["extra"])]


def test_parse_ints():
    assert sweep.parse_ints(None, (1, 2)) == [1, 2]
    assert sweep.parse_ints("64, 128", ()) == [64, 128]
    assert sweep.parse_ints("none", (1,)) == []
    for bad in ("64,x", "0", "abc", "", "64,64", "1_0", "-5", "99999"):
        with pytest.raises(InputError, match="--widths"):
            sweep.parse_ints(bad, ())
    with pytest.raises(InputError, match="no sweep point to run"):
        sweep.parse_points("none", "none")
    for bad in ("1", "0", "abc", "1001", "2.5"):
        with pytest.raises(InputError, match="--epochs"):
            sweep.parse_epochs(bad)
    assert sweep.parse_epochs(None) == 20 and sweep.parse_epochs("2") == 2
    # an extra point alone is a sweep
    assert sweep.parse_points("none", "none", [(4096, 2048)]) == ([], [])


def test_parse_extra_points():
    assert sweep.parse_extra_points(None) == [(4096, 2048)]
    assert sweep.parse_extra_points("none") == []
    assert sweep.parse_extra_points("4096x2048, 8192X512") == [(4096, 2048), (8192, 512)]
    assert sweep.parse_extra_points([(64, 32)]) == [(64, 32)]
    for bad in ("4096", "4096x", "x2048", "4096x2048,4096x2048", "0x128", "99999x128",
                "128x999999", "", "4096*2048"):
        with pytest.raises(InputError, match="--points"):
            sweep.parse_extra_points(bad)
    # on the command line, both sweeps "none" is no sweep unless --points names points
    with pytest.raises(InputError, match="no sweep point to run"):
        sweep.main(["--widths", "none", "--batches", "none"])
    with pytest.raises(InputError, match="no sweep point to run"):
        sweep.main(["--widths", "none", "--batches", "none", "--points", "none"])


# ----------------------------------------------------------------------------- collection

def test_fixture_points_are_what_fake_py_writes(tmp_path):
    """The committed synthetic points are reproducible from their script."""
    for path in fake.write_fixtures(tmp_path):
        rel = path.relative_to(tmp_path)
        assert (FIXTURES / "results" / rel).read_bytes() == path.read_bytes(), rel


CEILINGS = HERE / "fixtures" / "results" / "ceilings.json"   # SYNTHETIC: 50 TFLOP/s, 4,000 GB/s


def _fixture_results(tmp_path, ceilings: bool = True) -> Path:
    dst = tmp_path / "results"
    shutil.copytree(FIXTURES / "results", dst)
    if ceilings:
        shutil.copy(CEILINGS, dst / "ceilings.json")
    return dst


def test_collect_fixture_points(tmp_path):
    results = _fixture_results(tmp_path)
    doc = sweep.collect(results, widths=[64, 256], batches=[128, 512])
    written = json.loads((results / "sweep.json").read_text())
    assert written == json.loads(json.dumps(doc))
    assert written["gpu"]["name"].startswith("SYNTHETIC")
    assert written["date_utc"] == "2026-01-01T00:00:00Z"
    pts = {p["label"]: p for p in written["points"]}
    assert list(pts) == ["h64_b128", "h256_b128", "h256_b512", "h4096_b2048"]
    assert pts["h256_b128"]["sweeps"] == ["width", "batch"]
    assert pts["h4096_b2048"]["sweeps"] == ["extra"]          # the default extra point
    assert written["config"]["extra_points"] == [[4096, 2048]]
    assert written["complete"] is True and written["folders_not_collected"] == []

    ok = pts["h256_b128"]
    assert ok["status"] == "ok" and ok["errors"] == []
    assert ok["best_cuda_path"] == "persistent"           # the lowest median of the four
    assert ok["cuda"]["persistent"]["median_ms"] < ok["cuda"]["fused"]["median_ms"]
    run = json.loads((results / "sweep" / "h256_b128" / "run.json").read_text())
    torch = json.loads((results / "sweep" / "h256_b128" / "pytorch.json").read_text())
    best_ms = run["paths"]["persistent"]["median_ms"]
    medians = {n: v["median_ms"] for n, v in torch["variants"].items()}
    assert ok["ratio_best_cuda_vs"] == pytest.approx({n: best_ms / m for n, m in medians.items()})
    assert ok["ratio_best_cuda_vs_eager"] == pytest.approx(best_ms / medians["eager"])
    assert ok["ratio_best_cuda_vs_cuda_graph"] == pytest.approx(best_ms / medians["cuda-graph"])
    # the fastest passed variant, named, and the headline ratio against it
    assert ok["fastest_pytorch_variant"] == min(medians, key=medians.get) == "cuda-graph"
    assert ok["fastest_pytorch_median_ms"] == medians["cuda-graph"]
    assert ok["ratio_best_cuda_vs_fastest_pytorch"] == pytest.approx(best_ms / medians["cuda-graph"])
    assert ok["best_cuda"]["images_per_s"] == pytest.approx(6000 / (best_ms / 1000))
    assert ok["best_cuda"]["step_us"] == pytest.approx(best_ms * 1000 / 47)
    assert ok["pytorch"]["eager"]["test_accuracy"] == torch["variants"]["eager"]["test_accuracy"]
    assert ok["torch_tf32"] == {"matmul_allow_tf32": False, "cudnn_allow_tf32": False,
                                "float32_matmul_precision": "highest"}
    # accumulators and the float64 parity, per path
    assert {n: m["accumulator"] for n, m in ok["cuda"].items()} == {
        "persistent": "float64", "fused": "float64", "tiled": "float32", "stationary": "float64"}
    assert ok["best_cuda"]["parity_vs_fp64"] == run["paths"]["persistent"]["parity_vs_fp64"]
    assert ok["best_cuda"]["parity_limit"] == 0.01 and ok["best_cuda"]["parity_ok"] is True
    assert ok["best_cuda"]["epoch1_test_accuracy"] == run["paths"]["persistent"]["test_accuracy_per_epoch"][0]
    assert ok["fp64_reference"] == run["fp64_reference"]
    assert ok["fp64_epoch1_test_accuracy"] == run["fp64_reference"]["test_accuracy"]
    assert ok["skipped_paths"] == {}                       # stationary runs at the recipe's shape
    mem = ok["memory"]
    assert mem["cuda_peak_used_bytes"] == run["memory"]["peak_used_bytes"]
    assert mem["torch_max_memory_allocated_bytes"]["eager"] == \
        torch["variants"]["eager"]["max_memory_allocated_bytes"]
    assert mem["ledger"]["parameters_bytes"] == 814_120
    # the roofline, on the fixture's ceilings
    assert written["roofline"]["ceilings"]["fp32_tflops"] == 50.0
    assert written["roofline"]["absent"] is None
    roof = ok["roofline"]
    assert roof["steps"] == 47 and roof["last_batch"] == 112
    assert roof["best"]["path"] == "persistent" and roof["best"]["ms"] == best_ms
    assert roof["best"]["share_of_floor"] == pytest.approx(roof["floor_ms"] / best_ms)
    assert roof["pytorch_fastest"]["variant"] == "cuda-graph"

    # a path that does not fit is skipped: recorded with its reason, not an error
    small = pts["h64_b128"]
    assert small["status"] == "ok" and small["errors"] == []
    assert small["skipped_paths"] == {"stationary": fake.STATIONARY_SKIP}
    assert small["cuda"]["stationary"]["skipped"] == fake.STATIONARY_SKIP
    assert small["cuda"]["stationary"]["passed"] is False

    part = pts["h256_b512"]      # persistent failed, cuda-graph failed: recorded, not fatal
    assert part["status"] == "partial"
    assert part["best_cuda_path"] == "tiled"
    assert part["ratio_best_cuda_vs_cuda_graph"] is None and part["ratio_best_cuda_vs"]["cuda-graph"] is None
    assert part["fastest_pytorch_variant"] == "compiled-step"   # cuda-graph failed there
    assert any("persistent" in e and "cooperative" in e for e in part["errors"])
    assert any("cuda-graph" in e for e in part["errors"])
    assert not any("stationary" in e for e in part["errors"])  # skipped, no error

    extra = pts["h4096_b2048"]   # another fastest variant at the extra point
    assert extra["fastest_pytorch_variant"] == "compiled-step" and extra["best_cuda_path"] == "tiled"
    assert extra["best_cuda"]["accumulator"] == "float32"
    assert extra["roofline"]["steps"] == 3 and extra["roofline"]["last_batch"] == 6000 - 2 * 2048


def test_collect_without_ceilings_says_so(tmp_path):
    results = _fixture_results(tmp_path, ceilings=False)
    doc = sweep.collect(results, widths=[64], batches=[], extra_points=())
    assert doc["roofline"]["ceilings"] is None and "ceilings.json" in doc["roofline"]["absent"]
    assert doc["points"][0]["roofline"] is None
    (results / "ceilings.json").write_text(json.dumps({"schema": 1, "copy": {"gb_per_s": -1},
                                                       "fp32_matmul": {"tflops": 50}}))
    doc = sweep.collect(results, widths=[64], batches=[], extra_points=())
    assert "gb_per_s" in doc["roofline"]["absent"] and doc["points"][0]["roofline"] is None
    out, _ = _render(tmp_path, results / "sweep.json")
    assert "No roofline: no ceilings (" in out.read_text()


def test_collect_missing_point_is_recorded(tmp_path):
    results = _fixture_results(tmp_path)
    doc = sweep.collect(results, widths=[64, 8192], batches=[], extra_points=())
    missing = doc["points"][1]
    assert missing["label"] == "h8192_b128" and missing["status"] == "failed"
    assert missing["errors"] == ["mlp_train: not run"]
    assert doc["complete"] is False
    # the folders that are none of the points are left out, and named
    assert doc["folders_not_collected"] == ["h256_b128", "h256_b512", "h4096_b2048"]


def test_collect_only_cli_collects_every_default_point_found(tmp_path, capsys, monkeypatch):
    """--collect-only with the defaults: the four fixture folders among the 16 default points
    (the extra point included), the others "not run"; --report writes SWEEP.md with it."""
    results = _fixture_results(tmp_path)
    (results / "sweep" / "h999_b7").mkdir()                   # none of the points
    report = tmp_path / "SWEEP.md"
    monkeypatch.setattr(sweep, "SWEEP_MD", report)
    assert sweep.main(["--collect-only", "--results", str(results), "--report"]) == 0
    out = capsys.readouterr().out
    assert "collected 16 points (4 with a folder)" in out and "left out, not among the points: h999_b7" in out
    doc = json.loads((results / "sweep.json").read_text())
    pts = {p["label"]: p for p in doc["points"]}
    assert len(pts) == 16 and pts["h4096_b2048"]["status"] == "ok"
    assert pts["h16384_b128"]["errors"] == ["mlp_train: not run"]
    assert doc["complete"] is False
    text = report.read_text()
    assert "## Extra points" in text and "`h999_b7`" in text
    assert (results / "plots" / "sweep_speedup_vs_width.png").is_file()


# ----------------------------------------------------------------------------- the report

def _render(tmp_path, sweep_json: Path):
    out = tmp_path / "SWEEP.md"
    plots = tmp_path / "plots"
    sweep_report.render(sweep_json, out, plots_dir=plots)
    return out, plots


def test_render_is_byte_identical_twice(tmp_path):
    results = _fixture_results(tmp_path)
    sweep.collect(results, widths=[64, 256], batches=[128, 512])
    out, plots = _render(tmp_path, results / "sweep.json")
    first = {p.name: p.read_bytes() for p in [out, *sorted(plots.iterdir())]}
    assert set(first) == {"SWEEP.md", *sweep_report.PLOT_FILES.values()}
    out, plots = _render(tmp_path, results / "sweep.json")
    second = {p.name: p.read_bytes() for p in [out, *sorted(plots.iterdir())]}
    assert first == second
    text = first["SWEEP.md"].decode()
    assert "SYNTHETIC GPU" in text and "## Width sweep (batch 128)" in text
    assert "## Batch sweep (hidden width 256)" in text
    assert "plots/sweep_speedup_vs_width.png" in text
    assert "plots/sweep_step_time_vs_batch.png" in text
    assert "failed: SYNTHETIC: grid too large" in text     # the failed path, by its error
    # every table row of the width sweep: one per width point
    width_table = text.split("## Width sweep")[1].split("## Batch sweep")[0]
    assert sum(1 for ln in width_table.splitlines() if ln.startswith("| 64 |")
               or ln.startswith("| 256 |")) == 2
    assert not list(tmp_path.rglob("*.tmp"))


def test_render_numbers_come_from_the_json(tmp_path):
    """Change one median in sweep.json and the report changes with it."""
    results = _fixture_results(tmp_path)
    doc = sweep.collect(results, widths=[64], batches=[])
    doc["points"][0]["best_cuda"]["median_ms"] = 123.456
    (results / "sweep.json").write_text(json.dumps(doc))
    out, _ = _render(tmp_path, results / "sweep.json")
    assert "| 64 | `persistent` (float64) | 123.456 |" in out.read_text()


def test_headline_marks_the_acceptance_and_the_goal(tmp_path):
    results = _fixture_results(tmp_path)
    doc = sweep.collect(results, widths=[64, 256], batches=[128, 512])
    pts = {p["label"]: p for p in doc["points"]}
    pts["h64_b128"]["ratio_best_cuda_vs_fastest_pytorch"] = 0.9     # above both
    pts["h256_b128"]["ratio_best_cuda_vs_fastest_pytorch"] = 0.6    # between
    (results / "sweep.json").write_text(json.dumps(doc))
    out, _ = _render(tmp_path, results / "sweep.json")
    text = out.read_text()
    head = text.split("## Headline")[1].split("## Setup")[0]
    assert 'Issue "FP32 at scale": the acceptance is a ratio of at most 0.8 at a point, the goal at most 0.5' in head
    assert "The acceptance is met at 3 of the 4 points with both timings, the goal at 2." in head
    assert "**Above the acceptance** (ratio over 0.8): `h64_b128`." in head
    assert "*Above the goal* (ratio over 0.5): `h64_b128`, `h256_b128`." in head
    rows = {ln.split(" | ")[0].lstrip("| "): ln for ln in head.splitlines() if ln.startswith("| h")}
    assert "| `persistent` (float64) |" in rows["h64_b128"] and "| `cuda-graph` |" in rows["h64_b128"]
    assert "| 0.9× | **above the acceptance** (and the goal) |" in rows["h64_b128"]
    assert "| 0.6× | acceptance met; *above the goal* |" in rows["h256_b128"]
    assert "| `tiled` (float32) |" in rows["h4096_b2048"] and "| `compiled-step` |" in rows["h4096_b2048"]
    assert rows["h4096_b2048"].endswith("| goal met |")
    # every number names its commit, TF32 is stated
    assert "Every number in this file is from the sweep of commit `test-commit`" in head
    assert "float32 with TF32 off at every point" in text


def test_an_older_sweep_json_still_renders(tmp_path):
    """tests/fixtures/results/sweep.json was collected before the fastest variant, accumulators,
    parity and the roofline were recorded: the fastest variant is derived from its medians, the
    rest is said to be absent."""
    old = HERE / "fixtures" / "results" / "sweep.json"
    doc = json.loads(old.read_text())
    assert "fastest_pytorch_variant" not in doc["points"][0]
    out, _ = _render(tmp_path, old)
    text = out.read_text()
    p = doc["points"][0]
    medians = {n: m["median_ms"] for n, m in p["pytorch"].items() if m["passed"]}
    top = min(medians, key=medians.get)
    ratio = p["best_cuda"]["median_ms"] / medians[top]
    assert f"| `{p['best_cuda_path']}` (unknown) |" in text and f"| `{top}` |" in text
    assert f"| {ratio:.3g}× |" in text
    assert "Not measured in this sweep" in text
    assert "No roofline: no ceilings (this sweep.json was collected before" in text
    assert "TF32 not recorded" in text


def test_template_has_no_typed_numbers():
    """The template's literal text (outside {{ }} and {% %}) carries no number of the sweep."""
    import re
    text = (sweep_report.TEMPLATES_DIR / sweep_report.TEMPLATE_NAME).read_text()
    literal = re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", "", text, flags=re.S)
    # type and setting names: float32, p_float64, TF32, `allow_tf32`, FP32, L2
    literal = re.sub(r"(?:float|int)(?:32|64)\b|\bL2\b|TF32|tf32|FP32", "", literal)
    assert not re.findall(r"\d", literal)


def test_missing_sweep_json_fails_with_one_line(tmp_path):
    missing = tmp_path / "results" / "sweep.json"
    with pytest.raises(SystemExit) as exc:
        sweep_report.render(missing, tmp_path / "SWEEP.md", plots_dir=tmp_path / "plots")
    msg = str(exc.value)
    assert str(missing) in msg and "\n" not in msg and "not found" in msg
    assert not (tmp_path / "SWEEP.md").exists() and not (tmp_path / "plots").exists()


@pytest.mark.parametrize("content, what", [
    ("{not json", "malformed JSON"),
    ("[]", "top level"),
    (json.dumps({"schema": 1, "config": {}}), "config.'widths'"),
    (json.dumps({"schema": 2}), "schema"),
])
def test_malformed_sweep_json_fails_with_one_line(tmp_path, content, what):
    bad = tmp_path / "sweep.json"
    bad.write_text(content)
    with pytest.raises(SystemExit) as exc:
        sweep_report.render(bad, tmp_path / "SWEEP.md", plots_dir=tmp_path / "plots")
    msg = str(exc.value)
    assert str(bad) in msg and what in msg and "\n" not in msg
    assert not (tmp_path / "SWEEP.md").exists()


def test_malformed_point_fails_with_one_line(tmp_path):
    results = _fixture_results(tmp_path)
    doc = sweep.collect(results, widths=[64], batches=[])
    doc["points"][0]["cuda"]["fused"]["median_ms"] = "fast"
    (results / "sweep.json").write_text(json.dumps(doc))
    with pytest.raises(SystemExit) as exc:
        _render(tmp_path, results / "sweep.json")
    assert "points[0].cuda.fused.'median_ms'" in str(exc.value)


# ----------------------------------------------------------------------------- the driver

FAKE_PYTORCH = [sys.executable, str(FAKE), "pytorch"]


def test_sweep_driver_survives_failing_points(tmp_path, capsys):
    results = tmp_path / "results"
    data = tmp_path / "data"
    data.mkdir()
    stale = results / "sweep" / "h64_b128"
    stale.mkdir(parents=True)
    (stale / "pytorch.json").write_text("{stale")      # removed before the point runs
    doc = sweep.sweep(widths=[64, 128, 256, 512, 1024], batches=[128, 512], epochs=3,
                      results_dir=results, data_dir=data, binary=fake.install_binary(tmp_path),
                      pytorch_cmd=FAKE_PYTORCH, timeout_s=60, extra_points=())
    out = capsys.readouterr().out
    pts = {p["label"]: p for p in doc["points"]}
    assert list(pts) == ["h64_b128", "h128_b128", "h256_b128", "h512_b128", "h1024_b128",
                         "h256_b512"]
    assert doc["complete"] is True
    assert json.loads((results / "sweep.json").read_text()) == json.loads(json.dumps(doc))
    # progress lines as each point's stages run, and one closing line per point
    progress = [ln for ln in out.splitlines() if ln.startswith("[sweep ")]
    closing = [ln for ln in progress if re.match(r"\[sweep \d+/\d+\] \w+: ", ln)]
    assert len(closing) == 6 and closing[3].startswith("[sweep 4/6] h512_b128: FAILED")
    assert "[sweep 1/6] h64_b128 - mlp_train (width sweep)" in out
    assert ("[sweep 1/6] h64_b128 - PyTorch eager,cuda-graph,compiled-step,cuda-graph-tf32,"
            "compiled-step-tf32,cuda-graph-bf16,compiled-step-bf16 ...") in out
    assert doc["config"]["precisions"] == ["fp32", "tf32", "bf16"]
    assert len(progress) > len(closing)
    # the catalog of the fake binary's folder cannot be read: the fallback paths, said so
    assert doc["config"]["paths"] == list(sweep.FALLBACK_PATHS)
    assert doc["config"]["paths_source"].startswith("fallback: the binary's catalog could not be read")
    assert "fallback: the binary's catalog" in out

    assert pts["h64_b128"]["status"] == "ok" and pts["h64_b128"]["exit_code"] == 0
    assert "--hidden 64 --batch 128 --epochs 3" in pts["h64_b128"]["command"]
    assert "--perf-only --parity --paths persistent,fused" in pts["h64_b128"]["command"]
    assert pts["h64_b128"]["parity_requested"] is True
    assert pts["h64_b128"]["fp64_reference"]["epochs"] == 1
    # exit 1: the persistent path failed; fused is the best path
    p128 = pts["h128_b128"]
    assert p128["exit_code"] == 1 and p128["status"] == "partial"
    assert p128["best_cuda_path"] == "fused" and p128["ratio_best_cuda_vs_eager"] is not None
    assert p128["ratio_best_cuda_vs_fastest_pytorch"] is not None
    # exit 3 before run.json: failed, the CUDA error kept, PyTorch not run
    p512 = pts["h512_b128"]
    assert p512["exit_code"] == 3 and p512["status"] == "failed"
    assert p512["errors"][0] == ("mlp_train: exit status 3: "
                                 "mlp_train: CUDA error: out of memory (SYNTHETIC)")
    assert any("pytorch: not run" in e for e in p512["errors"])
    # the baseline exits 1: the CUDA numbers stay, the error is recorded
    p1024 = pts["h1024_b128"]
    assert p1024["status"] == "partial" and p1024["best_cuda_path"] == "persistent"
    assert p1024["pytorch"] == {}
    assert any("exit status 1: error: SYNTHETIC baseline failure" in e for e in p1024["errors"])
    # the shared point ran once and belongs to both sweeps
    assert pts["h256_b128"]["sweeps"] == ["width", "batch"]
    assert pts["h256_b512"]["pytorch"]["cuda-graph"]["passed"] is False
    assert pts["h256_b512"]["steps_per_epoch"] == 12
    # each point's folder has its files, its logs and point.json
    for label in ("h64_b128", "h256_b512"):
        d = results / "sweep" / label
        assert {"run.json", "pytorch.json", "init_params.npy", "order.npy", "mlp_train.log",
                "pytorch.log", "point.json"} <= {p.name for p in d.iterdir()}
    # the report renders from it
    out_md, _ = _render(tmp_path, results / "sweep.json")
    text = out_md.read_text()
    assert "`h512_b128` (failed): mlp_train: exit status 3" in text


def test_sweep_in_parts_then_collect(tmp_path, capsys):
    results, data = tmp_path / "results", tmp_path / "data"
    data.mkdir()
    kw = dict(epochs=3, results_dir=results, data_dir=data, binary=fake.install_binary(tmp_path),
              pytorch_cmd=FAKE_PYTORCH, timeout_s=60)
    sweep.sweep(widths=[64], batches=[], extra_points=(), **kw)
    sweep.sweep(widths=[], batches=[128, 512], **kw)          # and the default extra point
    part = json.loads((results / "sweep.json").read_text())
    assert [p["label"] for p in part["points"]] == ["h256_b128", "h256_b512", "h4096_b2048"]
    doc = sweep.collect(results, widths=[64, 256], batches=[128, 512])
    assert [p["label"] for p in doc["points"]] == ["h64_b128", "h256_b128", "h256_b512",
                                                   "h4096_b2048"]
    assert doc["points"][-1]["sweeps"] == ["extra"] and doc["points"][-1]["status"] == "ok"
    assert doc["config"]["epochs"] == 3 and doc["config"]["paths"] == ["persistent", "fused"]
    assert doc["config"]["parity"] is True
    assert doc["config"]["pytorch_variants"] == ["eager", "cuda-graph", "compiled-step",
                                                 "cuda-graph-tf32", "compiled-step-tf32",
                                                 "cuda-graph-bf16", "compiled-step-bf16"]
    assert doc["config"]["precisions"] == ["fp32", "tf32", "bf16"]
    assert all(p["command"] for p in doc["points"])
    assert doc["complete"] is True
    assert doc["points"][1]["sweeps"] == ["width", "batch"]


def _fake_catalog(folder: Path, paths: list[dict]) -> None:
    """folder/mlp_host: prints a catalog (spec.catalog's input) with these paths."""
    cat = {"gate": {"cases": [], "stages": []}, "paths": paths}
    host = folder / "mlp_host"
    host.write_text(f"#!/bin/sh\ncat <<'EOF'\n{json.dumps(cat)}\nEOF\n")
    host.chmod(0o755)


def test_default_paths_come_from_the_binarys_catalog(tmp_path, capsys):
    binary = fake.install_binary(tmp_path)
    _fake_catalog(binary.parent, [
        {"name": "fused", "default": True, "what": "x"},
        {"name": "persistent2", "default": False, "what": "opt-in"},
        {"name": "tiled", "default": True, "what": "y"},
        {"name": "stationary", "default": True, "what": "z"}])
    doc = sweep.sweep(widths=[64], batches=[], epochs=3, results_dir=tmp_path / "r",
                      data_dir=tmp_path, binary=binary, pytorch=False, timeout_s=60,
                      extra_points=())
    assert doc["config"]["paths"] == ["fused", "persistent2", "tiled", "stationary"]   # opt-in ones too
    assert "catalog (every path, opt-in ones included)" in doc["config"]["paths_source"]
    p = doc["points"][0]
    assert "--paths fused,persistent2,tiled,stationary" in p["command"]
    assert p["status"] == "ok" and p["skipped_paths"] == {"stationary": fake.STATIONARY_SKIP}
    assert "skipped stationary" in capsys.readouterr().out
    # --paths wins over the catalog
    doc = sweep.sweep(widths=[64], batches=[], epochs=3, results_dir=tmp_path / "r2",
                      data_dir=tmp_path, binary=binary, pytorch=False, timeout_s=60,
                      extra_points=(), paths="fused")
    assert doc["config"]["paths"] == ["fused"] and doc["config"]["paths_source"] == "--paths"


def test_a_path_over_its_parity_limit_is_not_the_best_and_the_extra_point_runs(tmp_path, capsys):
    """hidden 2048: the fake's tiled path is the fastest but lands 0.03 from float64 (limit
    0.01): not passed, not the best, and the point's errors say so. The extra point (4096 x
    2048) runs after the width sweep, tagged "extra"; its headline variant is compiled-step."""
    results, data = tmp_path / "results", tmp_path / "data"
    data.mkdir()
    results.mkdir()
    shutil.copy(CEILINGS, results / "ceilings.json")
    doc = sweep.sweep(widths=[2048], batches=[], epochs=3, results_dir=results, data_dir=data,
                      binary=fake.install_binary(tmp_path), pytorch_cmd=FAKE_PYTORCH,
                      timeout_s=60, paths="persistent,fused,tiled,stationary",
                      report=tmp_path / "SWEEP.md")
    pts = {p["label"]: p for p in doc["points"]}
    assert list(pts) == ["h2048_b128", "h4096_b2048"]
    wide = pts["h2048_b128"]
    tiled = wide["cuda"]["tiled"]
    assert tiled["median_ms"] < wide["cuda"]["persistent"]["median_ms"]   # the fastest ...
    assert tiled["parity_vs_fp64"] == 0.03 and tiled["parity_ok"] is False
    assert tiled["passed"] is False and tiled["error"] == "parity vs float64 0.03 > limit 0.01"
    assert wide["best_cuda_path"] == "persistent"                         # ... is not the best
    assert wide["status"] == "partial"
    assert "path tiled: parity vs float64 0.03 > limit 0.01" in wide["errors"]
    assert wide["skipped_paths"] == {"stationary": fake.STATIONARY_SKIP}
    extra = pts["h4096_b2048"]
    assert extra["sweeps"] == ["extra"] and extra["status"] == "ok"
    assert extra["best_cuda_path"] == "tiled" and extra["fastest_pytorch_variant"] == "compiled-step"
    assert extra["roofline"]["best"]["path"] == "tiled"
    out = capsys.readouterr().out
    assert "[sweep 2/2] h4096_b2048 - mlp_train (extra sweep)" in out
    assert "[sweep 2/2] h4096_b2048: best tiled (float32)" in out and "fastest PyTorch compiled-step" in out
    text = (tmp_path / "SWEEP.md").read_text()
    assert "| h2048_b128 | `persistent` (float64) |" in text                  # the parity table
    assert "failed: parity vs float64 0.03 > limit 0.01" in text             # every-path table
    assert "`tiled` |\n" in text.split("## Parity with float64")[1].split("## Roofline")[0]
    assert "## Extra points" in text and "| 4,096 | 2,048 | 3 | `tiled` (float32) |" in text


def test_cuda_metrics_judges_skips_and_parity():
    base = {"median_ms": 2.0, "passed": True, "error": "", "test_accuracy_per_epoch": [0.7, 0.8],
            "accumulator": "float32"}
    m, problems = sweep.cuda_metrics("p", base | {"parity_vs_fp64": 0.004, "parity_limit": 0.01},
                                     6000, 47, parity=True)
    assert m["passed"] and m["parity_ok"] is True and problems == []
    assert m["epoch1_test_accuracy"] == 0.7 and m["accumulator"] == "float32"
    # the binary's own verdict on a parity failure (passed false, its error) is kept
    m, problems = sweep.cuda_metrics("p", base | {"passed": False, "parity_vs_fp64": 0.02,
                                                  "parity_limit": 0.01,
                                                  "error": "one epoch lands 0.02 ..."}, 6000, 47, True)
    assert not m["passed"] and m["parity_ok"] is False and problems == ["path p: one epoch lands 0.02 ..."]
    # not finite (NaN written as null): failed
    m, problems = sweep.cuda_metrics("p", base | {"parity_vs_fp64": None, "parity_limit": 0.01},
                                     6000, 47, True)
    assert not m["passed"] and m["error"] == "parity vs float64 not finite"
    # --parity given but nothing recorded: a problem, not a failure
    m, problems = sweep.cuda_metrics("p", base, 6000, 47, True)
    assert m["passed"] and m["parity_ok"] is None and "no parity against float64" in problems[0]
    # without --parity nothing is expected; no accumulator: unknown
    m, problems = sweep.cuda_metrics("p", {k: v for k, v in base.items() if k != "accumulator"},
                                     6000, 47)
    assert m["passed"] and problems == [] and m["accumulator"] == "unknown"
    # skipped: not passed, no problem
    m, problems = sweep.cuda_metrics("p", {"skipped": "too big", "median_ms": None}, 6000, 47, True)
    assert m["skipped"] == "too big" and not m["passed"] and problems == []


def test_fastest_variant_ties_and_failures():
    group = {"eager": {"passed": True, "median_ms": 5.0},
             "cuda-graph": {"passed": True, "median_ms": 2.0},
             "compiled-step": {"passed": True, "median_ms": 2.0},
             "broken": {"passed": False, "median_ms": 0.1}}
    assert sweep.fastest(group) == "compiled-step"                         # tie: by name
    assert sweep.fastest(group, ["eager", "cuda-graph", "compiled-step"]) == "cuda-graph"
    assert sweep.fastest({"x": {"passed": False, "median_ms": 1.0}}) is None


def test_exit_1_without_run_json_is_a_stopped_binary(tmp_path):
    doc = sweep.sweep(widths=[96], batches=[], epochs=3, results_dir=tmp_path / "r",
                      data_dir=tmp_path, binary=fake.install_binary(tmp_path), pytorch=False,
                      timeout_s=60, extra_points=())
    p = doc["points"][0]
    assert p["status"] == "failed" and p["exit_code"] == 1
    assert p["errors"] == ["mlp_train: exit status 1: mlp_train: error: std::bad_alloc (SYNTHETIC)"]


def test_sweep_without_binary_stops_with_one_line(tmp_path):
    with pytest.raises(SystemExit, match="missing: run `invoke build` first"):
        sweep.sweep(widths=[64], batches=[], results_dir=tmp_path, data_dir=tmp_path,
                    binary=tmp_path / "nope")


def test_sweep_time_limit_is_recorded(tmp_path):
    slow = tmp_path / "slow"
    slow.write_text(f'#!/bin/sh\nexec "{sys.executable}" -c "import time; time.sleep(30)"\n')
    slow.chmod(0o755)
    doc = sweep.sweep(widths=[64], batches=[], epochs=3, results_dir=tmp_path / "r",
                      data_dir=tmp_path, binary=slow, pytorch=False, timeout_s=0.5,
                      extra_points=())
    p = doc["points"][0]
    assert p["status"] == "failed" and "time limit" in p["errors"][0]


# ----------------------------------------------------------------------------- the baseline

def test_real_baseline_through_the_driver_on_cpu(tmp_path):
    """The sweep's baseline command (--results, --variants, --batch, --data, --device) against
    harness.baseline.pytorch_baseline itself, on the CPU, with the fake binary's weights and order."""
    pytest.importorskip("torch")
    from spec.files import DATA_DIR   # the shipped data: committed, so a loader that fails fails this test
    doc = sweep.sweep(widths=[], batches=[256], epochs=2, results_dir=tmp_path / "r",
                      data_dir=DATA_DIR, train_size=512, binary=fake.install_binary(tmp_path),
                      device="cpu", timeout_s=300, extra_points=(),
                      variants=["eager", "cuda-graph"])
    p = doc["points"][0]
    assert p["label"] == "h256_b256", p
    eager = p["pytorch"]["eager"]
    assert eager["passed"], p["errors"]
    assert p["steps_per_epoch"] == 2                        # 512 images, batch 256
    assert eager["step_us"] == pytest.approx(eager["median_ms"] * 1000 / 2)
    assert "cuda-graph needs a CUDA device" in p["pytorch"]["cuda-graph"]["error"]
    assert "max_memory_allocated_bytes" not in eager        # CPU: no CUDA peak
    assert p["torch_tf32"]["matmul_allow_tf32"] is False     # the baseline turns TF32 off


def test_baseline_batch_override_and_full_layout_data(tmp_path):
    """run_all(batch=...) trains at that batch; load_data reads a data/full-style folder."""
    pytest.importorskip("torch")
    from harness.data import dataset as ds
    from harness.baseline import pytorch_baseline as pb
    rng = np.random.default_rng(0)
    full = tmp_path / "full"
    full.mkdir()
    files = {ds.FULL_TRAIN_IMAGES: rng.integers(0, 256, (300, 28, 28), dtype=np.uint8),
             ds.FULL_TRAIN_LABELS: rng.integers(0, 10, 300).astype(np.uint8),
             ds.TEST_IMAGES: rng.integers(0, 256, (50, 28, 28), dtype=np.uint8),
             ds.TEST_LABELS: rng.integers(0, 10, 50).astype(np.uint8)}
    sums = {}
    for name, arr in files.items():
        blob = ds.encode_idx(arr)
        (full / name).write_bytes(blob)
        sums[name] = ds.sha256_hex(blob)
    (full / ds.SUMS_NAME).write_text(ds.format_sha256sums(sums))
    data = pb.load_data(full)
    assert data["train_images"].shape == (300, 784) and data["test_images"].shape == (50, 784)
    assert data["train_labels"].dtype == np.int32

    res = tmp_path / "res"
    res.mkdir()
    np.save(res / "init_params.npy",
            rng.normal(0, 0.05, layout.n_params((784, 32, 10))).astype(np.float32))
    np.save(res / "order.npy", np.stack([rng.permutation(300) for _ in range(2)]).astype(np.int32))
    out = pb.run_all(res, ["eager"], device="cpu", batch=100, data_dir=full)
    assert len(out["variants"]["eager"]["epoch_ms"]) == 1
    entry = pb.run_variant("eager", np.load(res / "init_params.npy"), np.load(res / "order.npy"),
                           data, dict(pb.load_recipe(), batch=100), device="cpu",
                           return_step_losses=True)
    assert len(entry["step_losses"][0]) == 3                # 300 images at batch 100
    with pytest.raises(SystemExit):
        pb.main(["--results", str(res), "--variants", "eager", "--device", "cpu",
                 "--batch", "0", "--data", str(full)])


# ----------------------------------------------------------------------------- evidence kept (issue 28 item 5)

def _hashes(*roots) -> dict:
    import hashlib
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for r in roots for p in sorted(Path(r).rglob("*"))
            if p.is_file()}


def _committed(tmp_path):
    """A results folder as committed: four points, sweep.json, SWEEP.md and the three plots."""
    results = _fixture_results(tmp_path)
    sweep.collect(results, widths=[64, 256], batches=[128, 512])
    report = tmp_path / "SWEEP.md"
    sweep_report.render(results / "sweep.json", report, plots_dir=results / "plots")
    return results, report


def _no_gpu_binary(tmp_path) -> Path:
    path = tmp_path / "bin" / "no_gpu"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho 'mlp_train: CUDA error: no CUDA device found' >&2\nexit 3\n")
    path.chmod(0o755)
    return path


def test_a_sweep_without_a_gpu_destroys_no_committed_evidence(tmp_path, capsys):
    results, report = _committed(tmp_path)
    before = _hashes(results, report)
    folders = sorted(p.name for p in (results / "sweep").iterdir())
    data = tmp_path / "data"
    data.mkdir()
    doc = sweep.sweep(widths=[64], batches=[], epochs=2, results_dir=results, data_dir=data, pytorch=False,
                      binary=_no_gpu_binary(tmp_path), timeout_s=60, report=report, extra_points=())
    assert doc["points"][0]["status"] == "failed"
    assert doc["points"][0]["dir"].endswith("failed/sweep/h64_b128")
    failed = results / "failed" / "sweep" / "h64_b128"      # git-ignored (.gitignore: /results/failed/)
    kept = {p: h for p, h in _hashes(results, report).items() if failed not in p.parents}
    assert kept == before                                    # every committed file, byte for byte
    assert "no CUDA device found" in (failed / "mlp_train.log").read_text()
    assert sorted(p.name for p in (results / "sweep").iterdir()) == folders   # nothing new beside them
    assert "untouched" in capsys.readouterr().out


def test_a_point_is_replaced_only_by_a_point_that_timed_a_cuda_path(tmp_path):
    """h256_b128 times (its folder replaced), h512_b128 stops with a CUDA error (no folder of
    its own before: its files go to results/failed/sweep/h512_b128); the old h64_b128, not run,
    stays as it was."""
    results, report = _committed(tmp_path)
    before = _hashes(results / "sweep" / "h64_b128")
    old_run = (results / "sweep" / "h256_b128" / "run.json").read_bytes()
    data = tmp_path / "data"
    data.mkdir()
    doc = sweep.sweep(widths=[256, 512], batches=[], epochs=3, results_dir=results, data_dir=data,
                      binary=fake.install_binary(tmp_path), pytorch_cmd=FAKE_PYTORCH, timeout_s=60,
                      report=report, extra_points=())
    assert [p["status"] for p in doc["points"]] == ["ok", "failed"]
    assert (results / "sweep" / "h256_b128" / "run.json").read_bytes() != old_run
    assert not (results / "sweep" / "h512_b128").exists()
    assert (results / "failed" / "sweep" / "h512_b128" / "point.json").is_file()
    assert _hashes(results / "sweep" / "h64_b128") == before
    written = json.loads((results / "sweep.json").read_text())
    assert [p["label"] for p in written["points"]] == ["h256_b128", "h512_b128"]
    assert "`h512_b128` (failed)" in report.read_text()


@pytest.mark.parametrize("block", ["report", "plot", "sweep_json", "point_folder"])
def test_an_output_in_the_way_stops_the_sweep_before_any_point_runs(tmp_path, block):
    results, report = _committed(tmp_path)
    in_the_way = {"report": report, "plot": results / "plots" / "sweep_speedup_vs_width.png",
                  "sweep_json": results / "sweep.json", "point_folder": results / "sweep" / "h64_b128"}[block]
    if in_the_way.is_dir():
        shutil.rmtree(in_the_way)
        in_the_way.write_text("a file where the point's folder goes")
    else:
        in_the_way.unlink()
        in_the_way.mkdir()
    before = _hashes(results, report)
    data = tmp_path / "data"
    data.mkdir()
    with pytest.raises(InputError) as exc:
        sweep.sweep(widths=[64], batches=[], epochs=2, results_dir=results, data_dir=data, pytorch=False,
                    binary=fake.install_binary(tmp_path), timeout_s=60, report=report,
                    extra_points=())
    assert str(in_the_way) in str(exc.value) and "\n" not in str(exc.value)
    assert _hashes(results, report) == before and not list((results / "sweep").glob("h64_b128.*"))


def test_parity_is_judged_against_the_fused_path_where_run_json_has_it():
    """The binary's rule (mode_perf_only.cpp): a path 2.35e-2 from float64 but 1e-6 from the
    fused path passes (every float32 trainer left float64 together at a ReLU kink); one 3e-2
    from the fused path fails, whatever its float64 distance; an older run.json without
    parity_vs_fused is judged against float64."""
    base = {"passed": True, "median_ms": 2.0, "cv_pct": 0.1, "test_accuracy": 0.8,
            "test_accuracy_per_epoch": [0.7, 0.8], "parity_limit": 0.01}
    m, problems = sweep.cuda_metrics("tiled", {**base, "parity_vs_fp64": 0.0235, "parity_vs_fused": 1e-6},
                                     6000, 47, parity=True)
    assert m["passed"] and m["parity_ok"] and m["parity_judged"] == "fused" and not problems
    m, problems = sweep.cuda_metrics("tiled", {**base, "parity_vs_fp64": 1e-7, "parity_vs_fused": 0.03},
                                     6000, 47, parity=True)
    assert not m["passed"] and m["parity_ok"] is False and "parity vs the fused path 0.03" in problems[0]
    m, problems = sweep.cuda_metrics("tiled", {**base, "parity_vs_fp64": 0.0235}, 6000, 47, parity=True)
    assert not m["passed"] and m["parity_judged"] == "float64" and "parity vs float64" in problems[0]
