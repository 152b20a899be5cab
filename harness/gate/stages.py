"""The gate in stages, each a fresh `mlp_train --stage NAME` process under its own time limit
(cuda/cli/mode_stage.cpp), merged into one run.json of the unstaged shape (cuda/cli/mode_gate.cpp) plus
a "supervisor" block: a stage that hangs, dies or faults fails its own cases ("timed out after
N s", "died: SIGSEGV", "CUDA error: cudaErrorIllegalAddress") and the later stages still run.

    entry (cases 1-5) -> epoch-check (9) -> contract (13) -> overfit (6) -> train (7, 8) -> guard-bands (10)

(the stages, their cases, floors and work are the binary's: spec/catalog.py reads them)

Each stage writes OUT/stage-NAME.json (its cases, the top of run.json, and for train the paths,
the float64 reference and the paths that fail); the supervisor keeps it as LOGS/stage-NAME.json
beside LOGS/stage-NAME.stdout.log and .stderr.log (LOGS: OUT for a gate folder). A stage that
ends without its part keeps the rows it printed; its running case fails with what happened and
its later cases are FAIL "not run", and the stage fails the verdict even where every row it
printed passed (supervisor.stage_failures). The merged run.json's verdict and hints are the gate's
one owner's (cuda/gate/verdict.h through spec/verdict.py) over the merged cases, the paths and how
the stages ended, and the exit status is that verdict; the notes (a declined odd shape, a
submission's nondeterministic rerun) are the cases' and the paths'.
"""
from __future__ import annotations

import contextlib
import json
import uuid
from dataclasses import dataclass
from pathlib import Path

from harness.gate.child import (FACTOR, Outcome, binary_case_order, fastest_ms, limit_for, n_paths_of, parse_rows,
                                print_verdict, rel, run_child, what_happened)
from spec import catalog
from harness.gate.sanitizer_cases import format_row
from spec import verdict
from spec.files import DATA_DIR, RESULTS_DIR, ROOT, write_json, write_text

SETUP_S = 30.0       # one stage's own start: data loaded and checked, the context, the data on the device


@dataclass(frozen=True)
class Stage:
    name: str
    cases: tuple[int, ...]
    floor_s: float
    epochs: float = 0.0      # its GPU work in our fastest path's epochs (per trained path for guard-bands)
    exclusive: bool = False  # needs the GPU to itself (it times epochs or reads the free memory)


def binary_stages() -> tuple[Stage, ...]:
    """The stages `mlp_train --stage` runs, in order (the binary's catalog)."""
    return tuple(Stage(s["name"], tuple(s["cases"]), float(s["floor_s"]), float(s["epochs"]), bool(s["exclusive"]))
                 for s in catalog.stages("mlp_train"))


HEADER_KEYS = ("schema", "date_utc", "run_id", "gpu", "device_limits", "submission", "gated_path")
# The precision the stages held cases 1-5 and 9 to (every stage's header says the same).
GATE_PRECISION_KEYS = ("gate_precision", "gate_unit_roundoff", "gate_precision_declared")


SHIPPED_TRAIN_FLOOR_S = 60.0   # the train stage's floor when case 7 reads the shipped float64 result


def stage_limit(stage: Stage, args, results: Path = RESULTS_DIR) -> tuple[float, str]:
    """train: the whole gate's limit for its paths (harness/gate/child.py time_limit) with a 120 s
    floor (60 s with --reference shipped: no float64 training on the CPU); the others max(30 s,
    30 s + 50 x our fastest epoch x the stage's epochs of work)."""
    if stage.name == "train":
        shipped = "--reference" in args and list(args)[list(args).index("--reference") + 1:][:1] == ["shipped"]
        return limit_for(args, results, SHIPPED_TRAIN_FLOOR_S if shipped else stage.floor_s)
    ms = fastest_ms(results)
    epochs = stage.epochs * (n_paths_of(args, results) if stage.name == "guard-bands" else 1)
    if ms is None:
        return stage.floor_s, f"{stage.floor_s:.0f} s (the floor: no timed path of ours in results/run.json)"
    derived = SETUP_S + FACTOR * ms * epochs / 1000.0
    limit = max(stage.floor_s, derived)
    return limit, (f"{limit:.0f} s = max({stage.floor_s:.0f} s, {SETUP_S:.0f} s + {FACTOR:.0f} x {ms:.3f} ms x "
                   f"{epochs:g} epochs)")


def _part(path: Path, run_id: str, stage: str) -> dict | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    ok = isinstance(doc, dict) and doc.get("run_id") == run_id and doc.get("stage") == stage
    return doc if ok and isinstance(doc.get("cases"), list) else None


def run_stage(stage: Stage, base: list[str], run_id: str, limit: float, why: str, out: Path, logs: Path,
              env: dict[str, str] | None = None, guard=None, section=None) -> dict:
    """One stage's process: {"record" (the supervisor block's entry), "part" (its JSON or None),
    "cases" (its rows), "synthetic" (ids the supervisor failed), "rc", "stderr"}. `env`: on top of
    ours for the child; `guard(exclusive)`: a context held while it runs (the course's GPU lock).
    With `section` (that lock), an exclusive stage holds the GPU shared and its child takes it alone
    only from the end of its own start to the end of its work (cuda/cli/gpu_section.h); the seconds
    it waits for that are the record's "gpu_wait_s", not counted against its limit."""
    cmd = [*base, "--stage", stage.name, "--run-id", run_id]
    print(f"supervisor: stage {stage.name} (cases {', '.join(map(str, stage.cases))}): {' '.join(cmd)}", flush=True)
    print(f"supervisor: stage {stage.name}: time limit {why}", flush=True)
    produced = out / f"stage-{stage.name}.json"
    produced.unlink(missing_ok=True)
    handshake = section is not None and guard is not None and stage.exclusive
    with guard(stage.exclusive and not handshake) if guard else contextlib.nullcontext():
        ch = run_child(cmd, limit, logs / f"stage-{stage.name}.stdout.log", logs / f"stage-{stage.name}.stderr.log",
                       env=env, section=section if handshake else None)
    part = _part(produced, run_id, stage.name)
    if produced.exists() and produced.resolve() != (logs / produced.name).resolve():
        produced.replace(logs / produced.name)
    record = {"name": stage.name, "cases": list(stage.cases), "limit_s": round(limit, 1), "limit_why": why,
              "seconds": ch.seconds, "exit_status": ch.rc}
    if handshake:
        record["gpu_wait_s"] = ch.waited_s
    synthetic: list[int] = []
    if part is not None and not ch.timed_out and ch.rc in (0, 1):
        record["ended"] = f"exited {ch.rc}"
        cases = [c for c in part["cases"] if c.get("id") in stage.cases]
    else:
        what = what_happened(ch.rc, ch.timed_out, limit, ch.stderr)
        if not ch.timed_out and ch.rc in (0, 1):
            what = f"exited {ch.rc} without writing {produced.name}"
        record["ended"] = what
        record["stderr_tail"] = ch.stderr[-2000:]
        part = None
        cases = [r for r in parse_rows(ch.stdout) if r["id"] in stage.cases]
        done = {r["id"] for r in cases}
        pending = [i for i in stage.cases if i not in done]
        for k, i in enumerate(pending):
            row = {"id": i, "name": catalog.case_names().get(i, "?"), "value": None, "limit": None, "passed": False,
                   "detail": what if k == 0 else f"not run: stage {stage.name} ended at case {pending[0]} ({what})"}
            cases.append(row)
            synthetic.append(i)
            print(format_row(row), flush=True)
        print(f"supervisor: stage {stage.name}: {what}", flush=True)
    return {"record": record, "part": part, "cases": cases, "synthetic": synthetic, "rc": ch.rc,
            "timed_out": ch.timed_out, "stdout": ch.stdout, "stderr": ch.stderr}


def merge(results: list[dict], run_id: str, command: str) -> dict:
    """One run.json from the stages' results, in the unstaged run.json's key order."""
    parts = {r["record"]["name"]: r["part"] for r in results if r["part"] is not None}
    head = next(iter(parts.values()), None)
    train = parts.get("train")
    doc: dict = {}
    if head is None:
        doc |= {"schema": 1, "run_id": run_id, "mode": "supervised"}
    else:
        doc |= {k: head[k] for k in HEADER_KEYS if k in head}
    doc["run_command"] = command
    if head is not None:
        doc |= {k: head[k] for k in ("recipe", "reference_source", *GATE_PRECISION_KEYS) if k in head}
        doc["memory"] = (train or head).get("memory", {})
    order = [i for i, _ in binary_case_order()]
    cases = sorted((c for r in results for c in r["cases"]),
                   key=lambda c: order.index(c["id"]) if c["id"] in order else len(order) + c["id"])
    doc["cases"] = cases
    records = [r["record"] for r in results]
    bad = [s for s in records if s["ended"] not in ("exited 0", "exited 1")]
    path_failures = list((train or {}).get("path_failures", []))
    doc["hints"] = []   # the verdict's (run_staged stamps the merged document)
    doc["notes"] = [f"case {c['id']} {c['name']}: {c['note']}" for c in cases if c.get("note")] + \
        list((train or {}).get("path_notes", []))
    doc["paths"] = train["paths"] if train else {}
    if train and "reference_fp64" in train:
        doc["reference_fp64"] = train["reference_fp64"]
    ended = (f"stage {bad[0]['name']}: {bad[0]['ended']}" if bad else
             "exited 1" if any(s["ended"] == "exited 1" for s in records) else "exited 0")
    doc["supervisor"] = {"staged": True, "limit_s": round(sum(s["limit_s"] for s in records), 1),
                         "seconds": round(sum(s["seconds"] for s in records), 1), "ended": ended,
                         "stages": [{k: v for k, v in s.items() if k != "stderr_tail"} for s in records],
                         "path_failures": path_failures,
                         # A stage that did not end by itself with its part fails the gate even
                         # where every row it printed passed.
                         "stage_failures": [f"{s['name']}: {s['ended']}" for s in bad]}
    if bad:
        doc["supervisor"]["stderr_tail"] = bad[0].get("stderr_tail", "")
    doc["path_failures"] = path_failures   # where a one-process run.json has them (the verdict reads both)
    return doc


def run_staged(binary: Path, out: Path, args: list[str], limit: float | None = None, data: Path = DATA_DIR,
               logs: Path | None = None, write_unstarted: bool = True, results: Path = RESULTS_DIR,
               env: dict[str, str] | None = None, guard=None, section=None) -> Outcome:
    """Every stage, one after another, into OUT/run.json (see the module's text). A first stage
    that exits 3 (a CUDA error: no device, no code for it) before any case row ends the run there:
    the later stages would only say the same (the not-run stages' cases fail naming it)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    logs = Path(logs) if logs else out
    logs.mkdir(parents=True, exist_ok=True)
    run_id = uuid.uuid4().hex
    shown = rel(binary) if Path(binary).resolve().is_relative_to(ROOT) else str(binary)
    base = [shown, "--data", rel(data), "--out", rel(out), *args]
    done = []
    stages = binary_stages()
    for st in stages:
        lim, why = (limit, f"{limit:.0f} s (--limit)") if limit else stage_limit(st, args, results)
        r = run_stage(st, base, run_id, lim, why, out, logs, env, guard, section)
        if r["rc"] == 2 and not r["timed_out"]:      # bad input: every stage would say the same
            return Outcome(2, False, "exited 2: bad input", 2)
        done.append(r)
        if len(done) == 1 and r["rc"] == 3 and not (set(c["id"] for c in r["cases"]) - set(r["synthetic"])):
            done += [_not_run(later, r["record"]["ended"]) for later in stages[1:]]
            break
    _combined_logs(done, logs)
    started = any(r["part"] is not None or (set(c["id"] for c in r["cases"]) - set(r["synthetic"])) for r in done)
    first = done[0]
    if not started and not write_unstarted:
        return Outcome(1, False, first["record"]["ended"], first["rc"])
    doc, v = verdict.stamped(merge(done, run_id, " ".join(base)))
    write_json(out / "run.json", doc)
    print_verdict(v, f"{len(stages)} stages")
    return Outcome(0 if v.passed else 1, started, doc["supervisor"]["ended"], first["rc"])



def _not_run(stage: Stage, why: str) -> dict:
    """A stage the supervisor did not start after the first one could not reach the GPU."""
    cases = [{"id": i, "name": catalog.case_names().get(i, "?"), "value": None, "limit": None, "passed": False,
              "detail": f"not run: stage entry ended before any case ({why})"} for i in stage.cases]
    record = {"name": stage.name, "cases": list(stage.cases), "limit_s": 0.0, "limit_why": "not run", "seconds": 0.0,
              "exit_status": None, "ended": f"not run: {why}"}
    return {"record": record, "part": None, "cases": cases, "synthetic": list(stage.cases), "rc": None,
            "timed_out": False, "stdout": "", "stderr": ""}


def _combined_logs(done: list[dict], logs: Path) -> None:
    """LOGS/stdout.log and stderr.log: every stage's output in order, each under its name."""
    for key, name in (("stdout", "stdout.log"), ("stderr", "stderr.log")):
        write_text(logs / name, "".join(f"== stage {r['record']['name']} ({r['record']['ended']})\n{r[key]}"
                                        for r in done))
