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


@pytest.mark.parametrize("name", ["LEADERBOARD.md", "Leaderboard.csv", "leaderboard.MD", "LeaderBoard"])
def test_the_gates_own_file_names_are_refused_in_any_case(name):
    """leaderboard.md and leaderboard.csv are the gate's own files beside the submissions' folders; on a
    case-insensitive file system (macOS, Windows) LEADERBOARD.md is the same file, so no case of them
    is a safe name: not as a name, not as a submission's stem."""
    assert not validate.is_safe_name(name)
    with pytest.raises(InputError, match="not a safe name"):
        validate.safe_name(name, "folder")
    with pytest.raises(InputError, match="not a safe name"):
        validate.submission_stem(Path(f"subs/{name}.cu"))
    assert validate.is_safe_name(name + "-1") and validate.is_safe_name("x" + name)   # only the names themselves


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


@given(st.text(max_size=12))
@settings(max_examples=300, deadline=None)
def test_real_is_finite_and_inside_its_bounds(text):
    try:
        v = validate.real(text, "--band", 0, 1)
    except InputError as exc:
        assert str(exc).startswith("error: --band") and "\n" not in str(exc)
        return
    assert 0 <= v <= 1


@pytest.mark.parametrize("good", ["sm_75", "sm_90", "sm_100", "sm_120"])
def test_arch_names(good):
    assert validate.arch(good) == good


@pytest.mark.parametrize("bad", ["sm_9", "sm_1000", "sm_٩٠", "sm_⁹⁰", "sm_09", "SM_90", "sm_90 ", "compute_90",
                                 "sm_90a", "", "sm_"])
def test_arch_names_are_ascii_digits_two_or_three(bad):
    with pytest.raises(InputError, match="--arch"):
        validate.arch(bad)


def test_argparser_usage_errors_are_one_input_error_line():
    ap = validate.ArgParser(prog="python -m x")
    ap.add_argument("--jobs", type=lambda s: validate.count(s, "--jobs", 1, 8), default=1)
    assert ap.parse_args(["--jobs", "4"]).jobs == 4
    for argv, words in ((["--jobs", "9"], "--jobs '9'"), (["--bogus"], "unrecognized arguments: --bogus"),
                        (["--jobs"], "expected one argument")):
        with pytest.raises(InputError) as exc:
            ap.parse_args(argv)
        assert words in str(exc.value) and "\n" not in str(exc.value)


def test_is_safe_name_is_safe_name_without_the_error():
    assert validate.is_safe_name("fused") and not validate.is_safe_name("../../x")


@pytest.mark.parametrize("good", ["tests/test_spec.py", "tests/test_x.py::t[1 2]", "./-x.cu", "a-b", "/abs/x"])
def test_a_file_argument_is_taken_as_given(good):
    assert validate.file_arg(good, "--file") == good


@pytest.mark.parametrize("bad, why", [("--version", "cannot start with '-'"), ("-k", "cannot start with '-'"),
                                      ("", "empty"), ("  ", "empty"), ("a\nb", "line break"), ("a\0b", "NUL")])
def test_a_file_argument_that_a_program_would_read_as_an_option_is_refused(bad, why):
    with pytest.raises(InputError) as exc:
        validate.file_arg(bad, "--file")
    assert str(exc.value).startswith("error: --file ") and why in str(exc.value)
    assert "\n" not in str(exc.value)
