"""Gate cases 11 (memcheck) and 12 (racecheck): compute-sanitizer on a short run of the gated
binary itself, their error counts as cases (value = errors, limit 0).

The short run (short_run_args) calls every entry point and a short epoch with a tail batch, and
nothing of ours: the gate's first two stages, `mlp_train --stage entry,epoch-check --paths G`
(cases 1-5, then case 9: the submission's mlp_train_epoch on 2 full batches and a tail, 300 rows
at batch 128, a 44-row tail batch). Races that a normal run does not show then fail the gate.

A case PASSes iff the tool ran to completion (its summary line is in its output: memcheck's
`========= ERROR SUMMARY: N errors`, racecheck's `========= RACECHECK SUMMARY: H hazards
displayed (E errors, W warnings)`), it counted 0 errors (racecheck: 0 hazards, its warnings
included: a warp-synchronous reduction without __syncwarp() is reported as a warning, and it is a
real race under independent thread scheduling) and the run under it ended with status 0 or 1 (a
gate case of the short run may fail; the other cases judge that). A tool that is not
found, times out, dies or stops without its summary is FAIL naming that. Each run has its own
time limit (time_limit), printed; its output is kept in OUT/<tool>.log.

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

from harness.gate import hints
from harness.gate.child import how_ended
from spec import catalog
from spec.recipe import load_recipe
from spec.files import DATA_DIR, ROOT, write_json

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
# Time limits: max(floor, factor x the unsanitized seconds of the same work in this run), the
# floor alone when that is unknown. memcheck slows a run a few times, racecheck (every
# shared-memory access instrumented) tens of times: on the H200 racecheck of our stationary
# path's --smoke run took 63.6 s and memcheck of its --quick run 12.3 s
# (results/sanitize_stationary.json), against seconds unsanitized.
# (The floors are the catalog's.)
FACTOR = {"memcheck": 20.0, "racecheck": 60.0}


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


def recipe_batch(args=()) -> int:
    """The batch of the run: --batch in `args`, else recipe.toml's."""
    args = list(args)
    if "--batch" in args and args.index("--batch") + 1 < len(args):
        return int(args[args.index("--batch") + 1])
    return int(load_recipe()["batch"])


def short_train_size(batch: int) -> int:
    """Case 9's rows: 2 full batches and a tail of batch x 11/32 rows (300 at batch 128;
    cuda/gate/cases.cu case_epoch_check)."""
    return 2 * batch + max(1, batch * 11 // 32)


SHORT_RUN_STAGES = ("entry", "epoch-check")   # every entry point, and case 9's short epochs


def short_run_args(gated: str, batch: int) -> list[str]:
    """The stages entry and epoch-check of `gated`'s binary (`batch` only names the tail)."""
    return ["--stage", ",".join(SHORT_RUN_STAGES), "--paths", gated]


def floor_s(tool: str) -> float:
    """The tool's time-limit floor (the catalog's)."""
    return float(next(s["floor_s"] for s in sanitizer_stages() if s["name"] == tool))


def time_limit(tool: str, unsanitized_s: float | None = None) -> tuple[float, str]:
    floor = floor_s(tool)
    if not unsanitized_s:
        return floor, f"{floor:.0f} s (the floor; no unsanitized time of the short run)"
    derived = FACTOR[tool] * unsanitized_s
    limit = max(floor, derived)
    return limit, f"{limit:.0f} s = max({floor:.0f} s, {FACTOR[tool]:.0f} x {unsanitized_s:.1f} s unsanitized)"


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


def run_case(tool: str, binary: Path, out: Path, gated: str, batch: int, limit: float, why: str,
             sanitizer: str | None, data: Path = DATA_DIR, env: dict[str, str] | None = None, guard=None) -> dict:
    """One tool on the short run: its case row (plus "seconds", "limit_s", "log", "command")."""
    cid = case_of(tool)
    if sanitizer is None:
        return _case(tool, cid, False, None, "compute-sanitizer not found (PATH, $COMPUTE_SANITIZER, "
                                             "/usr/local/cuda/bin)")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    # The stages' parts go to OUT/<tool>/ (the gate's own stage-*.json beside run.json stay).
    target = [os.path.relpath(Path(binary).resolve(), ROOT), "--data", os.path.relpath(Path(data).resolve(), ROOT), "--out", os.path.relpath((out / tool).resolve(), ROOT),
              *short_run_args(gated, batch)]
    cmd = [sanitizer, "--tool", tool, "--error-exitcode", "99", *target]
    log = out / f"{tool}.log"
    print(f"{tool}: {' '.join(cmd)}", flush=True)
    print(f"{tool}: time limit {why}", flush=True)
    t0 = time.time()
    timed_out = False
    with open(log, "w") as fh, (guard(False) if guard else contextlib.nullcontext()):
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
    extra = {"seconds": seconds, "limit_s": round(limit, 1), "log": log.name, "command": " ".join(cmd),
             "ended": how_ended(rc, timed_out, limit)}
    if warnings is not None:
        extra["warnings"] = warnings
    what = f"compute-sanitizer {tool} on `{' '.join(target[1:])}`"
    if timed_out or errors is None or (rc is not None and rc < 0):
        row = _case(tool, cid, False, None, f"{_ended(rc, timed_out, limit, text)} ({what}; no summary: "
                                            f"the tool did not finish; {log.name})", **extra)
    elif tool == "racecheck" and errors + (warnings or 0) > 0:
        hazards = errors + (warnings or 0)
        row = _case(tool, cid, False, hazards, f"{hazards} hazard(s) ({errors} errors, {warnings or 0} warnings); "
                                               f"first: {first or 'see the log'} ({what}; {log.name})", **extra)
    elif errors > 0:
        row = _case(tool, cid, False, errors, f"{errors} error(s); first: {first or 'see the log'} ({what}; "
                                              f"{log.name})", **extra)
    elif rc not in (0, 1, 99):
        row = _case(tool, cid, False, errors, f"0 errors, but the run under it {_ended(rc, False, limit, text)} "
                                              f"before its end ({what}; {log.name})", **extra)
    else:
        row = _case(tool, cid, True, 0, f"0 {'hazards' if tool == 'racecheck' else 'errors'} in "
                                        f"{seconds:.0f} s ({what}: every entry point, and case 9's "
                                        f"{short_train_size(batch)}-row epoch with a "
                                        f"{short_train_size(batch) % batch}-row tail batch)", **extra)
    print(format_row(row), flush=True)
    return row


def format_row(c: dict) -> str:
    """A row as the binary prints its table (cuda/gate/cases.cu print_case)."""
    def num(x):
        return "nan" if x is None else f"{x:.4g}"
    return (f"{c['id']:<2d} {c['name']:<18s} {num(c['value']):>12s} {num(c['limit']):>12s}  "
            f"{'PASS' if c['passed'] else 'FAIL'}   {c['detail']}")


def skip_reason(doc: dict) -> str | None:
    """Why the sanitizer runs would only repeat a hang: a case they repeat (1-5, 9) timed out."""
    repeated = {i for s in catalog.stages("mlp_train") if s["name"] in SHORT_RUN_STAGES for i in s["cases"]}
    for c in doc.get("cases", []):
        if c.get("id") in repeated and str(c.get("detail", "")).startswith("timed out"):
            return (f"not run: case {c['id']} {c.get('name', '')} {c['detail']} without a sanitizer "
                    f"(the short run would repeat the hang)")
    return None


def unsanitized_seconds(doc: dict) -> float | None:
    """The seconds of the short run's work unsanitized in this run: stages entry and epoch-check."""
    stages = {s.get("name"): s for s in (doc.get("supervisor") or {}).get("stages", [])}
    try:
        return float(stages["entry"]["seconds"]) + float(stages["epoch-check"]["seconds"])
    except (KeyError, TypeError, ValueError):
        return None


def sanitizer_cases(binary: Path, out: Path, gated: str, doc: dict | None = None, batch: int | None = None,
                    tools=None, data: Path = DATA_DIR, env: dict[str, str] | None = None, guard=None) -> list[dict]:
    """Case rows 11 and 12 for `binary` (the gated path `gated`); `doc`, the run's run.json, gives
    the unsanitized time the limits derive from and says when a hang makes the runs pointless."""
    doc = doc or {}
    sanitizer = find_sanitizer()
    batch = batch or int((doc.get("recipe") or {}).get("batch") or recipe_batch())
    skip = skip_reason(doc)
    rows = []
    for tool in tools or [s["name"] for s in sanitizer_stages()]:
        limit, why = time_limit(tool, unsanitized_seconds(doc))
        if skip:
            rows.append(_case(tool, case_of(tool), False, None, skip))
            print(format_row(rows[-1]), flush=True)
            continue
        rows.append(run_case(tool, binary, out, gated, batch, limit, why, sanitizer, data, env, guard))
    return rows


def merge(doc: dict, rows: list[dict]) -> dict:
    """`doc` with rows 11-12 in place of any it had, their hints, and the runs in its supervisor
    block's stages (when it has one)."""
    doc = dict(doc)
    doc["cases"] = [c for c in doc.get("cases", []) if c.get("id") not in case_ids()] + rows
    sup = doc.get("supervisor")
    endings = [s.get("ended", "") for s in (sup or {}).get("stages", []) if s.get("ended") not in ("exited 0", "exited 1")
               and s.get("name") not in {t["name"] for t in sanitizer_stages()}]
    doc["hints"] = hints.hints_for(doc["cases"], (sup or {}).get("path_failures", []), endings)
    if isinstance(sup, dict) and isinstance(sup.get("stages"), list):
        sup = dict(sup)
        sup["stages"] = [s for s in sup["stages"] if s.get("name") not in {t["name"] for t in sanitizer_stages()}] + [
            {"name": r["name"], "cases": [r["id"]], "limit_s": r.get("limit_s"), "seconds": r.get("seconds"),
             "ended": r.get("ended", r["detail"])}
            for r in rows]
        doc["supervisor"] = sup
    return doc


def verdict(doc: dict) -> bool:
    """Every case but 8 passed, and the supervisor (when it ran stages) saw no path fail and no
    stage end badly (harness/gate/stages.py)."""
    ok = all(c.get("passed") is True for c in doc.get("cases", []) if c.get("id") != 8)
    sup = doc.get("supervisor") or {}
    return ok and not sup.get("path_failures") and not sup.get("stage_failures")


def apply(binary: Path, out: Path, gated: str, rc: int, data: Path = DATA_DIR, logs: Path | None = None,
          env: dict[str, str] | None = None, guard=None) -> int:
    """Cases 11-12 added to OUT/run.json (the tools' logs and parts in LOGS, default OUT); the new
    exit status (1 when they fail, else `rc`)."""
    run_json = Path(out) / "run.json"
    try:
        doc = json.loads(run_json.read_text())
    except (OSError, ValueError):
        print(f"error: {run_json}: no run.json to add cases 11-12 to", file=sys.stderr)
        return rc or 1
    rows = sanitizer_cases(binary, Path(logs) if logs else Path(out), gated, doc, data=data, env=env, guard=guard)
    for r in rows:   # the log as a path from run.json's folder
        if "log" in r:
            r["log"] = os.path.relpath(Path(logs or out) / r["log"], Path(out))
    doc = merge(doc, rows)
    write_json(run_json, doc)
    failed = [f"{r['id']} {r['name']}" for r in rows if not r["passed"]]
    if failed:
        for h in doc["hints"]:
            print(f"hint: {h}", flush=True)
        print(f"gate: FAIL (case {', '.join(failed)})", flush=True)
        return 1 if rc in (0, 1) else rc
    print(f"gate: cases 11-12 pass (memcheck and racecheck: 0 errors); the verdict: {'PASS' if rc == 0 else 'FAIL'}",
          flush=True)
    return rc


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
