"""The loss-band study's trainer (harness/loss_band_study.py) is the float64 reference when run in
float64, and its float32 run differs from it only by rounding on the recipe's seed."""
from __future__ import annotations

import numpy as np
import pytest

from harness.config import BUILD_DIR, DATA_DIR, load_recipe
from harness.dataset import load_dataset
from harness.loss_band_study import render_md, seed_inputs, study, train_losses
from harness.reference import REFERENCE_DIR

HOST = BUILD_DIR / "mlp_host"
pytestmark = pytest.mark.skipif(not HOST.exists(), reason="build/mlp_host missing: run `invoke build`")


def test_float64_run_is_the_shipped_reference_and_inputs_are_the_seeds():
    recipe = load_recipe()
    init, orders = seed_inputs(recipe, recipe["seed"], 2, HOST)
    assert np.array_equal(init, np.load(REFERENCE_DIR / "init_params.npy"))
    assert np.array_equal(orders, np.load(REFERENCE_DIR / "order.npy")[:2])
    d = load_dataset(DATA_DIR)
    X, y = d["train_images"][:recipe["train_size"]], d["train_labels"][:recipe["train_size"]].astype(np.int64)
    l64 = train_losses(init, orders, X, y, recipe, np.float64)
    ref = np.load(REFERENCE_DIR / "fp64_loss_per_epoch.npy")[:2]
    print("tolerance: relative 1e-12 against the shipped float64 losses")
    np.testing.assert_allclose(l64, ref, rtol=1e-12)
    l32 = train_losses(init, orders, X, y, recipe, np.float32)
    assert 0 < max(abs(a - b) / b for a, b in zip(l32, l64)) < 1e-5  # rounding, not equality


def test_study_counts_seeds_outside_the_band():
    doc = study([1, 2], epochs=1, band=1e-12)  # a band no float32 run can hold
    assert doc["seeds"] == 2 and doc["seeds_outside_band"] == 2
    assert all(r["first_epoch_outside_band"] == 1 for r in doc["rows"])
    assert "**2 of 2 seeds**" in render_md(doc)
