"""The one validator of what users and files hand the harness: a name before it becomes a path, a
number before it becomes a limit or a count. Each failure is an InputError (spec/files.py): one line
naming the input and what is wrong, which the invoke tasks turn into exit status 2.

    safe_name("mutant_a", "submission")       a file stem or a name from a results file, as a path part
    is_safe_name("fused")                      the same test as a bool (spec/schema.py's names)
    submission_stem(Path("x.cu"))             the stem of a submission file, checked
    file_arg("tests/test_x.py", "--file")      a file or folder named on a command line, checked
    positive_seconds("25", "--limit")         a finite time limit > 0
    count("4", "--jobs", lo=1, hi=64)          an integer inside [lo, hi]
    integers("64,128", "--widths", lo=1, hi=16384)   a comma-separated list of them
    real("0.02", "--band", lo=0, hi=1)         a finite number inside [lo, hi]
    arch("sm_90")                              an architecture name sm_XY or sm_XYZ
    ArgParser(prog=...)                        argparse whose usage errors are one InputError line

A safe name is 1-64 characters of ASCII letters, digits, '_', '-' and '.', starting with a letter or
a digit, not ending in '.', and none of the names the gate's own files take (leaderboard.csv,
leaderboard.md): it can never be '.', '..', hidden, absolute, hold a separator, a space, a quote,
a '$' or a backtick, so it is the same string to make, the shell, Python and the file system.
"""
from __future__ import annotations

import argparse
import math
import re
from pathlib import Path

from spec.files import InputError

SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
RESERVED = frozenset({"leaderboard.csv", "leaderboard.md", "leaderboard"})


def is_safe_name(text) -> bool:
    """Whether `text` is a safe name (above)."""
    s = str(text)
    return bool(SAFE_NAME.fullmatch(s)) and not s.endswith(".") and s.lower() not in RESERVED


def safe_name(text, what: str) -> str:
    """`text` when it is a safe name (above), else InputError naming `what`."""
    s = str(text)
    if not is_safe_name(s):
        shown = s if len(s) <= 80 else s[:77] + "..."
        raise InputError(f"error: {what} {shown!r}: not a safe name (1-64 of A-Z a-z 0-9 _ - ., starting with a "
                         f"letter or digit, not ending in '.', not {', '.join(sorted(RESERVED))})")
    return s


def submission_stem(path: Path) -> str:
    """The stem of a submission file (its folder names under build/gate/ and results/gate/)."""
    path = Path(path)
    if path.suffix != ".cu":
        raise InputError(f"error: submission {str(path)!r}: not a .cu file")
    return safe_name(path.name[:-3], "submission")


def file_arg(text, flag: str) -> str:
    """A file or folder a user names on a task's command line (invoke test --file, build
    --submission, gate DIR, --out, ...), before it reaches a subprocess or becomes a path: not
    empty, no NUL or line break, and not starting with '-', which a program it is handed to
    would read as an option (`invoke test --file=--version` would run pytest --version).
    InputError naming `flag` otherwise; a file whose name does start with '-' is ./-name."""
    s = str(text)
    shown = s if len(s) <= 80 else s[:77] + "..."
    if not s.strip():
        raise InputError(f"error: {flag} {shown!r}: an empty file name")
    if any(ch in s for ch in "\0\n\r"):
        raise InputError(f"error: {flag} {shown!r}: a file name with a NUL or a line break")
    if s.startswith("-"):
        raise InputError(f"error: {flag} {shown!r}: a file name cannot start with '-' (it would be read as an "
                         f"option; a file of that name is ./{s})")
    return s


def positive_seconds(text, flag: str, hi: float = 7 * 24 * 3600.0) -> float:
    """A time limit: a finite number of seconds in (0, hi]."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise InputError(f"error: {flag} {text!r}: not a number of seconds") from None
    if not math.isfinite(value) or not 0 < value <= hi:
        raise InputError(f"error: {flag} {text!r}: expected a finite number of seconds in (0, {hi:g}]")
    return value


def count(text, flag: str, lo: int = 1, hi: int = 1 << 20) -> int:
    """An integer in [lo, hi], written in plain decimal digits (no sign, no '_', no 0x)."""
    s = str(text).strip()
    if not re.fullmatch(r"[0-9]+", s):
        raise InputError(f"error: {flag} {text!r}: expected an integer in [{lo}, {hi}]")
    value = int(s)
    if not lo <= value <= hi:
        raise InputError(f"error: {flag} {text!r}: expected an integer in [{lo}, {hi}]")
    return value


def integers(text, flag: str, lo: int = 1, hi: int = 1 << 20) -> list[int]:
    """A comma-separated list of count()s, none twice, at least one."""
    items = [x.strip() for x in str(text).split(",")]
    if not items or any(not x for x in items):
        raise InputError(f"error: {flag} {text!r}: expected comma-separated integers in [{lo}, {hi}]")
    values = [count(x, flag, lo, hi) for x in items]
    if len(set(values)) != len(values):
        raise InputError(f"error: {flag} {text!r}: a value given twice")
    return values


def real(text, flag: str, lo: float, hi: float) -> float:
    """A finite number in [lo, hi] (float() syntax: no inf, no nan)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise InputError(f"error: {flag} {text!r}: expected a number in [{lo:g}, {hi:g}]") from None
    if not math.isfinite(value) or not lo <= value <= hi:
        raise InputError(f"error: {flag} {text!r}: expected a finite number in [{lo:g}, {hi:g}]")
    return value


ARCH = re.compile(r"sm_[1-9][0-9]{1,2}")


def arch(text, flag: str = "--arch") -> str:
    """An architecture name as nvcc spells it: sm_ and two or three ASCII digits (sm_90, sm_100);
    whether nvcc supports it is the build's question (harness/build.py)."""
    s = str(text)
    if not ARCH.fullmatch(s):
        raise InputError(f"error: {flag} {s!r}: expected sm_XY or sm_XYZ in ASCII digits, e.g. sm_90 "
                         f"(H100/H200) or sm_75")
    return s


class ArgParser(argparse.ArgumentParser):
    """argparse for the `python -m` entry points: a usage error (an unknown flag, a value a type=
    function refuses) is one InputError line naming the program, so the entry point exits 2 with
    that line alone. The type= functions are this module's (count, real, ...): their InputError
    passes through argparse as it is."""

    def error(self, message):
        raise InputError(f"error: {self.prog}: {message}")
