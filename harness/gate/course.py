"""Many submissions, the form a course uses: build every *.cu of a folder in its own build folder,
gate each in isolation (harness/gate/supervisor.py), and write the leaderboard.

    python -m harness.gate.course DIR [--jobs N] [--out results/gate]    build, gate, leaderboard
    python -m harness.gate.course --one FILE [--out results/gate]         one submission (a Slurm array task)
    python -m harness.gate.course --aggregate FOLDER... [--out results/gate]   leaderboard from existing folders

Each submission gets build/gate/<name>/ (our objects copied from build/, so only its own file,
mlp_train.o and the link are compiled; builds run in parallel on the CPU cores) and
results/gate/<name>/ (run.json, RESULTS.md rendered from it, stdout.log, stderr.log; build.json with the compiler's
first error line when it does not compile). The leaderboard (leaderboard.csv, leaderboard.md) has one
row per submission: cases passed, each case's verdict, the submission path's median epoch, its
ratio to our fastest path (results/run.json) and the first hint. Every submission also gets cases
11-12 (compute-sanitizer memcheck and racecheck on a short run of its binary,
harness/gate/sanitizer_cases.py; their logs OUT/<name>/memcheck.log, racecheck.log).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness.gate import sanitizer_cases
from harness.build import DEFAULT_ARCH, ENTRY_POINTS
from harness.gate.child import fastest_ms
from harness.gate.supervisor import supervise
from spec import catalog
from spec.files import BUILD_DIR, RESULTS_DIR, ROOT, write_all, write_json

GATE_ARGS = ("--paths", "submission", "--reference", "shipped")
STRICT = "--strict-determinism"   # a submission's rerun must then be bitwise identical, as ours must


def gate_args(strict_determinism: bool = False) -> list[str]:
    return [*GATE_ARGS, *([STRICT] if strict_determinism else [])]
GATED = "submission"   # the path cases 6-7 and the sanitizer cases 11-12 gate
OUT_DIR = RESULTS_DIR / "gate"


def _rel(p: Path) -> str:
    return os.path.relpath(Path(p).resolve(), ROOT)


def first_error(log: str) -> str:
    for line in log.splitlines():
        if "error" in line.lower() and "-Werror" not in line:
            return line.strip()[:300]
    lines = [ln for ln in log.splitlines() if ln.strip()]
    return lines[-1].strip()[:300] if lines else "the build failed without a message"


def build_common(arch: str) -> Path:
    """Our own build in build/ (a no-op when it is up to date): its objects are every
    submission's, except the submission's own and mlp_train.o."""
    subprocess.run(["make", "--no-print-directory", "-s", "-C", str(ROOT), f"-j{os.cpu_count() or 2}", f"ARCH={arch}",
                    f"BUILD={_rel(BUILD_DIR)}", f"{_rel(BUILD_DIR)}/mlp_train"], check=True)
    return BUILD_DIR


def build_one(src: Path, arch: str, common: Path, jobs: int = 2) -> tuple[Path | None, str]:
    """(binary, "") or (None, the compiler's first error line / what is missing)."""
    name = Path(src).stem
    bdir = BUILD_DIR / "gate" / name
    shutil.rmtree(bdir, ignore_errors=True)
    for obj in Path(common).rglob("*.o"):
        rel = obj.relative_to(common)
        if rel.parts[0] in ("gate", "sub", "asan", ".submission-check") or rel.name in ("submission.o", "mlp_train.o"):
            continue
        (bdir / rel.parent).mkdir(parents=True, exist_ok=True)
        shutil.copy2(obj, bdir / rel)
    bdir.mkdir(parents=True, exist_ok=True)
    stamp = bdir / "config.stamp"
    shutil.copy2(Path(common) / "config.stamp", stamp)
    # -o config.stamp: our copied objects count as up to date although SUBMISSION differs.
    cmd = ["make", "--no-print-directory", "-C", str(ROOT), f"-j{jobs}", f"ARCH={arch}", f"BUILD={_rel(bdir)}",
           f"SUBMISSION={_rel(src)}", "-o", f"{_rel(stamp)}", f"{_rel(bdir)}/mlp_train"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        return None, first_error(res.stdout + res.stderr)
    nm = subprocess.run(["nm", "--defined-only", "-g", str(bdir / "submission.o")], capture_output=True, text=True)
    have = {ln.split()[-1] for ln in nm.stdout.splitlines() if ln.strip()}
    missing = [f for f in ENTRY_POINTS if f not in have]
    if missing:
        return None, f"lacks {', '.join(missing)} (cuda/contract/submission.h's entry points, extern \"C\")"
    return bdir / "mlp_train", ""


def gate_one(src: Path, out: Path, arch: str, common: Path, limit: float | None = None,
             strict_determinism: bool = False) -> int:
    binary, error = build_one(src, arch, common)
    folder = Path(out) / Path(src).stem
    folder.mkdir(parents=True, exist_ok=True)
    if binary is None:
        write_json(folder / "build.json", {"submission": _rel(src), "build_error": error})
        (folder / "run.json").unlink(missing_ok=True)
        print(f"gate: {src}: does not build: {error}", flush=True)
        return 1
    (folder / "build.json").unlink(missing_ok=True)
    rc = supervise(binary, folder, gate_args(strict_determinism), limit, sanitize=GATED)
    render_report(folder)
    return rc


STREAM_CASE = "stream-contract"   # a submission that fails it gets no time: its work may escape the timed stream


def row_of(folder: Path, ours_ms: float | None, case_ids: tuple[int, ...] | None = None) -> dict:
    """One leaderboard row: every verdict case, the submission path's median epoch and its ratio to
    ours, the first hint (never empty for a FAIL) and the run's notes."""
    folder = Path(folder)
    case_ids = case_ids or catalog.verdict_case_ids()
    row = {"submission": folder.name, "passed": "0/%d" % len(case_ids), "verdict": "FAIL",
           **{f"case{i}": "" for i in case_ids}, "median_ms": "", "ratio": "", "first_hint": "", "notes": ""}
    build = folder / "build.json"
    if build.exists():
        row["first_hint"] = "does not build: " + json.loads(build.read_text())["build_error"]
        return row
    try:
        doc = json.loads((folder / "run.json").read_text())
    except (OSError, ValueError):
        row["first_hint"] = "no run.json"
        return row
    cases = {c["id"]: c for c in doc.get("cases", [])}
    n = 0
    for i in case_ids:
        c = cases.get(i)
        v = "-" if c is None else ("PASS" if c["passed"] else "FAIL")
        row[f"case{i}"] = v
        n += v == "PASS"
    row["passed"] = f"{n}/{len(case_ids)}"
    sup = doc.get("supervisor") or {}
    # A path whose parity or rerun fails, or a stage that did not end by itself, fails it too.
    row["verdict"] = "PASS" if n == len(case_ids) and not sup.get("path_failures") and \
        not sup.get("stage_failures") else "FAIL"
    stream_failed = any(c.get("name") == STREAM_CASE and c.get("passed") is not True for c in cases.values())
    sub = doc.get("paths", {}).get("submission", {})
    ms = sub.get("median_ms") if isinstance(sub, dict) else None
    if isinstance(ms, (int, float)) and not stream_failed:
        row["median_ms"] = f"{ms:.3f}"
        if ours_ms:
            row["ratio"] = f"{ms / ours_ms:.2f}"
    hints = list(doc.get("hints") or [])
    ended = sup.get("ended", "")
    first = hints[0] if hints else ""
    if row["verdict"] == "FAIL" and not first:  # never a FAIL without a reason
        failed = [c for c in cases.values() if c.get("passed") is not True and c.get("id") in case_ids]
        first = (sup.get("path_failures") or [""])[0] or (
            f"case {failed[0]['id']} {failed[0].get('name', '')}: {failed[0].get('detail', '')}"[:200] if failed else
            "a case is missing from run.json (the run did not finish)")
    row["first_hint"] = (f"{ended}: " if ended and not ended.startswith("exited") else "") + first
    notes = list(doc.get("notes") or [])
    if stream_failed and isinstance(ms, (int, float)):
        notes.append(f"no time: case 13 {STREAM_CASE} failed (work outside the timed stream)")
    row["notes"] = "; ".join(notes)
    return row


def folders_of(dirs) -> list[Path]:
    out = []
    for d in map(Path, dirs):
        if (d / "run.json").exists() or (d / "build.json").exists():
            out.append(d)
        elif d.is_dir():
            out += sorted(p for p in d.iterdir() if (p / "run.json").exists() or (p / "build.json").exists())
    return out


def render_report(folder: Path) -> bool:
    """FOLDER/RESULTS.md from FOLDER/run.json (analysis/report.py: the full report, or the short
    one of a supervised run that did not finish); a folder without run.json has none. A report
    that cannot be rendered is one line, and the leaderboard goes on."""
    from analysis.report import main as report_main
    folder = Path(folder)
    if not (folder / "run.json").exists():
        return False
    try:
        return report_main(["--results", str(folder), "--out", str(folder / "RESULTS.md")]) == 0
    except Exception as exc:  # noqa: BLE001 - one submission's report must not end the others'
        print(f"gate: {folder.name}: RESULTS.md not rendered: {type(exc).__name__}: {exc}", file=sys.stderr)
        return False


def leaderboard(folders, out: Path = OUT_DIR, results: Path = RESULTS_DIR, reports: bool = True) -> list[dict]:
    """The leaderboard of `folders` into OUT; with `reports`, each folder's RESULTS.md too."""
    if reports:
        for f in folders:
            render_report(f)
    ours = fastest_ms(results)
    case_ids = catalog.verdict_case_ids()
    rows = sorted((row_of(f, ours, case_ids) for f in folders),
                  key=lambda r: (-int(r["passed"].split("/")[0]), float(r["median_ms"] or "inf"), r["submission"]))
    cols = list(rows[0]) if rows else ["submission"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    head = ["submission", "passed", *[f"{i}" for i in case_ids], "median ms", "x ours", "first hint", "notes"]
    md = [f"# Gate leaderboard\n\nOur fastest path: {ours:.3f} ms an epoch (results/run.json).\n" if ours else
          "# Gate leaderboard\n", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        cells = [r["submission"], r["passed"], *[r[f"case{i}"] for i in case_ids], r["median_ms"], r["ratio"],
                 r["first_hint"].replace("|", "\\|"), r["notes"].replace("|", "\\|")]
        md.append("| " + " | ".join(cells) + " |")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_all({out / "leaderboard.csv": buf.getvalue(), out / "leaderboard.md": "\n".join(md) + "\n"})
    print(f"gate: leaderboard of {len(rows)} submissions -> {_rel(out / 'leaderboard.md')}", flush=True)
    return rows


def gate_dir(src_dir: Path, out: Path = OUT_DIR, jobs: int = 1, arch: str = DEFAULT_ARCH,
             limit: float | None = None, sanitize_jobs: int | None = None, strict_determinism: bool = False) -> int:
    """Build every *.cu of SRC_DIR, gate each (`jobs` at a time: timings undisturbed at 1), then
    run cases 11-12 (compute-sanitizer) on every one that built, `sanitize_jobs` at a time (they
    are correctness runs, bound by the tool's host work, not timings), then the leaderboard."""
    sources = sorted(Path(src_dir).glob("*.cu"))
    if not sources:
        print(f"error: {src_dir}: no *.cu files", file=sys.stderr)
        return 2
    common = build_common(arch)
    # Builds in parallel on the CPU cores; then the gate runs, `jobs` at a time on the GPU.
    with ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2) // 2)) as pool:
        built = list(pool.map(lambda s: (s, *build_one(s, arch, common)), sources))
    out = Path(out)

    def run(item):
        src, binary, error = item
        folder = out / src.stem
        folder.mkdir(parents=True, exist_ok=True)
        if binary is None:
            write_json(folder / "build.json", {"submission": _rel(src), "build_error": error})
            (folder / "run.json").unlink(missing_ok=True)
            return
        (folder / "build.json").unlink(missing_ok=True)
        return supervise(binary, folder, gate_args(strict_determinism), limit)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        rcs = list(pool.map(run, built))

    def sanitize(item):
        (src, binary, _), rc = item
        if binary is not None and rc in (0, 1):
            sanitizer_cases.apply(binary, out / src.stem, GATED, rc)

    with ThreadPoolExecutor(max_workers=max(1, sanitize_jobs or min(6, os.cpu_count() or 1))) as pool:
        list(pool.map(sanitize, zip(built, rcs)))
    leaderboard([out / s.stem for s in sources], out)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--one", help="gate one submission into OUT/<name> (a Slurm array task)")
    ap.add_argument("--aggregate", nargs="+", help="folders to build the leaderboard from")
    ap.add_argument("--out", default=str(OUT_DIR))
    ap.add_argument("--jobs", type=int, default=1, help="submissions gated at once on the GPU")
    ap.add_argument("--arch", default=DEFAULT_ARCH)
    ap.add_argument("--limit", type=float, default=None, help="each run's time limit, s (default: derived)")
    ap.add_argument(STRICT, action="store_true",
                    help="a submission's one-epoch rerun must be bitwise identical (default: within the parity limit, "
                         "with a note)")
    ap.add_argument("--sanitize-jobs", type=int, default=None,
                    help="compute-sanitizer runs (cases 11-12) at once (default min(6, CPU cores))")
    a = ap.parse_args(argv)
    if a.aggregate:
        folders = folders_of(a.aggregate)
        if not folders:
            print("error: --aggregate: no folder with a run.json or build.json", file=sys.stderr)
            return 2
        leaderboard(folders, Path(a.out))
        return 0
    if a.one:
        # An array task links the build/ that `invoke build` made (concurrent tasks must not remake it).
        common = BUILD_DIR if (BUILD_DIR / "mlp_train").exists() else build_common(a.arch)
        return gate_one(Path(a.one), Path(a.out), a.arch, common, a.limit, a.strict_determinism)
    if not a.dir:
        ap.error("give DIR, --one FILE or --aggregate FOLDER...")
    return gate_dir(Path(a.dir), Path(a.out), a.jobs, a.arch, a.limit, a.sanitize_jobs, a.strict_determinism)


if __name__ == "__main__":
    raise SystemExit(main())
