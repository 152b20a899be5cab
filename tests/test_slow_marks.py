"""The check that holds the slow marks exact (tests/slow_marks.py, taken by tests/conftest.py), run on
a small suite of its own in a fresh pytest with the limit set low (MLP_SLOW_LIMIT_S): an unmarked test
that computes past the limit fails the run, named with its wall and CPU seconds; the same test marked
slow, or marked gpu, does not; nor does one that only waits (its CPU time is what counts, so a
loaded machine cannot fail the check); and every test's cost is recorded (MLP_TEST_COSTS)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from slow_marks import offenders

SUITE = '''
import time
import pytest


def _burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_computes():
    _burn(0.6)


@pytest.mark.slow
def test_computes_marked():
    _burn(0.6)


@pytest.mark.gpu
def test_computes_on_a_gpu():
    _burn(0.6)


def test_waits():
    time.sleep(0.8)


def test_quick():
    pass
'''


def _run(tmp_path, env) -> subprocess.CompletedProcess:
    (tmp_path / "test_suite.py").write_text(SUITE)
    (tmp_path / "conftest.py").write_text(
        "def pytest_configure(config):\n"
        "    config.addinivalue_line('markers', 'slow: x')\n    config.addinivalue_line('markers', 'gpu: x')\n")
    tests = Path(__file__).resolve().parent
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests), os.environ.get("PYTHONPATH", "")]), **env}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "slow_marks", "-p", "no:cacheprovider",
                           "-p", "no:xdist", str(tmp_path)], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)


def test_an_unmarked_test_over_the_limit_fails_the_run_and_nothing_else_does(tmp_path):
    costs = tmp_path / "costs.json"
    res = _run(tmp_path, {"MLP_SLOW_LIMIT_S": "0.3", "MLP_TEST_COSTS": str(costs)})
    assert res.returncode == 1 and "5 passed" in res.stdout, res.stdout[-2000:]
    flagged = [ln for ln in res.stdout.splitlines() if " over 0.3 s: mark it @pytest.mark.slow" in ln]
    assert len(flagged) == 1 and flagged[0].startswith("test_suite.py::test_computes: "), res.stdout[-2000:]
    recorded = json.loads(costs.read_text())
    assert set(recorded) == {f"test_suite.py::{n}" for n in ("test_computes", "test_computes_marked",
                                                             "test_computes_on_a_gpu", "test_waits", "test_quick")}
    waits = recorded["test_suite.py::test_waits"]
    assert waits["wall"] >= 0.8 > waits["cost"] and waits["cost"] == min(waits["wall"], waits["cpu"])
    assert recorded["test_suite.py::test_computes_marked"]["slow"] and recorded["test_suite.py::test_computes"]["cpu"] >= 0.6
    assert offenders(recorded, 20.0) == []              # under the limit, nothing (the run then passes)
