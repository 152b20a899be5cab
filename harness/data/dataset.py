"""Fashion-MNIST: build data/ from the Debian package, verify it, and load it.

`python -m harness.data.dataset [--full] [--deb PATH]` (or `invoke data`) rebuilds data/ byte for byte
from the Debian package dataset-fashion-mnist (see data/SOURCE.md).  Every loader verifies
data/SHA256SUMS first; any problem raises DataError, whose str is one line naming the file.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import numpy as np

from spec import files, validate
from spec.files import DATA_DIR, ROOT, InputError, read_input, write_bytes

# --- the source --------------------------------------------------------------------------------
DEB_PACKAGE = "dataset-fashion-mnist"
DEB_VERSION = "0.0~git20200523.55506a9-1"
DEB_FILENAME = f"{DEB_PACKAGE}_{DEB_VERSION}_all.deb"
DEB_SHA256 = "39e172fe32dd318ebb3e512220c3beea2fa47d7e20bab348fb4e0922d6beefc0"
DEB_MEMBER_DIR = "usr/share/datasets/fashion-mnist"

# SHA-256 and length of the DECOMPRESSED official files (Debian only rewrote the gzip headers).
OFFICIAL = {
    "train-images-idx3-ubyte": ("c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888", 47_040_016),
    "train-labels-idx1-ubyte": ("bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9", 60_008),
    "t10k-images-idx3-ubyte": ("5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b", 7_840_016),
    "t10k-labels-idx1-ubyte": ("0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34", 10_008),
}
# MD5 of the upstream .gz files (github.com/zalandoresearch/fashion-mnist), for reference only:
# Debian's .gz files differ from these in their gzip headers alone.
UPSTREAM_GZ_MD5 = {
    "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
    "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
    "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
    "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
}

CLASS_NAMES = ("T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
               "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot")
NUM_CLASSES = 10
ROWS = COLS = 28
PER_CLASS = 600                     # the train subset: first 600 images of each class
TRAIN_SIZE = PER_CLASS * NUM_CLASSES
SUBSET_SPAN = 6411                  # ... which are all among the first 6,411 official images
TEST_SIZE = 10_000
FULL_TRAIN_SIZE = 60_000

# --- the shipped files ---------------------------------------------------------------------------
TRAIN_IMAGES = "train6000-images-idx3-ubyte"
TRAIN_LABELS = "train6000-labels-idx1-ubyte"
TEST_IMAGES = "t10k-images-idx3-ubyte"
TEST_LABELS = "t10k-labels-idx1-ubyte"
SHIPPED = (TRAIN_IMAGES, TRAIN_LABELS, TEST_IMAGES, TEST_LABELS)
SUMS_NAME = "SHA256SUMS"
FULL_DIR = "full"
FULL_TRAIN_IMAGES = "train-images-idx3-ubyte"
FULL_TRAIN_LABELS = "train-labels-idx1-ubyte"

MAGIC_LABELS = 0x00000801
MAGIC_IMAGES = 0x00000803


class DataError(Exception):
    """A data file is missing, malformed or does not match its hash. str(): one line, file first."""

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


def _show(path) -> str:
    """A path as messages print it: relative to the repository root when inside it."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(ROOT))
    except (ValueError, OSError):
        return str(p)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(path) -> bytes:
    """A regular file's bytes (spec.files.read_input: a folder, FIFO or device is refused)."""
    try:
        return read_input(path)
    except InputError as exc:
        raise DataError(_show(path) + str(exc).removeprefix(f"error: {path}")) from None


# --- IDX -------------------------------------------------------------------------------------------
def parse_idx(data: bytes, name: str, ndim: int | None = None) -> np.ndarray:
    """Decode an unsigned-byte IDX file (magic 0x00000801 or 0x00000803) held in `data`.

    Checks the magic, the dimensions (none may be 0) and that the length is exactly header + data.
    `ndim` (1 or 3), when given, is the rank the caller expects. Returns a writable uint8 array.
    Any problem raises DataError naming `name`; nothing else is raised for any input bytes.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise DataError(f"{name}: not a byte string but {type(data).__name__}")
    data = bytes(data)
    if len(data) < 4:
        raise DataError(f"{name}: truncated: {len(data)} bytes, shorter than the 4-byte IDX magic")
    (magic,) = struct.unpack(">I", data[:4])
    if magic not in (MAGIC_LABELS, MAGIC_IMAGES):
        raise DataError(f"{name}: bad magic 0x{magic:08x}: expected 0x{MAGIC_LABELS:08x} (labels)"
                        f" or 0x{MAGIC_IMAGES:08x} (images)")
    rank = magic & 0xFF
    if ndim is not None and rank != ndim:
        want = MAGIC_LABELS if ndim == 1 else MAGIC_IMAGES
        raise DataError(f"{name}: bad magic 0x{magic:08x}: a {rank}-d IDX file where a {ndim}-d one"
                        f" (0x{want:08x}) is expected")
    header = 4 + 4 * rank
    if len(data) < header:
        raise DataError(f"{name}: truncated: {len(data)} bytes, shorter than the {header}-byte"
                        f" header of a {rank}-d IDX file")
    dims = struct.unpack(f">{rank}I", data[4:header])
    shape = "x".join(str(d) for d in dims)
    if 0 in dims:
        raise DataError(f"{name}: bad dims {shape}: a dimension is 0")
    need = 1
    for d in dims:
        need *= d
    have = len(data) - header
    if have < need:
        raise DataError(f"{name}: truncated: header says {shape} = {need} bytes of data"
                        f" ({header + need} with the {header}-byte header), file has {len(data)}")
    if have > need:
        raise DataError(f"{name}: {have - need} trailing bytes: header says {shape} = {need} bytes"
                        f" of data ({header + need} with the {header}-byte header),"
                        f" file has {len(data)}")
    return np.frombuffer(data, dtype=np.uint8, count=need, offset=header).reshape(dims).copy()


def read_idx(path, ndim: int | None = None) -> np.ndarray:
    """Read and validate one uncompressed IDX file (see parse_idx); errors name the file."""
    return parse_idx(_read(path), _show(path), ndim=ndim)


def encode_idx(array: np.ndarray) -> bytes:
    """The IDX bytes of a uint8 array of rank 1 or 3."""
    array = np.ascontiguousarray(array)
    if array.dtype != np.uint8 or array.ndim not in (1, 3):
        raise ValueError(f"encode_idx: need a uint8 array of rank 1 or 3, got {array.dtype} {array.shape}")
    magic = MAGIC_LABELS if array.ndim == 1 else MAGIC_IMAGES
    return struct.pack(f">I{array.ndim}I", magic, *array.shape) + array.tobytes()


# --- SHA256SUMS --------------------------------------------------------------------------------
_SUM_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")


def read_sha256sums(data_dir=DATA_DIR) -> dict[str, str]:
    """{file name: sha256 hex} from data_dir/SHA256SUMS; a malformed line raises DataError."""
    path = Path(data_dir) / SUMS_NAME
    try:
        text = _read(path).decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(f"{_show(path)}: not UTF-8 text") from None
    sums: dict[str, str] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _SUM_LINE.match(line)
        if not m:
            raise DataError(f"{_show(path)}: line {lineno}: expected '<64 hex>  <file name>',"
                            f" got {line[:80]!r}")
        digest, fname = m.group(1).lower(), m.group(2)
        if "/" in fname or fname in (".", ".."):
            raise DataError(f"{_show(path)}: line {lineno}: file name {fname!r} is not a file of the folder")
        if fname in sums:
            raise DataError(f"{_show(path)}: line {lineno}: {fname} listed twice")
        sums[fname] = digest
    if not sums:
        raise DataError(f"{_show(path)}: lists no files")
    return sums


def format_sha256sums(sums: dict[str, str]) -> str:
    return "".join(f"{sums[n]}  {n}\n" for n in sorted(sums))


def files_read(data_dir=DATA_DIR) -> tuple[str, ...]:
    """The four IDX files a loader reads from data_dir, as the binary's load_dataset picks them
    (cuda/io/dataset.cpp): train6000-* where present, else the full split's train-*; t10k-*."""
    data_dir = Path(data_dir)
    if (data_dir / TRAIN_IMAGES).exists() or not (data_dir / FULL_TRAIN_IMAGES).exists():
        return SHIPPED
    return (FULL_TRAIN_IMAGES, FULL_TRAIN_LABELS, TEST_IMAGES, TEST_LABELS)


def verify_sha256(data_dir=DATA_DIR, read=None) -> dict[str, str]:
    """Check every file listed in data_dir/SHA256SUMS, and that every file of `read` (default:
    files_read(data_dir), what a loader goes on to read) is listed; return the listing. Raises
    DataError naming the file."""
    data_dir = Path(data_dir)
    sums = read_sha256sums(data_dir)
    for fname, want in sums.items():
        path = data_dir / fname
        if not path.exists():
            raise DataError(f"{_show(path)}: missing (listed in {_show(data_dir / SUMS_NAME)}"
                            f" with SHA-256 {want})")
        got = sha256_hex(_read(path))
        if got != want:
            raise DataError(f"{_show(path)}: SHA-256 mismatch: {_show(data_dir / SUMS_NAME)} says"
                            f" {want}, file has {got}")
    for fname in files_read(data_dir) if read is None else read:
        if fname not in sums:
            raise DataError(f"{_show(data_dir / fname)}: not listed in {_show(data_dir / SUMS_NAME)}"
                            f" (it is read, so its hash must be checked)")
    return sums


# --- loading ------------------------------------------------------------------------------------
def _check_pair(images: np.ndarray, labels: np.ndarray, img_path, lab_path, count: int) -> None:
    if images.shape[1:] != (ROWS, COLS):
        raise DataError(f"{_show(img_path)}: bad dims {'x'.join(map(str, images.shape))}:"
                        f" expected Nx{ROWS}x{COLS}")
    if images.shape[0] != count:
        raise DataError(f"{_show(img_path)}: bad dims {'x'.join(map(str, images.shape))}:"
                        f" expected {count}x{ROWS}x{COLS}")
    if labels.shape[0] != count:
        raise DataError(f"{_show(lab_path)}: bad dims {labels.shape[0]}: expected {count} labels"
                        f" (one per image of {_show(img_path)})")
    if labels.size and int(labels.max()) >= NUM_CLASSES:
        bad = int(np.argmax(labels >= NUM_CLASSES))
        raise DataError(f"{_show(lab_path)}: label {int(labels[bad])} at index {bad}:"
                        f" expected 0..{NUM_CLASSES - 1}")


def _load_pair(data_dir: Path, img: str, lab: str, count: int):
    images = read_idx(data_dir / img, ndim=3)
    labels = read_idx(data_dir / lab, ndim=1)
    _check_pair(images, labels, data_dir / img, data_dir / lab, count)
    return images, labels


def load_raw(data_dir=DATA_DIR, verify: bool = True) -> dict[str, np.ndarray]:
    """The shipped files as uint8 arrays: train_images (6000,28,28), train_labels (6000,),
    test_images (10000,28,28), test_labels (10000,). verify: check SHA256SUMS first."""
    data_dir = Path(data_dir)
    if verify:
        verify_sha256(data_dir, read=SHIPPED)
    train_images, train_labels = _load_pair(data_dir, TRAIN_IMAGES, TRAIN_LABELS, TRAIN_SIZE)
    test_images, test_labels = _load_pair(data_dir, TEST_IMAGES, TEST_LABELS, TEST_SIZE)
    return {"train_images": train_images, "train_labels": train_labels,
            "test_images": test_images, "test_labels": test_labels}


def to_float(images: np.ndarray) -> np.ndarray:
    """uint8 (N,28,28) -> float32 (N,784), each pixel p as float32(p) / 255 (IEEE division)."""
    return images.reshape(images.shape[0], -1).astype(np.float32) / np.float32(255.0)


def load_dataset(data_dir=DATA_DIR, verify: bool = True) -> dict[str, np.ndarray]:
    """train_images (6000,784) / test_images (10000,784) float32 in [0,1] (pixel / 255),
    train_labels / test_labels int32. verify: check data/SHA256SUMS first."""
    raw = load_raw(data_dir, verify=verify)
    return {"train_images": to_float(raw["train_images"]),
            "train_labels": raw["train_labels"].astype(np.int32),
            "test_images": to_float(raw["test_images"]),
            "test_labels": raw["test_labels"].astype(np.int32)}


def _verify_official(data: bytes, name: str, where: str) -> None:
    want, size = OFFICIAL[name]
    got = sha256_hex(data)
    if len(data) != size or got != want:
        raise DataError(f"{where}: not the official {name}: expected {size} bytes with SHA-256"
                        f" {want}, got {len(data)} bytes with {got}")


def load_full_raw(data_dir=DATA_DIR, verify: bool = True) -> dict[str, np.ndarray]:
    """The official 60,000-image train split from data/full/ (made by `invoke data --full`),
    verified against the official hashes: train_images (60000,28,28), train_labels (60000,)."""
    full = Path(data_dir) / FULL_DIR
    out = {}
    for key, fname, rank in (("train_images", FULL_TRAIN_IMAGES, 3),
                             ("train_labels", FULL_TRAIN_LABELS, 1)):
        raw = _read(full / fname)
        if verify:
            _verify_official(raw, fname, _show(full / fname))
        out[key] = parse_idx(raw, _show(full / fname), ndim=rank)
    _check_pair(out["train_images"], out["train_labels"], full / FULL_TRAIN_IMAGES,
                full / FULL_TRAIN_LABELS, FULL_TRAIN_SIZE)
    return out


def select_subset(labels: np.ndarray, per_class: int = PER_CLASS) -> np.ndarray:
    """Indices (ascending, i.e. in file order) of the first `per_class` images of each class."""
    labels = np.asarray(labels)
    picks = []
    for c in range(NUM_CLASSES):
        idx = np.flatnonzero(labels == c)[:per_class]
        if idx.size < per_class:
            raise DataError(f"class {c}: only {idx.size} images, need {per_class}")
        picks.append(idx)
    return np.sort(np.concatenate(picks))


# --- the Debian package ------------------------------------------------------------------------
def ar_members(blob: bytes, name: str) -> dict[str, bytes]:
    """The members of a Unix ar archive (a .deb), {member name: bytes}. Errors name `name`."""
    if not blob.startswith(b"!<arch>\n"):
        raise DataError(f"{name}: not an ar archive (no '!<arch>' magic)")
    members: dict[str, bytes] = {}
    off = 8
    while off < len(blob):
        if blob[off:off + 1] == b"\n":          # stray padding byte
            off += 1
            continue
        head = blob[off:off + 60]
        if len(head) < 60 or head[58:60] != b"`\n":
            raise DataError(f"{name}: corrupt ar member header at offset {off}")
        mname = head[:16].decode("ascii", "replace").strip().rstrip("/")
        try:
            size = int(head[48:58].decode("ascii").strip())
        except ValueError:
            raise DataError(f"{name}: corrupt ar member size at offset {off}") from None
        start = off + 60
        if start + size > len(blob):
            raise DataError(f"{name}: truncated: ar member {mname!r} needs {size} bytes at offset"
                            f" {start}, file has {len(blob)}")
        members[mname] = blob[start:start + size]
        off = start + size + (size & 1)
    return members


def extract_deb(deb_bytes: bytes, name: str) -> dict[str, bytes]:
    """The four official files, DECOMPRESSED, from the .deb, each checked against OFFICIAL."""
    members = ar_members(deb_bytes, name)
    if members.get("debian-binary", b"").strip() != b"2.0":
        raise DataError(f"{name}: not a Debian binary package (debian-binary is"
                        f" {members.get('debian-binary', b'missing')!r})")
    data_tar = [m for m in members if m.startswith("data.tar")]
    if len(data_tar) != 1:
        raise DataError(f"{name}: expected one data.tar.* member, found {sorted(members)}")
    try:
        tar = tarfile.open(fileobj=io.BytesIO(members[data_tar[0]]), mode="r:*")
    except tarfile.TarError as exc:
        raise DataError(f"{name}: cannot open {data_tar[0]} (only gz/bz2/xz/plain tar are"
                        f" supported): {exc}") from None
    wanted = {f"{DEB_MEMBER_DIR}/{f}.gz": f for f in OFFICIAL}
    out: dict[str, bytes] = {}
    with tar:
        for info in tar:
            path = info.name[2:] if info.name.startswith("./") else info.name
            if path in wanted and info.isfile():
                gz = tar.extractfile(info).read()
                fname = wanted[path]
                try:
                    raw = gzip.decompress(gz)
                except (OSError, EOFError) as exc:
                    raise DataError(f"{name}: {path}: bad gzip data: {exc}") from None
                _verify_official(raw, fname, f"{name}: {path} (decompressed)")
                out[fname] = raw
    missing = sorted(set(OFFICIAL) - set(out))
    if missing:
        raise DataError(f"{name}: {data_tar[0]} lacks {DEB_MEMBER_DIR}/{missing[0]}.gz")
    return out


def download_deb(dest: Path) -> Path:
    """`apt-get download` the pinned package into dest (running `apt-get update` only if needed)."""
    spec = f"{DEB_PACKAGE}={DEB_VERSION}"
    for attempt in (1, 2):
        if attempt == 2:
            print("data: apt-get download failed; running apt-get update and retrying", flush=True)
            subprocess.run(["apt-get", "update"], check=False)
        print(f"data: apt-get download {spec}", flush=True)
        try:
            proc = subprocess.run(["apt-get", "download", spec], cwd=dest, check=False,
                                  capture_output=True, text=True)
        except FileNotFoundError:
            raise DataError("apt-get: not found: pass --deb PATH to a copy of"
                            f" {DEB_FILENAME}") from None
        debs = sorted(dest.glob(f"{DEB_PACKAGE}_*.deb"))
        if proc.returncode == 0 and debs:
            return debs[0]
    last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    raise DataError(f"apt-get download {spec}: failed (exit {proc.returncode}): {last}")


# --- building data/ ----------------------------------------------------------------------------
def build_files(official: dict[str, bytes]) -> dict[str, bytes]:
    """The shipped files' bytes, made from the four decompressed official files."""
    images = parse_idx(official["train-images-idx3-ubyte"], "train-images-idx3-ubyte", ndim=3)
    labels = parse_idx(official["train-labels-idx1-ubyte"], "train-labels-idx1-ubyte", ndim=1)
    idx = select_subset(labels)
    span = int(idx[-1]) + 1
    if idx.size != TRAIN_SIZE or span != SUBSET_SPAN:
        raise DataError(f"train-images-idx3-ubyte: subset of {idx.size} images spans the first"
                        f" {span} images, expected {TRAIN_SIZE} within the first {SUBSET_SPAN}")
    return {
        TRAIN_IMAGES: encode_idx(images[idx]),
        TRAIN_LABELS: encode_idx(labels[idx]),
        TEST_IMAGES: official["t10k-images-idx3-ubyte"],
        TEST_LABELS: official["t10k-labels-idx1-ubyte"],
    }


def _write(path: Path, data: bytes) -> None:
    if path.is_file() and path.stat().st_size == len(data) and path.read_bytes() == data:
        print(f"data: {_show(path)} unchanged ({len(data)} bytes)", flush=True)
        return
    write_bytes(path, data)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)        # mkstemp (in write_bytes) leaves the file 0600
    print(f"data: wrote {_show(path)} ({len(data)} bytes)", flush=True)


def build_data(data_dir=DATA_DIR, deb=None, full: bool = False, check: bool = True) -> dict:
    """Rebuild data_dir from the Debian package (downloaded with apt-get when deb is None).

    Verifies the .deb and the decompressed official files, writes the shipped files and
    SHA256SUMS atomically (and data_dir/full/ when full=True), then, when check=True, compares
    with the SHA256SUMS found before the rebuild and raises DataError naming any file that differs.
    Returns {file name: sha256} of the shipped files.
    """
    data_dir = Path(data_dir)
    old_sums = None
    if check and (data_dir / SUMS_NAME).is_file():
        old_sums = read_sha256sums(data_dir)

    tmp = None
    try:
        if deb is None:
            tmp = Path(tempfile.mkdtemp(prefix="fashion-mnist-deb."))
            deb = download_deb(tmp)
        deb = Path(deb)
        print(f"data: reading {deb}", flush=True)
        blob = _read(deb)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    got = sha256_hex(blob)
    if got != DEB_SHA256:
        raise DataError(f"{deb}: SHA-256 mismatch: expected {DEB_SHA256} ({DEB_FILENAME}),"
                        f" file has {got}")
    print(f"data: {deb.name}: SHA-256 ok; extracting", flush=True)
    official = extract_deb(blob, str(deb))
    del blob
    print("data: the four official files match their published SHA-256", flush=True)

    files = build_files(official)
    sums = {name: sha256_hex(b) for name, b in files.items()}
    for name in SHIPPED:
        _write(data_dir / name, files[name])
    _write(data_dir / SUMS_NAME, format_sha256sums(sums).encode("ascii"))
    if full:
        # The full split beside the test split and a SHA256SUMS of its own, so that
        # `mlp_train --data data/full --train-size 60000` loads and verifies it like data/.
        full_names = (FULL_TRAIN_IMAGES, FULL_TRAIN_LABELS, TEST_IMAGES, TEST_LABELS)
        for fname in full_names:
            _write(data_dir / FULL_DIR / fname, official[fname])
        _write(data_dir / FULL_DIR / SUMS_NAME,
               format_sha256sums({n: OFFICIAL[n][0] for n in full_names}).encode("ascii"))
        load_full_raw(data_dir, verify=True)          # re-read what is on disk
        print(f"data: {_show(data_dir / FULL_DIR)}/ verified against the official hashes",
              flush=True)
    verify_sha256(data_dir)                           # re-read what is on disk

    if check:
        if old_sums is None:
            print(f"data: no previous {_show(data_dir / SUMS_NAME)} to compare with", flush=True)
        else:
            diffs = []
            for name in sorted(set(old_sums) | set(sums)):
                if old_sums.get(name) != sums.get(name):
                    diffs.append(f"{name} (was {old_sums.get(name, 'absent')},"
                                 f" now {sums.get(name, 'absent')})")
            if diffs:
                for d in diffs:
                    print(f"data: DIFFERS: {d}", flush=True)
                raise DataError(f"{_show(data_dir)}: rebuilt data differs from the previous"
                                f" {SUMS_NAME} in {len(diffs)} file(s): "
                                + ", ".join(d.split(' ')[0] for d in diffs))
            print(f"{_show(data_dir)}/ rebuilt: no difference", flush=True)
    return sums


def main(argv=None) -> int:
    ap = validate.ArgParser(prog="python -m harness.data.dataset",
                                 description="Rebuild data/ from the Debian package"
                                             f" {DEB_PACKAGE} {DEB_VERSION}.")
    ap.add_argument("--full", action="store_true",
                    help="also write the official 60,000-image train split to data/full/")
    ap.add_argument("--deb", type=Path, default=None,
                    help=f"use this copy of {DEB_FILENAME} instead of apt-get download")
    ap.add_argument("--data-dir", type=Path, default=DATA_DIR, help="default: data/")
    ap.add_argument("--no-check", action="store_true",
                    help="do not compare with the SHA256SUMS present before the rebuild")
    args = ap.parse_args(argv)
    try:
        build_data(args.data_dir, deb=args.deb, full=args.full, check=not args.no_check)
    except DataError as exc:   # a missing, damaged or wrong .deb or data file: a bad input
        print(f"error: {exc}", file=sys.stderr)
        return files.EXIT_BAD_INPUT
    return 0


if __name__ == "__main__":
    files.run_main(main)
