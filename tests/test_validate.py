"""CPU: spec/validate.py, the one validator of names and numbers from users and files (issue 28)."""
from __future__ import annotations

import string
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from spec import validate
from spec.files import InputError


@given(st.text(max_size=80))
@settings(max_examples=400, deadline=None)
def test_a_safe_name_is_one_path_part_every_tool_reads_the_same(text):
    try:
        name = validate.safe_name(text, "submission")
    except InputError as exc:
        assert "submission" in str(exc) and "\n" not in str(exc)
        return
    assert name == text and Path(name).name == name and not name.startswith((".", "-"))
    assert set(name) <= set(string.ascii_letters + string.digits + "_-.") and not name.endswith(".")
    assert name not in (".", "..") and name.lower() not in validate.RESERVED


@pytest.mark.parametrize("stem", ["..", ".", "...", "x`id>PWNED`", "a b", "a'b", "a;b", "$(HOME)", "", "-x",
                                  "leaderboard.csv", "x/y", "é", "a" * 65, "a."])
def test_hostile_stems_are_refused(stem):
    with pytest.raises(InputError):
        validate.safe_name(stem, "submission")


def test_submission_stems():
    assert validate.submission_stem(Path("d/naive.cu")) == "naive"
    for bad in ("...cu", "..cu", "x`id`.cu", "leaderboard.csv.cu", "a.cuh"):
        with pytest.raises(InputError):
            validate.submission_stem(Path(bad))


@given(st.text(max_size=20))
@settings(max_examples=300, deadline=None)
def test_positive_seconds_are_finite_and_positive(text):
    try:
        v = validate.positive_seconds(text, "--limit")
    except InputError as exc:
        assert str(exc).startswith("error: --limit")
        return
    assert 0 < v <= 7 * 24 * 3600


@pytest.mark.parametrize("bad", ["abc", "-5", "0", "nan", "inf", "-inf", "1e400", ""])
def test_bad_limits(bad):
    with pytest.raises(InputError, match="--limit"):
        validate.positive_seconds(bad, "--limit")


@pytest.mark.parametrize("bad", ["abc", "-1", "0", "1_0", "0x10", "+3", " ", "1.5", "٣", "³"])
def test_counts_are_plain_decimal(bad):
    with pytest.raises(InputError, match="--jobs"):
        validate.count(bad, "--jobs", 1, 64)
    assert validate.count("8", "--jobs", 1, 64) == 8


def test_integer_lists():
    assert validate.integers("64,128", "--widths") == [64, 128]
    for bad in ("", "64,", "abc", "0", "64,64"):
        with pytest.raises(InputError, match="--widths"):
            validate.integers(bad, "--widths")
