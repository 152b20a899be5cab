"""The gate under a supervisor: a hang or a fault in a submission fails the stage it happened in,
the later stages still run, and OUT/run.json is always written.

    python -m harness.gate.supervisor --binary build/mlp_train --out DIR [--limit S] [--sanitize PATH]
                                 [--one-process] [-- mlp_train args]

By default the gate runs in stages (harness/gate/stages.py): entry (cases 1-5), epoch-check (9),
overfit (6), train (7, 8) and guard-bands (10), each `mlp_train --stage NAME` in a fresh process
(its own process group, killed whole at its own printed time limit), merged into one run.json of
the unstaged shape plus a "supervisor" block (each stage's limit, seconds and how it ended).
`--one-process` runs the whole gate in one child under one limit, as before the stages: a
timeout, a signal or a CUDA error (exit 3) then fails the case that was running ("timed out
after N s", "died: SIGSEGV", "CUDA error: cudaErrorIllegalAddress"), the finished cases keep their
rows (read from its stdout as they are printed) and the later cases are FAIL "not run".
`--sanitize PATH` adds cases 11-12 (harness/gate/sanitizer_cases.py). The child's output is echoed as
it comes and kept in OUT/stdout.log and stderr.log (and per stage in OUT/stage-NAME.*).

Exit status: 0 the gate passed, 1 it failed (a case, a timeout or a fault), 2 bad input (the
binary's own, passed through), 4 internal error.
"""
from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

from harness.gate.child import (Outcome, binary_case_order, limit_for, parse_rows, print_verdict, rel, run_child,
                                what_happened)
from spec import verdict
from spec.files import DATA_DIR, ROOT, write_json


def supervise(binary: Path, out: Path, args: list[str], limit: float | None = None, data: Path = DATA_DIR,
              sanitize: str | None = None, logs: Path | None = None, staged: bool = True,
              env: dict[str, str] | None = None, guard=None, sanitizer_guard=None) -> int:
    """The gate of `binary` into OUT/run.json, in stages (harness/gate/stages.py: each a fresh process
    under its own time limit) or, with `staged` False, in one child under one limit; with
    `sanitize` (the gated path's name) also cases 11-12, compute-sanitizer memcheck and racecheck
    on a short run (harness/gate/sanitizer_cases.py). `limit`: every stage's (or the one child's)
    time limit instead of the derived ones. `env`: on top of ours for every child (the course's
    CUDA_VISIBLE_DEVICES); `guard(exclusive)`: a context each child runs in (the course's GPU lock).
    The exit status: 0 pass, 1 fail, 2 bad input, 3 no GPU reached."""
    return supervise_run(binary, out, args, limit, data, sanitize, logs, staged=staged, env=env, guard=guard,
                         sanitizer_guard=sanitizer_guard).rc


def supervise_run(binary: Path, out: Path, args: list[str], limit: float | None = None, data: Path = DATA_DIR,
                  sanitize: str | None = None, logs: Path | None = None, write_unstarted: bool = True,
                  staged: bool = True, env: dict[str, str] | None = None, guard=None,
                  sanitizer_guard=None, section=None) -> Outcome:
    """supervise(), with what happened. `logs`: where the logs (and the stages' parts) go
    (default OUT). `write_unstarted` False: a run that stopped before any case leaves
    OUT/run.json as it was (`invoke run`: a machine without a GPU keeps the committed results).
    `sanitizer_guard(tool)`: a context each compute-sanitizer run holds (the course's queue of
    that tool's runs on its GPU). `section`: the course's GpuLock, through which an exclusive stage's
    child takes the GPU alone only for its timed part (harness/gate/stages.py run_stage)."""
    if staged:
        from harness.gate.stages import run_staged
        outcome = run_staged(binary, out, args, limit, data, logs, write_unstarted, env=env, guard=guard,
                             section=section)
    else:
        outcome = _supervise(binary, out, args, limit, data, logs, write_unstarted, env)
    if sanitize and outcome.rc != 2 and outcome.started:
        from harness.gate import sanitizer_cases
        outcome.rc = sanitizer_cases.apply(binary, out, sanitize, outcome.rc, data, logs, env=env, guard=guard,
                                           sanitizer_guard=sanitizer_guard)
    if not outcome.started and outcome.child_rc == 3:
        outcome.rc = 3   # no GPU reached (or no code for it): not a verdict on the submission
    return outcome


def _supervise(binary: Path, out: Path, args: list[str], limit: float | None, data: Path, logs: Path | None,
               write_unstarted: bool, env: dict[str, str] | None = None) -> Outcome:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    logs = Path(logs) if logs else out
    logs.mkdir(parents=True, exist_ok=True)
    why = f"{limit:.0f} s (--limit)" if limit else None
    if not limit:
        limit, why = limit_for(args)
    run_id = uuid.uuid4().hex
    cmd = [rel(binary) if Path(binary).resolve().is_relative_to(ROOT) else str(binary),
           "--data", rel(data), "--out", rel(out), *args, "--run-id", run_id]
    print(f"supervisor: {' '.join(cmd)}", flush=True)
    print(f"supervisor: time limit {why}", flush=True)
    ch = run_child(cmd, limit, logs / "stdout.log", logs / "stderr.log", env=env)
    rc, timed_out, seconds, stdout, stderr = ch.rc, ch.timed_out, ch.seconds, ch.stdout, ch.stderr
    run_json = out / "run.json"
    if not timed_out and rc in (0, 1):
        try:
            doc = json.loads(run_json.read_text())
        except (OSError, ValueError):
            doc = None
        if isinstance(doc, dict) and doc.get("run_id") == run_id:
            doc["supervisor"] = {"limit_s": round(limit, 1), "seconds": seconds, "ended": "exited %d" % rc}
            doc, v = verdict.stamped(doc)
            write_json(run_json, doc)
            return Outcome(0 if v.passed else 1, True, "exited %d" % rc, rc)
    if not timed_out and rc == 2:
        return Outcome(2, False, "exited 2: bad input", rc)
    what = what_happened(rc, timed_out, limit, stderr)
    rows = parse_rows(stdout)
    if not rows and not write_unstarted:
        return Outcome(1, False, what, rc)
    done = {r["id"] for r in rows}
    pending = [(i, n) for i, n in binary_case_order() if i not in done]
    for k, (i, n) in enumerate(pending):
        rows.append({"id": i, "name": n, "value": None, "limit": None, "passed": False,
                     "detail": what if k == 0 else f"not run: the run ended at case {pending[0][0]} ({what})"})
    print(f"supervisor: {what}; case {pending[0][0] if pending else '-'} FAIL", flush=True)
    doc = {"schema": 1, "run_id": run_id, "mode": "supervised", "run_command": " ".join(cmd[:-2]),
           "supervisor": {"limit_s": round(limit, 1), "seconds": seconds, "ended": what,
                          "stderr_tail": stderr[-2000:]},
           "cases": rows, "hints": [], "paths": {}}
    doc, v = verdict.stamped(doc)
    write_json(run_json, doc)
    print(f"supervisor: the binary's own words: {rel(logs / 'stderr.log')}", flush=True)
    print_verdict(v, "one process")
    return Outcome(1, bool(done), what, rc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=str(ROOT / "build" / "mlp_train"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--limit", type=float, default=None, help="seconds (default: derived from results/run.json)")
    ap.add_argument("--sanitize", metavar="PATH", default=None,
                    help="also cases 11-12 (compute-sanitizer memcheck, racecheck) on a short run of this gated path")
    ap.add_argument("--one-process", action="store_true",
                    help="the whole gate in one child under one limit (default: in stages, each a fresh process)")
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="-- then mlp_train's own flags")
    a = ap.parse_args(argv)
    rest = a.rest[1:] if a.rest[:1] == ["--"] else a.rest
    if not Path(a.binary).exists():
        print(f"error: {a.binary} missing: build it first", file=sys.stderr)
        return 2
    return supervise(Path(a.binary), Path(a.out), rest, a.limit, sanitize=a.sanitize, staged=not a.one_process)


if __name__ == "__main__":
    raise SystemExit(main())
