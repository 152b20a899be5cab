"""dev/racecheck_overlap.py — do two racecheck runs side by side on one GPU finish sooner than one after
the other? (issue 40: the course's racecheck slots per GPU, harness/gate/schedule.py SANITIZER_SLOTS.)

    python dev/racecheck_overlap.py --out DIR SUBMISSION.cu|BINARY [...]

For each submission (built as the course builds it, into build/gate/<name>/) or built mlp_train, the racecheck run the
gate makes (harness/gate/sanitizer_cases.py tool_command) is run REPS times one at a time, then REPS times two at a
time (pairs started together); each run's seconds and the two walls go to DIR/racecheck_overlap.json,
and one line per binary says which was faster. Nothing else may use the GPU meanwhile."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from harness.gate.sanitizer_cases import find_sanitizer, tool_command  # noqa: E402
from spec import provenance  # noqa: E402
from spec.files import ROOT, write_json  # noqa: E402

REPS = 4


def one(sanitizer: str, binary: Path, tmp: Path, k: str) -> float:
    cmd = tool_command(sanitizer, "racecheck", binary, tmp / k)
    t0 = time.time()
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if res.returncode != 0:
        raise SystemExit(f"racecheck_overlap: {binary}: exit {res.returncode}: {res.stdout[-300:]}{res.stderr[-300:]}")
    return round(time.time() - t0, 2)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("binaries", nargs="+", type=Path)
    a = ap.parse_args(argv)
    sanitizer = find_sanitizer()
    if sanitizer is None:
        print("racecheck_overlap: compute-sanitizer not found", file=sys.stderr)
        return 2
    binaries = []
    for b in a.binaries:
        if b.suffix == ".cu":
            from harness.gate import course
            built, error = course.build_one(course.Submission(b, course.name_of(b)), "sm_90",
                                            course.build_common("sm_90"), jobs=8)
            if built is None:
                print(f"racecheck_overlap: {b}: {error}", file=sys.stderr)
                return 2
            b = built.relative_to(ROOT)
        binaries.append(b)
    rows = []
    with tempfile.TemporaryDirectory() as t:
        tmp = Path(t)
        for b in binaries:
            one(sanitizer, b, tmp, "warm")                       # the first run's loads out of the measure
            t0 = time.time()
            serial = [one(sanitizer, b, tmp, f"s{i}") for i in range(REPS)]
            serial_wall = round(time.time() - t0, 2)
            t0 = time.time()
            paired = []
            with ThreadPoolExecutor(2) as pool:
                for i in range(0, REPS, 2):
                    paired += list(pool.map(lambda k: one(sanitizer, b, tmp, k), [f"p{i}", f"p{i + 1}"]))
            paired_wall = round(time.time() - t0, 2)
            row = {"binary": str(b), "reps": REPS, "one_at_a_time_s": serial, "one_at_a_time_wall_s": serial_wall,
                   "two_at_a_time_s": paired, "two_at_a_time_wall_s": paired_wall,
                   "two_over_one": round(paired_wall / serial_wall, 3) if serial_wall > 0 else None}
            rows.append(row)
            print(f"{b}: {REPS} racechecks one at a time {serial_wall:.1f} s, two at a time {paired_wall:.1f} s "
                  f"(x{row['two_over_one']}): {'two' if paired_wall < serial_wall else 'one'} at a time is faster",
                  flush=True)
    a.out.mkdir(parents=True, exist_ok=True)
    write_json(a.out / "racecheck_overlap.json", {"schema": 1, **provenance.stamp(), "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
