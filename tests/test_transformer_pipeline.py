"""The transformer extension's harness end to end on the CPU: a tiny training (1 epoch on 256 images)
writes a weights folder whose hashes the binary accepts; build/vit_forward_emu (the kernels under
cuda/transformer/emu/) runs the checks, the predictions and the timing; PyTorch's half is faked (its
logits from the CPU, its timings invented: no GPU here); results/transformer.json assembles and its
RESULTS.md section renders with every part. GPU tests at the end run the real binary."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import report
from harness.data.dataset import load_dataset
from harness.transformer import results as tresults
from harness.transformer import run as vit
from harness.transformer.weights import read_weights
from spec.files import BUILD_DIR, ROOT
from spec.transformer import CONFIG_PATH, load_config, shape

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EMU = BUILD_DIR / "vit_forward_emu"
N_TEST = 12


def _torch():
    """torch, or this test skipped saying why (PyTorch trains the weights and gives the logits to
    compare; the CPU build is in requirements-test.txt). The tests without it run without torch."""
    return pytest.importorskip("torch", reason="PyTorch is not installed (requirements-test.txt has its CPU build)")




def _small_config(tmp_path) -> Path:
    text = CONFIG_PATH.read_text().replace("test_size = 10000", f"test_size = {N_TEST}")
    path = tmp_path / "transformer.toml"
    path.write_text(text)
    return path


def fake_torch_time(parts: Path, weights: Path, config: dict) -> None:
    """torch_time.json with invented timings (the shape torch_time.py writes) and real CPU logits."""
    torch = _torch()
    from harness.transformer.model import ViT, load_flat
    s = shape(config)
    flat, manifest = read_weights(weights, s, config)
    x = torch.from_numpy(load_dataset()["test_images"][:N_TEST])
    with torch.inference_mode():
        z = load_flat(ViT(s), flat).eval()(x).numpy()
    np.save(parts / "torch_logits.npy", z.astype(np.float32))

    def rec(ms):
        return {"median": ms, "mean": ms, "min": ms * 0.98, "max": ms * 1.05, "cv_pct": 1.5,
                "times_ms": [ms] * 4, "setup_s": 0.1}
    rows = [{"batch": 2, "variants": {"eager-encoder": rec(9.0), "eager-sdpa-auto": rec(11.0),
                                      "eager-sdpa-flash": {"error": "RuntimeError: No available kernel."},
                                      "cuda-graph-sdpa": rec(4000.0), "compiled-default": rec(5000.0)}}]
    (parts / "torch_time.json").write_text(json.dumps({
        "schema": 1, "torch_version": torch.__version__, "gpu": "synthetic", "tf32": False, "warmup": 1,
        "repeats": 4, "flop_per_image": 41197056, "compile_modes": {"compiled-default": "default"},
        "test_accuracy": {"sdpa": 0.5, "encoder": 0.5}, "rows": rows}))


def fake_profile(parts: Path) -> None:
    names = ["void vit::vit_gemm<vit::LnFc1Gelu, vit::Tile<128, 128, 8, 8, 8, 2>>(vit::GemmArgs)",
             "void vit::vit_gemm<vit::Fc2Residual, vit::Tile<128, 128, 8, 8, 8, 2>>(vit::GemmArgs)",
             "vit::attention_kernel(const float *, float *, float *, int, int, float)"]
    kern = pd.DataFrame({"name": names, "instances": [2, 2, 2], "total_ns": [300e3, 280e3, 90e3],
                         "avg_ns": [150e3, 140e3, 45e3]})
    rows = vit.kernel_rows(kern, 1024)
    (parts / "profile.json").write_text(json.dumps({"batch": 1024, "range": "vit-forward",
                                                    "report": "profile/transformer.nsys-rep", "csv": {},
                                                    "kernels": rows, "gpu_ns": 670e3}))


@pytest.mark.slow
def test_the_harness_end_to_end_on_the_emulated_binary(tmp_path, monkeypatch, built):
    _torch()
    from harness.transformer.train import train
    built("vit_forward_emu")   # EMU
    cfg_path = _small_config(tmp_path)
    monkeypatch.setenv("VIT_FORWARD", str(EMU))
    monkeypatch.setenv("VIT_CONFIG", str(cfg_path))
    config = load_config(cfg_path)
    parts = tmp_path / "results" / "transformer"
    weights = parts / "weights"
    origin = train(config, "cpu", epochs=1, train_size=256, eval_size=64, out_dir=weights)
    assert origin["kind"] == "trained" and len(origin["loss_per_epoch"]) == 1

    assert vit.check(weights, parts, layer_batch=2, logits_batch=3) == 0
    for engine in vit.ENGINES:
        trained = json.loads((parts / f"check_trained_{engine}.json").read_text())
        assert trained["passed"] and trained["gemm"] == engine
        assert {r["name"] for r in trained["checks"]} >= {"L1.ln1", "L1.attn_weights", "logits(images)"}
    assert vit.passed_engines(parts) == ["fp32", "tf32x3"]

    fake_torch_time(parts, weights, config)
    assert vit.accuracy(weights, parts) == 0
    acc = json.loads((parts / "accuracy.json").read_text())
    assert acc["n"] == N_TEST and acc["differ"] == 0 and acc["max_logit_gap"] < 1e-4

    assert vit.time_ours(weights, parts, batches="2", warmup=1, repeats=2) == 0
    engine, why = vit.headline_engine(parts)
    assert engine in vit.ENGINES and "batch 2" in why
    fake_profile(parts)
    doc = tresults.assemble(parts, out=tmp_path / "results" / "transformer.json", config_path=cfg_path)
    assert doc["checks_passed"] is True and doc["engines_passed"] == ["fp32", "tf32x3"]
    row = doc["timing"]["rows"][0]
    assert row["fastest_torch"]["name"] == "eager-encoder" and len(row["ours"]["variants"]) == 4
    assert row["ours"]["best"] in row["ours"]["variants"] and doc["accuracy"]["engine"] in vit.ENGINES
    assert doc["profile"]["kernels"][0]["op"] == "ln2+fc1+gelu"
    text = tresults.summary(doc)
    assert "checks (fp32, trained): 30/30 pass" in text and "checks (tf32x3, random): 30/30 pass" in text
    assert "eager-encoder" in text

    # The report renders the section from it (beside the synthetic MLP fixture's results).
    results = tmp_path / "report_results"
    shutil.copytree(FIXTURES / "results", results)
    shutil.copy(tmp_path / "results" / "transformer.json", results / "transformer.json")
    report.render(results, tmp_path / "no_profile", ROOT / "predictions.toml", ROOT / "GAPS.toml",
                  tmp_path / "out" / "RESULTS.md", plots_dir=tmp_path / "out" / "plots")
    md = (tmp_path / "out" / "RESULTS.md").read_text()
    section = md.split("## Transformer extension")[1].split("## Open gaps")[0]
    assert "Not measured yet: there is no" not in section
    assert "| `L1.attn_weights` | worst |" in section and "`eager-encoder`" in section
    assert "| check | measure | limit | D | fp32, trained | fp32, random | tf32x3, trained | tf32x3, random |" in section
    assert "error: RuntimeError: No available kernel." in section and "ln2+fc1+gelu" in section


@pytest.fixture
def gpu_binary(built):
    return built("vit_forward")


@pytest.mark.gpu
def test_gpu_checks_pass_on_random_weights(tmp_path, gpu_binary):
    out = tmp_path / "check.json"
    res = subprocess.run([str(gpu_binary), "check", "--random", "5", "--layer-batch", "8", "--logits-batch", "64",
                          "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    doc = json.loads(out.read_text())
    assert doc["passed"] and len(doc["checks"]) == 30


@pytest.mark.gpu
def test_gpu_timing_writes_every_batch(tmp_path, gpu_binary):
    out = tmp_path / "time.json"
    res = subprocess.run([str(gpu_binary), "time", "--random", "5", "--batches", "128,1024", "--repeats", "20",
                          "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = json.loads(out.read_text())["timing"]["rows"]
    assert [r["batch"] for r in rows] == [128, 1024]
    for r in rows:
        for how in ("stream", "graph"):
            assert r[how]["median_ms"] > 0 and len(r[how]["times_ms"]) == 20


@pytest.mark.slow
def test_torch_time_runs_its_variants_on_cpu_stand_ins(tmp_path, monkeypatch):
    """torch_time.run on the CPU: CUDA events and synchronisation replaced by the host clock; each
    variant a result or a one-line error, the file rewritten as it goes, the logits written first."""
    import time as _time

    torch = _torch()
    from harness.transformer import torch_time as tt
    from harness.transformer.weights import random_flat, write_weights

    class Event:
        def __init__(self, **_):
            self.t = 0.0

        def record(self):
            self.t = _time.perf_counter()

        def synchronize(self):
            pass

        def elapsed_time(self, other):
            return (other.t - self.t) * 1e3
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "cpu stand-in")
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    config = load_config()
    s = shape(config)
    write_weights(tmp_path / "w", random_flat(s, 2), s, config, {"kind": "random", "seed": 2})
    variants = ["eager-encoder", "eager-sdpa-auto", "eager-sdpa-math", "cuda-graph-sdpa"]
    doc = tt.run(tmp_path / "w", batches=[3], warmup=1, repeats=3, variants=variants, out=tmp_path / "t.json",
                 logits_out=tmp_path / "l.npy", device="cpu")
    got = doc["rows"][0]["variants"]
    assert list(got) == variants and json.loads((tmp_path / "t.json").read_text()) == doc
    for name in variants[:3]:
        assert got[name]["median"] > 0 and len(got[name]["times_ms"]) == 3, name
    assert "error" in got["cuda-graph-sdpa"] and "\n" not in got["cuda-graph-sdpa"]["error"]
    assert np.load(tmp_path / "l.npy").shape == (10000, 10)
    t = tresults.timing(None, doc, None)
    assert t["rows"][0]["fastest_torch"]["name"] in variants[:3]


def test_a_prediction_margin_is_the_gap_between_the_two_classes_logits():
    import numpy as np
    from harness.transformer import run as vit_run
    z = np.array([0.5, 2.0, -1.0], dtype=np.float32)
    assert vit_run._margin(z, 1, 0) == 1.5 and vit_run._margin(z, 2, 1) == -3.0
