"""Many submissions, the form a course uses: build every *.cu of a folder in its own build folder,
gate each in isolation (harness/gate/supervisor.py) on the node's GPUs, and write the leaderboard.

    python -m harness.gate.course DIR [--gpus all|0,1] [--jobs N] [--out results/gate]   build, gate, leaderboard
    python -m harness.gate.course --one FILE [--out results/gate]         one submission (a Slurm array task)
    python -m harness.gate.course --aggregate FOLDER... [--out results/gate]   leaderboard from existing folders

Names. A submission's folders are named after its file's stem when that is a safe name
(spec/validate.py); any other stem (a space, a quote, '$(HOME)', '..', 'leaderboard.csv') gets a
derived safe name (its safe characters and a hash of the stem). The build never sees the original
name: the file and the headers beside it are copied under safe names into build/gate/<name>/src/,
and make gets only that copy's path. The leaderboard shows both names.

Folders. Each submission gets build/gate/<name>/ (our objects copied from build/, so only its own
file, cli/submission_info.o (which file is linked) and the link are compiled; builds run in parallel on the CPU cores) and
OUT/<name>/ (run.json, RESULTS.md, the stages' logs and parts, memcheck.log, racecheck.log; or
build.json with the compiler's first error line). A run is written into OUT/.<name>.running-*/ and
replaces OUT/<name>/ only once a case has run, so a run that reached no GPU leaves the folder as it
was.

GPUs. harness/gate/schedule.py: `--jobs` submissions at once on each GPU of `--gpus`, each child
seeing its GPU alone; the stages that time epochs or read the free memory do that work alone on
their GPU (their child's start runs beside the others: schedule.GpuLock.to_exclusive, cuda/cli/gpu_section.h).
run.json records the GPU a submission ran on ("gate_gpu": index, name, UUID).

The leaderboard (leaderboard.csv, leaderboard.md, written together or not at all) has one row per
submission: the gate's verdict (its one owner's, spec/verdict.py; PASS rows first), cases passed,
each case's row, the submission path's median epoch (none when the
stream contract failed: its work may have escaped the timed stream), its ratio to our fastest
path (results/run.json, read when the board is written), the first hint (never empty for a FAIL),
the notes and the GPU, and the precision cases 1-5 and 9 held it to (its mlp_precision(), fp32 by
default). A submission mlp_train refuses before any case (an mlp_precision() out of range: exit 2)
is a FAIL row naming the binary's line ("refused: ..."). Exit status: 0 a leaderboard was written; 1 nothing could be gated (no
submission built); 2 bad input; 3 no submission reached a GPU. In the last two cases OUT is left
as it was.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from harness.build import DEFAULT_ARCH, ENTRY_POINTS
from harness.gate import schedule
from harness.gate.child import fastest_ms, ours_gpu
from harness.gate.supervisor import supervise_run
from spec import catalog, validate, verdict
from spec.files import BUILD_DIR, RESULTS_DIR, ROOT, InputError, replace_folder, write_all, write_json

GATE_ARGS = ("--paths", "submission", "--reference", "shipped")
STRICT = "--strict-determinism"   # a submission's rerun must then be bitwise identical, as ours must
GATED = "submission"   # the path cases 6-7 and the sanitizer cases 11-12 gate
OUT_DIR = RESULTS_DIR / "gate"
SOURCE_SUFFIXES = (".cu", ".cuh", ".h", ".hpp", ".inl")   # what a submission may include from beside it
EXIT_NOTHING_BUILT, EXIT_BAD_INPUT, EXIT_NO_GPU = 1, 2, 3


def gate_args(strict_determinism: bool = False) -> list[str]:
    return [*GATE_ARGS, *([STRICT] if strict_determinism else [])]


def _rel(p: Path) -> str:
    return os.path.relpath(Path(p).resolve(), ROOT)


@dataclass(frozen=True)
class Submission:
    src: Path   # the file as given (never handed to make or a shell)
    name: str   # its safe name: build/gate/<name>/, OUT/<name>/


def name_of(src: Path) -> str:
    """The stem when it is a safe name, else its safe characters and the first 8 hex digits of the
    stem's SHA-256 (always a safe name; the hash keeps two unsafe stems apart)."""
    stem = Path(src).name[:-3] if Path(src).name.endswith(".cu") else Path(src).stem
    try:
        return validate.safe_name(stem, "submission")
    except InputError:
        kept = re.sub(r"[^A-Za-z0-9_-]+", "_", stem).strip("_-")[:40]
        digest = hashlib.sha256(stem.encode("utf-8", "surrogateescape")).hexdigest()[:8]
        return validate.safe_name(f"{kept}-{digest}" if kept else f"submission-{digest}", "submission")


def submissions_in(src_dir: Path) -> list[Submission]:
    """Every regular *.cu file of SRC_DIR (not a subfolder's), by name."""
    src_dir = Path(src_dir)
    if not src_dir.is_dir():
        raise InputError(f"error: {src_dir}: not a folder of submissions")
    subs = [Submission(p, name_of(p)) for p in sorted(src_dir.iterdir()) if p.name.endswith(".cu") and p.is_file()]
    seen: dict[str, Path] = {}
    for s in subs:
        if s.name in seen:
            raise InputError(f"error: {s.src.name!r} and {seen[s.name].name!r}: both would be gated as {s.name!r}; "
                             f"rename one")
        seen[s.name] = s.src
    return subs


def first_error(log: str) -> str:
    for line in log.splitlines():
        if "error" in line.lower() and "-Werror" not in line:
            return line.strip()[:300]
    lines = [ln for ln in log.splitlines() if ln.strip()]
    return lines[-1].strip()[:300] if lines else "the build failed without a message"


def build_common(arch: str) -> Path:
    """Our own build in build/ (a no-op when it is up to date): its objects are every
    submission's, except the submission's own and cli/submission_info.o (which file is linked)."""
    subprocess.run(["make", "--no-print-directory", "-s", "-C", str(ROOT), f"-j{os.cpu_count() or 2}", f"ARCH={arch}",
                    f"BUILD={_rel(BUILD_DIR)}", f"{_rel(BUILD_DIR)}/mlp_train"], check=True)
    return BUILD_DIR


def copy_sources(sub: Submission, into: Path) -> Path:
    """The submission as INTO/<name>.cu, beside copies of the sources next to it whose names are safe
    (what it may #include "..."); the copy's path, the one make sees."""
    into.mkdir(parents=True, exist_ok=True)
    for p in sorted(sub.src.parent.iterdir()):
        if p.suffix in SOURCE_SUFFIXES and p.suffix != ".cu" and p.is_file():
            try:
                shutil.copyfile(p, into / validate.safe_name(p.name, "header"))
            except InputError:
                continue   # an #include of it then fails to compile, naming it
    target = into / f"{sub.name}.cu"
    shutil.copyfile(sub.src, target)
    return target


def build_one(sub: Submission, arch: str, common: Path, jobs: int = 2) -> tuple[Path | None, str]:
    """(binary, "") or (None, the compiler's first error line / what is missing)."""
    bdir = BUILD_DIR / "gate" / sub.name
    shutil.rmtree(bdir, ignore_errors=True)
    for obj in Path(common).rglob("*.o"):
        rel = obj.relative_to(common)
        if rel.parts[0] in ("gate", "sub", "asan", ".submission-check") or rel.name in ("submission.o", "submission_info.o"):
            continue
        (bdir / rel.parent).mkdir(parents=True, exist_ok=True)
        shutil.copy2(obj, bdir / rel)
    bdir.mkdir(parents=True, exist_ok=True)
    try:
        source = copy_sources(sub, bdir / "src")
    except OSError as exc:
        return None, f"cannot read {sub.src.name!r}: {exc.strerror or exc}"
    stamp = bdir / "config.stamp"
    shutil.copy2(Path(common) / "config.stamp", stamp)
    # -o config.stamp: our copied objects count as up to date although SUBMISSION differs.
    cmd = ["make", "--no-print-directory", "-C", str(ROOT), f"-j{jobs}", f"ARCH={arch}", f"BUILD={_rel(bdir)}",
           f"SUBMISSION={_rel(source)}", "-o", f"{_rel(stamp)}", f"{_rel(bdir)}/mlp_train"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        return None, first_error(res.stdout + res.stderr)
    nm = subprocess.run(["nm", "--defined-only", "-g", str(bdir / "obj" / "submission.o")], capture_output=True,
                        text=True)
    have = {ln.split()[-1] for ln in nm.stdout.splitlines() if ln.strip()}
    missing = [f for f in ENTRY_POINTS if f not in have]
    if missing:
        return None, f"lacks {', '.join(missing)} (cuda/contract/submission.h's entry points, extern \"C\")"
    return bdir / "mlp_train", ""


STREAM_CASE = "stream-contract"   # a submission that fails it gets no time: its work may escape the timed stream


def run_doc(folder: Path) -> dict | None:
    """FOLDER/run.json when the folder's verdict is a gate run's (not a build failure, a refusal or a
    Slurm task that wrote none), else None."""
    folder = Path(folder)
    if _slurm_ending(folder) is not None or (folder / "build.json").exists():
        return None
    try:
        doc = json.loads((folder / "run.json").read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def verdicts_of(folders) -> dict[Path, verdict.Verdict | str]:
    """Each gate run's verdict, from the owner (spec/verdict.py) in one call; a folder whose run.json the
    owner cannot read, or records a verdict its evidence does not give, maps to why (its row then FAILs
    naming that)."""
    docs = {Path(f): d for f in folders if (d := run_doc(f)) is not None}
    out: dict[Path, verdict.Verdict | str] = {}
    for (f, doc), v in zip(docs.items(), verdict.decide_all(docs.values(), errors="return")):
        why = None if isinstance(v, str) else verdict.disagreement(doc, v)
        out[f] = (f"run.json is no gate run: {v}" if isinstance(v, str) else
                  f"run.json was changed after its verdict: {why}" if why else v)
    return out


def row_of(folder: Path, ours_ms: float | None, case_ids: tuple[int, ...] | None = None,
           v: verdict.Verdict | str | None = None, ours_on: str = "") -> dict:
    """One leaderboard row: the verdict (the owner's, `v`: verdicts_of's; decided here when None),
    every verdict case's row, the submission path's median epoch and its ratio to ours, the first
    hint (never empty for a FAIL), the run's notes and the GPU it ran on. `ours_on`: the GPU name
    of ours_ms's run; where both names are known and differ, the ratio is left out (a time on one
    card over a time on another says nothing about the submission) and the notes say why."""
    folder = Path(folder)
    case_ids = case_ids or catalog.verdict_case_ids()
    row = {"submission": folder.name, "file": "", "passed": "0/%d" % len(case_ids), "verdict": "FAIL", "precision": "",
           **{f"case{i}": "" for i in case_ids}, "median_ms": "", "ratio": "", "first_hint": "", "notes": "",
           "gpu": ""}
    slurm = _slurm_ending(folder)
    if slurm is not None:
        row["first_hint"] = slurm
        return row
    build = folder / "build.json"
    if build.exists():
        doc = json.loads(build.read_text())
        row["file"] = str(doc.get("submission", ""))
        row["first_hint"] = ("refused: " + str(doc["refused"]) if doc.get("refused")
                             else "does not build: " + str(doc.get("build_error", "")))
        return row
    doc = run_doc(folder)
    if doc is None:
        row["first_hint"] = "no run.json"
        return row
    if v is None:
        v = verdicts_of([folder])[folder]
    row["file"] = str((doc.get("gate_submission") or {}).get("file", ""))
    # The precision cases 1-5 and 9 were held to (mlp_precision(); a run before it: fp32; none without a recipe).
    row["precision"] = str(doc.get("gate_precision") or ("fp32" if doc.get("recipe") else ""))
    gpu = doc.get("gate_gpu") or {}
    gpu_name = str(gpu.get("name") or "")
    row["gpu"] = (f"{gpu['index']}: " if gpu.get("index") is not None else "") + str(gpu.get("name") or "")
    cases = {c["id"]: c for c in doc.get("cases", [])}
    n = 0
    for i in case_ids:
        c = cases.get(i)
        shown = "-" if c is None else ("PASS" if c.get("passed") is True else "FAIL")
        row[f"case{i}"] = shown
        n += shown == "PASS"
    row["passed"] = f"{n}/{len(case_ids)}"
    if isinstance(v, str):   # the recorded verdict disagrees with the evidence: never a PASS
        row["verdict"], row["first_hint"] = "FAIL", v
    else:
        row["verdict"], row["first_hint"] = v.word, v.first_hint
    stream_failed = any(c.get("name") == STREAM_CASE and c.get("passed") is not True for c in cases.values())
    sub = doc.get("paths", {}).get("submission", {})
    ms = sub.get("median_ms") if isinstance(sub, dict) else None
    notes = list(doc.get("notes") or [])
    if isinstance(ms, (int, float)) and not stream_failed:
        row["median_ms"] = f"{ms:.3f}"
        if ours_ms and ours_on and gpu_name and ours_on != gpu_name:
            notes.append(f"no x ours: ours ran on {ours_on}, this submission on {gpu_name}")
        elif ours_ms:
            row["ratio"] = f"{ms / ours_ms:.2f}"
    if stream_failed and isinstance(ms, (int, float)):
        notes.append(f"no time: case 13 {STREAM_CASE} failed (work outside the timed stream)")
    row["notes"] = "; ".join(notes)
    return row


def _is_gate_folder(p: Path) -> bool:
    """A submission's folder: its verdict (run.json, build.json), or the Slurm record of a task that
    wrote none (slurm.json, slurm/gate_aggregate.sbatch)."""
    return any((p / f).is_file() for f in ("run.json", "build.json", "slurm.json"))


def _slurm_ending(folder: Path) -> str | None:
    """slurm.json's "ended" when its task wrote no verdict or was cut short (then whatever verdict
    it wrote is not the submission's), else None."""
    try:
        doc = json.loads((folder / "slurm.json").read_text())
    except (OSError, ValueError):
        return None
    if isinstance(doc, dict) and (not doc.get("verdict_written") or doc.get("cut_short")):
        return str(doc.get("ended") or "the Slurm task ended without a verdict")
    return None


def folders_of(dirs) -> tuple[list[Path], list[dict]]:
    """(the submission folders among DIRS: each one itself or its subfolders, in order; the ones
    skipped, each {"name", "why"}). Hidden folders (a run in progress) are passed over."""
    found: list[Path] = []
    skipped: list[dict] = []

    def take(p: Path) -> None:
        try:
            validate.safe_name(p.name, "folder")
        except InputError:
            skipped.append({"name": ascii(p.name), "why": "not a safe name"})
            return
        found.append(p)

    for d in map(Path, dirs):
        if _is_gate_folder(d):
            take(d)
        elif not d.exists():
            skipped.append({"name": str(d), "why": "no such folder"})
        elif not d.is_dir():
            skipped.append({"name": str(d), "why": "not a folder"})
        else:
            subs = sorted(p for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))
            for p in subs:
                if _is_gate_folder(p):
                    take(p)
                else:
                    skipped.append({"name": str(p), "why": "no run.json, build.json or slurm.json"})
            if not subs:
                skipped.append({"name": str(d), "why": "no run.json, build.json or slurm.json, and no submission folders"})
    return found, skipped


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


def leaderboard(folders, out: Path = OUT_DIR, results: Path = RESULTS_DIR, reports: bool = True,
                skipped=()) -> list[dict]:
    """The leaderboard of `folders` into OUT (both files or neither); with `reports`, each folder's
    RESULTS.md too. `skipped`: {"name", "why"} of what was left out, listed under the table."""
    if reports:
        for f in folders:
            render_report(f)
    ours, ours_on = fastest_ms(results), ours_gpu(results)
    case_ids = catalog.verdict_case_ids()
    verdicts = verdicts_of(folders)
    rows = sorted((row_of(f, ours, case_ids, verdicts.get(Path(f)), ours_on) for f in folders),
                  key=lambda r: (r["verdict"] != "PASS", -int(r["passed"].split("/")[0]), float(r["median_ms"] or "inf"),
                                 r["submission"]))
    cols = list(rows[0]) if rows else ["submission"]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    head = ["submission", "verdict", "passed", "precision", *[f"{i}" for i in case_ids], "median ms", "x ours", "first hint", "notes",
            "GPU"]
    md = [f"# Gate leaderboard\n\nOur fastest path: {ours:.3f} ms an epoch{' on ' + _md(ours_on) if ours_on else ''} "
          "(results/run.json); x ours only for submissions gated on a GPU of that name.\n" if ours else
          "# Gate leaderboard\n", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        shown = r["submission"] + (f" ({_md(r['file'])})" if r["file"] and r["file"] != r["submission"] + ".cu" else "")
        cells = [shown, f"**{r['verdict']}**" if r["verdict"] == "FAIL" else r["verdict"], r["passed"], r["precision"], *[r[f"case{i}"] for i in case_ids], r["median_ms"], r["ratio"],
                 _md(r["first_hint"]), _md(r["notes"]), _md(r["gpu"])]
        md.append("| " + " | ".join(cells) + " |")
    if skipped:
        md.append("\nLeft out: " + "; ".join(f"{_md(s['name'])} ({_md(s['why'])})" for s in skipped) + ".")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_all({out / "leaderboard.csv": buf.getvalue(), out / "leaderboard.md": "\n".join(md) + "\n"})
    print(f"gate: leaderboard of {len(rows)} submissions -> {_rel(out / 'leaderboard.md')}"
          + (f"; left out {len(skipped)}: " + "; ".join(f"{s['name']} ({s['why']})" for s in skipped) if skipped else ""),
          flush=True)
    return rows




def _md(text: str) -> str:
    """Text for a Markdown table cell: one line, no cell separators, no HTML."""
    return " ".join(str(text).split()).replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;")


def _build_failure_folder(sub: Submission, error: str, out: Path) -> None:
    tmp = out / f".{sub.name}.running-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    write_json(tmp / "build.json", {"submission": sub.src.name, "name": sub.name, "build_error": error})
    replace_folder(tmp, out / sub.name)


def _refusal(logs: Path) -> str:
    """The binary's one line of a run it refused before any case (exit 2: with the course's own valid
    arguments, the submission's mlp_precision() out of range), from its first stage's stderr."""
    for name in ("stage-entry.stderr.log", "stderr.log"):
        try:
            lines = (Path(logs) / name).read_text(errors="replace").splitlines()
        except OSError:
            continue
        errors = [ln for ln in lines if ln.startswith("mlp_train: error:")]
        if errors:
            return errors[-1][:300]
    return "mlp_train refused the run (exit 2) without a message"


def _refused_folder(sub: Submission, line: str, out: Path) -> None:
    """OUT/<name>/build.json for a submission that builds but that mlp_train refuses to gate."""
    tmp = out / f".{sub.name}.running-{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    write_json(tmp / "build.json", {"submission": sub.src.name, "name": sub.name, "refused": line})
    replace_folder(tmp, out / sub.name)


def _gpu_record(folder: Path, gpu: schedule.Gpu | None) -> dict:
    """The GPU the run ran on: the scheduler's, else what the binary saw (CUDA_VISIBLE_DEVICES
    as the caller set it, e.g. by Slurm)."""
    try:
        seen = json.loads((folder / "run.json").read_text()).get("gpu") or {}
    except (OSError, ValueError):
        seen = {}
    if gpu is not None:
        return gpu.record()
    return {"index": None, "name": seen.get("name"), "uuid": seen.get("uuid")}


def gate_submission(sub: Submission, binary: Path, out: Path, limit: float | None, strict: bool,
                    gpu: schedule.Gpu | None = None, lock: schedule.GpuLock | None = None,
                    env_extra: dict[str, str] | None = None, keep_unstarted: bool = False) -> tuple[str, int]:
    """Gate one built submission into OUT/<name>: ("gated", status) once a case ran; ("refused", 2)
    when mlp_train refused it before any case (bad input: an mlp_precision() out of range), with
    OUT/<name>/build.json naming why; else ("unstarted", status) with OUT/<name> as it was
    (`keep_unstarted`: the supervisor's short doc of why is kept there when OUT/<name> did not exist)."""
    tmp = out / f".{sub.name}.running-{uuid.uuid4().hex[:8]}"
    env = {**(gpu.env() if gpu else {}), **(env_extra or {})}
    guard = lock.stage if lock else None
    outcome = supervise_run(binary, tmp, gate_args(strict), limit, sanitize=GATED, env=env or None, guard=guard,
                            sanitizer_guard=lock.sanitizer if lock else None, section=lock)
    final = out / sub.name
    if not outcome.started and outcome.rc == EXIT_BAD_INPUT:   # our arguments are valid: the submission's doing
        line = _refusal(tmp)
        shutil.rmtree(tmp, ignore_errors=True)
        _refused_folder(sub, line, out)
        print(f"gate: {sub.src.name}: refused: {line}", flush=True)
        return "refused", outcome.rc
    if not outcome.started:
        if keep_unstarted and not final.exists() and (tmp / "run.json").exists():
            replace_folder(tmp, final)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
        return "unstarted", outcome.rc
    doc = json.loads((tmp / "run.json").read_text())
    doc["gate_gpu"] = _gpu_record(tmp, gpu)
    doc["gate_submission"] = {"file": sub.src.name, "name": sub.name}
    write_json(tmp / "run.json", doc)
    replace_folder(tmp, final)
    render_report(final)
    return "gated", outcome.rc


def gate_one(src: Path, out: Path, arch: str, common: Path, limit: float | None = None,
             strict_determinism: bool = False) -> int:
    """One submission (a Slurm array task): its GPU is what CUDA_VISIBLE_DEVICES gives it. A task
    that reaches no GPU leaves a run.json saying so where none was (its row then names it) and
    exits 3."""
    if not Path(src).is_file():
        raise InputError(f"error: --one {str(src)!r}: no such file")
    sub = Submission(Path(src), name_of(Path(src)))
    binary, error = build_one(sub, arch, common)
    Path(out).mkdir(parents=True, exist_ok=True)
    if binary is None:
        _build_failure_folder(sub, error, Path(out))
        print(f"gate: {sub.src.name}: does not build: {error}", flush=True)
        return EXIT_NOTHING_BUILT
    state, rc = gate_submission(sub, binary, Path(out), limit, strict_determinism, keep_unstarted=True)
    return rc


def gate_dir(src_dir: Path, out: Path = OUT_DIR, jobs: int = 1, arch: str = DEFAULT_ARCH,
             limit: float | None = None, strict_determinism: bool = False, gpus: str | None = None,
             available: list | None = None, timings: dict | None = None,
             sanitizer_slots: dict[str, int] | None = None) -> int:
    """Build every *.cu of SRC_DIR, gate each on the GPUs of `gpus` as its build ends (`jobs` at a
    time on each; `sanitizer_slots` over schedule.SANITIZER_SLOTS; harness/gate/schedule.py), then
    the leaderboard of those gated. See the module's text. `timings` (a dict) gets "builds_ended_s",
    the wall seconds until the last build ended; "build_s", until the gating took the last built file
    (a worker free for it: later than the build's end when the GPU is the bound); and "gate_s", the
    gating's (from the first build's start)."""
    timings = {} if timings is None else timings
    t0 = time.time()
    subs = submissions_in(src_dir)
    if not subs:
        raise InputError(f"error: {src_dir}: no *.cu files")
    chosen = schedule.select_gpus(gpus, available)
    common = build_common(arch)
    cores = max(1, (os.cpu_count() or 2) // 2)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    workers = max(1, len(chosen)) * max(1, jobs)
    # The float64 work of the shared stages must not starve the timed one of host cores.
    env_extra = {"OMP_NUM_THREADS": str(max(1, (os.cpu_count() or 2) // (workers + 1)))} if workers > 1 else {}
    where = ", ".join(f"GPU {g.index} ({g.name})" for g in chosen) or "the GPU CUDA sees (nvidia-smi lists none)"
    print(f"gate: {len(subs)} submissions; building them on {cores} cores and gating each as its build ends, "
          f"{jobs} at a time on {where}", flush=True)
    built: list[tuple[Submission, Path | None, str]] = []
    done = [0]

    def as_built(pool):
        """(submission, binary) of each build that succeeded, as it ends; every build into `built`."""
        def build(s):
            binary, error = build_one(s, arch, common)
            ended = time.time() - t0           # when this build ended, not when the gating took it
            timings["builds_ended_s"] = max(timings.get("builds_ended_s", 0.0), ended)
            return s, binary, error

        futures = [pool.submit(build, s) for s in subs]
        for f in as_completed(futures):
            sub, binary, error = f.result()
            built.append((sub, binary, error))
            if binary is None:
                print(f"gate: {sub.src.name}: does not build: {error}", flush=True)
            else:
                yield sub, binary
        timings["build_s"] = time.time() - t0  # the gating took the last built file (a worker was free)

    def work(item, gpu, lock):
        sub, binary = item
        state, rc = gate_submission(sub, binary, out, limit, strict_determinism, gpu, lock, env_extra)
        done[0] += 1
        print(f"gate: [{done[0]}/{len(subs)}] {sub.name}: {state}, exit {rc}"
              f"{f' (GPU {gpu.index})' if gpu else ''}", flush=True)
        return item, (state, rc)

    with ThreadPoolExecutor(max_workers=cores) as pool:
        t1 = time.time()
        ran = schedule.run_on_gpus(as_built(pool), chosen, jobs, work, sanitizer_slots)
    timings["gate_s"] = time.time() - t1
    runnable = [item for item, _ in ran]
    results = [r for _, r in ran]
    gated = [s for (s, _), (state, _) in zip(runnable, results) if state in ("gated", "refused")]
    if not gated:
        no_gpu = any(rc == EXIT_NO_GPU for _, rc in results)
        why = ("no GPU reached (every first stage exited 3)" if no_gpu else
               "no submission built" if not runnable else "no submission's run started")
        print(f"error: gate: no submission could be gated: {why}; {_rel(out)} left as it was", file=sys.stderr)
        return EXIT_NO_GPU if no_gpu else EXIT_NOTHING_BUILT
    for sub, binary, error in built:
        if binary is None:
            _build_failure_folder(sub, error, out)
    unstarted = [{"name": s.name, "why": f"not gated in this run (exit {rc}); its folder keeps its last run"}
                 for (s, _), (state, rc) in zip(runnable, results) if state not in ("gated", "refused")]
    folders = [out / s.name for s in subs if (out / s.name).exists() and s.name not in {u["name"] for u in unstarted}]
    leaderboard(folders, out, skipped=unstarted)
    return 0


def aggregate(dirs, out: Path) -> int:
    """The leaderboard of existing gate folders: each DIR a submission's folder or a folder of
    them; every folder given keeps its rows, and each one skipped is named with why."""
    folders, skipped = folders_of(dirs)
    if not folders:
        raise InputError("error: --aggregate: no folder with a run.json or build.json"
                         + (f" ({'; '.join(s['name'] + ': ' + s['why'] for s in skipped[:5])})" if skipped else ""))
    leaderboard(folders, Path(out), skipped=skipped)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--one", help="gate one submission into OUT/<name> (a Slurm array task)")
    ap.add_argument("--aggregate", nargs="+", help="folders to build the leaderboard from")
    ap.add_argument("--out", default=str(OUT_DIR))
    ap.add_argument("--gpus", default=None, help="'all' (default) or comma-separated GPU indices to gate on")
    ap.add_argument("--jobs", default="1", help="submissions gated at once on each GPU (their timed stages run alone)")
    ap.add_argument("--arch", default=DEFAULT_ARCH)
    ap.add_argument("--limit", default=None, help="each run's time limit, s (default: derived)")
    ap.add_argument(STRICT, action="store_true",
                    help="a submission's one-epoch rerun must be bitwise identical (default: within the parity limit, "
                         "with a note)")
    a = ap.parse_args(argv)
    try:
        jobs = validate.count(a.jobs, "--jobs", 1, 64)
        limit = validate.positive_seconds(a.limit, "--limit") if a.limit is not None else None
        if sum(x is not None for x in (a.dir, a.one, a.aggregate)) != 1:
            raise InputError("error: give one of DIR, --one FILE or --aggregate FOLDER...")
        if a.aggregate:
            return aggregate(a.aggregate, Path(a.out))
        if a.one:
            # An array task links the build/ that `invoke build` made (concurrent tasks must not remake it).
            common = BUILD_DIR if (BUILD_DIR / "mlp_train").exists() else build_common(a.arch)
            return gate_one(Path(a.one), Path(a.out), a.arch, common, limit, a.strict_determinism)
        return gate_dir(Path(a.dir), Path(a.out), jobs, a.arch, limit, a.strict_determinism, a.gpus)
    except InputError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    raise SystemExit(main())
