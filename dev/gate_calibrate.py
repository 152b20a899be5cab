"""dev/gate_calibrate.py — issue 40's calibration on a GPU (not evidence of a verdict): for each
submission named, the sanitizer workload once unsanitized (`--sanitizer-workload measure`: calls,
launches, seconds) and memcheck's and racecheck's wall time on it; then one racecheck alone against
two side by side. Prints a table; writes OUT/calib/calibration.json and the tools' logs.

    python3 dev/gate_calibrate.py [--subs naive,tiled16,...] [--overlap tiled16]

Needs build/ (ours, with its objects: dev/pack_devbuild.sh) and nvcc for the submissions' builds.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.gate import course

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ("naive,tiled16,tiled32,regtile,launch_heavy,atomic_bias,mutant_racy_tile,mutant_warp_race,"
           "mutant_forward_overrun")


def sanitizer() -> str:
    return shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"


def timed(cmd: list[str], log: Path, limit: float = 300.0) -> dict:
    t0 = time.time()
    with open(log, "w") as fh:
        try:
            rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT, timeout=limit).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    return {"rc": rc, "seconds": round(time.time() - t0, 2)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--subs", default=DEFAULT)
    ap.add_argument("--overlap", default="tiled16")
    a = ap.parse_args()
    out = Path(os.environ.get("OUT", "/tmp")) / "calib"
    out.mkdir(parents=True, exist_ok=True)
    names = a.subs.split(",")
    common = ROOT / "build"
    with ThreadPoolExecutor(max_workers=8) as pool:
        built = dict(zip(names, pool.map(lambda n: course.build_one(
            course.Submission(ROOT / "tests" / "submissions" / f"{n}.cu", n), "sm_90", common), names)))
    binaries = {n: b for n, (b, err) in built.items() if b is not None}
    for n, (b, err) in built.items():
        if b is None:
            print(f"{n}: does not build: {err}")
    binaries["ours"] = ROOT / "build" / "mlp_train"
    rows = {}
    for n, exe in binaries.items():
        wdir = out / n
        wdir.mkdir(exist_ok=True)
        r = {"measure": timed([str(exe), "--data", "data", "--out", str(wdir / "w"), "--sanitizer-workload",
                               "measure"], wdir / "measure.log", 120)}
        try:
            r["workload"] = json.loads((wdir / "w" / "sanitizer-workload.json").read_text())
        except (OSError, ValueError):
            r["workload"] = None
        for tool in ("memcheck", "racecheck"):
            r[tool] = timed([sanitizer(), "--tool", tool, "--error-exitcode", "99", str(exe), "--data", "data",
                             "--out", str(wdir / tool), "--sanitizer-workload", "once"], wdir / f"{tool}.log", 150)
        rows[n] = r
        w = r["workload"] or {}
        print(f"{n:24s} workload {r['measure']['seconds']:6.1f} s wall (rc {r['measure']['rc']}), "
              f"{w.get('calls')} calls, {w.get('launches')} launches, {w.get('seconds')} s | memcheck "
              f"{r['memcheck']['seconds']:6.1f} s rc {r['memcheck']['rc']} | racecheck {r['racecheck']['seconds']:6.1f} s "
              f"rc {r['racecheck']['rc']}", flush=True)
    overlap = {}
    if a.overlap in binaries:
        exe = binaries[a.overlap]
        cmd = lambda k: [sanitizer(), "--tool", "racecheck", str(exe), "--data", "data", "--out",  # noqa: E731
                         str(out / f"overlap{k}"), "--sanitizer-workload", "once"]
        overlap["one"] = timed(cmd(0), out / "overlap_one.log")
        t0 = time.time()
        with ThreadPoolExecutor(2) as pool:
            two = list(pool.map(lambda k: timed(cmd(k), out / f"overlap_two{k}.log"), (1, 2)))
        overlap["two_side_by_side"] = {"each": two, "wall": round(time.time() - t0, 2)}
        print(f"racecheck of {a.overlap}: one alone {overlap['one']['seconds']} s; two side by side "
              f"{overlap['two_side_by_side']['wall']} s wall", flush=True)
    (out / "calibration.json").write_text(json.dumps({"rows": rows, "overlap": overlap}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
