"""PyTorch at the precisions of issue "Mixed precision with measured parity": the registry's tf32
and bf16 variants (eager, cuda-graph, compiled-step at each), the TF32 setting of one variant
alone (harness/baseline/precision.py), bfloat16 autocast changing the arithmetic and nothing
else, pytorch.json's precision, fastest_variant (fp32) and fastest_by_precision, and RESULTS.md's
precision column.

CPU: two epochs of a 600-image slice (four batches of 128 and a tail of 88) at hidden width 48;
the compiled-step-bf16 step uncompiled (its Inductor compile on the CPU is marked slow). GPU
(@pytest.mark.gpu): the six variants on the recipe for two epochs."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from analysis import report  # noqa: E402
from analysis.sections import common  # noqa: E402
from harness.baseline import precision as prec  # noqa: E402
from harness.baseline import pytorch_baseline as pb  # noqa: E402
from harness.baseline import registry  # noqa: E402
from harness.baseline.compiled_step import CompiledStepVariant  # noqa: E402
from harness.baseline.variants import EagerVariant  # noqa: E402
from spec.files import ROOT  # noqa: E402
from spec.recipe import load_recipe  # noqa: E402
from spec.schema import SchemaError, validate  # noqa: E402
from spec.torch_variants import BF16, CUDA_GRAPH, EAGER, FP32, PRECISIONS, TF32, precision_of  # noqa: E402
# The 600-image synthetic slice and the recipe's inputs, shared with the compiled step's tests.
from tests.test_torch_step import recipe_inputs, slice600  # noqa: E402,F401

RECIPE = load_recipe()
COMPILED_STEP = "compiled-step"
SIX = {"eager-tf32": (EAGER, TF32), "cuda-graph-tf32": (CUDA_GRAPH, TF32),
       "compiled-step-tf32": (COMPILED_STEP, TF32), "eager-bf16": (EAGER, BF16),
       "cuda-graph-bf16": (CUDA_GRAPH, BF16), "compiled-step-bf16": (COMPILED_STEP, BF16)}
OFF = {"matmul_allow_tf32": False, "cudnn_allow_tf32": False, "float32_matmul_precision": "highest"}
ON = {"matmul_allow_tf32": True, "cudnn_allow_tf32": True, "float32_matmul_precision": "high"}
FIXTURES = Path(__file__).resolve().parent / "fixtures"


# ----------------------------------------------------------------------------- the registry

def test_the_six_variants_are_registered_at_their_precision():
    for name, (base, p) in SIX.items():
        v, b = registry.get(name), registry.get(base)
        assert v.precision == p and b.precision == FP32, name
        assert v.build.func is b.build and v.build.keywords == {"precision": p}, name  # reused
        assert v.compiled == b.compiled and v.cuda_only == (b.cuda_only or p == TF32), name
        # in a plain run since the GPU run of ffabfba had them pass; never traced; in the sweep
        # the cuda-graph and compiled-step ones (registry.SWEEP_AT_PRECISION: not eager)
        assert v.full_only is None and not v.traced, name
        assert v.sweep == (base in registry.SWEEP_AT_PRECISION) == (base != EAGER), name
        assert v.numerics == registry.NUMERICS[p] and name in registry.listing(), name
    others = [n for n in registry.names() if n not in SIX]
    assert all(registry.get(n).precision == FP32 for n in others)
    assert registry.precision_names(TF32) == ["eager-tf32", "cuda-graph-tf32", "compiled-step-tf32"]
    assert registry.precision_names(BF16) == ["eager-bf16", "cuda-graph-bf16", "compiled-step-bf16"]
    assert set(SIX) <= set(registry.select()[0])             # a plain run runs them
    assert set(SIX) <= set(registry.select(full=True)[0])    # and --full
    assert registry.sweep_names([FP32]) == [EAGER, CUDA_GRAPH, COMPILED_STEP]   # fp32 first
    assert registry.sweep_names([TF32]) == ["cuda-graph-tf32", "compiled-step-tf32"]
    assert registry.sweep_names([BF16]) == ["cuda-graph-bf16", "compiled-step-bf16"]
    assert registry.names()[-len(SIX):] == list(SIX)          # after the fp32 ones


def test_tf32_is_cuda_only_and_bf16_runs_on_a_cpu():
    assert registry.unavailable("eager-tf32", "cpu") == "eager-tf32 needs a CUDA device"
    assert registry.unavailable("compiled-step-tf32", "cpu") == "compiled-step-tf32 needs a CUDA device"
    assert registry.unavailable("eager-bf16", "cpu") is None
    assert registry.unavailable("compiled-step-bf16", "cpu") is None
    assert registry.unavailable("cuda-graph-bf16", "cpu") == "cuda-graph-bf16 needs a CUDA device"


# ----------------------------------------------------------------------------- TF32, one variant

def test_the_tf32_setting_is_restored_after_it_and_after_an_error():
    before = prec.apply(False, True, "highest")               # PyTorch's own default
    try:
        with prec.setting(TF32) as inside:
            assert inside == ON == prec.matmul_settings()
            with prec.setting(FP32) as nested:                # fp32 inside: TF32 off again
                assert nested == OFF
            assert prec.matmul_settings() == ON
        assert prec.matmul_settings() == before
        with pytest.raises(RuntimeError, match="boom"):
            with prec.setting(TF32):
                raise RuntimeError("boom")
        assert prec.matmul_settings() == before
        with prec.setting(BF16) as bf16:                      # bf16: TF32 off
            assert bf16 == OFF
        with pytest.raises(ValueError, match="fp16"):
            with prec.setting("fp16"):
                pass
        assert prec.matmul_settings() == before
    finally:
        prec.apply(*prec.FLAGS[FP32])


class _Seen:
    """Eager, recording the TF32 settings at set-up and in every epoch."""

    log: list = []

    def __init__(self, name, w, init_flat, shape, step_losses, precision=FP32):
        self.name, self.inner = name, EagerVariant(w, init_flat, shape, step_losses,
                                                   precision=precision)
        self.log.append((name, "build", prec.matmul_settings()))

    def run_epoch(self, e):
        self.log.append((self.name, "epoch", prec.matmul_settings()))
        self.inner.run_epoch(e)

    def predict(self, X):
        return self.inner.predict(X)


def _seen(name, precision):
    def build(w, init_flat, shape, step_losses):
        return _Seen(name, w, init_flat, shape, step_losses, precision)
    return registry.Variant(f"{name} (test)", build, precision=precision)


def test_fp32_variants_of_the_same_run_keep_tf32_off(slice600, tmp_path, monkeypatch):
    """A tf32 variant between two fp32 ones (here not cuda_only, so it runs on the CPU): TF32 on
    for its set-up and epochs alone; each entry records its precision and settings."""
    s = slice600
    np.save(tmp_path / "init_params.npy", s["init"])
    np.save(tmp_path / "order.npy", s["order"])
    monkeypatch.setattr("spec.provenance.git_commit", lambda: "test-commit")
    monkeypatch.setattr(registry, "VARIANTS", {
        "a-fp32": _seen("a-fp32", FP32), "b-tf32": _seen("b-tf32", TF32),
        "c-fp32": _seen("c-fp32", FP32), "d-bf16": _seen("d-bf16", BF16)})
    _Seen.log = []
    doc = pb.run_all(tmp_path, device="cpu", data=s["data"])
    validate(doc, "pytorch", "pytorch.json")
    seen = {}
    for name, _, flags in _Seen.log:
        seen.setdefault(name, []).append(flags)
    assert [len(v) for v in seen.values()] == [3, 3, 3, 3]     # set-up and two epochs each
    assert all(f == ON for f in seen["b-tf32"])
    assert all(f == OFF for n in ("a-fp32", "c-fp32", "d-bf16") for f in seen[n])
    assert doc["tf32"] == OFF and prec.matmul_settings() == OFF
    for name, p in (("a-fp32", FP32), ("b-tf32", TF32), ("c-fp32", FP32), ("d-bf16", BF16)):
        assert doc["variants"][name]["precision"] == p
        assert doc["variants"][name]["tf32"] == (ON if p == TF32 else OFF)
    v = doc["variants"]
    fp32_best = min(("a-fp32", "c-fp32"), key=lambda n: (v[n]["median_ms"], n))
    assert doc["fastest_variant"] == fp32_best
    assert doc["fastest_median_ms"] == v[fp32_best]["median_ms"]
    assert doc["fastest_by_precision"] == {
        FP32: {"variant": fp32_best, "median_ms": v[fp32_best]["median_ms"]},
        TF32: {"variant": "b-tf32", "median_ms": v["b-tf32"]["median_ms"]},
        BF16: {"variant": "d-bf16", "median_ms": v["d-bf16"]["median_ms"]}}
    assert json.loads((tmp_path / "pytorch.json").read_text()) == json.loads(json.dumps(doc))


def test_the_real_tf32_variants_are_skipped_on_a_cpu_naming_their_precision(slice600, tmp_path,
                                                                             monkeypatch):
    s = slice600
    np.save(tmp_path / "init_params.npy", s["init"])
    np.save(tmp_path / "order.npy", s["order"])
    monkeypatch.setattr("spec.provenance.git_commit", lambda: "test-commit")
    doc = pb.run_all(tmp_path, [EAGER, "eager-tf32", "cuda-graph-bf16"], epochs=2, device="cpu",
                     data=s["data"])
    validate(doc, "pytorch", "pytorch.json")
    assert doc["variants"]["eager-tf32"] == {"error": "skipped: eager-tf32 needs a CUDA device",
                                             "precision": TF32}
    assert doc["variants"]["cuda-graph-bf16"]["precision"] == BF16
    assert doc["variants"][EAGER]["precision"] == FP32 and doc["variants"][EAGER]["tf32"] == OFF
    assert doc["fastest_variant"] == EAGER
    assert doc["fastest_by_precision"] == {
        FP32: {"variant": EAGER, "median_ms": doc["variants"][EAGER]["median_ms"]},
        TF32: None, BF16: None}


# ----------------------------------------------------------------------------- bfloat16

class _MatmulDtypes(TorchDispatchMode):
    """The dtypes of every matrix product run under it (forward and backward)."""

    OPS = {"addmm", "mm", "bmm", "matmul", "linear"}

    def __init__(self):
        super().__init__()
        self.dtypes = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket.__name__ in self.OPS and isinstance(out, torch.Tensor):
            self.dtypes.add(out.dtype)
        return out


def _run(name, s, factory=None):
    with _MatmulDtypes() as mode:
        entry = pb.run_variant(name, s["init"], s["order"], s["data"], RECIPE, device="cpu",
                               return_step_losses=True, variant_factory=factory)
    return entry, mode.dtypes


def _uncompiled(precision):
    def build(w, init, shape, losses):
        return CompiledStepVariant(w, init, shape, losses, compile=False, precision=precision)
    return build


@pytest.fixture(scope="module")
def trained(slice600):
    s = slice600
    return {"eager": _run(EAGER, s), "eager-bf16": _run("eager-bf16", s),
            "step": _run(COMPILED_STEP, s, _uncompiled(FP32)),
            "step-bf16": _run("compiled-step-bf16", s, _uncompiled(BF16))}


@pytest.mark.parametrize("bf16, fp32", [("eager-bf16", "eager"), ("step-bf16", "step")])
def test_bf16_changes_the_products_and_only_a_little_the_losses(trained, bf16, fp32):
    (got, got_dtypes), (ref, ref_dtypes) = trained[bf16], trained[fp32]
    assert ref_dtypes == {torch.float32}
    assert torch.bfloat16 in got_dtypes                     # some product ran in bfloat16
    a, b = np.asarray(got["step_losses"]), np.asarray(ref["step_losses"])
    assert a.shape == b.shape == (2, 5) and np.isfinite(a).all()
    assert got["precision"] == BF16 and got["tf32"] == OFF
    assert np.abs(a - b).max() > 0                          # not the float32 arithmetic ...
    np.testing.assert_allclose(a, b, rtol=2e-2)             # ... but near it
    assert all(np.isfinite(got["loss_per_epoch"])) and "error" not in got


def test_the_bf16_step_is_eager_bf16s_arithmetic(trained):
    """The compiled-step-bf16 step (uncompiled) and eager-bf16 cast the same products."""
    np.testing.assert_allclose(trained["step-bf16"][0]["step_losses"],
                               trained["eager-bf16"][0]["step_losses"], rtol=1e-4)


def test_bf16_keeps_float32_weights_and_momentum(slice600):
    s = slice600
    w, init_flat, shape, losses = pb.workload_for(s["init"], s["order"], s["data"], RECIPE, "cpu")
    eager = EagerVariant(w, init_flat, shape, losses, precision=BF16)
    eager.run_epoch(0)
    assert {p.dtype for p in eager.model.parameters()} == {torch.float32}
    assert {st["momentum_buffer"].dtype for st in eager.opt.state.values()} == {torch.float32}
    assert eager.predict(w.Xt).dtype == torch.bfloat16        # evaluated at its precision
    step = CompiledStepVariant(w, init_flat, shape, losses, compile=False, precision=BF16)
    step.run_epoch(0)
    assert step.params.dtype == step.velocity.dtype == torch.float32
    assert step.predict(w.Xt).dtype == torch.bfloat16


@pytest.mark.slow
def test_compiled_step_bf16_compiles_on_a_cpu_in_bfloat16(slice600, trained):
    """Inductor on the CPU traces the autocast region: the compiled step is the uncompiled one's
    arithmetic, not float32's."""
    s = slice600
    entry = pb.run_variant("compiled-step-bf16", s["init"], s["order"], s["data"], RECIPE,
                           device="cpu", return_step_losses=True)
    plain = np.asarray(trained["step-bf16"][0]["step_losses"])
    fp32 = np.asarray(trained["step"][0]["step_losses"])
    got = np.asarray(entry["step_losses"])
    assert entry["compile_seconds"] > 0 and entry["cudagraph_skips"] == 0
    assert np.abs(got - plain).max() < np.abs(plain - fp32).max() / 4


# ----------------------------------------------------------------------------- fastest, schema

def test_fastest_by_precision_picks_per_precision():
    v = {"eager": {"median_ms": 40.0, "precision": FP32},
         "cuda-graph": {"median_ms": 5.0, "precision": FP32},
         "eager-tf32": {"median_ms": 30.0, "precision": TF32},
         "cuda-graph-tf32": {"median_ms": 4.0, "precision": TF32, "error": "x"},
         "eager-bf16": {"median_ms": 35.0, "precision": BF16},
         "compiled-step-bf16": {"median_ms": 1.0, "precision": BF16},
         "old": {"median_ms": 4.5}}                               # no precision: fp32
    assert pb.fastest_variant(v) == "old"                         # fp32 only, never bf16's 1.0
    assert pb.fastest_by_precision(v) == {
        FP32: {"variant": "old", "median_ms": 4.5},
        TF32: {"variant": "eager-tf32", "median_ms": 30.0},
        BF16: {"variant": "compiled-step-bf16", "median_ms": 1.0}}
    assert pb.fastest_by_precision({"eager": {"error": "x", "precision": FP32}}) == dict.fromkeys(PRECISIONS)
    assert common.fastest(v) == "old" and common.fastest(v, BF16) == "compiled-step-bf16"


def _doc():
    return {"variants": {"eager": {"median_ms": 4.0, "precision": FP32},
                         "eager-bf16": {"median_ms": 2.0, "precision": BF16}},
            "fastest_variant": "eager",
            "fastest_by_precision": {FP32: {"variant": "eager", "median_ms": 4.0}, TF32: None,
                                     BF16: {"variant": "eager-bf16", "median_ms": 2.0}}}


def test_the_schema_holds_fastest_to_its_precision():
    validate(_doc(), "pytorch", "p.json")
    for change, words in (
            (lambda d: d.update(fastest_variant="eager-bf16"), "fastest_variant: 'eager-bf16' is of precision 'bf16'"),
            (lambda d: d["fastest_by_precision"].update(bf16={"variant": "eager", "median_ms": 4.0}),
             "fastest_by_precision.bf16: 'eager' is no variant of precision 'bf16'"),
            (lambda d: d["fastest_by_precision"].update(fp16=None), "key 'fp16' is no precision"),
            (lambda d: d["variants"]["eager"].update(precision="fp16"), "variants.eager.'precision'")):
        doc = _doc()
        change(doc)
        with pytest.raises(SchemaError, match=words):
            validate(doc, "pytorch", "p.json")


def test_precision_of_an_old_and_a_new_file():
    assert precision_of({}, {"variants": {}}) == FP32                       # before the field
    assert precision_of({}, {"tf32": OFF}) == FP32
    assert precision_of({}, {"tf32": ON}) is None                           # TF32 on: unknown
    assert precision_of({}, {"fastest_by_precision": {}}) is None           # a file of the field
    assert precision_of({"precision": BF16}, {}) == BF16
    assert precision_of({"precision": "fp16"}, {}) is None


# ----------------------------------------------------------------------------- RESULTS.md

def _render(results: Path) -> str:
    out = results.parent / "out"
    report.render(results, results.parent / "no-profile", ROOT / "predictions.toml",
                  ROOT / "GAPS.toml", out / "RESULTS.md", plots_dir=out / "plots")
    return (out / "RESULTS.md").read_text(encoding="utf-8")


def _accuracy_rows(text: str) -> dict:
    part = text.split("## PyTorch: test accuracy against float64", 1)[1].split("\n## ", 1)[0]
    rows = [ln.split(" | ") for ln in part.splitlines()
            if ln.startswith("| ") and not ln.startswith("| variant")]
    return {r[0][2:]: r[1] for r in rows}


def test_results_md_lists_each_variants_precision_and_compares_fp32_with_fp32(tmp_path):
    results = tmp_path / "results"
    shutil.copytree(FIXTURES / "results", results)
    old = _render(results)
    assert set(_accuracy_rows(old).values()) == {FP32}     # an old file: every variant fp32
    assert "written before the baseline recorded each variant's precision" in old

    doc = json.loads((results / "pytorch.json").read_text())
    fastest = common.fastest(doc["variants"])
    for rec in doc["variants"].values():
        rec["precision"] = FP32
    bf16 = dict(doc["variants"][CUDA_GRAPH], precision=BF16)
    bf16["median_ms"] = bf16["min_ms"] = bf16["max_ms"] = bf16["mean_ms"] = 0.01  # the fastest
    doc["variants"]["cuda-graph-bf16"] = bf16
    doc["variants"]["eager-tf32"] = {"error": "skipped: eager-tf32 needs a CUDA device",
                                     "precision": TF32}
    del doc["variants"]["manual-ops"]["precision"]           # a new file's entry without it
    doc["fastest_by_precision"] = {FP32: None, TF32: None,
                                   BF16: {"variant": "cuda-graph-bf16", "median_ms": 0.01}}
    (results / "pytorch.json").write_text(json.dumps(doc))
    text = _render(results)
    rows = _accuracy_rows(text)
    assert rows["cuda-graph-bf16"] == BF16 and rows["eager-tf32"] == TF32
    assert rows[EAGER] == FP32 and rows["manual-ops"] == "—"
    assert "written before the baseline recorded each variant's precision" not in text
    for p in (FP32, TF32, BF16):
        assert f"`{p}`, {PRECISIONS[p]}" in text
    # every "PyTorch's fastest" stays the fp32 one, named
    assert f"over `{fastest}`'s" in text and "over `cuda-graph-bf16`'s" not in text
    assert f"PyTorch's fastest variant, `{fastest}`" in text


# ----------------------------------------------------------------------------- GPU

@pytest.mark.gpu
@pytest.mark.parametrize("variant", list(SIX))
def test_gpu_precision_variants_track_their_fp32_twin(recipe_inputs, variant):
    """Two epochs beside the fp32 variant they are built from: the first steps' losses near its
    but not equal, TF32 on for the tf32 ones alone, graphs not skipped, the fp32 twin run after
    them with TF32 off."""
    init, order, data = recipe_inputs
    base, p = SIX[variant]
    kw = dict(epochs=2, device="cuda", return_step_losses=True)
    got = pb.run_variant(variant, init, order, data, RECIPE, **kw)
    ref = pb.run_variant(base, init, order, data, RECIPE, **kw)
    a, b = np.asarray(got["step_losses"]), np.asarray(ref["step_losses"])
    assert np.isfinite(a).all() and "error" not in got
    np.testing.assert_allclose(a[0][:10], b[0][:10], rtol=2e-2)
    assert np.abs(a[0][:10] - b[0][:10]).max() > 0
    assert got["tf32"] == (ON if p == TF32 else OFF) and ref["tf32"] == OFF
    if got.get("cudagraph_skips") is not None:
        assert got["cudagraph_skips"] == 0
    if base != EAGER:
        assert got["capture_seconds"] > 0
