"""CPU: RESULTS.md's sanitizer section counts a later targeted rerun (results/sanitize_*.json) of a
run that failed in sanitize.json, in git's order of the two files' commits (issue 24: the section
called stationary "not clean" from the older file while the later one was clean)."""
from __future__ import annotations

import subprocess

from analysis.sections import sanitize
from spec.files import ROOT


def _commits():
    first = subprocess.run(["git", "-C", str(ROOT), "rev-list", "--max-parents=0", "HEAD"], capture_output=True,
                           text=True).stdout.split()[0]
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return first, head


def _run(tool, target, errors, exit_code):
    return {"tool": tool, "target": target, "errors": errors, "exit_code": exit_code, "seconds": 1.0}


SAN = {"complete": True, "runs": [_run("memcheck", "path a", 0, 0), _run("racecheck", "path a", 1, 99)]}


def test_a_later_clean_rerun_supersedes_the_failed_run():
    old, new = _commits()
    rerun = {"complete": True, "runs": [_run("racecheck", "path a", 0, 0)]}
    s = sanitize.section(SAN, None, [("results/sanitize_a.json", rerun, new)], old)
    assert s["clean"] and not s["clean_as_run"] and s["bad"][0]["superseded"] == "sanitize_a.json"
    assert s["reruns"][0]["later"] and s["reruns"][0]["clean"]


def test_an_earlier_or_failing_rerun_does_not():
    old, new = _commits()
    clean = {"complete": True, "runs": [_run("racecheck", "path a", 0, 0)]}
    s = sanitize.section(SAN, None, [("results/sanitize_a.json", clean, old)], new)   # the rerun is older
    assert not s["clean"] and "superseded" not in s["bad"][0]
    dirty = {"complete": True, "runs": [_run("racecheck", "path a", 2, 99)]}
    s = sanitize.section(SAN, None, [("results/sanitize_a.json", dirty, new)], old)
    assert not s["clean"] and not s["reruns"][0]["clean"]
    s = sanitize.section(SAN, None, [("results/sanitize_a.json", clean, None)], old)  # order unknown
    assert not s["clean"]
