"""The host-only half of the binary, checked without a GPU: the C++ float64 reference against the
independent numpy one, the seeded draws, the C++ data loader against the Python one, the
argument checks of mlp_train, and the build for two architectures. (The strict parsing of every
flag and recipe value: tests/test_cli_inputs.py.)"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from harness.data import np_reference as npref
from spec.files import DATA_DIR, ROOT
from spec.recipe import load_recipe
from harness.data.dataset import load_dataset

HOST = ROOT / "build" / "mlp_host"
TRAIN = ROOT / "build" / "mlp_train"
SHAPE = (784, 256, 10)


@pytest.fixture(scope="session")
def host_tool(host_tools):
    return host_tools.host   # HOST, made up to date by tests/conftest.py


def host(*args, check=True):
    return subprocess.run([str(HOST), *map(str, args)], capture_output=True, text=True, cwd=ROOT, check=check)


@pytest.fixture(scope="session")
def data():
    return load_dataset()


def test_init_params_follow_torch_linear_bounds(host_tool, tmp_path):
    host("init", "--out", tmp_path / "p.npy")
    p = np.load(tmp_path / "p.npy")
    o = npref.offsets(SHAPE)
    assert p.dtype == np.float32 and p.shape == (o["total"],) == (203530,)
    W1, b1, W2, b2 = npref.unpack(p, SHAPE)
    for t, fan_in in ((W1, 784), (b1, 784), (W2, 256), (b2, 256)):
        bound = 1 / np.sqrt(fan_in)
        assert np.abs(t).max() <= bound
        assert np.abs(t).max() > 0.9 * bound  # spread over the whole range, not zeros
    assert abs(W1.mean()) < 1e-3 and 0.5 < W1.std() * np.sqrt(3 * 784) < 1.5
    host("init", "--out", tmp_path / "q.npy")
    assert np.array_equal(p, np.load(tmp_path / "q.npy")), "same seed, different draw"


def test_epoch_orders_are_distinct_permutations(host_tool, tmp_path):
    host("order", "--out", tmp_path / "o.npy")
    o = np.load(tmp_path / "o.npy")
    r = load_recipe()
    assert o.dtype == np.int32 and o.shape == (r["epochs"], r["train_size"])
    assert (np.sort(o, axis=1) == np.arange(r["train_size"])).all()
    assert len({row.tobytes() for row in o}) == r["epochs"]


def test_cpp_loader_agrees_with_python_on_every_pixel(host_tool, tmp_path, data):
    host("dump", "--data", DATA_DIR, "--out", tmp_path)
    assert np.array_equal(np.load(tmp_path / "train_x.npy"), data["train_images"])
    assert np.array_equal(np.load(tmp_path / "train_y.npy"), data["train_labels"])
    assert np.array_equal(np.load(tmp_path / "test_x.npy"), data["test_images"])
    assert np.array_equal(np.load(tmp_path / "test_y.npy"), data["test_labels"])


def test_cpp_loader_names_a_corrupted_file(host_tool, tmp_path):
    bad = tmp_path / "data"
    shutil.copytree(DATA_DIR, bad, ignore=shutil.ignore_patterns("full", "reference"))
    f = bad / "t10k-labels-idx1-ubyte"
    raw = bytearray(f.read_bytes())
    raw[100] ^= 1
    f.write_bytes(bytes(raw))
    res = host("dump", "--data", bad, "--out", tmp_path, check=False)
    assert res.returncode != 0
    assert "t10k-labels-idx1-ubyte" in res.stderr and "SHA-256 mismatch" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("batch", [1, 7, 128])
def test_fp64_reference_matches_numpy(host_tool, tmp_path, data, batch):
    rng = np.random.default_rng(batch)
    host("init", "--out", tmp_path / "p.npy")
    p = np.load(tmp_path / "p.npy")
    idx = rng.choice(6000, size=batch, replace=False)
    X, y = data["train_images"][idx], data["train_labels"][idx].astype(np.int32)
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", y)
    host("grad", "--params", tmp_path / "p.npy", "--x", tmp_path / "x.npy", "--y", tmp_path / "y.npy",
         "--batch", batch, "--out", tmp_path)
    H, Z = npref.forward(p, X, SHAPE)
    loss, dZ = npref.loss_and_dz(Z, y)
    grads = npref.backward(p, X, H, dZ, SHAPE)
    print(f"tolerance: relative 1e-12 (float64 vs float64, different summation order); batch {batch}")
    np.testing.assert_allclose(np.load(tmp_path / "Z.npy"), Z, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.load(tmp_path / "grads.npy"), grads, rtol=1e-10, atol=1e-15)
    assert abs(np.load(tmp_path / "loss.npy")[0] - loss) <= 1e-12 * abs(loss)
    W1 = npref.unpack(p.astype(np.float64), SHAPE)[0]
    dH = (dZ @ npref.unpack(p.astype(np.float64), SHAPE)[2].T) * (H > 0)
    np.testing.assert_allclose(np.load(tmp_path / "dX.npy"), dH @ W1.T, rtol=1e-10, atol=1e-15)


def test_fp64_training_matches_numpy(host_tool, tmp_path, data):
    """Two epochs on the first 512 images: the same per-epoch loss and accuracy as numpy."""
    host("train", "--data", DATA_DIR, "--epochs", 2, "--train-size", 512, "--out", tmp_path)
    host("init", "--out", tmp_path / "p.npy")
    host("order", "--epochs", 2, "--train-size", 512, "--out", tmp_path / "o.npy")
    r = load_recipe()
    sub = {"train_images": data["train_images"][:512], "train_labels": data["train_labels"][:512],
           "test_images": data["test_images"], "test_labels": data["test_labels"]}
    ref = npref.train(np.load(tmp_path / "p.npy"), np.load(tmp_path / "o.npy"), sub, r["batch"], r["lr"],
                      r["momentum"])
    np.testing.assert_allclose(np.load(tmp_path / "loss_per_epoch.npy"), ref["loss_per_epoch"], rtol=1e-10)
    np.testing.assert_array_equal(np.load(tmp_path / "test_accuracy_per_epoch.npy"), ref["test_accuracy_per_epoch"])
    np.testing.assert_allclose(np.load(tmp_path / "final_params.npy"), ref["params"], rtol=1e-9, atol=1e-13)


@pytest.mark.parametrize("args, message", [
    (["--bogus"], "unknown option '--bogus'"),
    (["--batch", "0"], "--batch: 0 is out of range [1, 65536]"),
    (["--lr", "-0.1"], "--lr: -0.1 is out of range [1e-06, 10]"),
    (["--epochs", "0"], "--epochs: 0 is out of range [1, 1000]"),
    (["--epochs", "x"], "--epochs: 'x' is not an integer"),
    (["--paths", "nope"], "no path named 'nope'"),
    (["--recipe", "/nonexistent.toml"], "/nonexistent.toml: cannot open"),
])
def test_mlp_train_rejects_bad_arguments_in_one_line(args, message, built):
    built("mlp_train")
    res = subprocess.run([str(TRAIN), *args], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 2
    assert message in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_75", "sm_90"])
def test_build_for_architecture(arch, arch_build):
    """invoke build --arch ARCH produces the binary (compiles with warnings as errors); the build is the
    session's, shared with test_transformer_binary (build/ itself for the architecture it was made for)."""
    build_dir = arch_build(arch)
    assert (build_dir / "mlp_train").exists() and (build_dir / "libmlp.so").exists()
    if shutil.which("cuobjdump"):
        listing = subprocess.run(["cuobjdump", "--list-elf", str(build_dir / "mlp_train")], capture_output=True,
                                 text=True).stdout
        assert arch in listing


def _error_line(res) -> str:
    """The one error line of a failed run (progress lines may precede it on stderr)."""
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("mlp_train: ")]
    assert len(errors) == 1, res.stderr
    return errors[0]


def _data_copy(tmp_path, mutate) -> Path:
    """A copy of data/ with one file rewritten by `mutate(bytes) -> bytes` and SHA256SUMS
    regenerated, so the loader's own checks (not the checksum) must catch the damage."""
    import hashlib
    d = tmp_path / "data"
    shutil.copytree(DATA_DIR, d, ignore=shutil.ignore_patterns("full", "reference", "*.md"))
    f = d / "t10k-images-idx3-ubyte"
    f.write_bytes(mutate(f.read_bytes()))
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}"
             for p in sorted(d.iterdir()) if p.is_file() and p.name != "SHA256SUMS"]
    (d / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    return d


@pytest.mark.parametrize("mutate, message", [
    (lambda b: b[:-1000], "truncated"),
    (lambda b: b"\x00\x00\x08\x04" + b[4:], "bad IDX magic"),
    (lambda b: b[:8] + (29).to_bytes(4, "big") + b[12:], "images are 29x28"),
    (lambda b: b + b"\x00", "trailing bytes"),
])
def test_mlp_train_rejects_damaged_data_before_the_gpu(tmp_path, mutate, message, built):
    built("mlp_train")
    res = subprocess.run([str(TRAIN), "--data", str(_data_copy(tmp_path, mutate))], capture_output=True,
                         text=True, cwd=ROOT)
    assert res.returncode == 2
    line = _error_line(res)
    assert "t10k-images-idx3-ubyte" in line and message in line


@pytest.mark.parametrize("content, message", [
    (None, "cannot open"),
    (np.ones(10, np.float32), "wrong shape (10,), want (203530,)"),
    (np.ones(203530, np.int32), "dtype is not <f4"),
    (b"not a numpy file", "not a .npy file"),
])
def test_mlp_train_rejects_bad_init_weights(tmp_path, content, message, built):
    built("mlp_train")
    path = tmp_path / "init.npy"
    if isinstance(content, np.ndarray):
        np.save(path, content)
    elif content is not None:
        path.write_bytes(content)
    res = subprocess.run([str(TRAIN), "--init", str(path)], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 2
    line = _error_line(res)
    assert str(path) in line and message in line


def test_mlp_train_without_a_gpu_says_so_in_one_line(built):
    built("mlp_train")
    from tests.conftest import have_gpu
    if have_gpu():
        pytest.skip("a GPU is present: this checks the GPU-less message")
    res = subprocess.run([str(TRAIN), "--out", "/nonexistent-results"], capture_output=True, text=True, cwd=ROOT)
    assert res.returncode == 3  # a CUDA error (cuda/common/exit_status.h), after every input was checked
    assert "no CUDA device found" in _error_line(res)
    assert not Path("/nonexistent-results").exists()  # nothing written before the failure
