"""The width and batch sweep (harness/studies/sweep.py) and its report (analysis/sweep_report.py), on the CPU.

The per-point results are SYNTHETIC: tests/fixtures/sweep/fake.py writes them (the committed
fixture points under tests/fixtures/sweep/results/, and, standing in for build/mlp_train and the
PyTorch baseline, the points of the driver tests). None of their numbers is a measurement.
"""
from __future__ import annotations

import json
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
    assert len(labels) == len(set(labels)) == 8 + 4 - 1
    shared = next(p for p in pts if p["label"] == "h256_b128")
    assert shared["sweeps"] == ["width", "batch"]
    assert labels[:8] == [f"h{w}_b128" for w in sweep.WIDTHS]
    assert sweep.sweep_points([64], []) == [{"label": "h64_b128", "hidden": 64, "batch": 128,
                                             "sweeps": ["width"]}]


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


# ----------------------------------------------------------------------------- collection

def test_fixture_points_are_what_fake_py_writes(tmp_path):
    """The committed synthetic points are reproducible from their script."""
    for path in fake.write_fixtures(tmp_path):
        rel = path.relative_to(tmp_path)
        assert (FIXTURES / "results" / rel).read_bytes() == path.read_bytes(), rel


def _fixture_results(tmp_path) -> Path:
    dst = tmp_path / "results"
    shutil.copytree(FIXTURES / "results", dst)
    return dst


def test_collect_fixture_points(tmp_path):
    results = _fixture_results(tmp_path)
    doc = sweep.collect(results, widths=[64, 256], batches=[128, 512])
    written = json.loads((results / "sweep.json").read_text())
    assert written == json.loads(json.dumps(doc))
    assert written["gpu"]["name"].startswith("SYNTHETIC")
    assert written["date_utc"] == "2026-01-01T00:00:00Z"
    pts = {p["label"]: p for p in written["points"]}
    assert list(pts) == ["h64_b128", "h256_b128", "h256_b512"]
    assert pts["h256_b128"]["sweeps"] == ["width", "batch"]

    ok = pts["h256_b128"]
    assert ok["status"] == "ok" and ok["errors"] == []
    assert ok["best_cuda_path"] == "persistent"           # the lower median of the two
    assert ok["cuda"]["persistent"]["median_ms"] < ok["cuda"]["fused"]["median_ms"]
    run = json.loads((results / "sweep" / "h256_b128" / "run.json").read_text())
    torch = json.loads((results / "sweep" / "h256_b128" / "pytorch.json").read_text())
    best_ms = run["paths"]["persistent"]["median_ms"]
    eager_ms = torch["variants"]["eager"]["median_ms"]
    graph_ms = torch["variants"]["cuda-graph"]["median_ms"]
    assert ok["ratio_best_cuda_vs_eager"] == pytest.approx(best_ms / eager_ms)
    assert ok["ratio_best_cuda_vs_cuda_graph"] == pytest.approx(best_ms / graph_ms)
    assert ok["best_cuda"]["images_per_s"] == pytest.approx(6000 / (best_ms / 1000))
    assert ok["best_cuda"]["step_us"] == pytest.approx(best_ms * 1000 / 47)
    assert ok["pytorch"]["eager"]["test_accuracy"] == torch["variants"]["eager"]["test_accuracy"]
    mem = ok["memory"]
    assert mem["cuda_peak_used_bytes"] == run["memory"]["peak_used_bytes"]
    assert mem["torch_max_memory_allocated_bytes"]["eager"] == \
        torch["variants"]["eager"]["max_memory_allocated_bytes"]
    assert mem["ledger"]["parameters_bytes"] == 814_120

    part = pts["h256_b512"]      # persistent failed, cuda-graph failed: recorded, not fatal
    assert part["status"] == "partial"
    assert part["best_cuda_path"] == "fused"
    assert part["ratio_best_cuda_vs_cuda_graph"] is None
    assert any("persistent" in e and "cooperative" in e for e in part["errors"])
    assert any("cuda-graph" in e for e in part["errors"])


def test_collect_missing_point_is_recorded(tmp_path):
    results = _fixture_results(tmp_path)
    doc = sweep.collect(results, widths=[64, 8192], batches=[])
    missing = doc["points"][1]
    assert missing["label"] == "h8192_b128" and missing["status"] == "failed"
    assert missing["errors"] == ["mlp_train: not run"]
    assert doc["complete"] is False


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
    assert "| 64 | `persistent` | 123.456 |" in out.read_text()


def test_template_has_no_typed_numbers():
    """The template's literal text (outside {{ }} and {% %}) carries no number of the sweep."""
    import re
    text = (sweep_report.TEMPLATES_DIR / sweep_report.TEMPLATE_NAME).read_text()
    literal = re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", "", text, flags=re.S)
    literal = re.sub(r"\b(?:float|int)(?:32|64)\b", "", literal)   # type names
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
                      pytorch_cmd=FAKE_PYTORCH, timeout_s=60)
    out = capsys.readouterr().out
    pts = {p["label"]: p for p in doc["points"]}
    assert list(pts) == ["h64_b128", "h128_b128", "h256_b128", "h512_b128", "h1024_b128",
                         "h256_b512"]
    assert doc["complete"] is True
    assert json.loads((results / "sweep.json").read_text()) == json.loads(json.dumps(doc))
    # one progress line per point
    progress = [ln for ln in out.splitlines() if ln.startswith("[sweep ")]
    assert len(progress) == 6 and progress[3].startswith("[sweep 4/6] h512_b128: FAILED")

    assert pts["h64_b128"]["status"] == "ok" and pts["h64_b128"]["exit_code"] == 0
    assert "--hidden 64 --batch 128 --epochs 3" in pts["h64_b128"]["command"]
    # exit 1: the persistent path failed; fused is the best path
    p128 = pts["h128_b128"]
    assert p128["exit_code"] == 1 and p128["status"] == "partial"
    assert p128["best_cuda_path"] == "fused" and p128["ratio_best_cuda_vs_eager"] is not None
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
    sweep.sweep(widths=[64], batches=[], **kw)
    sweep.sweep(widths=[], batches=[128, 512], **kw)
    part = json.loads((results / "sweep.json").read_text())
    assert [p["label"] for p in part["points"]] == ["h256_b128", "h256_b512"]
    doc = sweep.collect(results, widths=[64, 256], batches=[128, 512])
    assert [p["label"] for p in doc["points"]] == ["h64_b128", "h256_b128", "h256_b512"]
    assert doc["config"]["epochs"] == 3 and doc["config"]["paths"] == ["persistent", "fused"]
    assert all(p["command"] for p in doc["points"])
    assert doc["complete"] is True
    assert doc["points"][1]["sweeps"] == ["width", "batch"]


def test_exit_1_without_run_json_is_a_stopped_binary(tmp_path):
    doc = sweep.sweep(widths=[96], batches=[], epochs=3, results_dir=tmp_path / "r",
                      data_dir=tmp_path, binary=fake.install_binary(tmp_path), pytorch=False,
                      timeout_s=60)
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
                      data_dir=tmp_path, binary=slow, pytorch=False, timeout_s=0.5)
    p = doc["points"][0]
    assert p["status"] == "failed" and "time limit" in p["errors"][0]


# ----------------------------------------------------------------------------- the baseline

def test_real_baseline_through_the_driver_on_cpu(tmp_path):
    """The sweep's baseline command (--results, --variants, --batch, --data, --device) against
    harness.baseline.pytorch_baseline itself, on the CPU, with the fake binary's weights and order."""
    pytest.importorskip("torch")
    from spec.files import DATA_DIR
    from harness.data.dataset import load_dataset
    try:
        load_dataset(DATA_DIR)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"data/ does not load: {exc}")
    doc = sweep.sweep(widths=[], batches=[256], epochs=2, results_dir=tmp_path / "r",
                      data_dir=DATA_DIR, train_size=512, binary=fake.install_binary(tmp_path),
                      device="cpu", timeout_s=300)
    p = doc["points"][0]
    assert p["label"] == "h256_b256", p
    eager = p["pytorch"]["eager"]
    assert eager["passed"], p["errors"]
    assert p["steps_per_epoch"] == 2                        # 512 images, batch 256
    assert eager["step_us"] == pytest.approx(eager["median_ms"] * 1000 / 2)
    assert "cuda-graph needs a CUDA device" in p["pytorch"]["cuda-graph"]["error"]
    assert "max_memory_allocated_bytes" not in eager        # CPU: no CUDA peak


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
    """A results folder as committed: three points, sweep.json, SWEEP.md and the two plots."""
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
    data = tmp_path / "data"
    data.mkdir()
    doc = sweep.sweep(widths=[64], batches=[], epochs=2, results_dir=results, data_dir=data, pytorch=False,
                      binary=_no_gpu_binary(tmp_path), timeout_s=60, report=report)
    assert doc["points"][0]["status"] == "failed"
    assert doc["points"][0]["dir"].endswith("sweep/h64_b128.failed")
    kept = {p: h for p, h in _hashes(results, report).items() if ".failed" not in str(p)}
    assert kept == before                                    # every committed file, byte for byte
    failed = results / "sweep" / "h64_b128.failed"
    assert "no CUDA device found" in (failed / "mlp_train.log").read_text()
    assert not list((results / "sweep").glob("*.new")) and not list((results / "sweep").glob("*.old"))
    assert "untouched" in capsys.readouterr().out


def test_a_point_is_replaced_only_by_a_point_that_timed_a_cuda_path(tmp_path):
    """h256_b128 times (its folder replaced), h512_b128 stops with a CUDA error (no folder of
    its own before: it gets h512_b128.failed); the old h64_b128, not run, stays as it was."""
    results, report = _committed(tmp_path)
    before = _hashes(results / "sweep" / "h64_b128")
    old_run = (results / "sweep" / "h256_b128" / "run.json").read_bytes()
    data = tmp_path / "data"
    data.mkdir()
    doc = sweep.sweep(widths=[256, 512], batches=[], epochs=3, results_dir=results, data_dir=data,
                      binary=fake.install_binary(tmp_path), pytorch_cmd=FAKE_PYTORCH, timeout_s=60,
                      report=report)
    assert [p["status"] for p in doc["points"]] == ["ok", "failed"]
    assert (results / "sweep" / "h256_b128" / "run.json").read_bytes() != old_run
    assert not (results / "sweep" / "h512_b128").exists() and (results / "sweep" / "h512_b128.failed").is_dir()
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
                    binary=fake.install_binary(tmp_path), timeout_s=60, report=report)
    assert str(in_the_way) in str(exc.value) and "\n" not in str(exc.value)
    assert _hashes(results, report) == before and not list((results / "sweep").glob("h64_b128.*"))
