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
import time
import uuid
from pathlib import Path

from spec.files import DATA_DIR, RESULTS_DIR, ROOT, write_json

# The table's rows as the binary prints them (cuda/gate.cu print_case), and the order it runs them.
ROW = re.compile(r"^(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(PASS|FAIL|SKIP)\s*(.*)$")
# Cases 11 (memcheck) and 12 (racecheck) follow when sanitizers run (harness/sanitizer_cases.py).
CASE_ORDER = [(1, "onebatch-forward"), (2, "batch-forward"), (3, "loss-extreme"), (4, "grad-check"), (5, "step"),
              (9, "epoch-check"), (6, "overfit-32"), (7, "train"), (8, "perf"), (10, "guard-bands")]
CUDA_ERR = re.compile(r"\b(cudaError[A-Za-z]+)\b")
FLOOR_S, FACTOR = 60.0, 50.0
HINT_TIMEOUT = ("timeout: a kernel spinning on a flag no one sets, or a grid that does not cover the data (a loop "
                "that waits for work that never comes)")
HINT_FAULT = ("an illegal address or a fault usually means an index past a buffer: run `invoke sanitize` "
              "(memcheck names the kernel and the address)")


def time_limit(recipe_epochs: int = 20, results: Path = RESULTS_DIR) -> tuple[float, str]:
    """max(60 s, 50 x (our fastest path's median epoch x (epochs + 10 parity/overfit epochs)) + 30 s
    of setup), our time from results/run.json; the floor alone when there is none."""
    try:
        paths = json.loads((Path(results) / "run.json").read_text())["paths"]
        ms = min(p["median_ms"] for p in paths.values() if isinstance(p.get("median_ms"), (int, float)))
    except (OSError, ValueError, KeyError, TypeError):
        return FLOOR_S, f"{FLOOR_S:.0f} s (the floor: no timed path of ours in results/run.json)"
    derived = FACTOR * ms * (recipe_epochs + 10) / 1000.0 + 30.0
    limit = max(FLOOR_S, derived)
    return limit, (f"{limit:.0f} s = max({FLOOR_S:.0f} s, {FACTOR:.0f} x {ms:.3f} ms x {recipe_epochs + 10} epochs "
                   f"+ 30 s)")


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


def supervise(binary: Path, out: Path, args: list[str], limit: float | None = None, data: Path = DATA_DIR,
              sanitize: str | None = None) -> int:
    """The gate of `binary` under the time limit into OUT/run.json; with `sanitize` (the gated
    path's name) also cases 11-12, compute-sanitizer memcheck and racecheck on a short run
    (harness/sanitizer_cases.py). The exit status: 0 pass, 1 fail, 2 bad input."""
    rc = _supervise(binary, out, args, limit, data)
    if sanitize and rc != 2:
        from harness import sanitizer_cases
        rc = sanitizer_cases.apply(binary, out, sanitize, rc, data)
    return rc


def _supervise(binary: Path, out: Path, args: list[str], limit: float | None, data: Path) -> int:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    why = f"{limit:.0f} s (--limit)" if limit else None
    if not limit:
        limit, why = time_limit()
    run_id = uuid.uuid4().hex
    cmd = [str(binary), "--data", os.path.relpath(Path(data).resolve(), ROOT), "--out", str(out), *args,
           "--run-id", run_id]
    print(f"supervisor: {' '.join(cmd)}", flush=True)
    print(f"supervisor: time limit {why}", flush=True)
    t0 = time.time()
    with open(out / "stdout.log", "w") as so, open(out / "stderr.log", "w") as se:
        child = subprocess.Popen(cmd, stdout=so, stderr=se, cwd=ROOT, start_new_session=True)
        timed_out = False
        try:
            rc = child.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            timed_out = True
            os.killpg(child.pid, signal.SIGKILL)
            rc = child.wait()
    seconds = round(time.time() - t0, 1)
    stdout, stderr = (out / "stdout.log").read_text(errors="replace"), (out / "stderr.log").read_text(errors="replace")
    sys.stdout.write(stdout)
    run_json = out / "run.json"
    if not timed_out and rc in (0, 1):
        try:
            doc = json.loads(run_json.read_text())
        except (OSError, ValueError):
            doc = None
        if isinstance(doc, dict) and doc.get("run_id") == run_id:
            doc["supervisor"] = {"limit_s": round(limit, 1), "seconds": seconds, "ended": "exited %d" % rc}
            write_json(run_json, doc)
            return rc
    if not timed_out and rc == 2:
        sys.stderr.write(stderr)
        return 2
    what = what_happened(rc, timed_out, limit, stderr)
    rows = parse_rows(stdout)
    done = {r["id"] for r in rows}
    pending = [(i, n) for i, n in CASE_ORDER if i not in done]
    for k, (i, n) in enumerate(pending):
        rows.append({"id": i, "name": n, "value": None, "limit": None, "passed": False,
                     "detail": what if k == 0 else f"not run: the run ended at case {pending[0][0]} ({what})"})
    print(f"supervisor: {what}; case {pending[0][0] if pending else '-'} FAIL", flush=True)
    hint = (HINT_TIMEOUT if timed_out else
            HINT_FAULT if done else f"the run stopped before its first case ({what}): the binary's message is in "
                                    f"{out / 'stderr.log'}")
    doc = {"schema": 1, "run_id": run_id, "mode": "supervised", "run_command": " ".join(cmd[:-2]),
           "supervisor": {"limit_s": round(limit, 1), "seconds": seconds, "ended": what,
                          "stderr_tail": stderr[-2000:]},
           "cases": rows, "hints": [hint], "paths": {}}
    write_json(run_json, doc)
    print(f"hint: {hint}\ngate: FAIL ({what})", flush=True)
    return 1


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
