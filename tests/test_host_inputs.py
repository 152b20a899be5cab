"""CPU: the binary's input files, hostile (issue 28): the .npy header parsed as the dict literal it
is (items 9), mlp_host's flags per subcommand (11), SHA256SUMS covering every file a loader reads
(12), and special files (a folder, a FIFO, /dev/zero) where a file is expected. Each bad input is
one `mlp_host: error:` or `mlp_train: error:` line naming it, exit 2, nothing written."""
from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from harness.data import dataset as ds
from spec.files import DATA_DIR, ROOT

HOST = ROOT / "build" / "mlp_host"
TRAIN = ROOT / "build" / "mlp_train"
N_PARAMS = 203_530



def run(binary: Path, *args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120)


def one_error(res, prog: str = "mlp_host") -> str:
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith(f"{prog}: error: ")]
    assert res.returncode == 2 and len(errors) == 1, (res.returncode, res.stderr)
    return errors[0]


def tree_hashes(*roots: Path) -> dict:
    """{path: sha256} of every file under the roots: what a test compares before and after."""
    return {p: hashlib.sha256(p.read_bytes()).hexdigest()
            for root in roots for p in sorted(Path(root).rglob("*")) if p.is_file()}


# ----------------------------------------------------------------------------- .npy (item 9)

def npy(header: str, data: bytes, version: int = 1) -> bytes:
    """A .npy file of `header` (the dict text, padded as numpy pads it) and `data`."""
    size = 4 if version > 1 else 2
    pad = (64 - (8 + size + len(header) + 1) % 64) % 64
    h = (header + " " * pad + "\n").encode("latin1")
    return b"\x93NUMPY" + bytes([version, 0]) + len(h).to_bytes(size, "little") + h + data


@pytest.fixture(scope="module")
def weights(tmp_path_factory) -> bytes:
    d = tmp_path_factory.mktemp("w")
    subprocess.run([str(HOST), "init", "--out", str(d / "p.npy")], check=True, cwd=ROOT)
    raw = (d / "p.npy").read_bytes()
    return raw[10 + struct.unpack("<H", raw[8:10])[0]:]


F4 = "'descr': '<f4'"
SHAPE = f"'shape': ({N_PARAMS},)"
GOOD = [
    f"{{{F4}, 'fortran_order': False, {SHAPE}, }}",                       # numpy's own
    f'{{"shape": ({N_PARAMS},), "fortran_order": False, "descr": "<f4"}}',  # any order, double quotes
    f"{{ {F4} ,\t'fortran_order' : False , 'shape' : ( {N_PARAMS} , ) }}",  # Python's spacing
]
# (header, the error's words, whether numpy's own reader refuses it too: where not, ours is the
# stricter: a duplicate key numpy lets the last win, an escape, a comment, Fortran order).
HOSTILE = [
    (f"{{'descr': '|O', 'fortran_order': False, {SHAPE}, 'x': \"{F4}\"}}", "unknown key 'x'", True),  # a pickle
    (f"{{{F4}, 'fortran_order': True, {SHAPE}, 'x': \"'fortran_order': False\"}}", "unknown key 'x'", True),
    (f"{{'x': \"{F4}, 'fortran_order': False, {SHAPE}\", 'descr': '|O', 'fortran_order': False, {SHAPE}}}",
     "unknown key 'x'", True),
    (f"{{'descr': '|O', {F4}, 'fortran_order': False, {SHAPE}}}", "'descr' given twice", False),
    (f"{{'descr': '|O', 'fortran_order': False, {SHAPE}}}", "dtype is not <f4", True),
    (f"{{{F4}, 'fortran_order': True, {SHAPE}}}", "Fortran order", False),
    (f"{{{F4}, 'fortran_order': 0, {SHAPE}}}", "True or False", True),
    (f"{{{F4}, 'fortran_order': False, 'shape': ({N_PARAMS})}}", "not a tuple", True),
    (f"{{{F4}, 'fortran_order': False, 'shape': (-{N_PARAMS},)}}", "non-negative", True),
    (f"{{{F4}, 'fortran_order': False, 'shape': (0{N_PARAMS},)}}", "leading zero", True),
    (f"{{{F4}, 'fortran_order': False, 'shape': ({N_PARAMS}, 1)}}", "wrong shape", False),
    (f"{{{F4}, 'fortran_order': False}}", "missing key 'shape'", True),
    (f"{{'descr': '<\\x66\\x34', 'fortran_order': False, {SHAPE}}}", "escape", False),
    (f"{{{F4}, 'fortran_order': False, {SHAPE}}} # {F4}", "after the closing", False),
    (f"[{F4}, 'fortran_order': False, {SHAPE}]", "expected '{'", True),
]


@pytest.mark.parametrize("header", GOOD)
def test_npy_headers_numpy_writes_or_could_are_read(tmp_path, weights, header):
    f = tmp_path / "p.npy"
    f.write_bytes(npy(header, weights))
    assert np.load(f).shape == (N_PARAMS,)
    res = run(HOST, "grad", "--params", f, "--x", tmp_path / "none.npy", "--y", tmp_path / "none.npy",
              "--batch", 1, "--out", tmp_path)
    assert "none.npy" in one_error(res)   # past the params: their header was read


@pytest.mark.parametrize("header, message, numpy_refuses", HOSTILE)
@pytest.mark.parametrize("version", [1, 3])
def test_hostile_npy_headers_are_one_line(tmp_path, weights, header, message, numpy_refuses, version):
    f = tmp_path / "p.npy"
    f.write_bytes(npy(header, weights, version))
    before = tree_hashes(tmp_path)
    line = one_error(run(HOST, "grad", "--params", f, "--x", f, "--y", f, "--batch", 1, "--out", tmp_path))
    assert str(f) in line and message in line, line
    if numpy_refuses:   # numpy's own reader (np.load, allow_pickle=False: the Python side's) as well
        with pytest.raises((ValueError, SyntaxError)):
            np.load(f)
    assert tree_hashes(tmp_path) == before


def test_mlp_train_init_refuses_a_pickle_dressed_as_float32(tmp_path, weights, built):
    built("mlp_train")
    f = tmp_path / "init.npy"
    f.write_bytes(npy(HOSTILE[0][0], weights))
    line = one_error(run(TRAIN, "--init", f, "--out", tmp_path), "mlp_train")
    assert str(f) in line and "unknown key 'x'" in line
    assert sorted(tmp_path.iterdir()) == [f]


def test_npy_format_version_is_checked(tmp_path, weights):
    f = tmp_path / "p.npy"
    raw = bytearray(npy(GOOD[0], weights))
    raw[6] = 9
    f.write_bytes(bytes(raw))
    assert "format version 9.0" in one_error(run(HOST, "grad", "--params", f, "--x", f, "--y", f,
                                                  "--batch", 1, "--out", tmp_path))


# ----------------------------------------------------------------------------- mlp_host flags (item 11)

@pytest.mark.parametrize("args, message", [
    (["init", "--seed", "5", "--out", "{d}/p.npy"], "init takes no --seed"),
    (["train", "--lr", "5", "--data", str(DATA_DIR), "--out", "{d}"], "train takes no --lr"),
    (["order", "--hidden", "5", "--out", "{d}/o.npy"], "order takes no --hidden"),
    (["dump", "--recipe", "recipe.toml", "--data", str(DATA_DIR), "--out", "{d}"], "dump takes no --recipe"),
    (["recipe", "--out", "{d}/r.json"], "recipe takes no --out"),
    (["init", "--out", "--recipe"], "bad argument '--out' (it needs a value)"),
    (["init", "--recipe", "--out", "{d}/p.npy"], "bad argument '--recipe' (it needs a value)"),
    (["order", "--out", "{d}/o.npy", "--epochs", "--train-size"], "bad argument '--epochs'"),
])
def test_mlp_host_refuses_flags_its_command_does_not_take(tmp_path, args, message):
    work = tmp_path / "work"
    work.mkdir()
    line = one_error(run(HOST, *[a.replace("{d}", str(work)) for a in args], cwd=tmp_path))
    assert message in line, line
    assert not any(work.iterdir()) and sorted(p.name for p in tmp_path.iterdir()) == ["work"]


# ----------------------------------------------------------------------------- SHA256SUMS (item 12)

def data_copy(tmp_path: Path, listed=ds.SHIPPED) -> Path:
    """data/'s four IDX files with a SHA256SUMS listing only `listed`."""
    d = tmp_path / "data"
    d.mkdir()
    for name in ds.SHIPPED:
        shutil.copyfile(DATA_DIR / name, d / name)
    (d / "SHA256SUMS").write_text("".join(
        f"{hashlib.sha256((d / n).read_bytes()).hexdigest()}  {n}\n" for n in listed))
    return d


def test_a_read_file_missing_from_sha256sums_is_an_error_in_both_loaders(tmp_path, built):
    d = data_copy(tmp_path, listed=(ds.TEST_IMAGES, ds.TEST_LABELS))
    images = d / ds.TRAIN_IMAGES
    raw = bytearray(images.read_bytes())
    raw[5000] ^= 0xFF                      # corrupted, and its hash listed nowhere
    images.write_bytes(bytes(raw))
    out = tmp_path / "out"
    out.mkdir()
    line = one_error(run(HOST, "dump", "--data", d, "--out", out))
    assert f"{images}: not listed in {d}/SHA256SUMS" in line
    assert not any(out.iterdir())
    with pytest.raises(ds.DataError, match=f"{ds.TRAIN_IMAGES}: not listed in"):
        ds.load_dataset(d)
    assert "not listed in" in one_error(run(built("mlp_train"), "--data", d, "--out", out), "mlp_train")


def test_the_full_split_folder_is_covered_the_same_way(tmp_path):
    """A folder of the full split's names (train-*): its train files must be listed too."""
    d = tmp_path / "full"
    d.mkdir()
    for src, dst in ((ds.TRAIN_IMAGES, ds.FULL_TRAIN_IMAGES), (ds.TRAIN_LABELS, ds.FULL_TRAIN_LABELS),
                     (ds.TEST_IMAGES, ds.TEST_IMAGES), (ds.TEST_LABELS, ds.TEST_LABELS)):
        shutil.copyfile(DATA_DIR / src, d / dst)
    (d / "SHA256SUMS").write_text("".join(f"{hashlib.sha256((d / n).read_bytes()).hexdigest()}  {n}\n"
                                          for n in (ds.TEST_IMAGES, ds.TEST_LABELS, ds.FULL_TRAIN_LABELS)))
    assert f"{ds.FULL_TRAIN_IMAGES}: not listed in" in one_error(run(HOST, "dump", "--data", d, "--out", tmp_path))
    with pytest.raises(ds.DataError, match=f"{ds.FULL_TRAIN_IMAGES}: not listed in"):
        ds.verify_sha256(d)


@pytest.mark.parametrize("line", ["{h}  ../t10k-labels-idx1-ubyte", "{h}  sub/t10k-labels-idx1-ubyte",
                                  "{h}  /etc/passwd", "{h}  ..", "{h}", "nothex  t10k-labels-idx1-ubyte"])
def test_a_sha256sums_line_that_leaves_the_folder_or_is_malformed_is_refused(tmp_path, line):
    d = data_copy(tmp_path)
    h = hashlib.sha256(b"").hexdigest()
    with open(d / "SHA256SUMS", "a") as fh:
        fh.write(line.format(h=h) + "\n")
    assert "SHA256SUMS:5:" in one_error(run(HOST, "dump", "--data", d, "--out", tmp_path))
    with pytest.raises(ds.DataError, match="SHA256SUMS: line 5"):
        ds.verify_sha256(d)


@pytest.mark.parametrize("how", ["the same line", "its binary-mode line", "another hash"])
def test_a_file_listed_twice_in_sha256sums_is_refused_by_both_loaders(tmp_path, how):
    """A second line for a file already listed -- whether it repeats the first, names the file in
    sha256sum's binary mode ('*name') or gives another hash -- is refused where it stands, by the
    binary's loader (cuda/io/dataset.cpp, through mlp_host dump) and the harness's
    (harness/data/dataset.py), naming the line and the file: a listing never holds two verdicts on one
    file, and the first two kinds would otherwise pass unnoticed."""
    d = data_copy(tmp_path)
    name = ds.TEST_LABELS
    digest = hashlib.sha256((d / name).read_bytes()).hexdigest()
    line = {"the same line": f"{digest}  {name}", "its binary-mode line": f"{digest} *{name}",
            "another hash": f"{hashlib.sha256(b'another file').hexdigest()}  {name}"}[how]
    with open(d / "SHA256SUMS", "a") as fh:
        fh.write(line + "\n")                  # line 5, after the four files' own
    out = tmp_path / "out"
    out.mkdir()
    assert f"{d}/SHA256SUMS:5: {name} listed twice" in one_error(run(HOST, "dump", "--data", d, "--out", out))
    assert not any(out.iterdir())
    with pytest.raises(ds.DataError, match=f"SHA256SUMS: line 5: {name} listed twice"):
        ds.read_sha256sums(d)
    with pytest.raises(ds.DataError, match=f"SHA256SUMS: line 5: {name} listed twice"):
        ds.load_dataset(d)


def test_the_shipped_reference_folder_must_list_every_file_in_it(tmp_path, built):
    built("mlp_train")
    d = data_copy(tmp_path)
    shutil.copytree(DATA_DIR / "reference", d / "reference")
    (d / "reference" / "SHA256SUMS").write_text("".join(
        ln + "\n" for ln in (DATA_DIR / "reference" / "SHA256SUMS").read_text().splitlines()
        if "fp64_final_params.npy" not in ln))
    out = tmp_path / "out"
    out.mkdir()
    before = tree_hashes(d)
    line = one_error(run(TRAIN, "--data", d, "--reference", "shipped", "--out", out), "mlp_train")
    assert f"{d}/reference/fp64_final_params.npy: not listed in {d}/reference/SHA256SUMS" in line
    assert tree_hashes(d) == before and not any(out.iterdir())


# ----------------------------------------------------------------------------- special files

@pytest.mark.parametrize("kind, what", [("folder", "a folder"), ("fifo", "a FIFO"), ("zero", "a character device")])
@pytest.mark.parametrize("role", ["recipe", "data file", "params", "SHA256SUMS"])
def test_a_special_file_where_a_file_is_expected_is_one_line_and_never_blocks(tmp_path, kind, what, role):
    d = data_copy(tmp_path)
    target = {"recipe": tmp_path / "r.toml", "data file": d / ds.TEST_LABELS, "params": tmp_path / "p.npy",
              "SHA256SUMS": d / "SHA256SUMS"}[role]
    target.unlink(missing_ok=True)
    if kind == "folder":
        target.mkdir()
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target.symlink_to("/dev/zero")
    args = {"recipe": ["recipe", "--recipe", target], "data file": ["dump", "--data", d, "--out", tmp_path],
            "params": ["grad", "--params", target, "--x", target, "--y", target, "--batch", 1, "--out", tmp_path],
            "SHA256SUMS": ["dump", "--data", d, "--out", tmp_path]}[role]
    line = one_error(run(HOST, *args))
    assert str(target) in line and f"{what}, not a file" in line, line
