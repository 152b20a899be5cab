"""spec/recipe.py: the Python recipe reader validates keys, types and bounds, and agrees with the
binary's reader (build/mlp_host limits / recipe)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from spec.files import BUILD_DIR, RECIPE_PATH, load_toml
from spec.recipe import BOUNDS, RecipeError, complete, differing_keys, limits, load_recipe, validate

HOST = Path(os.environ.get("MLP_HOST", BUILD_DIR / "mlp_host"))   # MLP_HOST: another build's


def _host(*args):
    return subprocess.run([str(HOST), *map(str, args)], capture_output=True, text=True, timeout=60)


def _host_limits():
    if not HOST.exists():
        pytest.skip("build/mlp_host missing: run `invoke build`")
    res = _host("limits")
    if res.returncode != 0:
        pytest.skip(f"build/mlp_host has no `limits` command yet ({res.stderr.strip()}): rebuild it")
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
