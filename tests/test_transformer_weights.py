"""The transformer's weights folder: a tiny CPU training (1 epoch on 256 images) writes a manifest whose
hashes match its files; both readers (harness/transformer/weights.py and `vit_forward verify`) accept it
and refuse, with one line naming the file and exit 2, a flipped byte, a manifest of another model and
a tensor table that is not the layout."""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess

import numpy as np
import pytest

from harness.transformer.weights import WeightsError, random_flat, read_weights, write_weights
from spec.files import BUILD_DIR, ROOT
from spec.transformer import layout_table, load_config, shape

BIN = BUILD_DIR / "vit_forward"


@pytest.fixture(autouse=True, scope="module")
def _vit_forward_up_to_date(built):
    """BIN (build/vit_forward), made up to date by tests/conftest.py's `built` before this module's tests."""
    built("vit_forward")


def _verify(folder):
    return subprocess.run([str(BIN), "verify", "--weights", str(folder)], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    pytest.importorskip("torch", reason="PyTorch is not installed (requirements-test.txt has its CPU build)")
    from harness.transformer.train import train
    folder = tmp_path_factory.mktemp("w") / "weights"
    origin = train(load_config(), "cpu", epochs=1, train_size=256, eval_size=64, out_dir=folder)
    return folder, origin


def test_a_tiny_training_writes_a_manifest_whose_hashes_match(trained):
    folder, origin = trained
    doc = json.loads((folder / "manifest.json").read_text())
    data = (folder / "params.npy").read_bytes()
    assert doc["files"] == [{"path": "params.npy", "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}]
    flat = np.load(folder / "params.npy")
    s = shape(load_config())
    assert [{k: t[k] for k in ("name", "shape", "offset", "count")} for t in doc["tensors"]] == layout_table(s)
    for t in doc["tensors"]:
        piece = flat[t["offset"]:t["offset"] + t["count"]].astype("<f4")
        assert hashlib.sha256(piece.tobytes()).hexdigest() == t["sha256"], t["name"]
    assert doc["origin"]["kind"] == "trained" and doc["origin"]["train_size"] == 256
    assert origin["epochs"] == 1 and np.isfinite(origin["loss_per_epoch"][0])
    got, _ = read_weights(folder, s, load_config())
    assert np.array_equal(got, flat)
    res = _verify(folder)
    assert res.returncode == 0 and "hashes, config and layout match" in res.stdout


@pytest.mark.parametrize("where", ["data", "header"])
def test_a_flipped_byte_is_refused_by_both_readers(trained, tmp_path, where):
    folder = tmp_path / "w"
    shutil.copytree(trained[0], folder)
    path = folder / "params.npy"
    b = bytearray(path.read_bytes())
    b[len(b) // 2 if where == "data" else 20] ^= 0x01
    path.write_bytes(bytes(b))
    config = load_config()
    with pytest.raises(WeightsError, match=r"params\.npy: SHA-256 .* does not match"):
        read_weights(folder, shape(config), config)
    res = _verify(folder)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1
    assert "params.npy: SHA-256" in lines[0] and "does not match the manifest's" in lines[0]
    if where == "data":
        assert "(tensor layers." in lines[0]    # the middle of the file is in a layer's tensor


def test_another_models_manifest_and_a_wrong_table_are_refused(tmp_path):
    config = load_config()
    s = shape(config)
    doc = write_weights(tmp_path / "a", random_flat(s, 1), s, config, {"kind": "random", "seed": 1})
    for change, message in ((lambda d: d["config"].update(mlp_dim=256), "made for another model"),
                            (lambda d: d["tensors"].reverse(), "tensors[0]")):
        folder = tmp_path / f"b{message[:4]}"
        shutil.copytree(tmp_path / "a", folder)
        d = json.loads(json.dumps(doc))
        change(d)
        (folder / "manifest.json").write_text(json.dumps(d))
        with pytest.raises(WeightsError):
            read_weights(folder, s, config)
        res = _verify(folder)
        assert res.returncode == 2 and message in res.stderr and len(res.stderr.strip().splitlines()) == 1
    res = _verify(tmp_path / "missing")
    assert res.returncode == 2 and "manifest.json" in res.stderr
