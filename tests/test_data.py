"""data/ and harness/data/dataset.py: hashes, shapes, the subset rule, and failure messages. CPU only."""
from __future__ import annotations

import hashlib
import os
import re
import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spec import files as config
from harness.data import dataset as ds
from harness.data.dataset import DataError

DATA = config.DATA_DIR
FULL = DATA / ds.FULL_DIR
NEED_FULL = pytest.mark.skipif(
    not ((FULL / ds.FULL_TRAIN_IMAGES).is_file() and (FULL / ds.FULL_TRAIN_LABELS).is_file()),
    reason="data/full missing: run invoke data --full")


def _deb_copy() -> Path | None:
    for cand in (os.environ.get("FASHION_MNIST_DEB"), f"/tmp/{ds.DEB_FILENAME}"):
        if cand and Path(cand).is_file():
            return Path(cand)
    return None


@pytest.fixture(scope="module")
def raw():
    return ds.load_raw(DATA)


@pytest.fixture()
def data_copy(tmp_path):
    """A copy of the shipped files and SHA256SUMS in tmp_path."""
    for name in (*ds.SHIPPED, ds.SUMS_NAME):
        shutil.copyfile(DATA / name, tmp_path / name)
    return tmp_path


def _one_line_naming(exc: pytest.ExceptionInfo, fname: str) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    assert fname in msg, msg
    return msg


# --- the shipped files ---------------------------------------------------------------------------
def test_sha256sums_lists_exactly_the_shipped_files_and_they_match():
    text = (DATA / ds.SUMS_NAME).read_text()
    lines = text.splitlines()
    assert text.endswith("\n")
    assert all(re.fullmatch(r"[0-9a-f]{64}  \S+", line) for line in lines), lines
    names = [line.split("  ", 1)[1] for line in lines]
    assert names == sorted(ds.SHIPPED)
    sums = ds.verify_sha256(DATA)
    for name in ds.SHIPPED:
        assert hashlib.sha256((DATA / name).read_bytes()).hexdigest() == sums[name]


def test_test_split_is_byte_identical_to_the_official_files():
    for name in (ds.TEST_IMAGES, ds.TEST_LABELS):
        want, size = ds.OFFICIAL[name]
        blob = (DATA / name).read_bytes()
        assert len(blob) == size
        assert hashlib.sha256(blob).hexdigest() == want


def test_shapes_dtypes_and_scaling(raw):
    d = ds.load_dataset(DATA)
    assert d["train_images"].shape == (6000, 784) and d["train_images"].dtype == np.float32
    assert d["test_images"].shape == (10000, 784) and d["test_images"].dtype == np.float32
    assert d["train_labels"].shape == (6000,) and d["train_labels"].dtype == np.int32
    assert d["test_labels"].shape == (10000,) and d["test_labels"].dtype == np.int32
    assert raw["train_images"].shape == (6000, 28, 28) and raw["train_images"].dtype == np.uint8
    assert raw["test_images"].shape == (10000, 28, 28) and raw["test_images"].dtype == np.uint8
    for split in ("train", "test"):
        x = d[f"{split}_images"]
        assert 0.0 <= x.min() and x.max() <= 1.0
        expect = raw[f"{split}_images"].reshape(len(x), 784).astype(np.float32) / np.float32(255)
        assert np.array_equal(x, expect)
        assert np.array_equal(d[f"{split}_labels"], raw[f"{split}_labels"])


def test_class_counts(raw):
    assert np.bincount(raw["train_labels"], minlength=10).tolist() == [600] * 10
    assert np.bincount(raw["test_labels"], minlength=10).tolist() == [1000] * 10


@NEED_FULL
def test_subset_is_first_600_per_class_of_the_full_split(raw):
    full = ds.load_full_raw(DATA)
    labels = full["train_labels"]
    seen = [0] * 10
    picks = []
    for i, c in enumerate(labels.tolist()):     # the rule, written out independently
        if seen[c] < 600:
            seen[c] += 1
            picks.append(i)
    assert len(picks) == 6000 and picks[-1] + 1 == ds.SUBSET_SPAN == 6411
    assert ds.select_subset(labels).tolist() == picks
    assert np.array_equal(raw["train_labels"], labels[picks])
    assert np.array_equal(raw["train_images"], full["train_images"][picks])


@NEED_FULL
def test_full_split_pixel_mean():
    images = ds.load_full_raw(DATA)["train_images"]
    mean = float(images.mean(dtype=np.float64))
    assert abs(mean - 72.9) <= 0.2, mean          # 72.94/255 = 0.2860
    assert abs(mean / 255 - 72.9 / 255) <= 0.2 / 255


@pytest.mark.skipif(_deb_copy() is None,
                    reason=f"no copy of {ds.DEB_FILENAME} (set FASHION_MNIST_DEB)")
def test_rebuild_from_deb_is_byte_identical(tmp_path, capsys):
    shutil.copyfile(DATA / ds.SUMS_NAME, tmp_path / ds.SUMS_NAME)
    sums = ds.build_data(tmp_path, deb=_deb_copy(), full=False, check=True)
    assert "rebuilt: no difference" in capsys.readouterr().out
    for name in (*ds.SHIPPED, ds.SUMS_NAME):
        assert (tmp_path / name).read_bytes() == (DATA / name).read_bytes(), name
    assert sums == ds.read_sha256sums(DATA)


# --- failures name the file ------------------------------------------------------------------
@pytest.mark.parametrize("fname", ds.SHIPPED)
def test_one_changed_byte_is_caught(data_copy, fname):
    path = data_copy / fname
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0x01
    path.write_bytes(bytes(blob))
    with pytest.raises(DataError) as exc:
        ds.verify_sha256(data_copy)
    msg = _one_line_naming(exc, fname)
    assert "mismatch" in msg
    with pytest.raises(DataError) as exc:
        ds.load_dataset(data_copy)
    _one_line_naming(exc, fname)


def test_missing_file_is_named(data_copy):
    (data_copy / ds.TEST_LABELS).unlink()
    with pytest.raises(DataError) as exc:
        ds.load_dataset(data_copy)
    assert "missing" in _one_line_naming(exc, ds.TEST_LABELS)
    with pytest.raises(DataError) as exc:
        ds.load_dataset(data_copy, verify=False)
    _one_line_naming(exc, ds.TEST_LABELS)


def test_missing_sha256sums_is_named(data_copy):
    (data_copy / ds.SUMS_NAME).unlink()
    with pytest.raises(DataError) as exc:
        ds.load_dataset(data_copy)
    _one_line_naming(exc, ds.SUMS_NAME)


def test_truncated_file(data_copy):
    path = data_copy / ds.TRAIN_IMAGES
    path.write_bytes(path.read_bytes()[:16 + 1000])
    with pytest.raises(DataError) as exc:
        ds.read_idx(path)
    msg = _one_line_naming(exc, ds.TRAIN_IMAGES)
    assert "truncated" in msg and "6000x28x28" in msg and "4704000" in msg
    for verify in (True, False):
        with pytest.raises(DataError) as exc:
            ds.load_dataset(data_copy, verify=verify)
        _one_line_naming(exc, ds.TRAIN_IMAGES)


def test_trailing_bytes(data_copy):
    path = data_copy / ds.TEST_LABELS
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(DataError) as exc:
        ds.load_dataset(data_copy, verify=False)
    assert "trailing" in _one_line_naming(exc, ds.TEST_LABELS)


@pytest.mark.parametrize("fname,magic", [(ds.TRAIN_IMAGES, 0x00000802), (ds.TRAIN_LABELS, 0x08010000),
                                         (ds.TEST_IMAGES, 0x00000801), (ds.TEST_LABELS, 0x00000803)])
def test_wrong_magic(data_copy, fname, magic):
    path = data_copy / fname
    blob = path.read_bytes()
    path.write_bytes(struct.pack(">I", magic) + blob[4:])
    with pytest.raises(DataError) as exc:
        ds.read_idx(path, ndim=3 if "images" in fname else 1)
    assert "magic" in _one_line_naming(exc, fname)
    for verify in (True, False):
        with pytest.raises(DataError) as exc:
            ds.load_dataset(data_copy, verify=verify)
        _one_line_naming(exc, fname)


@pytest.mark.parametrize("fname,dims", [
    (ds.TRAIN_IMAGES, (6000, 784, 1)),      # same byte count, wrong image size
    (ds.TRAIN_IMAGES, (3000, 56, 28)),
    (ds.TEST_IMAGES, (20000, 14, 28)),
    (ds.TRAIN_LABELS, None),                 # label count disagrees with the image count
])
def test_wrong_dims(data_copy, fname, dims):
    path = data_copy / fname
    blob = path.read_bytes()
    if dims is None:
        blob = struct.pack(">II", ds.MAGIC_LABELS, 5999) + blob[8:-1]
    else:
        blob = struct.pack(">4I", ds.MAGIC_IMAGES, *dims) + blob[16:]
    path.write_bytes(blob)
    ds.read_idx(path)                          # a well-formed IDX file ...
    with pytest.raises(DataError) as exc:      # ... of the wrong shape
        ds.load_dataset(data_copy, verify=False)
    assert "dims" in _one_line_naming(exc, fname)
    with pytest.raises(DataError) as exc:
        ds.load_dataset(data_copy, verify=True)
    _one_line_naming(exc, fname)


def test_zero_dim_and_bad_label(tmp_path):
    with pytest.raises(DataError, match="x: bad dims 0x28x28"):
        ds.parse_idx(struct.pack(">4I", ds.MAGIC_IMAGES, 0, 28, 28), "x")
    for name in ds.SHIPPED:
        shutil.copyfile(DATA / name, tmp_path / name)
    path = tmp_path / ds.TEST_LABELS
    blob = bytearray(path.read_bytes())
    blob[8 + 17] = 10
    path.write_bytes(bytes(blob))
    with pytest.raises(DataError) as exc:
        ds.load_raw(tmp_path, verify=False)
    assert "label 10 at index 17" in _one_line_naming(exc, ds.TEST_LABELS)


def test_bad_deb_is_named(tmp_path):
    fake = tmp_path / ds.DEB_FILENAME
    fake.write_bytes(b"!<arch>\nnot really")
    with pytest.raises(DataError) as exc:
        ds.build_data(tmp_path / "out", deb=fake, check=False)
    assert "SHA-256 mismatch" in _one_line_naming(exc, ds.DEB_FILENAME)
    with pytest.raises(DataError) as exc:
        ds.ar_members(b"!<arch>\n" + b"x" * 70, "pkg.deb")
    _one_line_naming(exc, "pkg.deb")
    assert not (tmp_path / "out").exists()


def test_idx_roundtrip():
    a = np.arange(2 * 3 * 5, dtype=np.uint8).reshape(2, 3, 5)
    assert np.array_equal(ds.parse_idx(ds.encode_idx(a), "a"), a)
    b = np.array([3, 1, 4], dtype=np.uint8)
    assert np.array_equal(ds.parse_idx(ds.encode_idx(b), "b", ndim=1), b)


# --- fuzzing parse_idx: DataError and nothing else ----------------------------------------------
FUZZ = settings(max_examples=200, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


def _parse_or_dataerror(blob, ndim=None):
    try:
        arr = ds.parse_idx(blob, "fuzz", ndim=ndim)
    except DataError as exc:
        msg = str(exc)
        assert msg.startswith("fuzz: ") and "\n" not in msg
        return None
    assert arr.dtype == np.uint8 and arr.ndim in (1, 3)
    assert 4 + 4 * arr.ndim + arr.size == len(blob)
    return arr


@FUZZ
@given(st.binary(max_size=64), st.sampled_from([None, 1, 3]))
def test_fuzz_random_bytes(blob, ndim):
    _parse_or_dataerror(blob, ndim)


_magic = st.one_of(st.sampled_from([ds.MAGIC_LABELS, ds.MAGIC_IMAGES]),
                   st.integers(0, 0xFFFFFFFF),
                   st.integers(0, 0xFF).map(lambda r: 0x0800 | r),
                   st.integers(0, 0xFF).map(lambda t: (t << 8) | 3))
_dim = st.one_of(st.integers(0, 6), st.integers(0, 0xFFFFFFFF))


@FUZZ
@given(_magic, st.lists(_dim, min_size=0, max_size=5), st.integers(-8, 8),
       st.integers(0, 12), st.sampled_from([None, 1, 3]))
def test_fuzz_headers(magic, dims, slack, cut, ndim):
    header = struct.pack(f">I{len(dims)}I", magic, *dims)
    n = 1
    for d in dims:
        n *= d
    body = max(0, min(n, 4096) + slack) if n <= 4096 else 4096
    blob = header + bytes(range(256)) * (body // 256) + bytes(body % 256)
    _parse_or_dataerror(blob, ndim)
    _parse_or_dataerror(blob[:max(0, len(blob) - cut)], ndim)
    _parse_or_dataerror(blob[:cut], ndim)


_valid = st.one_of(
    st.lists(st.integers(0, 255), min_size=1, max_size=40).map(
        lambda v: ds.encode_idx(np.array(v, dtype=np.uint8))),
    st.tuples(st.integers(1, 4), st.integers(1, 5), st.integers(1, 5)).map(
        lambda s: ds.encode_idx(np.full(s, 7, dtype=np.uint8))),
)


@FUZZ
@given(_valid, st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), max_size=4),
       st.one_of(st.none(), st.integers(0, 200)), st.binary(max_size=8))
def test_fuzz_mutated_valid_files(blob, flips, cut, extra):
    assert _parse_or_dataerror(blob) is not None
    b = bytearray(blob)
    for pos, val in flips:
        b[pos % len(b)] = val
    if cut is not None:
        b = b[:cut]
    b += extra
    _parse_or_dataerror(bytes(b))
    _parse_or_dataerror(bytearray(b), 3)
    _parse_or_dataerror(memoryview(bytes(b)), 1)


def test_non_bytes_input_is_a_dataerror():
    for bad in (None, 5, "abc", [1, 2, 3]):
        with pytest.raises(DataError):
            ds.parse_idx(bad, "fuzz")
