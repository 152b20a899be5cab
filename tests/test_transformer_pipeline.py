"""The transformer extension's harness end to end on the CPU: a tiny training (1 epoch on 256 images)
writes a weights folder whose hashes the binary accepts; build/vit_forward_emu (the kernels under
cuda/transformer/emu/) runs the checks, the predictions and the timing on every engine it takes (bf16
once the binary has it); PyTorch's half is faked (its logits from the CPU, its timings invented: no GPU
here); results/transformer.json assembles and its RESULTS.md section renders with every part. Then the
per-precision steps from synthetic parts without the binary (the runs of `vit_forward` recorded, the
assembly, the accuracy per precision), and the bf16 engine's contract on the emulated binary (skipped,
saying why, while the binary refuses `--gemm bf16`). GPU tests at the end run the real binary."""
from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
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
from spec.transformer import CONFIG_PATH, ENGINES, load_config, shape
from spec.transformer_schema import validate_transformer

FIXTURES = Path(__file__).resolve().parent / "fixtures"
EMU = BUILD_DIR / "vit_forward_emu"
N_TEST = 12


_EMU_BF16: dict[str, tuple[bool, str]] = {}


def emu_takes_bf16(built) -> tuple[bool, str]:
    """(whether build/vit_forward_emu runs `check --gemm bf16`, why not), asked of the binary itself once
    per session (it exits 2 naming --gemm while it has no bf16 engine)."""
    built("vit_forward_emu")
    if "answer" not in _EMU_BF16:
        with tempfile.TemporaryDirectory() as tmp:
            res = subprocess.run([str(EMU), "check", "--random", "3", "--gemm", "bf16", "--layer-batch", "1",
                                  "--logits-batch", "1", "--out", str(Path(tmp) / "check.json")], cwd=ROOT,
                                 capture_output=True, text=True, timeout=600)
        refused = res.returncode == 2 and "--gemm" in res.stderr
        _EMU_BF16["answer"] = (not refused, "build/vit_forward_emu refuses --gemm bf16 (the CUDA side's bf16 engine "
                               "has not landed): " + res.stderr.strip()[-200:] if refused else "")
    return _EMU_BF16["answer"]


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
    """torch_time.json with invented timings (the shape torch_time.py writes before the bf16 families: bare
    fp32 keys) and real CPU logits, float32's and bf16 autocast's."""
    torch = _torch()
    from harness.transformer.model import ViT, load_flat
    s = shape(config)
    flat, manifest = read_weights(weights, s, config)
    x = torch.from_numpy(load_dataset()["test_images"][:N_TEST])
    model = load_flat(ViT(s), flat).eval()
    with torch.inference_mode():
        z = model(x).numpy()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z16 = model(x).float().numpy()
    np.save(parts / "torch_logits.npy", z.astype(np.float32))
    np.save(parts / "torch_logits_bf16.npy", z16.astype(np.float32))

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

    engines = ENGINES if emu_takes_bf16(built)[0] else ("fp32", "tf32x3")
    assert vit.check(weights, parts, layer_batch=2, logits_batch=3, engines=engines) == 0
    for engine in engines:
        trained = json.loads((parts / f"check_trained_{engine}.json").read_text())
        assert trained["passed"] and trained["gemm"] == engine
        assert trained.get("precision", "fp32") == ("bf16" if engine == "bf16" else "fp32")
        assert {r["name"] for r in trained["checks"]} >= {"L1.ln1", "L1.attn_weights", "logits(images)"}
    assert vit.passed_engines(parts) == list(engines)

    fake_torch_time(parts, weights, config)
    assert vit.accuracy(weights, parts, engines=engines) == 0
    acc = json.loads((parts / "accuracy.json").read_text())
    assert acc["n"] == N_TEST and acc["differ"] == 0 and acc["max_logit_gap"] < 1e-4 and acc["precision"] == "fp32"
    if "bf16" in engines:
        acc = json.loads((parts / "accuracy_bf16.json").read_text())
        assert (acc["precision"], acc["engine"], acc["n"]) == ("bf16", "bf16", N_TEST)
        assert acc["explained_within_bound"] == acc["explained_shown"]

    assert vit.time_ours(weights, parts, batches="2", warmup=1, repeats=2, engines=engines) == 0
    engine, why = vit.headline_engine(parts)
    assert engine in ("fp32", "tf32x3") and "batch 2" in why
    fake_profile(parts)
    doc = tresults.assemble(parts, out=tmp_path / "results" / "transformer.json", config_path=cfg_path)
    assert doc["checks_passed"] is True and doc["engines_passed"] == list(engines)
    row = doc["timing"]["rows"][0]
    assert row["precision"] == "fp32" and row["fastest_torch"]["name"] == "eager-encoder" and len(row["ours"]["variants"]) == 4
    assert row["ours"]["best"] in row["ours"]["variants"] and doc["accuracy"]["engine"] in ("fp32", "tf32x3")
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
    doc = tt.run(tmp_path / "w", batches=[3], warmup=1, repeats=3, variants=variants, precisions=("fp32", "bf16"),
                 out=tmp_path / "t.json", logits_out=tmp_path / "l.npy", device="cpu")
    got = doc["rows"][0]["variants"]
    families = ("fp32", "bf16", "bf16-model")
    assert list(got) == [k for v in variants for k in (v, f"bf16/{v}", f"bf16-model/{v}")]
    assert json.loads((tmp_path / "t.json").read_text()) == doc and doc["precisions"] == ["fp32", "bf16"]
    for name in variants[:3]:
        for key in (name, f"bf16/{name}", f"bf16-model/{name}"):
            assert got[key]["median"] > 0 and len(got[key]["times_ms"]) == 3, key
    for f in families:
        err = got[f"{f}/cuda-graph-sdpa" if f != "fp32" else "cuda-graph-sdpa"]["error"]
        assert "\n" not in err
    z32, z16 = np.load(tmp_path / "l.npy"), np.load(tmp_path / "l_bf16.npy")
    assert z32.shape == z16.shape == (10000, 10) and z16.dtype == np.float32
    assert 0 < np.abs(z32 - z16).max() < 1.0               # bfloat16's rounding, not another model
    assert doc["logits_bf16"].endswith("l_bf16.npy") and set(doc["test_accuracy_bf16"]) == {"sdpa"}
    t = tresults.timing(None, doc, None)
    fastest = {r["precision"]: r["fastest_torch"]["name"] for r in t["rows"]}
    assert fastest["fp32"] in variants[:3] and fastest["bf16"].split("/")[0] in ("bf16", "bf16-model")


def test_a_prediction_margin_is_the_gap_between_the_two_classes_logits():
    import numpy as np
    from harness.transformer import run as vit_run
    z = np.array([0.5, 2.0, -1.0], dtype=np.float32)
    assert vit_run._margin(z, 1, 0) == 1.5 and vit_run._margin(z, 2, 1) == -3.0


# ----------------------------------------------------------------------------- per precision, synthetic parts

def _check_doc(engine: str, passed: bool = True, precision: str | None = None) -> dict:
    """check_<kind>_<engine>.json as `vit_forward check` writes it (two rows; precision None: a file from
    before bf16, without the field)."""
    u = 2.0 ** -8 if precision == "bf16" else 2.0 ** -24
    rows = [{"name": "L1.q", "measure": "worst", "value": 0.3 * 129 * u, "limit": 129 * u, "depth": 129,
             "passed": True, "detail": "d"},
            {"name": "logits(images)", "measure": "worst", "value": (4 if passed else 9) * u, "limit": 8 * u,
             "depth": None, "passed": passed, "detail": "d"}]
    doc = {"schema": 1, "mode": "check", "gemm": engine, "gpu": "synthetic", "weights": "w", "layer_batch": 2,
           "logits_batch": 3, "u": 2.0 ** -24, "passed": passed, "checks": rows, "argmax_agree": 3, "argmax_n": 3}
    return doc if precision is None else doc | {"precision": precision, "u_operands": u}


def _time_doc(ms_by_engine: dict) -> dict:
    """time_ours*.json as `vit_forward time` writes it: a row per engine and batch."""
    def rec(ms):
        return {"median_ms": ms, "cv_pct": 1.0, "min_ms": ms, "max_ms": ms, "times_ms": [ms, ms]}
    rows = [{"engine": e, "batch": b, "stream": rec(ms * 1.1), "graph": rec(ms), "tiles": f"{e} (tuned)"}
            for e, by_batch in ms_by_engine.items() for b, ms in by_batch.items()]
    return {"schema": 1, "gpu": "synthetic", "timing": {"flop_per_image": 41197056, "warmup": 1, "repeats": 2,
                                                       "rows": rows}}


def _torch_doc(keys_ms: dict, batches=(128, 1024)) -> dict:
    def rec(ms):
        return {"median": ms, "min": ms, "max": ms, "cv_pct": 2.0, "times_ms": [ms] * 3, "setup_s": 0.1}
    return {"schema": 1, "gpu": "synthetic", "torch_version": "x", "tf32": False, "flop_per_image": 41197056,
            "compile_modes": {"compiled-default": "default"}, "test_accuracy": {"sdpa": 0.5, "encoder": 0.5},
            "rows": [{"batch": b, "variants": {k: ({"error": ms} if isinstance(ms, str) else rec(ms * b / 128))
                                               for k, ms in keys_ms.items()}} for b in batches]}


def _write(path: Path, doc) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))


def _parts(tmp_path, bf16_passes: bool = True) -> Path:
    parts = tmp_path / "results" / "transformer"
    for e, p in (("fp32", "fp32"), ("tf32x3", "fp32"), ("bf16", "bf16")):
        for k in ("trained", "random"):
            _write(parts / f"check_{k}_{e}.json", _check_doc(e, bf16_passes or e != "bf16" or k == "random", p))
    _write(parts / "time_ours.json", _time_doc({"fp32": {128: 0.50, 1024: 2.6}, "tf32x3": {128: 0.52, 1024: 2.4}}))
    _write(parts / "time_ours_bf16.json", _time_doc({"bf16": {128: 0.20, 1024: 0.9}}))
    _write(parts / "torch_time.json", _torch_doc({
        "eager-encoder": 1.0, "cuda-graph-sdpa": 0.4, "eager-sdpa-flash": "RuntimeError: Invalid backend",
        "tf32/cuda-graph-sdpa": 0.3, "tf32/compiled-default": 0.28,
        "bf16/eager-sdpa-flash": 0.6, "bf16/cuda-graph-sdpa": 0.33,
        "bf16-model/cuda-graph-sdpa": 0.25, "bf16-model/compiled-default": "not run: the 9 s budget was spent"}))
    return parts


def test_results_assemble_per_precision_from_synthetic_parts(tmp_path):
    parts = _parts(tmp_path)
    doc = tresults.assemble(parts, out=tmp_path / "transformer.json", ceilings_path=tmp_path / "none.json")
    validate_transformer(doc, "assembled")
    assert doc["engines_passed"] == ["fp32", "tf32x3", "bf16"] and doc["precisions"] == ["fp32", "bf16"]
    assert {e: c["trained"]["precision"] for e, c in doc["checks"].items()} == {"fp32": "fp32", "tf32x3": "fp32",
                                                                                 "bf16": "bf16"}
    rows = {(r["precision"], r["batch"]): r for r in doc["timing"]["rows"]}
    assert list(rows) == [("fp32", 128), ("fp32", 1024), ("bf16", 128), ("bf16", 1024), ("tf32", 128), ("tf32", 1024)]
    fp32, bf16, tf32 = rows["fp32", 1024], rows["bf16", 1024], rows["tf32", 1024]
    assert set(fp32["ours"]["variants"]) == {"fp32-stream", "fp32-graph", "tf32x3-stream", "tf32x3-graph"}
    assert fp32["ours"]["best"] == "tf32x3-graph" and set(fp32["torch"]) == {"eager-encoder", "cuda-graph-sdpa",
                                                                             "eager-sdpa-flash"}
    assert fp32["fastest_torch"]["name"] == "cuda-graph-sdpa" and fp32["ratio"] == pytest.approx(2.4 / (0.4 * 8))
    assert set(bf16["ours"]["variants"]) == {"bf16-stream", "bf16-graph"} and bf16["ours"]["engine_passed"] is True
    assert bf16["fastest_torch"]["name"] == "bf16-model/cuda-graph-sdpa"          # the fastest of both bf16 families
    assert bf16["ratio"] == pytest.approx(0.9 / (0.25 * 8)) and bf16["acceptance_met"] and bf16["goal_met"]
    assert tf32["ours"] is None and tf32["ratio"] is None and tf32["fastest_torch"]["name"] == "tf32/compiled-default"
    assert doc["timing"]["precisions"]["bf16"]["torch_families"] == ["bf16", "bf16-model"]
    assert not doc["timing"]["precisions"]["tf32"]["compared"]


def test_a_bf16_engine_that_fails_its_checks_is_marked_and_the_headline_falls_back(tmp_path):
    parts = _parts(tmp_path, bf16_passes=False)
    doc = tresults.assemble(parts, out=tmp_path / "transformer.json", ceilings_path=tmp_path / "none.json")
    assert doc["engines_passed"] == ["fp32", "tf32x3"] and doc["checks_passed"] is False
    bf16 = next(r for r in doc["timing"]["rows"] if r["precision"] == "bf16")
    assert bf16["ours"]["engine_passed"] is False                  # timed, shown, but its checks failed
    assert vit.headline_engine(parts, "bf16")[0] == "bf16" and "no bf16 engine" in vit.headline_engine(parts, "bf16")[1]
    assert vit.headline_engine(parts, "fp32") == ("tf32x3", "the faster at batch 1024 of the fp32 engines that "
                                                            "passed their checks (fp32, tf32x3)")


def test_results_assemble_from_parts_written_before_bf16(tmp_path):
    """Parts from before the bf16 engine: check files without "precision", bare PyTorch keys, no bf16 files."""
    parts = tmp_path / "results" / "transformer"
    for e in ("fp32", "tf32x3"):
        for k in ("trained", "random"):
            _write(parts / f"check_{k}_{e}.json", _check_doc(e))
    _write(parts / "time_ours.json", _time_doc({"fp32": {128: 0.5}, "tf32x3": {128: 0.52}}))
    _write(parts / "torch_time.json", _torch_doc({"eager-encoder": 1.0, "cuda-graph-sdpa": 0.4}, batches=(128,)))
    doc = tresults.assemble(parts, out=tmp_path / "transformer.json", ceilings_path=tmp_path / "none.json")
    validate_transformer(doc, "assembled")
    assert [r["precision"] for r in doc["timing"]["rows"]] == ["fp32"] and doc["accuracy_bf16"] is None
    assert {c["trained"]["precision"] for c in doc["checks"].values()} == {"fp32"}
    text = tresults.summary(doc)
    assert "timing (bf16): ours not measured" in text and "accuracy (bf16): not measured" in text


def test_time_runs_the_binary_once_per_precision(tmp_path, monkeypatch):
    calls = []

    def fake_vit(*args, **_):
        calls.append([str(a) for a in args])
        out = Path(args[list(args).index("--out") + 1])
        out.write_text(json.dumps({"timing": {"rows": []}}))
        return 0
    monkeypatch.setattr(vit, "vit", fake_vit)
    monkeypatch.setattr("spec.provenance.git_commit", lambda: "abc1234")
    assert vit.time_ours("random", tmp_path, batches="2", warmup=1, repeats=2) == 0
    gemm = [c[c.index("--gemm") + 1] for c in calls]
    outs = [Path(c[c.index("--out") + 1]).name for c in calls]
    assert gemm == ["fp32,tf32x3", "bf16"] and outs == ["time_ours.json", "time_ours_bf16.json"]
    calls.clear()
    assert vit.time_ours("random", tmp_path, engines=("fp32", "tf32x3")) == 0
    assert len(calls) == 1 and not (tmp_path / "time_ours_bf16.json").exists()      # the stale bf16 file gone
    assert vit.main(["time", "--engines", "fp32,bf17"]) == 2


def test_accuracy_compares_each_precision_with_pytorchs_at_that_precision(tmp_path, monkeypatch):
    """accuracy.json: the fp32 headline engine against torch_logits.npy; accuracy_bf16.json: bf16 against
    torch_logits_bf16.npy, its one differing prediction explained by `check --explain` on the bf16 engine."""
    labels = load_dataset()["test_labels"][:N_TEST]
    base = np.eye(10, dtype=np.float32)[labels] * 2.0
    ours16 = base.copy()
    ours16[5] = np.eye(10, dtype=np.float32)[(labels[5] + 1) % 10] * 2.0      # one prediction differs at bf16
    logits = {"fp32": base, "tf32x3": base, "bf16": ours16}
    parts = tmp_path
    np.save(parts / "torch_logits.npy", base)
    np.save(parts / "torch_logits_bf16.npy", base + 0.01)
    calls = []

    def fake_vit(*args, **_):
        args = [str(a) for a in args]
        calls.append(args)
        flag = {args[i]: args[i + 1] for i in range(1, len(args) - 1) if args[i].startswith("--")}
        if args[0] == "predict":
            np.save(flag["--out"], logits[flag["--gemm"]])
            Path(flag["--json"]).write_text(json.dumps({"accuracy": 0.5}))
        else:
            shown = [int(i) for i in flag["--explain"].split(",")]
            Path(flag["--out"]).write_text(json.dumps({"explain": [
                {"index": i, "ref": [1.0] * 10, "bound": [0.5] * 10} for i in shown]}))
        return 0
    monkeypatch.setattr(vit, "vit", fake_vit)
    monkeypatch.setattr("spec.provenance.git_commit", lambda: "abc1234")
    for k in ("trained", "random"):
        for e, p in (("fp32", "fp32"), ("tf32x3", "fp32"), ("bf16", "bf16")):
            _write(parts / f"check_{k}_{e}.json", _check_doc(e, precision=p))
    assert vit.accuracy("random", parts) == 0
    a32, a16 = (json.loads((parts / n).read_text()) for n in ("accuracy.json", "accuracy_bf16.json"))
    assert (a32["precision"], a32["engine"], a32["differ"], set(a32["other_engines"])) == ("fp32", "fp32", 0, {"tf32x3"})
    assert (a16["precision"], a16["engine"], a16["differ"], a16["other_engines"]) == ("bf16", "bf16", 1, {})
    assert a16["torch_logits"].endswith("torch_logits_bf16.npy") and a16["cases"][0]["index"] == 5
    assert a16["cases"][0]["within_bound"] is True and a16["cases"][0]["bound"] == 1.0
    explain = [c for c in calls if c[0] == "check"]
    assert len(explain) == 1 and explain[0][explain[0].index("--gemm") + 1] == "bf16"
    assert Path(explain[0][explain[0].index("--out") + 1]).name == "explain_bf16.json"
    (parts / "torch_logits_bf16.npy").unlink()                        # PyTorch's bf16 logits missing: exit 2
    assert vit.accuracy("random", parts) == 2 and (parts / "accuracy.json").exists()


def test_the_bf16_engine_on_the_emulated_binary(tmp_path, built):
    """`vit_forward check --gemm bf16` records precision bf16 and bfloat16's unit roundoff as u_operands
    (fp32: 0, its operands rounded no further), the limits of the rows with GEMM operands derived at it
    (the others float32's), and passes on random weights;
    `time --gemm fp32,tf32x3,bf16` times the three."""
    ok, why = emu_takes_bf16(built)
    if not ok:
        pytest.skip(why)
    docs = {}
    for engine in ("fp32", "bf16"):
        out = tmp_path / f"check_{engine}.json"
        res = subprocess.run([str(EMU), "check", "--random", "3", "--gemm", engine, "--layer-batch", "2",
                              "--logits-batch", "3", "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                             timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        docs[engine] = json.loads(out.read_text())
    assert (docs["bf16"]["precision"], docs["bf16"]["u_operands"]) == ("bf16", 2.0 ** -8)
    assert (docs["fp32"]["precision"], docs["fp32"]["u_operands"]) == ("fp32", 0)     # float32 operands: no further rounding
    limits = {e: {(r["name"], r["measure"]): r["limit"] for r in d["checks"]} for e, d in docs.items()}
    assert limits["bf16"].keys() == limits["fp32"].keys()
    assert all(limits["bf16"][k] >= limits["fp32"][k] for k in limits["fp32"])
    assert all(limits["bf16"][k, m] > 100 * limits["fp32"][k, m] for k in ("L1.q", "L1.mlp_hidden", "L1.attn_weights")
               for m in ("worst", "normwise"))                 # the GEMMs' rows: their operands rounded to bfloat16
    out = tmp_path / "time.json"
    res = subprocess.run([str(EMU), "time", "--random", "3", "--gemm", "fp32,tf32x3,bf16", "--batches", "2",
                          "--warmup", "1", "--repeats", "2", "--out", str(out)], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert {r["engine"] for r in json.loads(out.read_text())["timing"]["rows"]} == {"fp32", "tf32x3", "bf16"}
