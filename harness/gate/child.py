"""What the supervisor (harness/gate/supervisor.py) and its stages (harness/gate/stages.py) share: a child
process run under a time limit with its output logged and echoed as it comes, the table rows it
printed, what happened to it, and the time limits derived from our own last run."""
from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from spec import catalog
from spec.verdict import Verdict
from spec.files import RESULTS_DIR, ROOT

# The table's rows as the binary prints them (cuda/gate/cases.cu print_case).
ROW = re.compile(r"^(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(PASS|FAIL|SKIP)\s*(.*)$")
CUDA_ERR = re.compile(r"\b(cudaError[A-Za-z]+)\b")
FLOOR_S, FACTOR, REF_FACTOR = 60.0, 50.0, 10.0


def binary_case_order() -> list[tuple[int, str]]:
    """(id, name) of the cases mlp_train runs, in the order it runs them (spec/catalog.py)."""
    binary = {s["name"] for s in catalog.stages("mlp_train")}
    return [(c["id"], c["name"]) for c in catalog.cases() if c["stage"] in binary]


def arg(args, flag: str, default=None):
    args = list(args)
    return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) else default


def fastest_ms(results: Path = RESULTS_DIR) -> float | None:
    """Our fastest path's median epoch in results/run.json (not a submission's); None without one."""
    try:
        paths = json.loads((Path(results) / "run.json").read_text())["paths"]
        return min(p["median_ms"] for n, p in paths.items()
                   if n != "submission" and isinstance(p.get("median_ms"), (int, float)))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def ours_gpu(results: Path = RESULTS_DIR) -> str:
    """The GPU name of our results/run.json ("" without one): a submission's time is set beside ours
    only when it ran on a GPU of the same name (course.row_of)."""
    try:
        return str((json.loads((Path(results) / "run.json").read_text()).get("gpu") or {}).get("name") or "")
    except (OSError, ValueError, AttributeError):
        return ""


def time_limit(recipe_epochs: int = 20, results: Path = RESULTS_DIR, n_paths: int = 1,
               same_run_reference: bool = False, floor: float | None = None) -> tuple[float, str]:
    """max(floor (60 s), 30 s of setup + 50 x our fastest path's median epoch x (epochs + 10
    parity/overfit epochs) x the paths trained [+ 10 x our float64 reference's seconds when it is
    retrained in the run]), our times from results/run.json; the floor alone when there are none."""
    floor = FLOOR_S if floor is None else floor
    ms = fastest_ms(results)
    if ms is None:
        return floor, f"{floor:.0f} s (the floor: no timed path of ours in results/run.json)"
    try:
        ref_s = (json.loads((Path(results) / "run.json").read_text()).get("reference_fp64") or {}).get("train_seconds")
    except (OSError, ValueError, AttributeError):
        ref_s = None
    cpu = REF_FACTOR * ref_s if same_run_reference and isinstance(ref_s, (int, float)) else 0.0
    derived = FACTOR * ms * (recipe_epochs + 10) * n_paths / 1000.0 + 30.0 + cpu
    limit = max(floor, derived)
    paths = f" x {n_paths} paths" if n_paths != 1 else ""
    ref = f" + {REF_FACTOR:.0f} x {ref_s:.1f} s float64 reference" if cpu else ""
    return limit, (f"{limit:.0f} s = max({floor:.0f} s, {FACTOR:.0f} x {ms:.3f} ms x {recipe_epochs + 10} epochs"
                   f"{paths} + 30 s{ref})")


def limit_for(args, results: Path = RESULTS_DIR, floor: float | None = None) -> tuple[float, str]:
    """time_limit for mlp_train's flags `args`: its --epochs, the paths of --paths (else ours in
    results/run.json, at least 5) and whether case 7 retrains float64 (no --reference shipped)."""
    try:
        epochs = int(arg(args, "--epochs") or _recipe_epochs())
    except ValueError:
        epochs = 20
    n = n_paths_of(args, results)
    return time_limit(epochs, results, n, arg(args, "--reference") != "shipped", floor)


def n_paths_of(args, results: Path = RESULTS_DIR) -> int:
    """The paths a run of `args` trains: those of --paths, else ours in results/run.json (at
    least 5; 6 without one)."""
    named = arg(args, "--paths")
    if named:
        return len(named.split(","))
    try:
        return max(5, len(json.loads((Path(results) / "run.json").read_text())["paths"]))
    except (OSError, ValueError, KeyError, TypeError):
        return 6


def _recipe_epochs() -> int:
    from spec.recipe import load_recipe
    return int(load_recipe()["epochs"])


def parse_rows(stdout: str) -> list[dict]:
    rows = []
    for line in stdout.splitlines():
        m = ROW.match(line)
        if m:
            def num(x):
                try:
                    return float(x)
                except ValueError:
                    return None
            rows.append({"id": int(m.group(1)), "name": m.group(2), "value": num(m.group(3)),
                         "limit": num(m.group(4)), "passed": m.group(5) != "FAIL", "detail": m.group(6)})
    return rows


def how_ended(rc: int | None, timed_out: bool, limit: float) -> str:
    """How a child ended: "timed out after N s", "died: SIGSEGV" or "exited N"."""
    if timed_out:
        return f"timed out after {limit:.0f} s"
    if rc is not None and rc < 0:
        try:
            return f"died: {signal.Signals(-rc).name}"
        except ValueError:
            return f"died: signal {-rc}"
    return f"exited {rc}"


def what_happened(rc: int | None, timed_out: bool, limit: float, stderr: str) -> str:
    """how_ended, with the CUDA error (exit 3) or the child's last stderr line for an exit."""
    how = how_ended(rc, timed_out, limit)
    if not how.startswith("exited"):
        return how
    m = CUDA_ERR.search(stderr)
    if rc == 3 and m:
        return f"CUDA error: {m.group(1)}"
    last = [ln for ln in stderr.splitlines() if ln.strip()]
    return f"exited {rc}: {last[-1] if last else 'no message'}"


@dataclass
class Child:
    """How one child ended, and what it printed; `waited_s`: the seconds it waited for its GPU section
    (run_child's `section`), not counted against its limit."""
    rc: int | None
    timed_out: bool
    seconds: float
    stdout: str
    stderr: str
    waited_s: float = 0.0


def _pump(pipe, log, echo) -> None:
    for raw in iter(pipe.readline, b""):
        line = raw.decode(errors="replace")
        log.write(line)
        log.flush()
        if echo is not None:
            echo.write(line)
            echo.flush()
    pipe.close()


SECTION_VAR = "MLP_GATE_SECTION_FDS"   # cuda/cli/gpu_section.h: "W,R", the child's ends of two pipes


class _Section:
    """The parent's side of cuda/cli/gpu_section.h: the child writes "ready" when its own start is done
    and waits for "go"; we take `section.to_exclusive(cancel)` (blocking: the time limit is paused
    meanwhile), answer "go", and on "done", the child's end of the pipe closing or close(), give it back
    with `section.to_shared()`. The serving thread alone changes the lock, and it ends within a fraction
    of a second of close(). Anything else the child writes is ignored (a submission is linked into the
    child and may write to the descriptor: at worst it spoils its own timing)."""

    TICK_S = 0.2

    def __init__(self, section) -> None:
        self.section = section
        self.lock = threading.Lock()
        self.cancel = threading.Event()
        self.waited = 0.0
        self.waiting_since: float | None = None
        self.from_child, self.child_w = os.pipe()
        self.child_r, self.to_child = os.pipe()

    def env(self) -> dict[str, str]:
        return {SECTION_VAR: f"{self.child_w},{self.child_r}"}

    def fds(self) -> tuple[int, int]:
        return self.child_w, self.child_r

    def started(self) -> None:
        """After Popen: our copies of the child's ends closed, so its exit closes the pipe."""
        os.close(self.child_w)
        os.close(self.child_r)

    def abandon(self) -> None:
        """Popen failed: every descriptor closed, nothing served."""
        for fd in (self.child_w, self.child_r, self.from_child, self.to_child):
            os.close(fd)

    def paused(self, now: float) -> float:
        with self.lock:
            return self.waited + (now - self.waiting_since if self.waiting_since is not None else 0.0)

    def close(self) -> None:
        """The child has ended: a wait for the GPU gives up, a held section is given back."""
        self.cancel.set()

    def _lines(self):
        """The child's lines as they come, until it closes its end or close()."""
        buf = b""
        while not self.cancel.is_set():
            ready, _, _ = select.select([self.from_child], [], [], self.TICK_S)
            if not ready:
                continue
            chunk = os.read(self.from_child, 256)
            if not chunk:
                return
            buf = (buf + chunk)[-4096:]
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                yield line.strip()

    def serve(self) -> None:
        inside = False
        try:
            for word in self._lines():
                if word == b"ready" and not inside:
                    with self.lock:
                        self.waiting_since = time.time()
                    inside = self.section.to_exclusive(self.cancel)
                    with self.lock:
                        self.waited += time.time() - self.waiting_since
                        self.waiting_since = None
                    if not inside:
                        return
                    try:
                        os.write(self.to_child, b"go\n")
                    except OSError:
                        return
                elif word == b"done" and inside:
                    self.section.to_shared()
                    inside = False
        finally:
            if inside:
                self.section.to_shared()
            os.close(self.to_child)
            os.close(self.from_child)


def run_child(cmd: list[str], limit: float, stdout_log: Path, stderr_log: Path, echo: bool = True,
              env: dict[str, str] | None = None, section=None) -> Child:
    """`cmd` in its own process group (killed whole at `limit` seconds), its stdout and stderr
    written to the logs as they come and, with `echo`, to ours; `env` on top of our environment.
    `section` (schedule.GpuLock while the caller holds it shared): the child may ask for the GPU alone
    for part of its life (cuda/cli/gpu_section.h, _Section); the seconds it waits for it do not count
    against `limit`."""
    t0 = time.time()
    timed_out = False
    sec = _Section(section) if section is not None else None
    full_env = {**os.environ, **(env or {}), **(sec.env() if sec else {})} if (env or sec) else None
    with open(stdout_log, "w") as so, open(stderr_log, "w") as se:
        try:
            child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT,
                                     start_new_session=True, env=full_env, pass_fds=sec.fds() if sec else ())
        except BaseException:
            if sec:
                sec.abandon()
            raise
        if sec:
            sec.started()
        pumps = [threading.Thread(target=_pump, args=(child.stdout, so, sys.stdout if echo else None), daemon=True),
                 threading.Thread(target=_pump, args=(child.stderr, se, sys.stderr if echo else None), daemon=True)]
        if sec:
            pumps.append(threading.Thread(target=sec.serve, daemon=True))
        for t in pumps:
            t.start()
        rc = None
        while True:
            now = time.time()
            left = t0 + limit + (sec.paused(now) if sec else 0.0) - now
            if left <= 0:
                timed_out = True
                break
            try:
                rc = child.wait(timeout=min(left, 0.5) if sec else left)
                break
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(child.pid, signal.SIGKILL)   # the child's group: what it left running goes too
        except (ProcessLookupError, PermissionError):
            pass
        if timed_out:
            rc = child.wait()
        if sec:
            sec.close()
            pumps.pop().join()     # the section given back before the caller's hold of the lock ends
        for t in pumps:
            t.join(timeout=10)
    return Child(rc, timed_out, round(time.time() - t0, 1), Path(stdout_log).read_text(errors="replace"),
                 Path(stderr_log).read_text(errors="replace"), round(sec.paused(time.time()), 2) if sec else 0.0)


@dataclass
class Outcome:
    """A supervised run: its exit status (0 pass, 1 fail, 2 bad input), whether any case ran
    (`started`: a case row or this run's run.json), and what happened ("exited 0", ...)."""
    rc: int
    started: bool
    ended: str
    child_rc: int | None = None


def rel(p: Path) -> str:
    return os.path.relpath(Path(p).resolve(), ROOT)


def print_verdict(v: Verdict, how: str) -> None:
    """The hints, the failing paths and the one "gate: PASS|FAIL" line of a decided run.json."""
    for h in v.hints:
        print(f"hint: {h}", flush=True)
    for p in v.reasons:
        if p.startswith("path "):
            print(f"FAIL {p}", flush=True)
    cases = ", ".join(str(i) for i in v.required_cases)
    print(f"gate: PASS (cases {cases} in {how}; every path's checks)" if v.passed else
          f"gate: FAIL ({'; '.join(v.reasons[:3])}{'; ...' if len(v.reasons) > 3 else ''})", flush=True)
