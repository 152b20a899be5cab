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
from spec.files import InputError
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


def test_mlp_train_refuses_a_shipped_reference_of_another_recipe(built):
    train = built("mlp_train")
    res = subprocess.run([str(train), "--reference", "shipped", "--epochs", "3"], capture_output=True, text=True,
                         cwd=reference.ROOT)
    assert res.returncode == 2
    assert "made for another recipe" in res.stderr


def _tree(d: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(d.iterdir())}


def test_a_recipe_the_binary_refuses_stops_invoke_reference_in_one_line(tmp_path, monkeypatch):
    """`invoke reference` with momentum = 1: one line, exit 2, nothing run, data/reference/ as it was."""
    recipe = tmp_path / "recipe.toml"
    recipe.write_text(reference.RECIPE_PATH.read_text().replace("momentum = 0.9", "momentum = 1"))
    target = tmp_path / "reference"
    target.mkdir()
    (target / "kept.npy").write_bytes(b"committed")
    monkeypatch.setattr(reference, "generate", lambda *a, **k: pytest.fail("generate ran"))
    with pytest.raises(InputError) as exc:
        reference.regenerate(target, recipe=recipe)
    assert str(exc.value) == f"error: {recipe}: momentum = 1 is out of range [0, 0.999]"
    assert _tree(target) == {"kept.npy": hashlib.sha256(b"committed").hexdigest()}


def test_a_bad_input_mlp_host_finds_is_its_one_line(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "SHA256SUMS").write_text("")
    with pytest.raises(InputError) as exc:
        reference.generate(tmp_path / "out", data_dir=data)
    assert str(exc.value) == f"mlp_host: error: {data}/SHA256SUMS: lists no files"
