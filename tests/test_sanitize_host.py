"""The host-only half of the binary under AddressSanitizer + UBSan (build/asan/mlp_host, `make asan`):
the data loader on the real data, the float64 reference (init, order, grad, a short train), the
argument and input checks, and a seeded fuzz of the IDX loaders (C++ through the ASan build, and
harness.data.dataset.parse_idx) with malformed headers, sizes and truncations. CPU only; reproducible
(fixed seeds); the whole file runs in well under a minute."""
from __future__ import annotations

import functools
import os
import random
import shutil
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

# Every test here needs the AddressSanitizer build of mlp_host (about 15 s to build), and the fuzzing
# takes as long again: the whole module is slow.
pytestmark = pytest.mark.slow

from harness.data import np_reference as npref
from spec.files import DATA_DIR, ROOT
from harness.data.dataset import (SUMS_NAME, TEST_IMAGES, TEST_LABELS, TRAIN_IMAGES, TRAIN_LABELS, DataError,
                                  encode_idx, format_sha256sums, load_dataset, load_raw, parse_idx, sha256_hex)

ASAN_HOST = ROOT / "build" / "asan" / "mlp_host"
SHAPE = (784, 256, 10)
FUZZ_SEED = 20260829
SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer", "runtime error",
                     "==ERROR:", "SUMMARY: ")
# Fixed sanitizer settings, whatever the caller's environment says. Leak checking stays on:
# libgomp's thread pool produces no leak report with this toolchain (gcc 12); a runtime where
# LeakSanitizer cannot run at all (under ptrace) is detected in asan_env() and falls back to
# detect_leaks=0 there only.
ASAN_OPTIONS = "detect_leaks=1:abort_on_error=0"
UBSAN_OPTIONS = "print_stacktrace=1"


def _cxx() -> str:
    return os.environ.get("CXX", "g++")


@pytest.fixture(scope="session")
def asan_env(tmp_path_factory):
    """The environment the ASan binary runs in; skips when the compiler has no sanitizer runtime."""
    cxx = _cxx()
    if not shutil.which(cxx):
        pytest.skip(f"{cxx}: not found (the ASan build needs a C++ compiler)")
    probe_dir = tmp_path_factory.mktemp("asan_probe")
    src, exe = probe_dir / "probe.cpp", probe_dir / "probe"
    src.write_text("#include <vector>\nint main() { std::vector<int> v(3); return v[1]; }\n")
    res = subprocess.run([cxx, "-fsanitize=address,undefined", "-fopenmp", str(src), "-o", str(exe)],
                         capture_output=True, text=True)
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"{cxx} cannot link -fsanitize=address,undefined (no sanitizer runtime?): {last}")
    env = {**os.environ, "ASAN_OPTIONS": ASAN_OPTIONS, "UBSAN_OPTIONS": UBSAN_OPTIONS}
    res = subprocess.run([str(exe)], capture_output=True, text=True, env=env)
    if "LeakSanitizer does not work under ptrace" in res.stderr or "LeakSanitizer has encountered a fatal" in res.stderr:
        # Not a finding about our code: LSan cannot run in this process tree (e.g. under a debugger).
        env["ASAN_OPTIONS"] = ASAN_OPTIONS.replace("detect_leaks=1", "detect_leaks=0")
        res = subprocess.run([str(exe)], capture_output=True, text=True, env=env)
    if res.returncode != 0:
        pytest.skip(f"an -fsanitize=address,undefined program does not run here (exit {res.returncode}):"
                    f" {(res.stderr.strip().splitlines() or ['no output'])[0]}")
    return env


@pytest.fixture(scope="session")
def asan_host(asan_env, built):
    return built("asan/mlp_host")   # ASAN_HOST


def run_asan(env, *args, cwd=ROOT) -> subprocess.CompletedProcess:
    res = subprocess.run([str(ASAN_HOST), *map(str, args)], capture_output=True, env=env, cwd=cwd, timeout=120)
    res.stdout = res.stdout.decode("utf-8", "replace")
    res.stderr = res.stderr.decode("utf-8", "replace")
    return res


def sanitizer_report(stderr: str) -> str | None:
    for marker in SANITIZER_MARKERS:
        if marker in stderr:
            return stderr[-4000:]
    return None


def assert_clean_success(res) -> None:
    report = sanitizer_report(res.stderr)
    assert report is None, f"sanitizer report:\n{report}"
    assert res.returncode == 0, f"exit {res.returncode}:\n{res.stderr[-3000:]}"


def assert_one_line_error(res, *needles) -> str:
    report = sanitizer_report(res.stderr)
    assert report is None, f"sanitizer report:\n{report}"
    assert res.returncode == 2, f"exit {res.returncode}, want 2:\n{res.stderr[-3000:]}"
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlp_host: error: "), res.stderr[-3000:]
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


@pytest.fixture(scope="session")
def data():
    return load_dataset()


# --- the tool on valid input ---------------------------------------------------------------------
def test_dump_real_data_is_clean(asan_host, asan_env, tmp_path, data):
    assert_clean_success(run_asan(asan_env, "dump", "--data", DATA_DIR, "--out", tmp_path))
    assert np.array_equal(np.load(tmp_path / "train_x.npy"), data["train_images"])
    assert np.array_equal(np.load(tmp_path / "train_y.npy"), data["train_labels"])
    assert np.array_equal(np.load(tmp_path / "test_x.npy"), data["test_images"])
    assert np.array_equal(np.load(tmp_path / "test_y.npy"), data["test_labels"])


def test_init_and_order_are_clean(asan_host, asan_env, tmp_path):
    assert_clean_success(run_asan(asan_env, "init", "--out", tmp_path / "p.npy"))
    assert np.load(tmp_path / "p.npy").shape == (npref.offsets(SHAPE)["total"],)
    assert_clean_success(run_asan(asan_env, "order", "--epochs", 2, "--train-size", 1000, "--out", tmp_path / "o.npy"))
    o = np.load(tmp_path / "o.npy")
    assert o.shape == (2, 1000) and (np.sort(o, axis=1) == np.arange(1000)).all()
    assert_clean_success(run_asan(asan_env, "order", "--out", tmp_path / "full.npy"))  # the recipe's 20 x 6000


@pytest.mark.parametrize("batch", [1, 7])
def test_grad_is_clean_and_matches_numpy(asan_host, asan_env, tmp_path, data, batch):
    rng = np.random.default_rng(1000 + batch)
    assert_clean_success(run_asan(asan_env, "init", "--out", tmp_path / "p.npy"))
    p = np.load(tmp_path / "p.npy")
    idx = rng.choice(6000, size=batch, replace=False)
    X, y = data["train_images"][idx], data["train_labels"][idx].astype(np.int32)
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", y)
    assert_clean_success(run_asan(asan_env, "grad", "--params", tmp_path / "p.npy", "--x", tmp_path / "x.npy",
                                  "--y", tmp_path / "y.npy", "--batch", batch, "--out", tmp_path))
    H, Z = npref.forward(p, X, SHAPE)
    loss, dZ = npref.loss_and_dz(Z, y)
    np.testing.assert_allclose(np.load(tmp_path / "Z.npy"), Z, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.load(tmp_path / "grads.npy"), npref.backward(p, X, H, dZ, SHAPE),
                               rtol=1e-10, atol=1e-15)
    assert abs(np.load(tmp_path / "loss.npy")[0] - loss) <= 1e-12 * abs(loss)


def test_short_train_is_clean(asan_host, asan_env, tmp_path):
    res = run_asan(asan_env, "train", "--data", DATA_DIR, "--epochs", 1, "--train-size", 256, "--out", tmp_path)
    assert_clean_success(res)
    assert "fp64 epoch 1 loss" in res.stderr
    loss, acc = np.load(tmp_path / "loss_per_epoch.npy"), np.load(tmp_path / "test_accuracy_per_epoch.npy")
    assert loss.shape == acc.shape == (1,) and np.isfinite(loss).all() and 0 < acc[0] <= 1
    assert np.isfinite(np.load(tmp_path / "final_params.npy")).all()


# --- argument and input checks --------------------------------------------------------------------
@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory):
    """Input files for the argument checks: params, a batch of 2, bad labels, bad .npy files, recipes."""
    d = tmp_path_factory.mktemp("bad_inputs")
    rng = np.random.default_rng(7)
    total = npref.offsets(SHAPE)["total"]
    np.save(d / "p.npy", (rng.standard_normal(total) * 0.05).astype(np.float32))
    np.save(d / "x.npy", rng.random((2, 784), dtype=np.float32))
    np.save(d / "y.npy", np.array([3, 9], np.int32))
    np.save(d / "y10.npy", np.array([0, 10], np.int32))      # label == output_dim: one past the logits
    np.save(d / "yneg.npy", np.array([-1, 2], np.int32))
    np.save(d / "y_f32.npy", np.array([3, 9], np.float32))
    np.save(d / "x_fortran.npy", np.asfortranarray(rng.random((2, 784), dtype=np.float32)))
    raw = (d / "x.npy").read_bytes()
    (d / "x_trunc.npy").write_bytes(raw[:-5])
    (d / "x_hdr.npy").write_bytes(raw[:9])
    (d / "x_long.npy").write_bytes(raw + b"\0" * 4)
    (d / "not_npy.npy").write_bytes(b"hello, world\n")
    recipe = (ROOT / "recipe.toml").read_text()
    (d / "in900.toml").write_text(recipe.replace("input_dim = 784", "input_dim = 900"))
    (d / "out5.toml").write_text(recipe.replace("output_dim = 10 ", "output_dim = 5 "))
    (d / "junk.toml").write_text("input_dim 784\n")
    assert (d / "in900.toml").read_text() != recipe and (d / "out5.toml").read_text() != recipe
    return d


def _grad(**over):
    """A grad command line over the bad_inputs files, with some flags replaced."""
    flags = {"params": "{d}/p.npy", "x": "{d}/x.npy", "y": "{d}/y.npy", "batch": "2", "out": "{d}"}
    flags.update(over)
    return ["grad"] + [t for k, v in flags.items() if v is not None for t in (f"--{k}", v)]


def _train(**over):
    flags = {"data": str(DATA_DIR), "epochs": "1", "train-size": "256", "out": "{d}"}
    flags.update(over)
    return ["train"] + [t for k, v in flags.items() if v is not None for t in (f"--{k}", v)]


# (id, argv, a piece of the one error line). Each must exit 2 with exactly one
# "mlp_host: error: ..." line and no sanitizer report.
BAD_ARGS = [
    ("no-command", [], "usage: mlp_host"),
    ("unknown-command", ["bogus"], "unknown command 'bogus'"),
    ("missing-out", ["init"], "missing --out"),
    ("flag-without-value", ["init", "--out"], "bad argument '--out'"),
    ("value-without-flag", ["init", "out.npy"], "bad argument 'out.npy'"),
    ("unwritable-out", ["init", "--out", "/nonexistent-dir/p.npy"], "/nonexistent-dir/p.npy"),
    ("missing-recipe", ["init", "--recipe", "/nonexistent.toml", "--out", "{d}/p2.npy"], "/nonexistent.toml: cannot open"),
    ("malformed-recipe", ["init", "--recipe", "{d}/junk.toml", "--out", "{d}/p2.npy"], "expected key = value"),
    ("epochs-0", ["order", "--epochs", "0", "--out", "{d}/o.npy"], "--epochs: 0 is out of range [1, 1000]"),
    ("epochs-negative", ["order", "--epochs", "-4", "--out", "{d}/o.npy"], "--epochs: -4 is out of range"),
    ("epochs-not-int", ["order", "--epochs", "x", "--out", "{d}/o.npy"], "--epochs: 'x' is not an integer"),
    ("epochs-overflow", ["order", "--epochs", "99999999999", "--out", "{d}/o.npy"], "--epochs: 99999999999 is out of range"),
    ("epochs-int64-overflow", ["order", "--epochs", "99999999999999999999", "--out", "{d}/o.npy"], "out of range"),
    ("epochs-trailing-junk", ["order", "--epochs", "5x", "--out", "{d}/o.npy"], "not an integer"),
    ("duplicate-flag", ["order", "--epochs", "2", "--epochs", "3", "--out", "{d}/o.npy"], "--epochs given twice"),
    ("order-train-size-0", ["order", "--train-size", "0", "--out", "{d}/o.npy"], "--train-size: 0 is out of range"),
    ("order-train-size-negative", ["order", "--train-size", "-3", "--out", "{d}/o.npy"], "--train-size: -3"),
    ("dump-missing-dir", ["dump", "--data", "/nonexistent-dir", "--out", "{d}"], "/nonexistent-dir/SHA256SUMS"),
    ("dump-missing-out", ["dump", "--data", str(DATA_DIR)], "missing --out"),
    ("grad-missing-batch", _grad(batch=None), "missing --batch"),
    ("grad-batch-not-int", _grad(batch="two"), "--batch: 'two' is not an integer"),
    ("grad-batch-0", _grad(batch="0"), "--batch: 0 is out of range"),
    ("grad-batch-negative", _grad(batch="-2"), "--batch: -2 is out of range"),
    ("grad-batch-mismatch", _grad(batch="3"), "x.npy"),
    ("grad-missing-params", _grad(params="{d}/none.npy"), "none.npy: cannot open"),
    ("grad-params-wrong-shape", _grad(params="{d}/x.npy"), "p"),
    ("grad-x-truncated", _grad(x="{d}/x_trunc.npy"), "x_trunc.npy"),
    ("grad-x-truncated-header", _grad(x="{d}/x_hdr.npy"), "x_hdr.npy"),
    ("grad-x-trailing", _grad(x="{d}/x_long.npy"), "x_long.npy"),
    ("grad-x-not-npy", _grad(x="{d}/not_npy.npy"), "not a .npy file"),
    ("grad-x-fortran", _grad(x="{d}/x_fortran.npy"), "Fortran order"),
    ("grad-y-float", _grad(y="{d}/y_f32.npy"), "y_f32.npy"),
    ("grad-label-too-big", _grad(y="{d}/y10.npy"), "y10.npy"),        # was a heap overflow in ref_loss
    ("grad-label-negative", _grad(y="{d}/yneg.npy"), "yneg.npy"),     # was a heap overflow in ref_loss
    ("train-size-above-data", _train(**{"train-size": "7000"}), "7000"),  # was a heap overflow
    ("train-size-0", _train(**{"train-size": "0"}), "--train-size: 0"),
    ("train-size-negative", _train(**{"train-size": "-5"}), "--train-size: -5"),
    ("train-input-dim", _train(recipe="{d}/in900.toml"), "900"),       # was a heap overflow in ref_forward
    ("train-output-dim", _train(recipe="{d}/out5.toml"), "output_dim"),  # was a heap overflow in ref_loss
    ("train-missing-data", _train(data="/nonexistent-dir"), "/nonexistent-dir/SHA256SUMS"),
]


@pytest.mark.parametrize("args, needle", [c[1:] for c in BAD_ARGS], ids=[c[0] for c in BAD_ARGS])
def test_bad_arguments_fail_in_one_clean_line(asan_host, asan_env, bad_inputs, args, needle):
    args = [a.replace("{d}", str(bad_inputs)) for a in args]
    assert_one_line_error(run_asan(asan_env, *args), needle)


# --- fuzzing the IDX loaders ---------------------------------------------------------------------
# Malformed variants of the real t10k files. Mostly the labels file (10 kB: cheap to hash and
# parse); the images file (7.8 MB) only with damage that fails before the pixels are converted
# (header, truncation, trailing bytes, a count that disagrees with the labels).
N_LABEL_CASES = 120
N_IMAGE_CASES = 30
LABEL_KINDS = ("empty", "trunc_header", "trunc_data", "magic", "dim", "flip_header", "flip_data", "trailing",
               "recount", "label_over_9", "label_in_range", "other_rank", "combo")
IMAGE_KINDS = ("empty", "trunc_header", "trunc_data", "magic", "dim", "flip_header", "trailing", "recount",
               "reshape", "other_rank", "combo")
MAGICS = (0x00000801, 0x00000803, 0x00000800, 0x00000802, 0x00000804, 0x000008FF, 0x00000901, 0x00000C01,
          0x00000D03, 0x01080000, 0x03080000, 0x00010801, 0x80000801, 0x00000000, 0xFFFFFFFF)
DIMS = (0, 1, 27, 28, 29, 784, 9999, 10000, 10001, (1 << 24) - 1, 1 << 24, (1 << 24) + 1, 1 << 31,
        0x7FFFFFFF, 0xFFFFFFFF)


def _u32(b: bytearray, off: int, v: int) -> None:
    b[off:off + 4] = struct.pack(">I", v & 0xFFFFFFFF)


def _mutate(kind: str, orig: bytes, rank: int, rng: random.Random) -> tuple[bytes, str]:
    """One malformed (or, now and then, still valid) variant of `orig`, and what was done."""
    header = 4 + 4 * rank
    b = bytearray(orig)
    if kind == "empty":
        return b"", "empty file"
    if kind == "trunc_header":
        n = rng.randrange(0, header)
        return bytes(b[:n]), f"truncated to {n} bytes (inside the header)"
    if kind == "trunc_data":
        n = rng.randrange(header, len(b))
        return bytes(b[:n]), f"truncated to {n} of {len(b)} bytes"
    if kind == "magic":
        v = rng.choice(MAGICS) if rng.random() < 0.7 else rng.getrandbits(32)
        _u32(b, 0, v)
        return bytes(b), f"magic 0x{v:08x}"
    if kind == "dim":
        d = rng.randrange(rank)
        v = rng.choice(DIMS) if rng.random() < 0.75 else rng.getrandbits(32)
        _u32(b, 4 + 4 * d, v)
        return bytes(b), f"dimension {d} = {v}"
    if kind == "flip_header":
        flips = [(rng.randrange(header), rng.randrange(8)) for _ in range(rng.randint(1, 3))]
        for off, bit in flips:
            b[off] ^= 1 << bit
        return bytes(b), f"header bit flips {flips}"
    if kind == "flip_data":  # labels only: the data region of a 10 kB file
        flips = [(rng.randrange(header, len(b)), rng.randrange(8)) for _ in range(rng.randint(1, 4))]
        for off, bit in flips:
            b[off] ^= 1 << bit
        return bytes(b), f"data bit flips {flips}"
    if kind == "trailing":
        extra = bytes(rng.getrandbits(8) for _ in range(rng.choice((1, 2, 3, 784, rng.randint(1, 100)))))
        return bytes(b) + extra, f"{len(extra)} trailing bytes"
    if kind == "recount":
        # A well-formed IDX file of the right kind, with fewer or more items than the other file.
        item = 1 if rank == 1 else 28 * 28
        n = struct.unpack(">I", b[4:8])[0]
        k = rng.choice((1, n - 1, n + 1, rng.randrange(1, n)))
        body = bytes(b[header:header + k * item])
        body += bytes(k * item - len(body))  # one more item than the file has: zeros (label 0, a black image)
        _u32(b, 4, k)
        return bytes(b[:header]) + body, f"well-formed with {k} items (not {n})"
    if kind == "label_over_9":
        off = rng.randrange(header, len(b))
        b[off] = rng.randrange(10, 256)
        return bytes(b), f"label {b[off]} at offset {off}"
    if kind == "label_in_range":
        off = rng.randrange(header, len(b))
        b[off] = rng.randrange(10)
        return bytes(b), f"label set to {b[off]} at offset {off} (still valid)"
    if kind == "reshape":  # images only: the same bytes as n x 14 x 56 or n x 784 x 1 etc.
        rows, cols = rng.choice(((14, 56), (56, 14), (784, 1), (1, 784), (7, 112), (28, 27), (27, 28)))
        n = struct.unpack(">I", b[4:8])[0]
        if rows * cols != 784:
            n = (len(b) - header) // (rows * cols)
            b = b[:header + n * rows * cols]
        _u32(b, 4, n)
        _u32(b, 8, rows)
        _u32(b, 12, cols)
        return bytes(b), f"well-formed {n}x{rows}x{cols}"
    if kind == "other_rank":
        # A well-formed IDX file of the other kind (images where labels belong, or the reverse).
        if rank == 1:
            arr = np.zeros((rng.choice((1, 10, 13)), 28, 28), np.uint8)
        else:
            arr = np.frombuffer(bytes(rng.randrange(10) for _ in range(rng.choice((1, 784, 10000)))), np.uint8)
        return encode_idx(arr), f"well-formed {arr.ndim}-d IDX of shape {arr.shape}"
    if kind == "combo":  # two or three header changes, then maybe a truncation or trailing bytes
        subs = rng.sample(("magic", "dim", "flip_header"), rng.randint(1, 3))
        subs += [rng.choice(("trunc_header", "trunc_data", "trailing", "none"))]
        data, parts = orig, []
        for sub in subs:
            if sub != "none":
                data, what = _mutate(sub, data, rank, rng)
                parts.append(what)
        return data, " + ".join(parts)
    raise AssertionError(kind)


@functools.lru_cache(maxsize=1)
def fuzz_cases() -> tuple[tuple[str, bytes, str], ...]:
    """(file name, bytes, description): every kind once, then random kinds; seeded, so the same
    cases on every run."""
    rng = random.Random(FUZZ_SEED)
    cases = []
    for fname, rank, kinds, n in ((TEST_LABELS, 1, LABEL_KINDS, N_LABEL_CASES),
                                  (TEST_IMAGES, 3, IMAGE_KINDS, N_IMAGE_CASES)):
        orig = (DATA_DIR / fname).read_bytes()
        for i in range(n):
            kind = kinds[i] if i < len(kinds) else rng.choice(kinds)
            data, what = _mutate(kind, orig, rank, rng)
            cases.append((fname, data, f"#{len(cases)} {fname}: {kind}: {what}"))
    return tuple(cases)


EXPECTED_SHAPE = {TEST_LABELS: (10000,), TEST_IMAGES: (10000, 28, 28)}


def python_accepts(fname: str, data: bytes) -> bool:
    """Whether mlp_host dump must accept these bytes in place of `fname`: a valid IDX file of the
    expected kind and shape (the other file is the real one), with labels in 0..9."""
    rank = len(EXPECTED_SHAPE[fname])
    try:
        arr = parse_idx(data, fname, ndim=rank)
    except DataError:
        return False
    return arr.shape == EXPECTED_SHAPE[fname] and (rank == 3 or int(arr.max()) <= 9)


def test_python_idx_parser_only_raises_data_error():
    cases = fuzz_cases()
    assert len(cases) == N_LABEL_CASES + N_IMAGE_CASES
    for fname, data, what in cases:
        for ndim in (None, 1, 3):
            try:   # any exception but DataError propagates and fails the test, its traceback naming it
                arr = parse_idx(data, fname, ndim=ndim)
            except DataError as exc:
                msg = str(exc)
                assert "\n" not in msg and msg.startswith(f"{fname}: "), f"{what}: {msg!r}"
            else:
                assert arr.dtype == np.uint8 and arr.ndim in (1, 3) and (ndim is None or arr.ndim == ndim), what
    # The corpus is not all one verdict: some variants are still valid, most are not.
    verdicts = [python_accepts(f, d) for f, d, _ in cases]
    assert 0 < sum(verdicts) < len(cases) // 4


def _scratch_root() -> str | None:
    """A tmpfs for the fuzz data dir and the dumps (~50 MB per accepted case), where there is one."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def test_cpp_idx_loader_survives_fuzzing(asan_host, asan_env, tmp_path):
    """Each case: a copy of data/ where one t10k file is replaced by a malformed variant and
    SHA256SUMS lists it with its new hash (and the other three files, as every file the loader
    reads must be listed), so the checksum passes and only the IDX parser can catch the damage."""
    cases = fuzz_cases()
    work = Path(tempfile.mkdtemp(prefix="mlp_asan_fuzz.", dir=_scratch_root() or tmp_path))
    try:
        data_dir, out_dir = work / "data", work / "out"
        data_dir.mkdir()
        out_dir.mkdir()
        originals = {}
        for name in (TEST_LABELS, TEST_IMAGES):
            try:
                os.link(DATA_DIR / name, data_dir / name)
            except OSError:
                shutil.copyfile(DATA_DIR / name, data_dir / name)
            originals[name] = (DATA_DIR / name).read_bytes()
        # The train pair is not fuzzed: its first 100 images keep each case's hashing and loading short.
        raw = load_raw(DATA_DIR)
        for name, arr in ((TRAIN_IMAGES, raw["train_images"][:100]), (TRAIN_LABELS, raw["train_labels"][:100])):
            (data_dir / name).write_bytes(encode_idx(arr))
        sums = {name: sha256_hex((data_dir / name).read_bytes()) for name in (TRAIN_IMAGES, TRAIN_LABELS)} | \
            {name: sha256_hex(blob) for name, blob in originals.items()}

        def put(name: str, blob: bytes) -> None:
            # Through a new inode: the file may be a hard link to data/.
            tmp = data_dir / f".{name}.new"
            tmp.write_bytes(blob)
            os.replace(tmp, data_dir / name)

        failures, accepted, t0 = [], 0, time.time()
        last = None
        for fname, blob, what in cases:
            if last is not None and last != fname:
                put(last, originals[last])
            last = fname
            put(fname, blob)
            (data_dir / SUMS_NAME).write_text(format_sha256sums(sums | {fname: sha256_hex(blob)}))
            want_ok = python_accepts(fname, blob)
            res = run_asan(asan_env, "dump", "--data", data_dir, "--out", out_dir)
            written = sorted(p.name for p in out_dir.iterdir())
            for p in out_dir.iterdir():
                p.unlink()
            report = sanitizer_report(res.stderr)
            lines = res.stderr.strip().splitlines()
            if report is not None:
                failures.append(f"{what}: sanitizer report (exit {res.returncode}):\n{report}")
            elif want_ok:
                accepted += 1
                if res.returncode != 0 or res.stderr.strip() or len(written) != 4:
                    failures.append(f"{what}: valid file rejected: exit {res.returncode}: {res.stderr.strip()!r}")
            elif res.returncode != 2:
                failures.append(f"{what}: exit {res.returncode}, want 2: {res.stderr.strip()[-500:]!r}")
            elif len(lines) != 1 or not lines[0].startswith("mlp_host: error: ") or fname not in lines[0]:
                failures.append(f"{what}: want one 'mlp_host: error:' line naming {fname}, got {lines!r}")
            elif written:
                failures.append(f"{what}: failed but wrote {written}")
        elapsed = time.time() - t0
        print(f"fuzzed the C++ IDX loader with {len(cases)} cases ({accepted} valid) in {elapsed:.1f} s")
        assert not failures, f"{len(failures)} of {len(cases)} cases failed:\n" + "\n".join(failures[:10])
    finally:
        shutil.rmtree(work, ignore_errors=True)
