"""spec/recipe.py: the Python recipe reader validates keys, types and bounds, and agrees with the
binary's reader (build/mlp_host limits / recipe)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from spec.files import BUILD_DIR, RECIPE_PATH, InputError, load_toml
from spec.recipe import BOUNDS, RecipeError, complete, differing_keys, limits, load_recipe, validate

# MLP_HOST: another build's; by default build/mlp_host, made up to date by tests/conftest.py's host_tools
HOST = Path(os.environ.get("MLP_HOST", BUILD_DIR / "mlp_host"))


def _host(*args):
    return subprocess.run([str(HOST), *map(str, args)], capture_output=True, text=True, timeout=60)


def _host_limits():
    res = _host("limits")
    assert res.returncode == 0, f"{HOST} limits: {res.stderr.strip()}"
    return json.loads(res.stdout)


def _recipe(**over) -> dict:
    r = load_toml(RECIPE_PATH)
    r.update(over)
    return r


def test_the_shipped_recipe_is_valid_and_gets_its_derived_values():
    r = load_recipe()
    assert r["steps_per_epoch"] == 47 and r["n_params"] == 203_530


def test_complete_validates_and_derives_and_differing_keys_names_each_key():
    r = complete(_recipe(batch=100, hidden_dim=32))
    assert r["steps_per_epoch"] == 60 and r["n_params"] == 784 * 32 + 32 + 32 * 10 + 10
    with pytest.raises(RecipeError, match="the test's recipe: missing key seed"):
        complete({k: v for k, v in _recipe().items() if k != "seed"}, "the test's recipe")
    other = dict(r, lr=0.05, extra=1)
    del other["seed"]
    assert differing_keys(r, other) == ["lr", "seed", "extra"]
    assert differing_keys(r, dict(r)) == []


@pytest.mark.parametrize("over, message", [
    ({"test_siz": 5}, "unknown key test_siz"),
    ({"epochs": True}, "epochs = True is not an integer"),
    ({"epochs": 5.0}, "epochs = 5.0 is not an integer"),
    ({"lr": "0.1"}, "lr = '0.1' is not a number"),
    ({"lr": float("inf")}, "lr = inf is out of range [1e-06, 10]"),
    ({"lr": float("nan")}, "lr = nan is out of range"),
    ({"epochs": 1073741824}, "epochs = 1073741824 is out of range [1, 1000]"),
    ({"epochs": 0}, "epochs = 0 is out of range [1, 1000]"),
    ({"momentum": 1}, "momentum = 1 is out of range [0, 0.999]"),
    ({"batch": 6001}, "batch 6001 is larger than train_size 6000"),
    ({"batch": 60000, "train_size": 60000, "hidden_dim": 4096}, "exceeds 134217728"),
])
def test_bad_recipes_are_one_line_naming_the_key(over, message):
    with pytest.raises(RecipeError) as exc:
        validate(_recipe(**over), "r.toml")
    text = str(exc.value)
    assert text.startswith("error: r.toml: ") and message in text and "\n" not in text


def test_missing_key_and_duplicate_key(tmp_path):
    r = _recipe()
    del r["seed"]
    with pytest.raises(RecipeError, match="missing key seed"):
        validate(r)
    f = tmp_path / "dup.toml"
    f.write_text(RECIPE_PATH.read_text() + "epochs = 3\n")
    with pytest.raises(SystemExit, match="dup.toml: malformed TOML"):
        load_recipe(f)


def test_bounds_agree_with_mlp_host_limits():
    assert limits() == _host_limits()


def _text(r: dict) -> str:
    return "".join(f"{k} = {json.dumps(v) if isinstance(v, bool) else repr(v)}\n" for k, v in r.items())


def _value(key):
    b = BOUNDS[key]
    near = st.integers(int(b.lo) - 2, int(min(b.hi, 10**7)) + 2) if b.integer else \
        st.floats(b.lo / 2, b.hi * 2, allow_nan=False, allow_infinity=False)
    edge = st.sampled_from([int(b.lo), int(b.hi), int(b.lo) - 1, int(b.hi) + 1] if b.integer else
                           [b.lo, b.hi, b.hi * 1.0001, 0.0, 1])
    return st.one_of(near, edge, st.integers(-3, 3), st.floats(0.5, 2.0), st.booleans())


@st.composite
def recipes(draw):
    r = load_toml(RECIPE_PATH)
    for key in draw(st.lists(st.sampled_from(sorted(BOUNDS)), max_size=3, unique=True)):
        r[key] = draw(_value(key))
    if draw(st.booleans()) and draw(st.booleans()):
        r[draw(st.sampled_from(["test_siz", "Epochs", "extra"]))] = 1
    if draw(st.integers(0, 9)) == 0:
        del r[draw(st.sampled_from(sorted(BOUNDS)))]
    return r


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(r=recipes())
def test_python_and_binary_accept_the_same_recipes(tmp_path_factory, r):
    """A generated recipe: both readers accept it with the same values, or both refuse it (the
    binary with one line and status 2, Python with one RecipeError line)."""
    _host_limits()
    f = tmp_path_factory.mktemp("recipe") / "r.toml"
    f.write_text(_text(r))
    res = _host("recipe", "--recipe", f)
    try:
        got = load_recipe(f)
    except RecipeError as exc:
        assert "\n" not in str(exc)
        assert res.returncode == 2, (str(exc), res.stdout)
        assert len(res.stderr.strip().splitlines()) == 1
        return
    assert res.returncode == 0, (res.stderr, r)
    host = json.loads(res.stdout)
    assert {k: got[k] for k in BOUNDS} == pytest.approx(host, rel=1e-15)


# ----------------------------------------------------------------------------- one grammar

# Near-valid spellings of a value: TOML that the recipe grammar leaves out, and forms close to it.
def _spellings(key: str, value) -> st.SearchStrategy:
    text = repr(value)
    forms = [text, f"+{text}", f"{text}  # c", f"{text}#c", f"{text}\t"]
    if isinstance(value, int) and value >= 10:
        forms += [f"{text[0]}_{text[1:]}", hex(value), oct(value), f"0{text}", f"{text}.0", f"{text}e0"]
    if isinstance(value, float):
        forms += [f"{value:e}", f"{value:E}", f"{value:.3f}", "inf", "nan", "+inf", f".{text}", f"{text}.",
                  f"{value:.20g}", f"{text}_0" if "." in text else text]
    forms += [f'"{text}"', "true", "[1]", "{a = 1}", "", "1 2", f"{text} x"]
    return st.sampled_from(forms)


def _key_spellings(key: str) -> st.SearchStrategy:
    return st.sampled_from([key, key, key, f'"{key}"', f"'{key}'", f"a.{key}", key.upper(), f" {key}"])


@st.composite
def recipe_files(draw):
    """The text of a recipe file: the shipped values, up to two keys or values respelled,
    sometimes a line, a character or a line end the grammar leaves out."""
    r = load_toml(RECIPE_PATH)
    respelled = draw(st.lists(st.sampled_from(sorted(r)), max_size=2, unique=True))
    lines = []
    for key, value in r.items():
        k, v = key, repr(value)
        if key in respelled:
            if draw(st.booleans()):
                v = draw(_spellings(key, value))
            else:
                k = draw(_key_spellings(key))
        lines.append(f"{k}{draw(st.sampled_from([' = ', '=', chr(9) + '= ']))}{v}")
    extra = draw(st.sampled_from(["", "", "", "", "# comment", "   ", "# a = b", "[table]", "x = 1",
                                  "# caf\u00e9", "# \x0c", "\x00", "epochs = 3"]))
    if extra:
        lines.insert(draw(st.integers(0, len(lines))), extra)
    end = draw(st.sampled_from(["\n"] * 6 + ["\r\n"] * 3 + ["\r", "\n\r"]))
    return end.join(lines) + draw(st.sampled_from(["", end, "\n\n"]))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=recipe_files())
def test_one_grammar_python_and_binary_agree_on_every_file(tmp_path_factory, text):
    """The recipe grammar (docs/formats.md) is one: for generated files, valid and near-valid
    (underscores, hex, quoted and dotted keys, inf, strings, tables, non-ASCII, stray CRs),
    `mlp_host recipe` and spec.recipe.load_recipe accept the same files with the same values and
    refuse the same files, each with one line."""
    _host_limits()
    f = tmp_path_factory.mktemp("recipe") / "r.toml"
    f.write_bytes(text.encode("utf-8"))
    res = _host("recipe", "--recipe", f)
    try:
        got = load_recipe(f)
    except RecipeError as exc:
        assert "\n" not in str(exc)
        assert res.returncode == 2, (str(exc), text, res.stdout)
        assert len(res.stderr.strip().splitlines()) == 1
        return
    assert res.returncode == 0, (res.stderr, text)
    assert {k: got[k] for k in BOUNDS} == json.loads(res.stdout), text


@pytest.mark.parametrize("line", ["batch = 1_28", "batch = 0x80", '"batch" = 128', "batch = 0128",
                                  "batch = +128.0", "lr = inf", "lr = .1", "lr = 1.", "batch = '128'",
                                  "a.batch = 128", "batch = 128 # caf\u00e9"])
def test_toml_the_grammar_leaves_out_is_refused_by_both(tmp_path, line):
    key = line.split("=")[0].strip().strip('"').removeprefix("a.")
    text = "".join(ln + "\n" for ln in RECIPE_PATH.read_text().splitlines() if not ln.startswith(key + " "))
    f = tmp_path / "r.toml"
    f.write_bytes((text + line + "\n").encode("utf-8"))
    with pytest.raises(RecipeError) as exc:
        load_recipe(f)
    assert str(exc.value).startswith(f"error: {f}:") and "\n" not in str(exc.value)
    _host_limits()
    res = _host("recipe", "--recipe", f)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr


@pytest.mark.parametrize("make, what", [
    (lambda p: p.mkdir(), "a folder"), (lambda p: os.mkfifo(p), "a FIFO"), (None, "a character device")])
def test_a_recipe_that_is_not_a_file_is_one_line_in_both_readers(tmp_path, make, what):
    f = tmp_path / "r.toml"
    if make is None:
        f = Path("/dev/zero")
    else:
        make(f)
    with pytest.raises(InputError) as exc:
        load_recipe(f)
    assert str(exc.value) == f"error: {f}: {what}, not a file" or what in str(exc.value)
    _host_limits()
    res = _host("recipe", "--recipe", f)
    assert res.returncode == 2 and what in res.stderr and len(res.stderr.strip().splitlines()) == 1
