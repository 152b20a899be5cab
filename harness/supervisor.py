"""The gate run in a child process under a time limit: a hang or a fault in a submission fails the
case it happened in, and OUT/run.json is always written.

    python -m harness.supervisor --binary build/mlp_train --out DIR [--limit S] [--sanitize PATH] [-- mlp_train args]

The child is mlp_train itself (its own process group, killed whole at the limit). Its table rows
are read from its stdout as they are printed (each case's row is flushed when the case ends), so
when it times out, dies on a signal or exits with a CUDA error (3), run.json still carries every
case that finished, then a FAIL row for the case that was running ("timed out after N s",
"died: SIGSEGV", "CUDA error: cudaErrorIllegalAddress") and FAIL "not run" rows for the rest.
What this does not do yet: later stages do not run in a fresh process (GAPS.toml external-harness).

Exit status: 0 the gate passed, 1 it failed (a case, a timeout or a fault), 2 bad input (the
binary's own, passed through), 4 internal error.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from spec.files import DATA_DIR, RESULTS_DIR, ROOT, write_json

# The table's rows as the binary prints them (cuda/gate.cu print_case), and the order it runs them.
ROW = re.compile(r"^(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(PASS|FAIL|SKIP)\s*(.*)$")
# Cases 11 (memcheck) and 12 (racecheck) follow when sanitizers run (harness/sanitizer_cases.py).
CASE_ORDER = [(1, "onebatch-forward"), (2, "batch-forward"), (3, "loss-extreme"), (4, "grad-check"), (5, "step"),
              (9, "epoch-check"), (6, "overfit-32"), (7, "train"), (8, "perf"), (10, "guard-bands")]
CUDA_ERR = re.compile(r"\b(cudaError[A-Za-z]+)\b")
FLOOR_S, FACTOR, REF_FACTOR = 60.0, 50.0, 10.0
HINT_TIMEOUT = ("timeout: a kernel spinning on a flag no one sets, or a grid that does not cover the data (a loop "
                "that waits for work that never comes)")
HINT_FAULT = ("an illegal address or a fault usually means an index past a buffer: run `invoke sanitize` "
              "(memcheck names the kernel and the address)")


def _arg(args, flag: str, default=None):
    args = list(args)
    return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) else default


def time_limit(recipe_epochs: int = 20, results: Path = RESULTS_DIR, n_paths: int = 1,
               same_run_reference: bool = False) -> tuple[float, str]:
    """max(60 s, 30 s of setup + 50 x our fastest path's median epoch x (epochs + 10 parity/overfit
    epochs) x the paths trained [+ 10 x our float64 reference's seconds when it is retrained in
    the run]), our times from results/run.json; the floor alone when there are none."""
    try:
        doc = json.loads((Path(results) / "run.json").read_text())
        ms = min(p["median_ms"] for n, p in doc["paths"].items()
                 if n != "submission" and isinstance(p.get("median_ms"), (int, float)))
    except (OSError, ValueError, KeyError, TypeError):
        return FLOOR_S, f"{FLOOR_S:.0f} s (the floor: no timed path of ours in results/run.json)"
    ref_s = (doc.get("reference_fp64") or {}).get("train_seconds")
    cpu = REF_FACTOR * ref_s if same_run_reference and isinstance(ref_s, (int, float)) else 0.0
    derived = FACTOR * ms * (recipe_epochs + 10) * n_paths / 1000.0 + 30.0 + cpu
    limit = max(FLOOR_S, derived)
    paths = f" x {n_paths} paths" if n_paths != 1 else ""
    ref = f" + {REF_FACTOR:.0f} x {ref_s:.1f} s float64 reference" if cpu else ""
    return limit, (f"{limit:.0f} s = max({FLOOR_S:.0f} s, {FACTOR:.0f} x {ms:.3f} ms x {recipe_epochs + 10} epochs"
                   f"{paths} + 30 s{ref})")


def limit_for(args, results: Path = RESULTS_DIR) -> tuple[float, str]:
    """time_limit for mlp_train's flags `args`: its --epochs, the paths of --paths (else ours in
    results/run.json, at least 5) and whether case 7 retrains float64 (no --reference shipped)."""
    try:
        epochs = int(_arg(args, "--epochs") or _recipe_epochs())
    except ValueError:
        epochs = 20
    named = _arg(args, "--paths")
    if named:
        n = len(named.split(","))
    else:
        try:
            n = max(5, len(json.loads((Path(results) / "run.json").read_text())["paths"]))
        except (OSError, ValueError, KeyError, TypeError):
            n = 6
    return time_limit(epochs, results, n, _arg(args, "--reference") != "shipped")


def _recipe_epochs() -> int:
    import tomllib
    with open(ROOT / "recipe.toml", "rb") as fh:
        return int(tomllib.load(fh)["epochs"])


def parse_rows(stdout: str) -> list[dict]:
    rows = []
    for line in stdout.splitlines():
        m = ROW.match(line)
        if m:
            def num(x):
                try:
                    return float(x)
                except ValueError:
                    return None
            rows.append({"id": int(m.group(1)), "name": m.group(2), "value": num(m.group(3)),
                         "limit": num(m.group(4)), "passed": m.group(5) != "FAIL", "detail": m.group(6)})
    return rows


def what_happened(rc: int | None, timed_out: bool, limit: float, stderr: str) -> str:
    if timed_out:
        return f"timed out after {limit:.0f} s"
    if rc is not None and rc < 0:
        try:
            return f"died: {signal.Signals(-rc).name}"
        except ValueError:
            return f"died: signal {-rc}"
    m = CUDA_ERR.search(stderr)
    if rc == 3 and m:
        return f"CUDA error: {m.group(1)}"
    last = [ln for ln in stderr.splitlines() if ln.strip()]
    return f"exited {rc}: {last[-1] if last else 'no message'}"


@dataclass
class Child:
    """How one child ended, and what it printed."""
    rc: int | None
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str


def _pump(pipe, log, echo) -> None:
    for raw in iter(pipe.readline, b""):
        line = raw.decode(errors="replace")
        log.write(line)
        log.flush()
        if echo is not None:
            echo.write(line)
            echo.flush()
    pipe.close()


def run_child(cmd: list[str], limit: float, stdout_log: Path, stderr_log: Path, echo: bool = True) -> Child:
    """`cmd` in its own process group (killed whole at `limit` seconds), its stdout and stderr
    written to the logs as they come and, with `echo`, to ours."""
    t0 = time.time()
    timed_out = False
    with open(stdout_log, "w") as so, open(stderr_log, "w") as se:
        child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                                 start_new_session=True)
        pumps = [threading.Thread(target=_pump, args=(child.stdout, so, sys.stdout if echo else None), daemon=True),
                 threading.Thread(target=_pump, args=(child.stderr, se, sys.stderr if echo else None), daemon=True)]
        for t in pumps:
            t.start()
        try:
            rc = child.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            rc = None
        try:
            os.killpg(child.pid, signal.SIGKILL)   # the child's group: what it left running goes too
        except (ProcessLookupError, PermissionError):
            pass
        if timed_out:
            rc = child.wait()
        for t in pumps:
            t.join(timeout=10)
    return Child(rc, timed_out, round(time.time() - t0, 1), Path(stdout_log).read_text(errors="replace"),
                 Path(stderr_log).read_text(errors="replace"))


@dataclass
class Outcome:
    """A supervised run: its exit status (0 pass, 1 fail, 2 bad input), whether any case ran
    (`started`: a case row or this run's run.json), and what happened ("exited 0", ...)."""
    rc: int
    started: bool
    ended: str
    child_rc: int | None = None


def supervise(binary: Path, out: Path, args: list[str], limit: float | None = None, data: Path = DATA_DIR,
              sanitize: str | None = None, logs: Path | None = None) -> int:
    """The gate of `binary` under the time limit into OUT/run.json; with `sanitize` (the gated
    path's name) also cases 11-12, compute-sanitizer memcheck and racecheck on a short run
    (harness/sanitizer_cases.py). The exit status: 0 pass, 1 fail, 2 bad input."""
    return supervise_run(binary, out, args, limit, data, sanitize, logs).rc


def supervise_run(binary: Path, out: Path, args: list[str], limit: float | None = None, data: Path = DATA_DIR,
                  sanitize: str | None = None, logs: Path | None = None, write_unstarted: bool = True) -> Outcome:
    """supervise(), with what happened. `logs`: where stdout.log and stderr.log go (default OUT).
    `write_unstarted` False: a run that stopped before any case leaves OUT/run.json as it was
    (`invoke run`: a machine without a GPU keeps the committed results)."""
    outcome = _supervise(binary, out, args, limit, data, logs, write_unstarted)
    if sanitize and outcome.rc != 2 and outcome.started:
        from harness import sanitizer_cases
        outcome.rc = sanitizer_cases.apply(binary, out, sanitize, outcome.rc, data)
    return outcome


def _rel(p: Path) -> str:
    return os.path.relpath(Path(p).resolve(), ROOT)


def _supervise(binary: Path, out: Path, args: list[str], limit: float | None, data: Path, logs: Path | None,
               write_unstarted: bool) -> Outcome:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    logs = Path(logs) if logs else out
    logs.mkdir(parents=True, exist_ok=True)
    why = f"{limit:.0f} s (--limit)" if limit else None
    if not limit:
        limit, why = limit_for(args)
    run_id = uuid.uuid4().hex
    cmd = [_rel(binary) if Path(binary).resolve().is_relative_to(ROOT) else str(binary),
           "--data", _rel(data), "--out", _rel(out), *args, "--run-id", run_id]
    print(f"supervisor: {' '.join(cmd)}", flush=True)
    print(f"supervisor: time limit {why}", flush=True)
    ch = run_child(cmd, limit, logs / "stdout.log", logs / "stderr.log")
    rc, timed_out, seconds, stdout, stderr = ch.rc, ch.timed_out, ch.seconds, ch.stdout, ch.stderr
    run_json = out / "run.json"
    if not timed_out and rc in (0, 1):
        try:
            doc = json.loads(run_json.read_text())
        except (OSError, ValueError):
            doc = None
        if isinstance(doc, dict) and doc.get("run_id") == run_id:
            doc["supervisor"] = {"limit_s": round(limit, 1), "seconds": seconds, "ended": "exited %d" % rc}
            write_json(run_json, doc)
            return Outcome(rc, True, "exited %d" % rc, rc)
    if not timed_out and rc == 2:
        return Outcome(2, False, "exited 2: bad input", rc)
    what = what_happened(rc, timed_out, limit, stderr)
    rows = parse_rows(stdout)
    if not rows and not write_unstarted:
        return Outcome(1, False, what, rc)
    done = {r["id"] for r in rows}
    pending = [(i, n) for i, n in CASE_ORDER if i not in done]
    for k, (i, n) in enumerate(pending):
        rows.append({"id": i, "name": n, "value": None, "limit": None, "passed": False,
                     "detail": what if k == 0 else f"not run: the run ended at case {pending[0][0]} ({what})"})
    print(f"supervisor: {what}; case {pending[0][0] if pending else '-'} FAIL", flush=True)
    hint = (HINT_TIMEOUT if timed_out else
            HINT_FAULT if done else f"the run stopped before its first case ({what}): the binary's message is in "
                                    f"{_rel(logs / 'stderr.log')}")
    doc = {"schema": 1, "run_id": run_id, "mode": "supervised", "run_command": " ".join(cmd[:-2]),
           "supervisor": {"limit_s": round(limit, 1), "seconds": seconds, "ended": what,
                          "stderr_tail": stderr[-2000:]},
           "cases": rows, "hints": [hint], "paths": {}}
    write_json(run_json, doc)
    print(f"hint: {hint}\ngate: FAIL ({what})", flush=True)
    return Outcome(1, bool(done), what, rc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--binary", default=str(ROOT / "build" / "mlp_train"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--limit", type=float, default=None, help="seconds (default: derived from results/run.json)")
    ap.add_argument("--sanitize", metavar="PATH", default=None,
                    help="also cases 11-12 (compute-sanitizer memcheck, racecheck) on a short run of this gated path")
    ap.add_argument("rest", nargs=argparse.REMAINDER, help="-- then mlp_train's own flags")
    a = ap.parse_args(argv)
    rest = a.rest[1:] if a.rest[:1] == ["--"] else a.rest
    if not Path(a.binary).exists():
        print(f"error: {a.binary} missing: build it first", file=sys.stderr)
        return 2
    return supervise(Path(a.binary), Path(a.out), rest, a.limit, sanitize=a.sanitize)


if __name__ == "__main__":
    raise SystemExit(main())
