"""compute-sanitizer over every kernel path: memcheck, racecheck, initcheck and synccheck on a
short run (cases 1-6 and one training epoch, `mlp_train --quick`; racecheck a shorter one,
see RACECHECK_ARGS), plus the entry points through
the Python binding. Writes results/sanitize.json: one row per (tool, path) with its error count."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from spec import catalog, provenance
from spec.files import BUILD_DIR, DATA_DIR, RESULTS_DIR, ROOT, check_targets, failed_path, write_json

EXIT_CUDA_ERROR = 3   # mlp_train's status for a CUDA error, no device among them (cuda/common/exit_status.h)

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")
# racecheck ends with its own line: "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)".
RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
# racecheck instruments every shared-memory access: one --quick run of a path (about 450 steps
# with case 6's overfit) takes over 5 minutes under it. Hazards depend on the kernels and their
# launch shapes, not on the step count, so racecheck runs --smoke on 300 images: two full batches
# and a 44-image tail batch of every kernel, cases 1-5, no overfit or bitwise rerun.
RACECHECK_ARGS = ("--smoke", "--train-size", "300")


def find_sanitizer() -> str:
    found = shutil.which("compute-sanitizer")
    for cand in ("/usr/local/cuda/bin/compute-sanitizer",):
        if not found and Path(cand).exists():
            found = cand
    if not found:
        raise SystemExit("error: compute-sanitizer not found: it ships with the CUDA toolkit (cuda/bin)")
    return found


def run_one(sanitizer: str, tool: str, target: list[str], label: str, timeout_s: int = 300) -> dict:
    cmd = [sanitizer, "--tool", tool, "--error-exitcode", "99", *target]
    print(f"sanitize: {tool:9s} {label}", flush=True)
    t0 = time.time()
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        print(f"sanitize: {tool:9s} {label} -> no result within {timeout_s} s", flush=True)
        return {"tool": tool, "target": label, "errors": None, "exit_code": None,
                "seconds": round(time.time() - t0, 1), "timed_out": True}
    out = res.stdout + res.stderr
    m = SUMMARY.search(out)
    errors = int(m.group(1)) if m else None
    warnings = None
    r = RACE_SUMMARY.search(out)
    if r:
        errors, warnings = int(r.group(1)), int(r.group(2))
    row = {"tool": tool, "target": label, "errors": errors, "exit_code": res.returncode,
           "seconds": round(time.time() - t0, 1), "command": " ".join(cmd[1:])}
    if warnings is not None:
        row["warnings"] = warnings
    if errors is None or errors > 0 or res.returncode != 0:
        row["log_tail"] = out[-3000:]
    print(f"sanitize: {tool:9s} {label} -> {errors} errors, exit {res.returncode} ({row['seconds']} s)", flush=True)
    return row


def sanitize(paths: list[str] | None = None, tools=TOOLS, results_dir: Path = RESULTS_DIR,
             timeout_s: int = 300, jobs: int | None = None) -> int:
    """Every (tool, target) run; results/sanitize.partial.json is rewritten after each one, so a
    run cut short still leaves what it finished (with "complete": false), and replaces
    results/sanitize.json at the end. When no path's run reached a CUDA device (every one ended
    with mlp_train's CUDA-error status 3: no GPU), results/sanitize.json is left as it was, this
    run's rows go to the git-ignored results/failed/sanitize.json, and the status is 3.

    The runs go `jobs` at a time on the one GPU: these are correctness tools, not timings, and a
    sanitized run is bound by the tool's host-side work (20 runs of about a minute each would not
    fit one 10-minute device call serially). Rows keep the planned order whatever finishes first."""
    sanitizer = find_sanitizer()
    binary = BUILD_DIR / "mlp_train"
    if not binary.exists():
        raise SystemExit(f"error: {binary} missing: run `invoke build` first")
    paths = paths or list(catalog.path_names())   # the registry's, the opt-in ones checked too
    plan = []
    for tool in tools:
        for path in paths:
            short = list(RACECHECK_ARGS) if tool == "racecheck" else ["--quick"]
            target = [str(binary.relative_to(ROOT)), "--data", str(Path(DATA_DIR).relative_to(ROOT)), *short,
                      "--paths", path]
            plan.append((tool, target, f"path {path}"))
        # The entry points at several batch sizes, through the Python binding.
        target = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                  "tests/test_gpu_entry_points.py", "-k", "shape0 or step"]
        plan.append((tool, target, "entry points (binding)"))
    rows: list[dict | None] = [None] * len(plan)
    made = provenance.stamp()   # the commit, and the date the set started
    lock = threading.Lock()
    final = Path(results_dir) / "sanitize.json"
    partial, failed = final.with_name("sanitize.partial.json"), failed_path(final, results_dir)
    check_targets([final, partial, failed])

    def save(complete: bool) -> bool:
        done = [r for r in rows if r is not None]
        clean = complete and len(done) == len(plan) and all(r["errors"] == 0 and r["exit_code"] == 0 for r in done)
        write_json(partial, {"schema": 1, **made, "complete": complete, "clean": clean, "planned_runs": len(plan),
                             "runs": done})
        return clean

    def one(i: int) -> None:
        tool, target, label = plan[i]
        row = run_one(sanitizer, tool, target, label, timeout_s)
        with lock:
            rows[i] = row
            save(False)

    jobs = max(1, jobs or min(6, os.cpu_count() or 1))
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        list(pool.map(one, range(len(plan))))
    clean = save(True)
    path_rows = [r for r, (_, _, label) in zip(rows, plan) if label.startswith("path ")]
    if path_rows and all(r["exit_code"] == EXIT_CUDA_ERROR for r in path_rows):
        failed.parent.mkdir(parents=True, exist_ok=True)
        os.replace(partial, failed)
        print(f"sanitize: no run reached a CUDA device (mlp_train exit {EXIT_CUDA_ERROR}); {final} left as it was, "
              f"this run's rows in {failed}", file=sys.stderr)
        return EXIT_CUDA_ERROR
    os.replace(partial, final)
    print(f"sanitize: {'zero errors on every run' if clean else 'ERRORS (see results/sanitize.json)'}")
    return 0 if clean else 1


if __name__ == "__main__":
    raise SystemExit(sanitize(sys.argv[1:] or None))
