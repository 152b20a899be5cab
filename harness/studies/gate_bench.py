"""The course benchmark (issue 40): a generated course of N submissions (harness/gate/course_gen.py)
gated on this node's GPUs as `invoke gate` gates a course (harness/gate/course.py, sanitizers
included), timed; each verdict held against the generator's intent.

    python -m harness.studies.gate_bench --n N --seed S [--jobs J] [--gpus all|0,1] [--correct-share 0.5]
                                          [--racecheck-slots 1] [--out results/gate_bench.json] [--keep DIR]

Writes OUT (results/gate_bench.json, docs/formats.md): the commit and date, the GPUs, N, the seed,
the jobs, the sanitizer slots per tool and GPU, the wall time until the last build ended and of the
gating (the two overlap: a submission is gated as soon as its build ends), submissions a minute, each stage's
seconds over the course (count, median, 90th percentile, max, sum), and one row per file: its base,
defect, intent and the cases that must fail, the gate's verdict (the owner's, spec/verdict.py) and
the cases that failed, and whether the verdict is what the generator intended ("as_intended": PASS
for a correct file; FAIL with every case of `must_fail` failed, for a defect). RESULTS.md's "Gating
a course" section reads it. The course and its gate folders live in a temporary folder (kept with
--keep DIR, which must be missing or empty). Exit status: 0 the benchmark ran and every verdict was
as intended, 1 it ran and some was not, 2 bad input, 3 no submission reached a GPU.
"""
from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness.gate import course, course_gen, schedule
from spec import provenance, validate
from spec.files import RESULTS_DIR, InputError, write_json

OUT = RESULTS_DIR / "gate_bench.json"
EXIT_NOT_AS_INTENDED = 1


def stage_times(folders) -> dict[str, dict]:
    """{stage: {"n", "median_s", "p90_s", "max_s", "total_s"[, "wait_total_s"]}} over the run.json of
    each folder: a stage's own seconds, less the wait of an exclusive stage's child for the GPU alone
    (its record's gpu_wait_s), which is summed apart as wait_total_s."""
    seconds: dict[str, list[float]] = {}
    waits: dict[str, float] = {}
    for f in folders:
        doc = course.run_doc(f)
        for st in ((doc or {}).get("supervisor") or {}).get("stages", []):
            s, w = st.get("seconds"), st.get("gpu_wait_s")
            if isinstance(s, (int, float)):
                name = st.get("name", "?")
                if isinstance(w, (int, float)):
                    waits[name] = waits.get(name, 0.0) + float(w)
                    s = max(0.0, s - w)
                seconds.setdefault(name, []).append(float(s))
    out = {}
    for name, xs in seconds.items():
        xs = sorted(xs)
        out[name] = {"n": len(xs), "median_s": round(statistics.median(xs), 2),
                     "p90_s": round(xs[min(len(xs) - 1, int(0.9 * len(xs)))], 2), "max_s": round(xs[-1], 2),
                     "total_s": round(sum(xs), 1)}
        if name in waits:
            out[name]["wait_total_s"] = round(waits[name], 1)
    return out


def judged(manifest: dict, gated: Path) -> list[dict]:
    """One row per file of the manifest: what the gate said against what the generator intended."""
    folders = {e["file"]: gated / course.name_of(Path(e["file"])) for e in manifest["submissions"]}
    verdicts = course.verdicts_of([f for f in folders.values() if f.exists()])
    rows = []
    for e in manifest["submissions"]:
        f = folders[e["file"]]
        v = verdicts.get(f)
        doc = course.run_doc(f) or {}
        failed = sorted(c["id"] for c in doc.get("cases", []) if c.get("passed") is not True and c.get("id") != 8)
        if not f.exists():
            word, why = "FAIL", "not gated (no folder)"
        elif v is None:   # a build failure or a refusal: its row says why
            row = course.row_of(f, None)
            word, why = row["verdict"], row["first_hint"]
        elif isinstance(v, str):
            word, why = "FAIL", v
        else:
            word, why = v.word, v.first_hint
        must = list(e.get("must_fail") or [])
        ok = (word == "PASS") if e["intent"] == "PASS" else (word == "FAIL" and all(i in failed for i in must))
        rows.append({"file": e["file"], "base": e["base"], "defect": e.get("defect"), "intent": e["intent"],
                     "must_fail": must, "verdict": word, "failed_cases": failed, "first_hint": why,
                     "as_intended": ok})
    return rows


def bench(n: int, seed: int, jobs: int = 4, gpus: str | None = None, correct_share: float = 0.5,
          keep: Path | None = None, out: Path = OUT, racecheck_slots: int = 1) -> int:
    chosen = schedule.select_gpus(gpus)
    with tempfile.TemporaryDirectory(prefix="gate_bench_") as tmp:
        root = Path(keep) if keep else Path(tmp)
        if keep and root.exists() and any(root.iterdir()):
            raise InputError(f"error: --keep {str(keep)!r}: not empty")
        src, gated = root / "course", root / "gated"
        manifest = course_gen.write_course(src, n, seed, correct_share)
        print(f"gate_bench: {n} submissions (seed {seed}) in {src}", flush=True)
        timings: dict[str, float] = {}
        t0 = time.time()
        slots = {**schedule.SANITIZER_SLOTS, "racecheck": racecheck_slots}
        rc = course.gate_dir(src, gated, jobs=jobs, gpus=gpus, available=chosen, timings=timings,
                             sanitizer_slots=slots)
        wall = time.time() - t0
        if rc == course.EXIT_NO_GPU:
            return rc
        rows = judged(manifest, gated)
        folders = [gated / course.name_of(Path(e["file"])) for e in manifest["submissions"]]
        doc = {"schema": 1, **provenance.stamp(), "generator": {"n": n, "seed": seed, "correct_share": correct_share},
               "gpus": [g.record() for g in chosen], "jobs": jobs,
               "sanitizer_slots": slots,
               "build_s": round(timings.get("build_s", 0.0), 1),
               "builds_ended_s": round(timings.get("builds_ended_s", 0.0), 1), "gate_s": round(timings.get("gate_s", wall), 1),
               "wall_s": round(wall, 1), "submissions_per_minute": round(60.0 * n / wall, 2) if wall > 0 else None,
               "stages": stage_times(folders), "submissions": rows,
               "as_intended": sum(r["as_intended"] for r in rows), "all_as_intended": all(r["as_intended"] for r in rows)}
        write_json(Path(out), doc)
    print(f"gate_bench: {n} submissions in {doc['wall_s']} s ({doc['submissions_per_minute']} a minute; the last build "
          f"ended at {doc['builds_ended_s']} s, taken at {doc['build_s']} s); {doc['as_intended']} of {n} verdicts as intended -> {out}", flush=True)
    for r in rows:
        if not r["as_intended"]:
            print(f"gate_bench: NOT AS INTENDED {r['file']} ({r['base']}, {r['defect']}): intent {r['intent']} "
                  f"{r['must_fail']}, verdict {r['verdict']} failing {r['failed_cases']}: {r['first_hint'][:160]}",
                  flush=True)
    return 0 if doc["all_as_intended"] else EXIT_NOT_AS_INTENDED


def main(argv=None) -> int:
    ap = validate.ArgParser(prog="python -m harness.studies.gate_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", required=True, help="submissions in the generated course")
    ap.add_argument("--seed", default="40", help="the generator's seed (default 40)")
    ap.add_argument("--jobs", default="4", help="submissions gated at once on each GPU (default 4)")
    ap.add_argument("--gpus", default=None, help="'all' (default) or comma-separated GPU indices")
    ap.add_argument("--correct-share", default="0.5", help="the share of files with no defect (default 0.5)")
    ap.add_argument("--racecheck-slots", default="1", help="racecheck runs at once on each GPU (default 1)")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--keep", default=None, help="keep the course and its gate folders in this new folder")
    try:
        a = ap.parse_args(argv)
        jobs = validate.count(a.jobs, "--jobs", 1, 64)
        n = validate.count(a.n, "--n", 1, course_gen.MAX_FILES)
        seed = validate.count(a.seed, "--seed", 0, (1 << 63) - 1)
        share = validate.real(a.correct_share, "--correct-share", 0.0, 1.0)
        slots = validate.count(a.racecheck_slots, "--racecheck-slots", 1, 8)
        return bench(n, seed, jobs, a.gpus, share, Path(a.keep) if a.keep else None, Path(a.out), slots)
    except InputError as exc:
        print(str(exc), file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
