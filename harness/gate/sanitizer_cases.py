"""Gate cases 11 (memcheck) and 12 (racecheck): compute-sanitizer on the sanitizer workload of the
gated binary itself, their error counts as cases (value = errors, limit 0).

The workload (`mlp_train --sanitizer-workload once`, cuda/gate/sanitizer_workload.h) calls every
entry point of the linked submission, and its epoch, on each code path the gate's cases reach (a
full batch and a short tail at the recipe's shape, batches 7 and 129 at the odd shape, epochs with a
short last step) with the fewest calls and rows that reach them, on buffers of exactly their size:
bounded by construction, where the whole stages entry and epoch-check took minutes under racecheck
for a submission of shared-memory tiled GEMMs. Before the tools run, the same workload runs once
unsanitized (`--sanitizer-workload measure`: its calls, its kernel launches counted in a captured
graph, its seconds), and each tool's time limit derives from that (time_limit), stated in the row.

A case PASSes iff the tool ran to completion (its summary line is in its output: memcheck's
`========= ERROR SUMMARY: N errors`, racecheck's `========= RACECHECK SUMMARY: H hazards
displayed (E errors, W warnings)`), it counted 0 errors (racecheck: 0 hazards, its warnings
included: a warp-synchronous reduction without __syncwarp() is reported as a warning, and it is a
real race under independent thread scheduling) and the run under it ended with status 0. Else it
FAILs, naming why:
  - errors: their count and the first one;
  - the workload hangs without a sanitizer (its measured run timed out): "timed out ... without a
    sanitizer", a hang, and the tools are not run;
  - the tool ran out of its time limit on a workload that finishes unsanitized: "inconclusive", never
    a race or a hang: nothing was concluded. Inconclusive fails the verdict (a race the tool did not
    get to see must not pass), which is why the workload is bounded and the limit scales with the
    submission's own measured work: a correct submission that is merely slow gets a longer limit,
    not a failure. The row says how to reproduce the run and what makes it slow;
  - a tool that is not found, dies or stops without its summary.
Each run's output is kept in OUT/<tool>.log.

    python -m harness.gate.sanitizer_cases --binary B --out DIR [--path G]   cases 11-12 into DIR/run.json
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from harness.gate.child import how_ended, print_verdict, run_child
from spec import catalog, verdict
from spec.files import DATA_DIR, ROOT, repo_relative, write_json

def sanitizer_stages() -> list[dict]:
    """The stages compute-sanitizer runs (the binary's catalog): memcheck (case 11), racecheck (12)."""
    return catalog.stages("compute-sanitizer")


def case_of(tool: str) -> int:
    return next(s["cases"][0] for s in sanitizer_stages() if s["name"] == tool)


def case_ids() -> tuple[int, ...]:
    return tuple(s["cases"][0] for s in sanitizer_stages())
SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
# The first line of a reported error: memcheck's "Invalid __global__ write of size 4 bytes",
# racecheck's "Error: Race reported between Write access at ... and Read access at ...", a
# hardware exception ("Stack overflow", "Warp Illegal Address").
FIRST_ERROR = re.compile(r"^=+\s+((?:Invalid|Error|Program hit|Warp|Stack overflow|Malloc|Misaligned|Race)\b.*)$",
                         re.M)
# Time limits: max(floor, SETUP_S + PER_LAUNCH_S x launches + SLOWDOWN x seconds) of the workload
# measured unsanitized in the same run (the floor alone when the measurement has no launch count).
# On the H200 (docs/PERFLOG.md, change 11) the workload runs in 1-2 ms unsanitized with 76-198
# launches, and a tool's run is mostly its own start and the instrumented kernels: racecheck slows
# shared-memory-heavy GEMMs by 10^4 and more, so the seconds term is that large; the floors (the
# catalog's) keep a margin of several times the slowest correct learner-style file seen.
SETUP_S = {"memcheck": 30.0, "racecheck": 30.0}
PER_LAUNCH_S = {"memcheck": 0.1, "racecheck": 0.5}
SLOWDOWN = {"memcheck": 2000.0, "racecheck": 20000.0}
WORKLOAD_LIMIT_S = 60.0       # the unsanitized measured run: past this the workload hangs
# Each tool's pass of the workload: memcheck the whole of it, racecheck its own plan (the odd shape's
# calls, then the recipe's epoch over one batch; cuda/gate/sanitizer_workload.h, WorkloadRun::kRace:
# why, and the one path it gives up). The limits of both derive from the whole workload's measurement.
WORKLOAD_ARGS = {"memcheck": ("--sanitizer-workload", "once"), "racecheck": ("--sanitizer-workload", "race")}
MEASURE_ARGS = ("--sanitizer-workload", "measure")


def find_sanitizer() -> str | None:
    """$COMPUTE_SANITIZER, else compute-sanitizer on PATH, else the toolkit's default place."""
    env = os.environ.get("COMPUTE_SANITIZER")
    if env:
        return env if Path(env).exists() else None
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    cand = Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "compute-sanitizer"
    return str(cand) if cand.exists() else None


def floor_s(tool: str) -> float:
    """The tool's time-limit floor (the catalog's)."""
    return float(next(s["floor_s"] for s in sanitizer_stages() if s["name"] == tool))


def time_limit(tool: str, workload: dict | None = None) -> tuple[float, str]:
    """(limit, its words) of `tool` over the workload measured unsanitized (measure_workload)."""
    floor = floor_s(tool)
    launches = (workload or {}).get("launches")
    seconds = (workload or {}).get("seconds")
    if not isinstance(launches, int) or launches < 0 or not isinstance(seconds, (int, float)):
        return floor, f"{floor:.0f} s (the floor; the workload's launches were not counted)"
    derived = SETUP_S[tool] + PER_LAUNCH_S[tool] * launches + SLOWDOWN[tool] * seconds
    limit = max(floor, derived)
    return limit, (f"{limit:.0f} s = max({floor:.0f} s, {SETUP_S[tool]:.0f} s + {PER_LAUNCH_S[tool]:g} s x {launches} "
                   f"launches + {SLOWDOWN[tool]:g} x {seconds:.3f} s: the workload unsanitized)")


def measure_workload(binary: Path, out: Path, data: Path = DATA_DIR, env: dict[str, str] | None = None,
                     guard=None) -> dict:
    """The workload once unsanitized: {"launches", "seconds", "calls", ...} (OUT/workload/
    sanitizer-workload.json), or {"hang": "timed out after N s"} / {"error": why} when it did not
    finish by itself."""
    target = Path(out) / "workload"
    Path(out).mkdir(parents=True, exist_ok=True)
    cmd = [repo_relative(binary), "--data", repo_relative(data), "--out", repo_relative(target), *MEASURE_ARGS]
    print(f"sanitizer workload: {' '.join(cmd)} (time limit {WORKLOAD_LIMIT_S:.0f} s)", flush=True)
    try:
        with (guard(False) if guard else contextlib.nullcontext()):
            ch = run_child(cmd, WORKLOAD_LIMIT_S, Path(out) / "workload.stdout.log", Path(out) / "workload.stderr.log",
                           env=env)
    except OSError as exc:
        return {"error": f"cannot run {binary}: {exc.strerror or exc}"}
    if ch.timed_out:
        return {"hang": how_ended(ch.rc, True, WORKLOAD_LIMIT_S)}
    try:
        doc = json.loads((target / "sanitizer-workload.json").read_text())
    except (OSError, ValueError):
        last = [ln for ln in ch.stderr.splitlines() if ln.strip()]
        return {"error": f"{how_ended(ch.rc, False, WORKLOAD_LIMIT_S)}: {last[-1][:200] if last else 'no message'}"}
    return doc if isinstance(doc, dict) else {"error": "sanitizer-workload.json is not an object"}


def parse(tool: str, text: str) -> tuple[int | None, int | None, str]:
    """(errors, warnings, first error line) from a tool's output; errors None when its summary
    line is missing (the tool did not finish)."""
    warnings = None
    r = RACE_SUMMARY.search(text)
    if tool == "racecheck" and r:
        errors, warnings = int(r.group(2)), int(r.group(3))
    else:
        m = SUMMARY.search(text)
        errors = int(m.group(1)) if m else None
    f = FIRST_ERROR.search(text)
    return errors, warnings, (f.group(1).strip()[:240] if f else "")


def _case(tool: str, cid: int, passed: bool, value, detail: str, **extra) -> dict:
    return {"id": cid, "name": tool, "passed": passed, "value": value, "limit": 0, "detail": detail, **extra}


def _ended(rc: int | None, timed_out: bool, limit: float, text: str) -> str:
    how = how_ended(rc, timed_out, limit)
    if not how.startswith("exited"):
        return how
    last = [ln for ln in text.splitlines() if ln.strip()]
    return f"{how}: {last[-1].strip()[:200] if last else 'no message'}"


def tool_command(sanitizer: str, tool: str, binary: Path, out: Path, data: Path = DATA_DIR) -> list[str]:
    """`tool` of compute-sanitizer on `binary`'s workload for it (WORKLOAD_ARGS), writing into `out`."""
    return [sanitizer, "--tool", tool, "--error-exitcode", "99", repo_relative(binary), "--data", repo_relative(data),
            "--out", repo_relative(out), *WORKLOAD_ARGS[tool]]


def run_case(tool: str, binary: Path, out: Path, gated: str, workload: dict, limit: float, why: str,
             sanitizer: str | None, data: Path = DATA_DIR, env: dict[str, str] | None = None, guard=None) -> dict:
    """One tool on the workload: its case row (plus "seconds", "limit_s", "log", "command", "ended",
    "workload": the unsanitized measurement, and "inconclusive" when the tool ran out of time)."""
    cid = case_of(tool)
    if sanitizer is None:
        return _case(tool, cid, False, None, "compute-sanitizer not found (PATH, $COMPUTE_SANITIZER, "
                                             "/usr/local/cuda/bin)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    args = WORKLOAD_ARGS[tool]
    cmd = tool_command(sanitizer, tool, binary, out / tool, data)
    # As a row says it: the tool by its name, the run's own folder as OUT (a temporary one while it runs).
    shown = " ".join(["compute-sanitizer", *cmd[1:-len(args) - 2], "--out", f"OUT/{tool}", *args])
    log = out / f"{tool}.log"
    print(f"{tool}: {' '.join(cmd)}", flush=True)
    print(f"{tool}: time limit {why}", flush=True)
    timed_out = False
    with open(log, "w") as fh, (guard(tool) if guard else contextlib.nullcontext()):
        t0 = time.time()   # once the queue let it start: its own seconds, not the wait
        child = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT, start_new_session=True,
                                 env={**os.environ, **env} if env else None)
        try:
            rc = child.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(child.pid, signal.SIGKILL)
            rc = child.wait()
    seconds = round(time.time() - t0, 1)
    text = log.read_text(errors="replace")
    errors, warnings, first = parse(tool, text)
    measured = {k: workload.get(k) for k in ("calls", "launches", "memory_ops", "seconds")}
    extra = {"seconds": seconds, "limit_s": round(limit, 1), "log": log.name, "command": shown,
             "ended": how_ended(rc, timed_out, limit), "workload": measured}
    if warnings is not None:
        extra["warnings"] = warnings
    what = f"compute-sanitizer {tool} on the sanitizer workload (`{shown.split(' ', 5)[-1]}`)"
    work = (f"{workload.get('calls')} calls, {workload.get('launches')} launches, "
            f"{float(workload.get('seconds') or 0):.3f} s unsanitized")
    if timed_out:
        row = _case(tool, cid, False, None,
                    f"inconclusive: {tool} did not finish within its limit of {why} ({work}); nothing was concluded "
                    f"about {'races' if tool == 'racecheck' else 'memory errors'}: the same workload finishes "
                    f"unsanitized, so this is neither a {'race' if tool == 'racecheck' else 'memory error'} nor a "
                    f"hang. Reproduce: `{shown}` (OUT: any new folder); what makes it slow: {SLOW_WHY[tool]} "
                    f"({log.name})",
                    inconclusive=True, **extra)
    elif errors is None or (rc is not None and rc < 0):
        row = _case(tool, cid, False, None, f"{_ended(rc, False, limit, text)} ({what}; no summary: "
                                            f"the tool did not finish; {log.name})", **extra)
    elif tool == "racecheck" and errors + (warnings or 0) > 0:
        hazards = errors + (warnings or 0)
        row = _case(tool, cid, False, hazards, f"{hazards} hazard(s) ({errors} errors, {warnings or 0} warnings); "
                                               f"first: {first or 'see the log'} ({what}; {log.name})", **extra)
    elif errors > 0:
        row = _case(tool, cid, False, errors, f"{errors} error(s); first: {first or 'see the log'} ({what}; "
                                              f"{log.name})", **extra)
    elif rc != 0:
        row = _case(tool, cid, False, errors, f"0 errors, but the run under it {_ended(rc, False, limit, text)} "
                                              f"before its end ({what}; {log.name})", **extra)
    else:
        words = workload.get("race_workload" if tool == "racecheck" else "workload") or "every entry point"
        row = _case(tool, cid, True, 0, f"0 {'hazards' if tool == 'racecheck' else 'errors'} in {seconds:.0f} s "
                                        f"(limit {why}) ({what}: {words}; {work})", **extra)
    print(format_row(row), flush=True)
    return row


# What makes a tool slow on this workload, for an inconclusive row.
SLOW_WHY = {"memcheck": "memcheck checks every global and shared access of every launch: kernels that re-read "
                        "global memory many times per output (an untiled GEMM of the 784-wide input) or thousands of "
                        "tiny launches",
            "racecheck": "racecheck instruments every shared-memory access of every launch: small tiles re-read many "
                         "times, or many launches per call (a row at a time); larger tiles, fewer launches"}


def format_row(c: dict) -> str:
    """A row as the binary prints its table (cuda/gate/cases.cu print_case)."""
    def num(x):
        return "nan" if x is None else f"{x:.4g}"
    return (f"{c['id']:<2d} {c['name']:<18s} {num(c['value']):>12s} {num(c['limit']):>12s}  "
            f"{'PASS' if c['passed'] else 'FAIL'}   {c['detail']}")


def sanitizer_cases(binary: Path, out: Path, gated: str, tools=None, data: Path = DATA_DIR,
                    env: dict[str, str] | None = None, guard=None, sanitizer_guard=None) -> list[dict]:
    """Case rows 11 and 12 for `binary` (the gated path `gated`): the workload measured unsanitized
    (under `guard(False)`: a shared stage), then each tool on it under `sanitizer_guard(tool)` (the
    course's queue of that tool's runs on its GPU)."""
    sanitizer = find_sanitizer()
    tools = tools or [s["name"] for s in sanitizer_stages()]
    rows = []
    workload = measure_workload(binary, Path(out), data, env, guard) if sanitizer else {}
    for tool in tools:
        if "hang" in workload:
            rows.append(_case(tool, case_of(tool), False, None,
                              f"{workload['hang']} without a sanitizer: the sanitizer workload hangs (`{binary} "
                              f"{' '.join(MEASURE_ARGS)}`), so {tool} was not run: a hang, not a sanitizer finding"))
            print(format_row(rows[-1]), flush=True)
            continue
        limit, why = time_limit(tool, workload)
        rows.append(run_case(tool, binary, out, gated, workload, limit, why, sanitizer, data, env, sanitizer_guard))
    return rows


def merge(doc: dict, rows: list[dict]) -> tuple[dict, verdict.Verdict]:
    """(`doc` with rows 11-12 in place of any it had and the runs in its supervisor block's stages
    (when it has one), stamped with the owner's verdict and hints; that verdict)."""
    doc = dict(doc)
    doc["cases"] = [c for c in doc.get("cases", []) if c.get("id") not in case_ids()] + rows
    sup = doc.get("supervisor")
    if isinstance(sup, dict) and isinstance(sup.get("stages"), list):
        sup = dict(sup)
        sup["stages"] = [s for s in sup["stages"] if s.get("name") not in {t["name"] for t in sanitizer_stages()}] + [
            {"name": r["name"], "cases": [r["id"]], "limit_s": r.get("limit_s"), "seconds": r.get("seconds"),
             "ended": r.get("ended", r["detail"])}
            for r in rows]
        doc["supervisor"] = sup
    return verdict.stamped(doc)


def apply(binary: Path, out: Path, gated: str, rc: int, data: Path = DATA_DIR, logs: Path | None = None,
          env: dict[str, str] | None = None, guard=None, sanitizer_guard=None) -> int:
    """Cases 11-12 added to OUT/run.json (the tools' logs and parts in LOGS, default OUT) and the
    document decided again; the new exit status: the verdict's (0 PASS, 1 FAIL), or `rc` when it
    says the run never judged (2 bad input, 3 no GPU, 4 internal error)."""
    run_json = Path(out) / "run.json"
    try:
        doc = json.loads(run_json.read_text())
    except (OSError, ValueError):
        print(f"error: {run_json}: no run.json to add cases 11-12 to", file=sys.stderr)
        return rc or 1
    rows = sanitizer_cases(binary, Path(logs) if logs else Path(out), gated, data=data, env=env, guard=guard,
                           sanitizer_guard=sanitizer_guard)
    for r in rows:   # the log as a path from run.json's folder
        if "log" in r:
            r["log"] = os.path.relpath(Path(logs or out) / r["log"], Path(out))
    doc, v = merge(doc, rows)
    write_json(run_json, doc)
    print_verdict(v, "the run with compute-sanitizer")
    return rc if rc not in (0, 1) else (0 if v.passed else 1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=str(ROOT / "build" / "mlp_train"))
    ap.add_argument("--out", required=True, help="the folder whose run.json gets cases 11-12")
    ap.add_argument("--path", default=None, help="the gated path (default: run.json's gated_path, else fused)")
    a = ap.parse_args(argv)
    try:
        doc = json.loads((Path(a.out) / "run.json").read_text())
    except (OSError, ValueError):
        print(f"error: {a.out}/run.json: missing or not JSON", file=sys.stderr)
        return 2
    gated = a.path or doc.get("gated_path") or "fused"
    return apply(Path(a.binary), Path(a.out), gated, 0)


if __name__ == "__main__":
    raise SystemExit(main())
