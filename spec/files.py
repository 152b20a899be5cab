"""The repository's paths, atomic writes (temp file then rename) and the TOML reader."""
from __future__ import annotations

import json
import os
import sys
import tempfile
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


def write_all(contents: dict) -> None:
    """Write every {path: bytes or str}: all temp files first, then the renames. A failure while
    writing the temp files leaves every target untouched (the temp files are removed)."""
    temps: list[tuple[str, Path]] = []
    try:
        for path, data in contents.items():
            path = Path(path)
            temps.append((_write_temp(path, _as_bytes(data)), path))
        for _, path in temps:   # a rename that would fail must fail before the first one is made
            if path.is_dir() and not path.is_symlink():
                raise IsADirectoryError(f"{path}: a folder is in the way of this output")
        for tmp, path in temps:
            os.replace(tmp, path)
    finally:
        for tmp, _ in temps:
            if os.path.exists(tmp):
                os.unlink(tmp)


# A bad input file or value: one line (str()). Uncaught under plain `python -m`, SystemExit prints
# it and exits 1; the invoke tasks (tasks.py) turn it into exit status EXIT_BAD_INPUT, as the
# binary's bad-input status.
EXIT_BAD_INPUT = 2


class InputError(SystemExit):
    """A bad input: str() is the one line naming the file or value and the problem."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def load_toml(path) -> dict:
    """Parse one TOML file; a missing or malformed file raises InputError with one line."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise InputError(f"error: {path}: file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"error: {path}: malformed TOML: {exc}") from None
