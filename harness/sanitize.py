"""compute-sanitizer over every kernel path: memcheck, racecheck, initcheck and synccheck on a
short run (cases 1-6 and one training epoch, `mlp_train --quick`), plus the entry points through
the Python binding. Writes results/sanitize.json: one row per (tool, path) with its error count."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from harness import atomic
from harness.config import BUILD_DIR, DATA_DIR, RESULTS_DIR, ROOT

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) error")


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
        print(f"          -> no result within {timeout_s} s", flush=True)
        return {"tool": tool, "target": label, "errors": None, "exit_code": None,
                "seconds": round(time.time() - t0, 1), "timed_out": True}
    m = SUMMARY.search(res.stdout + res.stderr)
    errors = int(m.group(1)) if m else None
    row = {"tool": tool, "target": label, "errors": errors, "exit_code": res.returncode,
           "seconds": round(time.time() - t0, 1)}
    if errors is None or errors > 0 or res.returncode not in (0,):
        row["log_tail"] = (res.stdout + res.stderr)[-3000:]
    print(f"          -> {errors} errors, exit {res.returncode}", flush=True)
    return row


def sanitize(paths: list[str] | None = None, tools=TOOLS, results_dir: Path = RESULTS_DIR,
             timeout_s: int = 300) -> int:
    """Every (tool, target) run; results/sanitize.json is rewritten after each one, so a run cut
    short still leaves what it finished (with "complete": false)."""
    sanitizer = find_sanitizer()
    binary = BUILD_DIR / "mlp_train"
    if not binary.exists():
        raise SystemExit(f"error: {binary} missing: run `invoke build` first")
    paths = paths or ["unfused", "fused", "graph", "persistent"]
    rows = []
    planned = len(tools) * (len(paths) + 1)

    def save(complete: bool) -> bool:
        clean = complete and all(r["errors"] == 0 and r["exit_code"] == 0 for r in rows)
        atomic.write_json(Path(results_dir) / "sanitize.json",
                          {"schema": 1, "complete": complete, "clean": clean, "planned_runs": planned, "runs": rows})
        return clean

    for tool in tools:
        for path in paths:
            target = [str(binary.relative_to(ROOT)), "--data", str(Path(DATA_DIR).relative_to(ROOT)), "--quick",
                      "--paths", path]
            rows.append(run_one(sanitizer, tool, target, f"path {path}", timeout_s))
            save(False)
        # The entry points at several batch sizes, through the Python binding.
        target = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                  "tests/test_gpu_entry_points.py", "-k", "shape0 or step"]
        rows.append(run_one(sanitizer, tool, target, "entry points (binding)", timeout_s))
        save(False)
    clean = save(True)
    print(f"sanitize: {'zero errors on every run' if clean else 'ERRORS (see results/sanitize.json)'}")
    return 0 if clean else 1


if __name__ == "__main__":
    raise SystemExit(sanitize(sys.argv[1:] or None))
