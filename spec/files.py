"""The repository's paths, the one reader of input files (regular files only), atomic writes
(temp file then rename; several outputs all or none), the TOML reader and the `python -m` entry
points' exit on bad input."""
from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
import uuid
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10 and older
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data"
BUILD_DIR = ROOT / "build"
RESULTS_DIR = ROOT / "results"
PROFILE_DIR = ROOT / "profile"
TEMPLATES_DIR = ROOT / "templates"
RECIPE_PATH = ROOT / "recipe.toml"


def repo_relative(path) -> str:
    """`path` as a command run from the repository root takes it and a results file may record it:
    relative to the root (POSIX) when it is inside the repository, else absolute (a test's temp
    folder). A relative path is taken as given."""
    p = Path(path)
    if not p.is_absolute():
        return p.as_posix()
    try:
        return Path(os.path.realpath(p)).relative_to(os.path.realpath(ROOT)).as_posix() or "."
    except ValueError:
        return p.as_posix()


def _named_roots() -> list[tuple[Path, str]]:
    """(folder, how shown_path names it): the temp folders, then the home folder."""
    roots = [(Path(tempfile.gettempdir()), "$TMPDIR"), (Path("/tmp"), "$TMPDIR"), (Path.home(), "~")]
    return [(Path(os.path.realpath(r)), name) for r, name in roots if str(r) not in ("", "/")]


def shown_path(path) -> str:
    """`path` as results files and reports record it, naming no machine: relative to the repository
    when inside it (repo_relative); under a temp folder as $TMPDIR/..., under the home folder as
    ~/...; else as given (a system path, /usr/local/cuda/bin/compute-sanitizer). What a command
    needs to find a file is repo_relative's; this is for what is only read."""
    shown = repo_relative(path)
    if not Path(shown).is_absolute():
        return shown
    real = Path(os.path.realpath(shown))
    for root, name in _named_roots():
        try:
            rel = real.relative_to(root)
        except ValueError:
            continue
        return f"{name}/{rel.as_posix()}" if rel.parts else name
    return shown


# A run that fails leaves its logs here, never beside the committed evidence: git ignores
# results/failed/ (.gitignore), so a clean checkout stays clean after any failed task, and the
# task's error message names the folder.
FAILED_NAME = "failed"
FAILED_DIR = RESULTS_DIR / FAILED_NAME


def failed_path(target, root=RESULTS_DIR) -> Path:
    """Where a failed run's files go instead of `target` (the results file or folder it would have
    replaced): ROOT/failed/ at target's place under `root` (results/sweep/h64_b128 ->
    results/failed/sweep/h64_b128); a target outside `root`: a failed/ folder beside it."""
    target, root = Path(target), Path(root)
    try:
        rel = target.resolve().relative_to(root.resolve())
    except ValueError:
        return target.parent / FAILED_NAME / target.name
    if rel.parts[:1] == (FAILED_NAME,):
        return target
    return root / FAILED_NAME / rel


def _default_mode() -> int:
    """0666 less the umask: what open() would give, since mkstemp creates files 0600."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _as_bytes(data) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


def _write_temp(path: Path, data: bytes) -> str:
    """`data` in a temp file beside `path` (same file system, so the rename is atomic)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, _default_mode())
    except BaseException:
        os.unlink(tmp)
        raise
    return tmp


def write_bytes(path, data: bytes) -> None:
    """Write `data` to a temp file, then rename it over `path`: never a half-written file."""
    path = Path(path)
    tmp = _write_temp(path, _as_bytes(data))
    try:
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_text(path, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def write_json(path, obj) -> None:
    write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def _check_target(path: Path) -> None:
    """InputError when `path` cannot be an output: something other than a file is in its place,
    or the nearest existing folder above it is not a folder."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        st = None   # a file where a folder above it should be: found below
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputError(f"error: {path}: {_kind(st.st_mode)} is in the way of this output")
    parent = path.parent
    while not parent.exists() and not parent.is_symlink() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise InputError(f"error: {parent}: not a folder, but {path} is to be written inside it")


def check_targets(paths) -> None:
    """InputError naming the first of `paths` that cannot be an output (_check_target): what a
    writer calls before long work whose outputs write_all writes at the end."""
    for path in paths:
        _check_target(Path(path))


def write_all(contents: dict) -> None:
    """Write every {path: bytes or str} or none: every target checked first (a folder or another
    non-file in a target's place, or a file where its folder should be, is an InputError naming
    it, before anything is written), then all temp files, then the renames. A failure while
    writing the temp files leaves every target untouched (the temp files are removed)."""
    targets = [(Path(path), data) for path, data in contents.items()]
    check_targets(path for path, _ in targets)
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in targets:
            temps.append((_write_temp(path, _as_bytes(data)), path))
        for tmp, path in temps:
            os.replace(tmp, path)
    finally:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)


def replace_folder(new, dest) -> None:
    """The folder `new` renamed to `dest` (same file system): an old `dest` is renamed aside to a
    hidden .`dest`.old-* first and removed only once `new` is in its place, so no failure leaves
    neither (and what is left aside is never mistaken for a result)."""
    new, dest = Path(new), Path(dest)
    old = dest.with_name(f".{dest.name}.old-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    if dest.exists():
        os.replace(dest, old)
    os.replace(new, dest)
    if old.exists():
        shutil.rmtree(old)


# A bad input file or value: one line (str()). The invoke tasks (tasks.py) and the `python -m`
# entry points (run_main) turn it into exit status EXIT_BAD_INPUT, as the binary's bad-input
# status; elsewhere uncaught, SystemExit prints the line and exits 1.
EXIT_BAD_INPUT = 2


class InputError(SystemExit):
    """A bad input: str() is the one line naming the file or value and the problem."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _kind(mode: int) -> str:
    """What a file system entry is, for messages."""
    for test, what in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return what
    return "not a regular file"


MAX_INPUT_BYTES = 1 << 30   # no input of the harness comes near; a bound for a file that grows


def read_input(path, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of the input file `path`, which must be a regular file (a symlink to one will
    do): a missing file, a folder, a FIFO, a device (/dev/zero) or a socket is an InputError
    naming it, and nothing blocks (the file is opened non-blocking and checked before a read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"error: {path}: file not found") from None
    except IsADirectoryError:
        raise InputError(f"error: {path}: a folder, not a file") from None
    except OSError as exc:
        raise InputError(f"error: {path}: cannot open: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"error: {path}: {_kind(st.st_mode)}, not a file")
        if st.st_size > max_bytes:
            raise InputError(f"error: {path}: {st.st_size} bytes, more than an input may hold ({max_bytes})")
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise InputError(f"error: {path}: cannot read: {exc.strerror or exc}") from None
    finally:
        if fd >= 0:
            os.close(fd)
    if len(data) > max_bytes:
        raise InputError(f"error: {path}: more than {max_bytes} bytes, more than an input may hold")
    return data


def read_input_text(path, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """read_input's bytes as UTF-8 text; bytes that are not UTF-8 are an InputError naming the file."""
    data = read_input(path, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError(f"error: {path}: line {line}: not UTF-8 text") from None


def load_toml(path) -> dict:
    """Parse one TOML file; a missing, special (read_input) or malformed file raises InputError
    with one line."""
    data = read_input(path)
    try:
        return tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"error: {path}: malformed TOML: not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"error: {path}: malformed TOML: {exc}") from None


def run_main(main, argv=None) -> None:
    """The `python -m` entry point of a module: exits with main(argv)'s status; a bad input
    (InputError) is its one line on stderr and exit status EXIT_BAD_INPUT."""
    try:
        rc = main(argv)
    except InputError as exc:
        print(str(exc), file=sys.stderr, flush=True)
        raise SystemExit(EXIT_BAD_INPUT) from None
    raise SystemExit(rc or 0)
