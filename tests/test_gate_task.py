"""CPU: the gate task's documented forms (tasks.py `gate`): `invoke gate --aggregate a,b` takes no DIR
and reaches the aggregation, the options that gate a folder are refused beside --aggregate, and
neither DIR nor --aggregate is one line."""
from __future__ import annotations

import csv
import shutil
import subprocess
import sys

import pytest

from spec.files import ROOT

GATE_FIXTURES = ROOT / "tests" / "fixtures" / "gate"


def _invoke(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "invoke", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


# ----------------------------------------------------------------------------- invoke gate --aggregate

def test_invoke_gate_aggregate_takes_no_dir(tmp_path):
    """README's form: `invoke gate --aggregate a,b`, no DIR (it said "'gate' did not receive
    required positional arguments: 'dir'")."""
    shutil.copytree(GATE_FIXTURES, tmp_path / "gate")
    a, b = tmp_path / "gate" / "naive", tmp_path / "gate" / "broken"
    res = _invoke("gate", "--aggregate", f"{a},{b}", "--out", str(tmp_path / "out"))
    assert res.returncode == 0, res.stdout + res.stderr
    rows = {r["submission"]: r for r in csv.DictReader(open(tmp_path / "out" / "leaderboard.csv"))}
    assert set(rows) == {"naive", "broken"}
    assert rows["broken"]["first_hint"].startswith("does not build: ")
    assert (tmp_path / "out" / "leaderboard.md").exists()


def test_invoke_gate_aggregate_without_out_reaches_the_aggregation():
    # The documented form exactly (no --out, so folders that do not exist: nothing is written);
    # the message is the aggregation's own, not invoke's.
    res = _invoke("gate", "--aggregate", "/nonexistent/a,/nonexistent/b")
    assert res.returncode == 2
    assert "did not receive required positional arguments" not in res.stderr
    assert "error: --aggregate: no folder with a run.json or build.json" in res.stderr


@pytest.mark.parametrize("argv, says", [
    (("gate", "subs", "--aggregate", "a,b"), "error: --aggregate takes no DIR "),
    (("gate", "--aggregate", "a,b", "--jobs", "2"), "error: --aggregate takes no --jobs "),
    (("gate", "--aggregate", "a,b", "--limit", "9"), "error: --aggregate takes no --limit "),
    (("gate", "--aggregate", "a", "--gpus", "0"), "error: --aggregate takes no --gpus "),
    (("gate", "--aggregate", "a", "--strict-determinism"), "error: --aggregate takes no --strict-determinism "),
    (("gate", "--aggregate", "a,,b"), "error: --aggregate: an empty folder name in 'a,,b'"),
])
def test_invoke_gate_bad_combinations_are_one_line_and_status_2(argv, says):
    res = _invoke(*argv)
    assert res.returncode == 2, res.stdout + res.stderr
    assert res.stderr.startswith(says) and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not res.stdout


def test_invoke_gate_with_neither_dir_nor_aggregate_is_one_line():
    # invoke's own parser answers before the task runs (its status for a parse error is 1).
    res = _invoke("gate")
    assert res.returncode != 0
    assert res.stderr.strip() == "'gate' did not receive required positional arguments: 'dir'"


