"""The training recipe (recipe.toml) as the harness reads it: every key checked against the same
bounds as the binary's (cuda/io/bounds.cpp; `build/mlp_host limits` prints them as JSON and
tests/test_recipe.py checks that the two agree).

A recipe file is written in the binary's grammar (cuda/io/recipe.cpp; docs/formats.md), a strict
subset of TOML: printable ASCII, tabs and line ends (LF or CRLF) only; each line blank, a
`# comment`, or `key = value` with a bare key and a value in the number grammar below, then an
optional comment. check_grammar holds a file's text to it before tomllib reads the values, so
that the two readers accept exactly the same files (`1_28`, `0x80`, `"batch"`, `inf`, a table
are TOML that neither accepts).

A recipe holds exactly the keys of BOUNDS, each once (TOML rejects a duplicate): an integer key
an integer, a real key an integer or a finite float, each inside its closed interval; and
batch <= train_size, batch * hidden_dim <= MAX_BATCH_TIMES_HIDDEN. Anything else is a RecipeError:
one line naming the file and the key (uncaught, it ends the program with that line, status 1).
load_recipe adds the derived values the harness uses: steps_per_epoch and n_params; a recipe with
them is what run.json and pytorch.json record (`complete`), and `differing_keys` compares two."""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import NamedTuple

from spec import layout
from spec.files import RECIPE_PATH, InputError, read_input, tomllib


class Bound(NamedTuple):
    integer: bool
    lo: float
    hi: float


# key -> bound, in recipe order (cuda/io/bounds.cpp's kBounds; the reasons are written there).
BOUNDS = {
    "input_dim": Bound(True, 1, 4096),
    "hidden_dim": Bound(True, 1, 16384),
    "output_dim": Bound(True, 1, 256),
    "batch": Bound(True, 1, 65536),
    "lr": Bound(False, 1e-6, 10),
    "momentum": Bound(False, 0, 0.999),
    "epochs": Bound(True, 1, 1000),
    "seed": Bound(True, 0, 2**53 - 1),
    "train_size": Bound(True, 32, 60000),
    "test_size": Bound(True, 1, 10000),
}
MAX_BATCH_TIMES_HIDDEN = 2**27   # floats per activation buffer


class RecipeError(InputError):
    """A recipe that the binary would refuse; str() is the one line."""


def _interval(b: Bound) -> str:
    return f"[{b.lo:g}, {b.hi:g}]" if not b.integer else f"[{int(b.lo)}, {int(b.hi)}]"


def validate(recipe: dict, where: str = "recipe") -> dict:
    """`recipe` itself when it is a valid recipe, else RecipeError naming `where` and the key."""
    if not isinstance(recipe, dict):
        raise RecipeError(f"error: {where}: expected a table of key = value")
    for key in recipe:
        if key not in BOUNDS:
            raise RecipeError(f"error: {where}: unknown key {key} (keys: {', '.join(BOUNDS)})")
    for key, b in BOUNDS.items():
        if key not in recipe:
            raise RecipeError(f"error: {where}: missing key {key}")
        v = recipe[key]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (b.integer and not isinstance(v, int)):
            want = "an integer" if b.integer else "a number"
            raise RecipeError(f"error: {where}: {key} = {v!r} is not {want}")
        if not (math.isfinite(v) and b.lo <= v <= b.hi):
            raise RecipeError(f"error: {where}: {key} = {v!r} is out of range {_interval(b)}")
    if recipe["batch"] > recipe["train_size"]:
        raise RecipeError(f"error: {where}: batch {recipe['batch']} is larger than train_size "
                          f"{recipe['train_size']}")
    if recipe["batch"] * recipe["hidden_dim"] > MAX_BATCH_TIMES_HIDDEN:
        raise RecipeError(f"error: {where}: batch * hidden_dim = {recipe['batch'] * recipe['hidden_dim']} "
                          f"exceeds {MAX_BATCH_TIMES_HIDDEN} (2^27 floats per activation buffer)")
    return recipe


# The binary's grammar (cuda/io/bounds.h): integers [+-]?(0|[1-9][0-9]*), and reals the same
# with an optional fraction .[0-9]+ and exponent [eE][+-]?[0-9]+; TOML reads both as the binary's
# strtoll/strtod do.
NUMBER = r"[+-]?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
LINE = re.compile(r"[ \t]*(?:(?P<key>[A-Za-z0-9_-]+)[ \t]*=[ \t]*(?P<value>[^#]*?)[ \t]*)?(?:#.*)?")
BAD_CHARACTER = re.compile(r"[^\t\n\x20-\x7e]")


def check_grammar(text: str, where: str) -> None:
    """RecipeError ("where:line: ...") unless `text` keeps to the recipe grammar (above)."""
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line[:-1] if line.endswith("\r") and lineno <= text.count("\n") else line
        bad = BAD_CHARACTER.search(line)
        if bad:
            raise RecipeError(f"error: {where}:{lineno}: byte 0x{ord(bad.group()):02x} (a recipe holds "
                              f"printable ASCII, tabs and line ends only)")
        m = LINE.fullmatch(line)
        if m is None:
            raise RecipeError(f"error: {where}:{lineno}: expected key = value (a bare key, a number, "
                              f"an optional # comment)")
        if m["key"] is not None and not re.fullmatch(NUMBER, m["value"]):
            raise RecipeError(f"error: {where}:{lineno}: {m['key']}: {m['value']!r} is not a number "
                              f"(want e.g. 128, 0.1 or 1e-3)")


def load_recipe(path: Path = RECIPE_PATH) -> dict:
    """The validated training recipe as a dict, with steps_per_epoch and n_params added."""
    data = read_input(path)
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise RecipeError(f"error: {path}:{line}: byte 0x{data[exc.start]:02x} (a recipe holds printable "
                          f"ASCII, tabs and line ends only)") from None
    check_grammar(text, str(path))
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RecipeError(f"error: {path}: malformed TOML: {exc}") from None
    return complete(table, str(path))


def complete(recipe: dict, where: str = "recipe") -> dict:
    """`recipe` (exactly the keys of BOUNDS) validated, with steps_per_epoch and n_params added:
    the shape run.json and pytorch.json record it in."""
    recipe = dict(validate(recipe, where))
    n, b = recipe["train_size"], recipe["batch"]
    recipe["steps_per_epoch"] = (n + b - 1) // b
    recipe["n_params"] = layout.n_params(shape(recipe))
    return recipe


def differing_keys(a: dict, b: dict) -> list[str]:
    """The keys whose values differ between two recorded recipes (a key only one holds
    included), a's keys first, in a's order."""
    keys = list(a) + [k for k in b if k not in a]
    return [k for k in keys if k not in a or k not in b or a[k] != b[k]]


def shape(recipe: dict) -> layout.Shape:
    """The recipe's (input_dim, hidden_dim, output_dim)."""
    return layout.Shape(recipe["input_dim"], recipe["hidden_dim"], recipe["output_dim"])


def limits() -> dict:
    """The bounds as `mlp_host limits` prints them: {key: [lo, hi], ..., "batch_times_hidden": [1, N]}."""
    out = {k: [int(b.lo), int(b.hi)] if b.integer else [float(b.lo), float(b.hi)] for k, b in BOUNDS.items()}
    out["batch_times_hidden"] = [1, MAX_BATCH_TIMES_HIDDEN]
    return out
