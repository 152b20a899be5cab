"""compiled-step (harness/baseline/compiled_step.py) and the baseline's variant selection.

CPU: the whole step's equations uncompiled against the float64 reference (a 600-image slice:
four batches of 128 and a tail of 88, two epochs); one update by hand against submission.h's
v = mu·v − lr·g ; p = p + v; the step compiled by Inductor on the CPU (marked slow: about 30 s of
compilation with a cold cache) against the uncompiled one; the default variant set, --full and
fastest_variant. GPU: compiled-step and compiled-step-reduce-overhead beside eager on the recipe.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from harness.data import np_reference  # noqa: E402
from spec.recipe import load_recipe  # noqa: E402
from harness.baseline import pytorch_baseline as pb  # noqa: E402
from harness.baseline import registry  # noqa: E402
from harness.baseline import variants as tv  # noqa: E402
from harness.baseline.compiled_step import CompiledStepVariant, make_step  # noqa: E402
from spec import layout  # noqa: E402
from spec.files import RESULTS_DIR  # noqa: E402

RECIPE = load_recipe()
N_TRAIN, N_TEST, HIDDEN, BATCH = 600, 200, 48, RECIPE["batch"]


@pytest.fixture(scope="module")
def slice600():
    rng = np.random.default_rng(18)
    data = {"train_images": rng.uniform(0, 1, (N_TRAIN, 784)).astype(np.float32),
            "train_labels": rng.integers(0, 10, N_TRAIN).astype(np.int32),
            "test_images": rng.uniform(0, 1, (N_TEST, 784)).astype(np.float32),
            "test_labels": rng.integers(0, 10, N_TEST).astype(np.int32)}
    shape = layout.Shape(784, HIDDEN, 10)
    init = (rng.uniform(-1, 1, layout.n_params(shape)) / np.sqrt(784)).astype(np.float32)
    order = np.stack([rng.permutation(N_TRAIN) for _ in range(2)]).astype(np.int32)
    return {"data": data, "init": init, "order": order, "shape": shape}


def _uncompiled(w, init, shape, losses):
    return CompiledStepVariant(w, init, shape, losses, compile=False)


def test_uncompiled_step_matches_float64_reference(slice600):
    s = slice600
    entry = pb.run_variant("compiled-step", s["init"], s["order"], s["data"], RECIPE,
                           device="cpu", return_step_losses=True, variant_factory=_uncompiled)
    p = s["init"].astype(np.float64)
    v = np.zeros_like(p)
    for e in range(2):
        ref = np_reference.train_epoch(p, v, s["data"]["train_images"], s["data"]["train_labels"],
                                       s["order"][e], BATCH, RECIPE["lr"], RECIPE["momentum"],
                                       s["shape"])
        assert len(entry["step_losses"][e]) == 5                 # 4 x 128 and the tail of 88
        np.testing.assert_allclose(entry["step_losses"][e], ref, rtol=1e-4)
    acc, _ = np_reference.evaluate(p, s["data"]["test_images"], s["data"]["test_labels"],
                                   s["shape"])
    assert abs(entry["test_accuracy"] - acc) <= 2 / N_TEST
    assert "compile_seconds" not in entry and "capture_seconds" not in entry
    assert entry["setup_seconds"] >= 0 and len(entry["epoch_ms"]) == 1


def test_uncompiled_step_matches_eager(slice600):
    s = slice600
    kw = dict(device="cpu", return_step_losses=True)
    step = pb.run_variant("compiled-step", s["init"], s["order"], s["data"], RECIPE,
                          variant_factory=_uncompiled, **kw)
    eager = pb.run_variant("eager", s["init"], s["order"], s["data"], RECIPE, **kw)
    np.testing.assert_allclose(step["step_losses"], eager["step_losses"], rtol=1e-5)
    assert step["test_accuracy_per_epoch"] == eager["test_accuracy_per_epoch"]


def test_one_step_is_submission_h_momentum_update(slice600):
    """One step from a non-zero velocity: v' = mu·v − lr·g and p' = p + v', with g the autograd
    gradient of the batch's loss; the loss lands at step_losses[counter]; counter advances."""
    s, shape = slice600, slice600["shape"]
    lr, mu, b = 0.1, 0.9, 16
    rng = np.random.default_rng(7)
    p0 = torch.as_tensor(s["init"]).clone()
    v0 = torch.as_tensor(rng.normal(0, 1e-3, p0.numel()).astype(np.float32))
    X = torch.as_tensor(s["data"]["train_images"])
    y = torch.as_tensor(s["data"]["train_labels"].astype(np.int64))
    order = torch.as_tensor(s["order"][0].astype(np.int64))
    counter = torch.tensor([2])
    losses = torch.zeros(5)
    params, vel = p0.clone(), v0.clone()
    make_step(shape, b, lr, mu)(params, vel, order, counter, torch.arange(b), X, y, losses)

    idx = order[2 * b:3 * b]
    q = p0.clone().requires_grad_()
    W1, b1, W2, b2 = tv.flat_views(q, shape)
    loss = torch.nn.functional.cross_entropy(torch.relu(X[idx] @ W1 + b1) @ W2 + b2, y[idx])
    (g,) = torch.autograd.grad(loss, q)
    v_ref = mu * v0 - lr * g
    torch.testing.assert_close(vel, v_ref, rtol=1e-5, atol=1e-8)
    torch.testing.assert_close(params, p0 + v_ref, rtol=1e-6, atol=1e-8)
    assert losses[2].item() == pytest.approx(loss.item(), rel=1e-6)
    assert losses[[0, 1, 3, 4]].abs().sum().item() == 0
    assert counter.item() == 3


@pytest.mark.slow
def test_compiled_step_on_cpu_matches_uncompiled(slice600):
    """Inductor on the CPU: two specialisations (batch 128 and the tail of 88), no graphs."""
    s = slice600
    kw = dict(device="cpu", return_step_losses=True)
    compiled = pb.run_variant("compiled-step", s["init"], s["order"], s["data"], RECIPE, **kw)
    plain = pb.run_variant("compiled-step", s["init"], s["order"], s["data"], RECIPE,
                           variant_factory=_uncompiled, **kw)
    np.testing.assert_allclose(compiled["step_losses"], plain["step_losses"], rtol=1e-5)
    assert compiled["compile_seconds"] > 0 and "capture_seconds" not in compiled
    assert compiled["cudagraph_skips"] == 0
    assert compiled["setup_seconds"] >= compiled["compile_seconds"]


# --------------------------------------------------------------------------------------------
# The variant set of a run
# --------------------------------------------------------------------------------------------

def test_default_variant_set_leaves_out_the_slow_compile():
    chosen, left_out = registry.select()
    assert "compiled-max-autotune-no-cudagraphs" not in chosen
    assert {"compiled-step", "compiled-step-reduce-overhead", "eager", "cuda-graph"} <= set(chosen)
    assert left_out == registry.full_only()
    assert "--full" in left_out["compiled-max-autotune-no-cudagraphs"]
    chosen, left_out = registry.select(full=True)
    assert chosen == registry.names() and left_out == {}
    chosen, left_out = registry.select(["eager"], full=True)   # named variants win
    assert chosen == ["eager"] and set(left_out) == set(registry.names()) - {"eager"}
    assert all(why == "not in --variants" for why in left_out.values())
    with pytest.raises(ValueError, match="bogus"):
        registry.select(["eager", "bogus"])
    with pytest.raises(ValueError, match="none named"):
        registry.select([])


def test_fastest_variant_skips_errors_and_missing_medians():
    v = {"eager": {"median_ms": 40.0}, "cuda-graph": {"median_ms": 5.0},
         "compiled-step": {"median_ms": 1.0, "error": "non-finite training loss"},
         "manual-ops": {"median_ms": None}, "compiled-step-reduce-overhead": {"error": "x"}}
    assert pb.fastest_variant(v) == "cuda-graph"
    assert pb.fastest_variant({"a": {"error": "skipped: no GPU"}}) is None
    assert pb.fastest_variant({"a": {"median_ms": 2.0}, "b": {"median_ms": 2.0}}) == "a"


def test_run_all_records_selection_and_fastest(slice600, tmp_path):
    s = slice600
    np.save(tmp_path / "init_params.npy", s["init"])
    np.save(tmp_path / "order.npy", s["order"])
    out = pb.run_all(tmp_path, ["eager", "cuda-graph", "manual-ops"], device="cpu",
                     data=s["data"])
    doc = json.loads((tmp_path / "pytorch.json").read_text())
    assert doc == json.loads(json.dumps(out))
    assert doc["variants_run"] == ["eager", "cuda-graph", "manual-ops"]
    assert doc["variants_left_out"]["compiled-step"] == "not in --variants"
    assert doc["fastest_variant"] in ("eager", "manual-ops")      # cuda-graph was skipped
    assert doc["fastest_median_ms"] == doc["variants"][doc["fastest_variant"]]["median_ms"]
    assert doc["full"] is False and doc["wall_seconds"] > 0
    assert set(doc["inductor_cache"]) >= {"dir", "fx_graph_cache"}
    for name in ("eager", "manual-ops"):
        assert doc["variants"][name]["wall_seconds"] >= doc["variants"][name]["setup_seconds"]
    assert "cudagraph_skips" not in doc["variants"]["eager"]


def test_cli_rejects_an_unknown_variant(tmp_path):
    with pytest.raises(SystemExit) as exc:
        pb.main(["--results", str(tmp_path), "--variants", "eager,nope", "--device", "cpu"])
    assert exc.value.code == 2


# --------------------------------------------------------------------------------------------
# GPU: the recipe, compiled-step beside eager
# --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def recipe_inputs():
    if not (RESULTS_DIR / "init_params.npy").exists():
        pytest.skip("results/init_params.npy missing: run build/mlp_train first")
    init, order = pb.load_inputs(RESULTS_DIR)
    return init, order, pb.load_data()


@pytest.mark.gpu
@pytest.mark.parametrize("variant", ["compiled-step", "compiled-step-reduce-overhead"])
def test_gpu_compiled_step_tracks_eager(recipe_inputs, variant):
    """Two epochs: the first 20 steps' losses within 1e-4 of eager's (before float32 rounding
    can part the trajectories at a ReLU kink), the tail step included in every epoch, CUDA graphs
    not skipped, compile and capture timed apart from the epochs."""
    init, order, data = recipe_inputs
    kw = dict(epochs=2, device="cuda", return_step_losses=True)
    got = pb.run_variant(variant, init, order, data, RECIPE, **kw)
    ref = pb.run_variant("eager", init, order, data, RECIPE, **kw)
    steps = RECIPE["steps_per_epoch"]
    assert len(got["step_losses"][0]) == steps == len(got["step_losses"][1])
    np.testing.assert_allclose(got["step_losses"][0][:20], ref["step_losses"][0][:20], rtol=1e-4)
    assert np.isfinite(got["step_losses"]).all() and got["step_losses"][1][-1] > 0
    assert got["cudagraph_skips"] == 0
    assert got["compile_seconds"] > 0 and len(got["epoch_ms"]) == 1
    if variant == "compiled-step":
        assert got["capture_seconds"] > 0
        assert got["median_ms"] < ref["median_ms"]
