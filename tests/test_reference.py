"""data/reference/: the shipped float64 result regenerates bit for bit, matches its hashes, and
belongs to the recipe (its initial weights and order are the seed's)."""
from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from harness.data import reference
from spec.recipe import load_recipe


@pytest.mark.slow
def test_shipped_reference_regenerates_bit_identically(tmp_path):
    reference.generate(tmp_path)
    names = sorted(p.name for p in reference.REFERENCE_DIR.iterdir())
    assert names == sorted(p.name for p in tmp_path.iterdir())
    for name in names:
        assert (tmp_path / name).read_bytes() == (reference.REFERENCE_DIR / name).read_bytes(), name


def test_shipped_reference_hashes_and_recipe():
    ref = reference.REFERENCE_DIR
    for line in (ref / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        assert hashlib.sha256((ref / name).read_bytes()).hexdigest() == digest, name
    meta = json.loads((ref / "fp64_reference.json").read_text())
    r = load_recipe()
    for key in ("input_dim", "hidden_dim", "output_dim", "batch", "epochs", "seed", "train_size"):
        assert meta["recipe"][key] == r[key], key
    acc = np.load(ref / "fp64_test_accuracy_per_epoch.npy")
    assert acc.shape == (r["epochs"],) and list(acc) == meta["test_accuracy_per_epoch"]
    assert 0.75 < meta["test_accuracy"] < 0.95
    order = np.load(ref / "order.npy")
    assert (np.sort(order, axis=1) == np.arange(r["train_size"])).all()


def test_mlp_train_refuses_a_shipped_reference_of_another_recipe():
    train = Path(reference.ROOT) / "build" / "mlp_train"
    if not train.exists():
        pytest.skip("build/mlp_train not built (run invoke build)")
    res = subprocess.run([str(train), "--reference", "shipped", "--epochs", "3"], capture_output=True, text=True,
                         cwd=reference.ROOT)
    assert res.returncode == 2
    assert "made for another recipe" in res.stderr
