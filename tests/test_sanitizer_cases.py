"""CPU: gate cases 11 (memcheck) and 12 (racecheck) of harness/gate/sanitizer_cases.py with stand-in
compute-sanitizer programs on PATH and a stand-in mlp_train (tests/fakes/staged_mlp_train.py) for the
workload: the real tool's summary lines parsed; errors, a crash and a missing tool each FAIL naming
what happened; a tool out of time is inconclusive (never a race or a hang) and a workload that hangs
unsanitized is a hang; the limits derive from the workload's measured launches and seconds; and the
cases join run.json, its hints and the exit status (issues 15, 40)."""
from __future__ import annotations

import json
import stat
import sys

import pytest

from tests import gate_docs as hints
from spec import catalog
from harness.gate import sanitizer_cases as sc
from harness.gate import supervisor

CLEAN = {"memcheck": "========= ERROR SUMMARY: 0 errors",
         "racecheck": "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"}
RACE = """========= Error: Race reported between Write access at k_tile_gemm(float const*)+0x1f0 in naive_base.cuh:80
=========     and Read access at k_tile_gemm(float const*)+0x2a0 in naive_base.cuh:88 [1024 hazards]
=========
========= RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warning)
"""
OVERRUN = """========= Invalid __global__ write of size 4 bytes
=========     at k_forward+0x90 in naive_base.cuh:41
=========     by thread (0,0,0) in block (128,0,0)
========= ERROR SUMMARY: 1 error
"""


def fake_sanitizer(tmp_path, monkeypatch, body: str) -> None:
    """A compute-sanitizer on PATH: `body` is Python run with the argv (its own log in argv.json)."""
    bindir = tmp_path / "fakebin"
    bindir.mkdir(exist_ok=True)
    exe = bindir / "compute-sanitizer"
    exe.write_text(f"#!{sys.executable}\nimport json, os, signal, sys, time\n"
                   f"json.dump(sys.argv[1:], open({str(tmp_path / 'argv.json')!r}, 'a'))\n"
                   f"open({str(tmp_path / 'argv.json')!r}, 'a').write('\\n')\n"
                   f"tool = sys.argv[sys.argv.index('--tool') + 1]\n{body}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.delenv("COMPUTE_SANITIZER", raising=False)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")


def calls(tmp_path) -> list[list[str]]:
    return [json.loads(ln) for ln in (tmp_path / "argv.json").read_text().splitlines() if ln.strip()]


def fake_binary(tmp_path):
    from spec.files import ROOT
    exe = tmp_path / "bin" / "mlp_train"
    exe.parent.mkdir(exist_ok=True)
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'tests' / 'fakes' / 'staged_mlp_train.py'} \"$@\"\n")
    exe.chmod(0o755)
    return exe


def cases(tmp_path):
    return {r["name"]: r for r in sc.sanitizer_cases(fake_binary(tmp_path), tmp_path / "out", "submission")}


def test_clean_runs_pass_with_value_0_on_the_workload_after_its_measurement(tmp_path, monkeypatch):
    fake_sanitizer(tmp_path, monkeypatch, f"print({CLEAN!r}[tool]); sys.exit(0)")
    rows = cases(tmp_path)
    assert rows["memcheck"]["id"] == 11 and rows["racecheck"]["id"] == 12
    for r in rows.values():
        assert r["passed"] is True and r["value"] == 0 and r["limit"] == 0, r
        assert r["workload"] == {"calls": 19, "launches": 40, "memory_ops": 0, "seconds": 0.05}
        assert "19 calls, 40 launches, 0.050 s unsanitized" in r["detail"] and "fake workload" in r["detail"]
    argv = calls(tmp_path)
    assert [a[a.index("--tool") + 1] for a in argv] == ["memcheck", "racecheck"]
    target = argv[0][argv[0].index("--error-exitcode") + 2:]
    # The workload of the submission's entry points (cuda/gate/sanitizer_workload.h), nothing of ours:
    # the whole of it under memcheck, racecheck's plan under racecheck.
    assert target[0].endswith("mlp_train") and target[-2:] == ["--sanitizer-workload", "once"]
    assert target[target.index("--out") + 1].endswith("memcheck")     # its outputs apart from the gate's
    race = argv[1][argv[1].index("--error-exitcode") + 2:]
    assert race[-2:] == ["--sanitizer-workload", "race"] and race[race.index("--out") + 1].endswith("racecheck")
    assert (tmp_path / "out" / "workload" / "sanitizer-workload.json").exists()   # the measured run's


def test_a_workload_that_hangs_unsanitized_is_a_hang_and_the_tools_do_not_run(tmp_path, monkeypatch):
    fake_sanitizer(tmp_path, monkeypatch, "raise SystemExit('must not run')")
    monkeypatch.setattr(sc, "WORKLOAD_LIMIT_S", 1.0)
    monkeypatch.setenv("FAKE_WORKLOAD", "hang")
    rows = cases(tmp_path)
    for r in rows.values():
        assert not r["passed"] and r["detail"].startswith("timed out after 1 s without a sanitizer"), r
        assert "not a sanitizer finding" in r["detail"] and "inconclusive" not in r["detail"]
    assert not (tmp_path / "argv.json").exists()
    assert all(h.startswith("timeout:") for h in hints.hints_for(list(rows.values()))[:1])


def test_a_tool_out_of_time_is_inconclusive_never_a_race_or_a_hang(tmp_path, monkeypatch):
    """The workload finishes unsanitized; the tool does not within its limit: the row says
    inconclusive, how to reproduce it and what makes it slow; the verdict fails with its own hint."""
    monkeypatch.setattr(sc, "floor_s", lambda tool: 1.0)
    monkeypatch.setattr(sc, "SETUP_S", {"memcheck": 1.0, "racecheck": 1.0})
    monkeypatch.setattr(sc, "PER_LAUNCH_S", {"memcheck": 0.0, "racecheck": 0.0})
    monkeypatch.setattr(sc, "SLOWDOWN", {"memcheck": 0.0, "racecheck": 0.0})
    fake_sanitizer(tmp_path, monkeypatch, f"time.sleep(30) if tool == 'racecheck' else print({CLEAN!r}[tool])")
    rows = cases(tmp_path)
    assert rows["memcheck"]["passed"]
    r = rows["racecheck"]
    assert not r["passed"] and r["inconclusive"] is True and r["value"] is None and r["seconds"] < 10
    assert r["detail"].startswith("inconclusive: racecheck did not finish within its limit of 1 s")
    assert "neither a race nor a hang" in r["detail"] and "Reproduce: `" in r["detail"] and "--sanitizer-workload race" in r["detail"]
    found = hints.hints_for(list(rows.values()))
    assert found and found[0].startswith("inconclusive:") and "race" not in found[0].split(":")[0]
    assert not any(h.startswith(("timeout:", "racecheck: a shared-memory race")) for h in found), found


def test_the_time_limit_derives_from_the_measured_workload():
    floor = sc.floor_s("racecheck")
    assert sc.time_limit("racecheck")[0] == floor                       # nothing measured
    assert sc.time_limit("racecheck", {"launches": -1, "seconds": 1.0})[0] == floor   # not captured
    big = {"launches": 100000, "seconds": 5.0}
    want = sc.SETUP_S["racecheck"] + sc.PER_LAUNCH_S["racecheck"] * 100000 + sc.SLOWDOWN["racecheck"] * 5.0
    limit, why = sc.time_limit("racecheck", big)
    assert limit == pytest.approx(max(floor, want)) and "100000 launches" in why and "5.000 s" in why
    # more work, a longer limit: a slow correct submission gets time, not a failure
    assert sc.time_limit("racecheck", {"launches": 200000, "seconds": 5.0})[0] > limit


def test_errors_fail_the_case_with_their_count_and_first_line(tmp_path, monkeypatch):
    fake_sanitizer(tmp_path, monkeypatch,
                   f"print({OVERRUN!r} if tool == 'memcheck' else {RACE!r}); sys.exit(99)")
    rows = cases(tmp_path)
    assert rows["memcheck"]["passed"] is False and rows["memcheck"]["value"] == 1
    assert "Invalid __global__ write of size 4 bytes" in rows["memcheck"]["detail"]
    # racecheck counts every hazard, its warnings included (2 errors + 1 warning)
    assert rows["racecheck"]["passed"] is False and rows["racecheck"]["value"] == 3
    assert rows["racecheck"]["warnings"] == 1 and "Race reported between Write access" in rows["racecheck"]["detail"]
    assert "3 hazard(s) (2 errors, 1 warnings)" in rows["racecheck"]["detail"]
    found = hints.hints_for(list(rows.values()))
    assert any("missing __syncthreads() between the writes of a tile and its reads" in h and "__syncwarp()" in h
               for h in found)
    assert any("an index past a buffer" in h for h in found)


def test_racecheck_warnings_alone_fail_the_case(tmp_path, monkeypatch):
    """A warp-synchronous reduction without __syncwarp() shows as racecheck warnings only: they count."""
    warn = ("========= Warning: Race reported between Write access at k+0x10 and Read access at k+0x20\n"
            "========= RACECHECK SUMMARY: 25 hazards displayed (0 errors, 25 warnings)")
    fake_sanitizer(tmp_path, monkeypatch, f"print({CLEAN!r}[tool] if tool == 'memcheck' else {warn!r}); sys.exit(0)")
    rows = cases(tmp_path)
    assert rows["memcheck"]["passed"] and not rows["racecheck"]["passed"] and rows["racecheck"]["value"] == 25


def test_a_crash_fails_naming_it(tmp_path, monkeypatch):
    fake_sanitizer(tmp_path, monkeypatch, "os.kill(os.getpid(), signal.SIGSEGV)")
    rows = cases(tmp_path)
    assert all(not r["passed"] and r["detail"].startswith("died: SIGSEGV") for r in rows.values())


def test_no_summary_or_a_run_that_did_not_finish_fails(tmp_path, monkeypatch):
    fake_sanitizer(tmp_path, monkeypatch,
                   f"print('mlp_train: CUDA error: x'); print({CLEAN!r}[tool] if tool == 'racecheck' else ''); "
                   "sys.exit(3)")
    rows = cases(tmp_path)
    assert not rows["memcheck"]["passed"] and "the tool did not finish" in rows["memcheck"]["detail"]
    assert not rows["racecheck"]["passed"] and "0 errors, but the run under it exited 3" in rows["racecheck"]["detail"]


def test_a_missing_tool_is_a_fail_with_its_own_hint(tmp_path, monkeypatch):
    monkeypatch.delenv("COMPUTE_SANITIZER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    rows = cases(tmp_path)
    assert all(not r["passed"] and r["detail"].startswith("compute-sanitizer not found") for r in rows.values())
    found = hints.hints_for(list(rows.values()))
    assert len(found) == 1 and found[0].startswith("cases 11-12 need compute-sanitizer")


def test_the_parsers_read_the_real_summaries():
    assert sc.parse("memcheck", "========= ERROR SUMMARY: 12 errors\n")[0] == 12
    assert sc.parse("memcheck", "========= ERROR SUMMARY: 1 error\n")[0] == 1
    assert sc.parse("racecheck", "========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)")[:2] == (1, 0)
    assert sc.parse("memcheck", "no summary here")[0] is None


FAKE_GATE = """#!/bin/sh
prev=""; out=""; wl=""
for a; do [ "$prev" = "--out" ] && out=$a; [ "$prev" = "--sanitizer-workload" ] && wl=$a; prev=$a; id=$a; done
if [ -n "$wl" ]; then
  mkdir -p "$out"
  [ "$wl" = measure ] && printf '{"calls": 19, "launches": 40, "memory_ops": 0, "seconds": 0.05, "capture": "ok", "statuses": [], "workload": "fake"}' > "$out/sanitizer-workload.json"
  exit 0
fi
printf '1  onebatch-forward 1e-07 6.2e-05  PASS   fine\\n'
printf '{"run_id": "%s", "gated_path": "submission", "recipe": {"batch": 128}, "hints": [], "cases": [{"id": 1, "name": "onebatch-forward", "passed": true, "value": 0, "limit": 1, "detail": ""}], "paths": {}}' "$id" > "$4/run.json"
exit 0
"""


def test_supervised_gate_with_sanitizers_fails_on_a_race(tmp_path, monkeypatch):
    """A gate that passed cases 1-10 fails on case 12: run.json gets both rows, the race hint and
    exit status 1."""
    fake_sanitizer(tmp_path, monkeypatch, f"print({CLEAN!r}[tool] if tool == 'memcheck' else {RACE!r}); "
                                          "sys.exit(0 if tool == 'memcheck' else 99)")
    exe = tmp_path / "mlp_train"
    exe.write_text(FAKE_GATE)
    exe.chmod(0o755)
    out = tmp_path / "out"
    rc = supervisor.supervise(exe, out, [], limit=20, sanitize="submission", staged=False)
    assert rc == 1
    doc = json.loads((out / "run.json").read_text())
    by = {c["id"]: c for c in doc["cases"]}
    assert by[11]["passed"] and not by[12]["passed"] and by[12]["value"] == 3
    assert any("missing __syncthreads()" in h for h in doc["hints"])
    assert (out / "racecheck.log").read_text().startswith("========= Error: Race reported")
    assert doc["verdict"]["word"] == "FAIL" and 12 in doc["verdict"]["failed_cases"]


def test_staged_gate_with_sanitizers_derives_their_limits_and_lists_their_runs(tmp_path, monkeypatch):
    """In stages: the sanitizer limits derive from the workload measured unsanitized (its launches
    and seconds), and the two runs join the supervisor block's stages."""
    from spec.files import ROOT
    fake_sanitizer(tmp_path, monkeypatch, f"print({CLEAN!r}[tool]); sys.exit(0)")
    exe = tmp_path / "mlp_train"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'tests' / 'fakes' / 'staged_mlp_train.py'} \"$@\"\n")
    exe.chmod(0o755)
    monkeypatch.setenv("FAKE_PLAN", "{}")
    out = tmp_path / "out"
    assert supervisor.supervise(exe, out, ["--paths", "submission"], limit=5, sanitize="submission") == 0
    doc = json.loads((out / "run.json").read_text())
    assert [c["id"] for c in doc["cases"]][-2:] == [11, 12] and doc["verdict"]["word"] == "PASS"
    names = [s["name"] for s in doc["supervisor"]["stages"]]
    assert names == [s["name"] for s in catalog.stages()]
    race = [s for s in doc["supervisor"]["stages"] if s["name"] == "racecheck"][0]
    want = sc.time_limit("racecheck", {"launches": 40, "seconds": 0.05})[0]
    assert race["ended"] == "exited 0" and race["limit_s"] == pytest.approx(want, abs=0.1)
