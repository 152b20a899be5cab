"""The GPU section of an exclusive stage (cuda/cli/gpu_section.h; harness/gate/child.py run_child's
`section`; harness/gate/schedule.py GpuLock.to_exclusive/to_shared): a child's own start runs beside
the GPU's other users, the part that needs the GPU alone waits for it without spending its time
limit, and every way a child ends gives the GPU back. CPU tests: the children are small Python
programs speaking the binary's protocol; tests/test_cli_inputs.py-style checks hold the binary's
reading of MLP_GATE_SECTION_FDS."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading

import pytest

from harness.gate import schedule
from harness.gate.child import SECTION_VAR, run_child
from spec.files import ROOT

# A child that speaks cuda/cli/gpu_section.h's protocol; argv[1]: what it does in its section.
CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[2])
from tests.fakes import gpu_section_client as gs
w, r = gs.fds()
print("started", flush=True)
if sys.argv[1] == "exit-waiting":
    import os
    os.write(w, b"ready\n")
    sys.exit(0)
print("answer", gs.ready(w, r), flush=True)
if sys.argv[1] == "hang":
    time.sleep(60)
gs.done(w)
print("after", flush=True)
"""

def child(tmp_path, what: str, limit: float, lock: schedule.GpuLock, result: dict):
    """run_child of CHILD inside `lock.stage(False)`, as stages.run_stage runs an exclusive stage."""
    with lock.stage(False):
        result["child"] = run_child([sys.executable, "-c", CHILD, what, str(ROOT)], limit, tmp_path / "o.log",
                                    tmp_path / "e.log", echo=False, section=lock)


@contextlib.contextmanager
def held_by_another(lock: schedule.GpuLock, timeout: float = 30.0):
    """Another shared user (a racecheck, say) holds the GPU from entry until the block ends; yields
    an Event that lets it go earlier."""
    release, holding = threading.Event(), threading.Event()

    def holder():
        with lock.stage(False):
            holding.set()
            release.wait(timeout + 90)
    threading.Thread(target=holder, daemon=True).start()
    assert holding.wait(timeout)
    try:
        yield release
    finally:
        release.set()


def wait_until(pred, what: str, timeout: float = 30.0) -> None:
    ev = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if pred():
            return
        ev.wait(0.01)
    pytest.fail(what)


def test_the_start_runs_beside_a_user_and_the_wait_for_the_gpu_alone_is_not_in_the_limit(tmp_path):
    """A shared user (a racecheck, say) holds the GPU. The child starts beside it, asks for the GPU
    alone and waits: it gets "go" only once that user has left, and the 1.5 s it waited are not
    counted against its 1 s limit."""
    lock = schedule.GpuLock()
    result: dict = {}
    with held_by_another(lock) as release:
        t = threading.Thread(target=child, args=(tmp_path, "ok", 1.0, lock, result), daemon=True)
        t.start()
        wait_until(lambda: (tmp_path / "o.log").exists() and "started" in (tmp_path / "o.log").read_text(),
                   "the child did not start beside the holder")
        wait_until(lambda: lock._waiting_exclusive == 1, "the child never asked for the GPU alone")
        assert "answer" not in (tmp_path / "o.log").read_text()           # no "go" while the holder is in
        threading.Event().wait(1.5)                                         # past the child's 1 s limit
        assert t.is_alive() and "answer" not in (tmp_path / "o.log").read_text()
        release.set()
        t.join(30)
    ch = result["child"]
    assert not ch.timed_out and ch.rc == 0, (ch.rc, ch.stderr)
    assert ch.stdout.splitlines() == ["started", "answer go", "after"]
    assert ch.waited_s >= 1.4, ch.waited_s
    assert (lock._shared, lock._exclusive, lock._waiting_exclusive) == (0, False, 0)


def test_a_child_that_hangs_in_its_section_is_killed_at_its_limit_and_the_gpu_is_free_again(tmp_path):
    lock = schedule.GpuLock()
    result: dict = {}
    child(tmp_path, "hang", 1.0, lock, result)
    ch = result["child"]
    assert ch.timed_out and ch.stdout.splitlines() == ["started", "answer go"], ch.stdout
    assert ch.seconds < 10
    assert (lock._shared, lock._exclusive, lock._waiting_exclusive) == (0, False, 0)
    got = threading.Event()

    def exclusive_user():
        with lock.stage(True):
            got.set()
    threading.Thread(target=exclusive_user, daemon=True).start()
    assert got.wait(10), "the GPU was not given back"


def test_a_child_that_ends_while_waiting_gives_up_its_place_at_once(tmp_path):
    """The child asks, then exits before its answer; a shared user holds the GPU all along. run_child
    returns without waiting for that user, and the lock counts the holder alone again."""
    lock = schedule.GpuLock()
    result: dict = {}
    with held_by_another(lock) as release:
        child(tmp_path, "exit-waiting", 30.0, lock, result)
        assert not release.is_set()
        ch = result["child"]
        assert ch.rc == 0 and not ch.timed_out
        assert (lock._shared, lock._exclusive, lock._waiting_exclusive) == (1, False, 0)   # the holder alone


def test_without_a_section_the_child_gets_no_descriptors(tmp_path):
    ch = run_child([sys.executable, "-c", f"import os; print(os.environ.get({SECTION_VAR!r}, 'unset'))"], 30,
                   tmp_path / "o.log", tmp_path / "e.log", echo=False)
    assert ch.rc == 0 and ch.stdout.strip() == "unset" and ch.waited_s == 0.0


@pytest.mark.parametrize("value", ["x", "4", "4,", ",5", "1,2", "4,70000", "-4,5", "4;5", "4,5,6", "044444444,5"])
def test_mlp_train_refuses_a_malformed_section_variable_in_one_line_before_the_gpu(built, tmp_path, value):
    """A value the binary cannot use is bad input (exit 2, one line naming the variable) on a machine
    without a GPU too: it is read before the GPU is touched."""
    binary = built("mlp_train")
    res = subprocess.run([str(binary), "--out", str(tmp_path / "o"), "--stage", "train", "--run-id", "r1"],
                         capture_output=True, text=True, timeout=60, env={**os.environ, SECTION_VAR: value})
    assert res.returncode == 2, (res.returncode, res.stderr)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mlp_train: error: {SECTION_VAR}="), res.stderr
    assert not (tmp_path / "o").exists()


@pytest.mark.gpu
def test_the_binary_asks_for_the_gpu_alone_after_its_start_and_waits_for_it(built, tmp_path):
    """GPU: our mlp_train's contract stage (an exclusive one) run as a course runs it while another
    user holds the GPU: the binary asks (ready) and waits; once that user leaves it gets the GPU, its
    case passes, and the wait is its record's gpu_wait_s."""
    from harness.gate.stages import binary_stages, run_stage
    from spec.files import DATA_DIR
    binary = built("mlp_train")
    stage = next(s for s in binary_stages() if s.name == "contract")
    assert stage.exclusive
    lock = schedule.GpuLock()
    out = tmp_path / "out"
    out.mkdir()
    base = [str(binary), "--data", str(DATA_DIR), "--out", str(out), "--reference", "shipped"]
    result: dict = {}
    with held_by_another(lock, timeout=120) as release:
        t = threading.Thread(target=lambda: result.update(run_stage(stage, base, "r1", 120.0, "test", out, out,
                                                                    guard=lock.stage, section=lock)), daemon=True)
        t.start()
        wait_until(lambda: lock._waiting_exclusive == 1, "the binary never asked for the GPU alone", timeout=120)
        threading.Event().wait(1.0)
        assert t.is_alive()
        release.set()
        t.join(120)
    rec = result["record"]
    assert rec["ended"] == "exited 0" and all(c["passed"] for c in result["cases"]), (rec, result["cases"])
    assert rec["gpu_wait_s"] >= 0.9, rec
    assert (lock._shared, lock._exclusive, lock._waiting_exclusive) == (0, False, 0)
