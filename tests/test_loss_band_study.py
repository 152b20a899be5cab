"""The loss-band study's trainer (harness/studies/loss_band_study.py) is the float64 reference when run in
float64, and its float32 run differs from it only by rounding on the recipe's seed."""
from __future__ import annotations

import numpy as np
import pytest

from spec.files import BUILD_DIR, DATA_DIR
from spec.recipe import load_recipe
from harness.data.dataset import load_dataset
from harness.studies.loss_band_study import MODE_TITLES, effect, render_md, seed_inputs, study, train_losses
from harness.data.reference import REFERENCE_DIR

HOST = BUILD_DIR / "mlp_host"   # made up to date by tests/conftest.py's host_tools before any test


@pytest.fixture(scope="module")
def seed_runs():
    """The recipe's seed over its first two epochs, trained once for the module in float64 and float32."""
    recipe = load_recipe()
    init, orders = seed_inputs(recipe, recipe["seed"], 2, HOST)
    d = load_dataset(DATA_DIR)
    X, y = d["train_images"][:recipe["train_size"]], d["train_labels"][:recipe["train_size"]].astype(np.int64)
    return {"recipe": recipe, "init": init, "orders": orders, "X": X, "y": y,
            "l64": train_losses(init, orders, X, y, recipe, np.float64),
            "l32": train_losses(init, orders, X, y, recipe, np.float32)}


def test_float64_run_is_the_shipped_reference_and_inputs_are_the_seeds(seed_runs):
    init, orders, l64, l32 = seed_runs["init"], seed_runs["orders"], seed_runs["l64"], seed_runs["l32"]
    assert np.array_equal(init, np.load(REFERENCE_DIR / "init_params.npy"))
    assert np.array_equal(orders, np.load(REFERENCE_DIR / "order.npy")[:2])
    ref = np.load(REFERENCE_DIR / "fp64_loss_per_epoch.npy")[:2]
    print("tolerance: relative 1e-12 against the shipped float64 losses")
    np.testing.assert_allclose(l64, ref, rtol=1e-12)
    assert 0 < max(abs(a - b) / b for a, b in zip(l32, l64)) < 1e-5  # rounding, not equality


def test_float64_accumulation_rounds_once_per_product(seed_runs):
    """The mixed trainer is float32 storage: its loss differs from float64 by rounding, and from
    the all-float32 trainer (it is not the same code path under another name). On the first epoch
    (the float64 and float32 runs' first epoch is that of a one-epoch run: each epoch's order is its own)."""
    r = seed_runs
    assert np.array_equal(seed_inputs(r["recipe"], r["recipe"]["seed"], 1, HOST)[1], r["orders"][:1])
    l64, l32 = r["l64"][:1], r["l32"][:1]
    lmix = train_losses(r["init"], r["orders"][:1], r["X"], r["y"], r["recipe"], np.float32, np.float64)
    assert lmix != l32 and lmix != l64
    assert abs(lmix[0] - l64[0]) / l64[0] < 1e-5


def test_study_counts_seeds_outside_the_band():
    doc = study([1, 2], epochs=1, band=1e-12)  # a band no float32 run can hold
    assert doc["seeds"] == 2 and doc["seeds_outside_band"] == {"float32": 2, "float32_f64_accumulate": 2}
    assert all(r[m]["first_epoch_outside_band"] == 1 for r in doc["rows"] for m in MODE_TITLES)
    md = render_md(doc)
    assert md.count("**2 of 2**") == 2 and "does not lower the count" in md


def test_effect_says_what_the_counts_say():
    doc = {"seeds": 10, "seeds_outside_band": {"float32": 4, "float32_f64_accumulate": 1}}
    assert effect(doc) == "lowers the count from 4 to 1 of 10 seeds; it does not remove it"
    doc["seeds_outside_band"]["float32_f64_accumulate"] = 4
    assert effect(doc).startswith("does not lower the count")
