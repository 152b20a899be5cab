"""CPU: the course gate (harness/gate/course.py, harness/gate/schedule.py) with a fake device list and a
stand-in mlp_train (tests/fakes/staged_mlp_train.py): untrusted file names never reach make or a
shell and never become paths outside OUT (issue 28), a run that reaches no GPU leaves OUT as it
was and exits 3, the node's GPUs are used side by side with each child on its own GPU and the
exclusive stages alone on theirs, and the GPU is recorded (issue 26)."""
from __future__ import annotations

import hashlib
import json
import shutil
import sys
import threading
from pathlib import Path

import pytest

from harness.gate import course, schedule
from spec import catalog
from spec.files import BUILD_DIR, ROOT

FAKE = ROOT / "tests" / "fakes" / "staged_mlp_train.py"
GPUS = [schedule.Gpu(0, "Fake GPU A", "GPU-aaaa"), schedule.Gpu(1, "Fake GPU B", "GPU-bbbb")]
HOSTILE = ["x`touch PWNED`.cu", "...cu", "..cu", "leaderboard.csv.cu", "a b.cu", "it's.cu", "$(HOME).cu", "-x.cu"]


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(Path(root).rglob("*")):
        h.update(str(p.relative_to(root)).encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


@pytest.fixture
def fake_gate(tmp_path, monkeypatch):
    """course.gate_dir with every submission 'built' as the stand-in binary."""
    exe = tmp_path / "mlp_train"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
    exe.chmod(0o755)
    monkeypatch.setattr(course, "build_common", lambda arch: BUILD_DIR)
    monkeypatch.setattr(course, "build_one", lambda sub, arch, common, jobs=2: (exe, ""))
    monkeypatch.setenv("COMPUTE_SANITIZER", str(tmp_path / "no-sanitizer"))   # cases 11-12: "not found", at once
    log = tmp_path / "stages.jsonl"
    monkeypatch.setenv("FAKE_LOG", str(log))

    def go(files, plan=None, gpus=None, jobs=1, rendezvous=False, available=GPUS, timings=None):
        src = tmp_path / "subs"
        src.mkdir(exist_ok=True)
        for f in files:
            (src / f).write_text("// a submission\n")
        monkeypatch.setenv("FAKE_PLAN", json.dumps(plan or {}))
        if rendezvous:   # the stand-in's shared stages wait until two of them run on one GPU at once
            (tmp_path / "rendezvous").mkdir(exist_ok=True)
            monkeypatch.setenv("FAKE_RENDEZVOUS", str(tmp_path / "rendezvous"))
        out = tmp_path / "out"
        rc = course.gate_dir(src, out, jobs=jobs, limit=30, gpus=gpus, available=available, timings=timings)
        lines = [json.loads(x) for x in log.read_text().splitlines()] if log.exists() else []
        return rc, out, lines
    return go


def test_every_name_is_a_safe_folder_and_two_never_collide():
    names = [course.name_of(Path(f)) for f in HOSTILE + ["naive.cu", "mutant_a.cu"]]
    assert names[-2:] == ["naive", "mutant_a"]
    assert len(set(names)) == len(names)
    for n in names:
        assert Path(n).name == n and n not in (".", "..") and n[0].isalnum() and "leaderboard" != n.split("-")[0]


def test_a_submission_named_like_the_leaderboard_in_any_case_is_gated_under_another_name(fake_gate):
    """The course gate's loader of a folder of submissions: LEADERBOARD.md.cu and Leaderboard.cu are
    gated under hashed names (the stems are reserved in every case, spec/validate.py), so their folders
    never take the place of leaderboard.md or leaderboard.csv, on a case-insensitive file system too."""
    files = ["LEADERBOARD.md.cu", "Leaderboard.CSV.cu", "LeaderBoard.cu", "naive.cu"]
    names = [course.name_of(Path(f)) for f in files]
    assert names[-1] == "naive"
    for f, n in zip(files[:-1], names):
        assert n.lower() not in ("leaderboard", "leaderboard.md", "leaderboard.csv"), (f, n)
        assert n != f[:-3] and "-" in n, (f, n)                             # the stem's safe part and its hash
    rc, out, _ = fake_gate(files)
    assert rc == 0
    made = sorted(p.name for p in out.iterdir())
    assert made == sorted(names + ["leaderboard.csv", "leaderboard.md"]), made
    for f, n in zip(files, names):
        assert json.loads((out / n / "run.json").read_text())["gate_submission"] == {"file": f, "name": n}


def test_the_aggregate_leaves_out_a_folder_named_like_the_leaderboard_in_any_case(fake_gate, tmp_path):
    """The aggregate's loader of result folders: a gated folder renamed LEADERBOARD.MD (or
    Leaderboard.csv) is left out as not a safe name, and the others are aggregated."""
    rc, out, _ = fake_gate(["a.cu", "b.cu"])
    assert rc == 0
    (out / "a").rename(out / "LEADERBOARD.MD")
    (out / "b").rename(out / "Leaderboard.csv")
    shutil.copytree(out / "LEADERBOARD.MD", out / "c")
    found, skipped = course.folders_of([out])
    assert [p.name for p in found] == ["c"], found
    assert sorted(s["name"] for s in skipped) == sorted([ascii("LEADERBOARD.MD"), ascii("Leaderboard.csv")]), skipped
    assert all(s["why"] == "not a safe name" for s in skipped), skipped


def test_hostile_names_are_gated_under_safe_folders_and_nothing_escapes(fake_gate, tmp_path):
    rc, out, _ = fake_gate(HOSTILE + ["naive.cu"])
    assert rc == 0
    made = sorted(p.name for p in out.iterdir())
    assert made == sorted([course.name_of(Path(f)) for f in HOSTILE + ["naive.cu"]] + ["leaderboard.csv",
                                                                                       "leaderboard.md"])
    assert not (ROOT / "PWNED").exists() and not (tmp_path / "PWNED").exists()
    assert BUILD_DIR.is_dir() and (BUILD_DIR / "mlp_host").exists()          # '...cu' did not remove build/
    board = (out / "leaderboard.md").read_text()
    for f in HOSTILE:                                                        # shown as text, and its safe name
        assert f in board and course.name_of(Path(f)) in board, f
    for f in HOSTILE:
        doc = json.loads((out / course.name_of(Path(f)) / "run.json").read_text())
        assert doc["gate_submission"] == {"file": f, "name": course.name_of(Path(f))}


def test_a_run_that_reaches_no_gpu_exits_3_and_leaves_out_as_it_was(fake_gate, tmp_path):
    rc, out, _ = fake_gate(["naive.cu", "other.cu"])
    assert rc == 0
    before = tree_hash(out)
    rc, out, _ = fake_gate(["naive.cu", "other.cu"], plan={"entry": "nodevice"})
    assert rc == 3 and tree_hash(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]           # no temp folder left behind


def test_no_submission_that_builds_exits_1_and_writes_nothing(tmp_path, monkeypatch):
    monkeypatch.setattr(course, "build_common", lambda arch: BUILD_DIR)
    monkeypatch.setattr(course, "build_one", lambda sub, arch, common, jobs=2: (None, "x.cu(1): error: nope"))
    (tmp_path / "subs").mkdir()
    (tmp_path / "subs" / "x.cu").write_text("nope")
    out = tmp_path / "out"
    assert course.gate_dir(tmp_path / "subs", out, available=[]) == 1
    assert not out.exists() or not any(out.iterdir())


def test_the_gpus_run_side_by_side_each_child_on_its_own_and_exclusive_stages_alone(fake_gate):
    files = [f"s{i}.cu" for i in range(6)]
    rc, out, lines = fake_gate(files, gpus="all", jobs=2, rendezvous=True)
    assert rc == 0
    uuids = {g.uuid: g for g in GPUS}
    assert {ln["gpu"] for ln in lines} == set(uuids)                         # both GPUs used
    for f in files:                                                          # one GPU per submission, recorded
        doc = json.loads((out / f[:-3] / "run.json").read_text())
        ran = {ln["gpu"] for ln in lines if Path(ln["out"]).name.startswith(f".{f[:-3]}.")}
        assert len(ran) == 1 and doc["gate_gpu"] == uuids[ran.pop()].record()
    exclusive = {s["name"] for s in catalog.stages() if s["exclusive"]}
    assert {ln["stage"] for ln in lines if ln["go"] is not None} == exclusive   # they, and only they, took a section

    def busy(b):
        """When a stage's process could touch its GPU: all its life but a wait for its section."""
        return [(b["t0"], b["ready"]), (b["go"], b["t1"])] if b["go"] is not None else [(b["t0"], b["t1"])]
    for gpu in uuids:
        on = [ln for ln in lines if ln["gpu"] == gpu]
        for a in on:
            if a["go"] is None:
                continue
            others = [b for b in on if b is not a and any(s < a["done"] and a["go"] < e for s, e in busy(b))]
            assert not others, (a, others)                                   # alone on its GPU in its section
    for gpu in uuids:   # jobs 2: two shared stages ran at once on each GPU (the rendezvous waited for it)
        on = [ln for ln in lines if ln["gpu"] == gpu]
        assert any(ln["met"] for ln in on), on
        assert any(a["t0"] < b["t1"] and b["t0"] < a["t1"] for a in on for b in on if a is not b), on
    import csv
    rows = list(csv.DictReader(open(out / "leaderboard.csv")))
    assert len(rows) == len(files) and all(r["gpu"] in ("0: Fake GPU A", "1: Fake GPU B") for r in rows), rows


def test_the_timings_tell_a_builds_end_from_when_the_gating_took_it(fake_gate):
    """Three instant builds, one worker: every build has ended long before the gating takes the third,
    which waits for the first two to be gated."""
    timings = {}
    rc, _, lines = fake_gate(["a.cu", "b.cu", "c.cu"], gpus="0", jobs=1, timings=timings)
    assert rc == 0
    ends = {}
    for ln in lines:
        name = Path(ln["out"]).name.split(".")[1]
        ends[name] = max(ends.get(name, 0.0), ln["t1"])
    starts = {Path(ln["out"]).name.split(".")[1]: ln["t0"] for ln in reversed(lines)}
    third = max(starts, key=starts.get)
    first_two_took = max(t for n, t in ends.items() if n != third) - min(starts.values())
    assert first_two_took > 0.5
    assert timings["builds_ended_s"] < 0.5 < first_two_took <= timings["build_s"] + 0.1
    assert timings["build_s"] <= timings["gate_s"] + 0.1


def test_one_named_gpu_takes_every_submission(fake_gate):
    rc, out, lines = fake_gate(["a.cu", "b.cu"], gpus="1")
    assert rc == 0 and {ln["gpu"] for ln in lines} == {"GPU-bbbb"}


@pytest.mark.parametrize("argv, words", [(["d", "--jobs", "abc"], "--jobs"), (["d", "--jobs", "0"], "--jobs"),
                                         (["d", "--limit", "-5"], "--limit"), (["d", "--limit", "nan"], "--limit"),
                                         (["d", "--limit", "inf"], "--limit"), (["d", "--gpus", "7"], "--gpus"),
                                         (["d", "--gpus", "x"], "--gpus"), ([], "give one of")])
def test_bad_options_are_one_line_and_exit_2(argv, words, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.cu").write_text("x")
    monkeypatch.setattr(course, "build_common", lambda arch: pytest.fail("built despite bad input"))
    monkeypatch.setattr(schedule, "list_gpus", lambda: GPUS)
    assert course.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]


def test_the_lock_keeps_an_exclusive_user_alone_and_is_not_starved():
    """Three shared users hold the GPU; an exclusive user comes and waits; three more shared users come
    after it. The exclusive one gets the GPU as soon as the first three leave, alone, before any of the
    later three, who then share it. Each step waits on the state it needs (events, the lock's count of
    waiting exclusive users), never on a sleep: the order is the lock's, not the scheduler's."""
    lock = schedule.GpuLock()
    order: list[str] = []                       # who got the GPU, in the order they got it
    active = {"shared": 0, "exclusive": 0}
    guard = threading.Lock()
    errors: list[str] = []

    def use(kind: str, name: str, inside: threading.Event, leave: threading.Event) -> None:
        with lock.stage(kind == "exclusive"):
            with guard:
                active[kind] += 1
                if active["exclusive"] > 1 or (active["exclusive"] and active["shared"]):
                    errors.append(f"{name} got the GPU while {active}")
                order.append(name)
            inside.set()
            if not leave.wait(30):
                errors.append(f"{name}: never told to leave")
            with guard:
                active[kind] -= 1

    def start(kind: str, name: str, leave: threading.Event):
        inside = threading.Event()
        t = threading.Thread(target=use, args=(kind, name, inside, leave), daemon=True)
        t.start()
        return t, inside

    def until(condition, what: str) -> None:    # the lock's state, read under its own condition
        with lock._cond:
            assert lock._cond.wait_for(condition, timeout=30), what

    first_leave, excl_leave, later_leave = threading.Event(), threading.Event(), threading.Event()
    first = [start("shared", f"shared{i}", first_leave) for i in range(3)]
    for _, inside in first:
        assert inside.wait(30), "a first shared user never got the GPU"
    excl, excl_inside = start("exclusive", "exclusive", excl_leave)
    until(lambda: lock._waiting_exclusive == 1, "the exclusive user never queued")
    later = [start("shared", f"later{i}", later_leave) for i in range(3)]
    assert not excl_inside.is_set() and not any(inside.is_set() for _, inside in later)   # all three still hold it
    first_leave.set()
    assert excl_inside.wait(30), "the exclusive user never got the GPU after the first three left"
    assert not any(inside.is_set() for _, inside in later), order      # nobody joins an exclusive user
    excl_leave.set()
    for _, inside in later:
        assert inside.wait(30), "a later shared user never got the GPU"
    later_leave.set()
    for t, _ in first + [(excl, excl_inside)] + later:
        t.join(30)
    assert not errors, errors
    assert set(order[:3]) == {"shared0", "shared1", "shared2"}, order
    assert order[3] == "exclusive" and set(order[4:]) == {"later0", "later1", "later2"}, order


def test_aggregate_keeps_every_folder_and_names_what_it_left_out(tmp_path, fake_gate, capsys):
    rc, out, _ = fake_gate(["a.cu", "b.cu"])
    (out / "empty").mkdir()
    board = tmp_path / "board"
    assert course.main(["--aggregate", str(out / "a"), str(out), str(tmp_path / "missing"), "--out",
                        str(board)]) == 0
    md = (board / "leaderboard.md").read_text()
    assert "| a " in md and "| b " in md
    assert "Left out:" in md and "missing (no such folder)" in md and "empty (no run.json, build.json or slurm.json)" in md
    # all or nothing: with leaderboard.md in the way as a folder, neither file is replaced
    csv_before = (board / "leaderboard.csv").read_bytes()
    (board / "leaderboard.md").unlink()
    (board / "leaderboard.md").mkdir()
    assert course.main(["--aggregate", str(out), "--out", str(board)]) == 2
    assert (board / "leaderboard.csv").read_bytes() == csv_before
    assert "leaderboard.md" in capsys.readouterr().err


@pytest.mark.slow
def test_a_hostile_file_name_builds_from_its_safe_copy_and_never_reaches_a_shell(tmp_path, built):
    """The real make: a learner's valid file named like a shell command builds (make sees only the
    copy under its safe name, beside the headers it includes) and runs nothing."""
    built("mlp_train")   # course.build_one links build/'s objects
    src = tmp_path / "subs"
    src.mkdir()
    shutil.copy(ROOT / "tests" / "submissions" / "naive_base.cuh", src)
    hostile = src / "n`touch PWNED`; $(touch PWNED2).cu"
    hostile.write_text('#include "naive_base.cuh"\n')
    sub = course.Submission(hostile, course.name_of(hostile))
    binary, error = course.build_one(sub, "sm_90", BUILD_DIR)
    assert binary is not None and binary.exists(), error
    for d in (ROOT, tmp_path, src, BUILD_DIR / "gate" / sub.name):
        assert not (d / "PWNED").exists() and not (d / "PWNED2").exists()


def test_a_submission_the_binary_refuses_is_a_fail_row_naming_why_and_the_others_are_gated(fake_gate, monkeypatch):
    """mlp_train exits 2 before any case for an mlp_precision() out of range (our own arguments are
    valid): its row is a FAIL whose first hint is the binary's line; the leaderboard has every
    submission's precision (the stand-in's stages say tf32)."""
    monkeypatch.setenv("FAKE_REFUSE", "badprec")
    rc, out, _ = fake_gate(["naive.cu", "badprec.cu"])
    assert rc == 0
    assert json.loads((out / "badprec" / "build.json").read_text())["refused"].startswith(
        "mlp_train: error: the submission's mlp_precision() returned 7")
    rows = {r["submission"]: r for r in course.leaderboard([out / "naive", out / "badprec"], out, reports=False)}
    assert rows["badprec"]["verdict"] == "FAIL" and rows["badprec"]["first_hint"].startswith("refused: mlp_train: error:")
    assert rows["badprec"]["precision"] == "" and rows["naive"]["precision"] == "tf32"
    md = (out / "leaderboard.md").read_text()
    assert "| submission | verdict | passed | precision |" in md and "| naive | " in md and "| tf32 |" in md


def test_the_lock_queues_each_sanitizer_tool_on_its_own_slots():
    """One racecheck and one memcheck at once on a GPU (SANITIZER_SLOTS), never two racechecks: a
    second racecheck waits until the first leaves, while a memcheck gets in beside it. Event-driven."""
    lock = schedule.GpuLock()
    inside = {n: threading.Event() for n in ("race1", "race2", "mem")}
    leave = {n: threading.Event() for n in inside}

    def use(tool, name):
        with lock.sanitizer(tool):
            inside[name].set()
            assert leave[name].wait(30)

    threads = [threading.Thread(target=use, args=("racecheck", "race1"), daemon=True)]
    threads[0].start()
    assert inside["race1"].wait(30)
    threads += [threading.Thread(target=use, args=("racecheck", "race2"), daemon=True),
                threading.Thread(target=use, args=("memcheck", "mem"), daemon=True)]
    for t in threads[1:]:
        t.start()
    assert inside["mem"].wait(30), "a memcheck run queued behind a racecheck run"
    assert not inside["race2"].wait(0.2), "two racecheck runs at once on one GPU"
    leave["race1"].set()
    assert inside["race2"].wait(30), "the second racecheck never got its slot"
    for n in ("race2", "mem"):
        leave[n].set()
    for t in threads:
        t.join(30)
    with pytest.raises(KeyError):
        with lock.sanitizer("initcheck"):   # a tool with no slots is refused, not run unqueued
            pass


def test_run_on_gpus_takes_items_as_a_source_yields_them_and_keeps_their_order():
    """Items from a generator that releases them one at a time (as builds end): each is worked once,
    the workers wait on the source rather than ending early, and the results keep the source's order."""
    release = [threading.Event() for _ in range(5)]
    seen: list[int] = []
    guard = threading.Lock()

    def source():
        for k in range(5):
            assert release[k].wait(30)
            yield k

    def work(item, gpu, lock):
        with guard:
            seen.append(item)
        if item + 1 < len(release):
            release[item + 1].set()   # the next item is "built" only once this one is being gated
        return item * 10

    release[0].set()
    assert schedule.run_on_gpus(source(), [None], 3, work) == [0, 10, 20, 30, 40]
    assert sorted(seen) == [0, 1, 2, 3, 4]
