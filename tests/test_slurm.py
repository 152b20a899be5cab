"""The course gate on a real one-node Slurm (slurm/gate_array.sbatch, its afterany dependency and
slurm/gate_aggregate.sbatch, submitted with sbatch), and the aggregate step's documented form
(tests/test_gate_task.py has `invoke gate --aggregate a,b` on the CPU).

The cluster fixture starts munged, slurmctld and slurmd from Debian's munge, slurmctld, slurmd
and slurm-client packages (`invoke setup` installs them, README's set-up, which CI runs; without
them the fixture skips, naming the programs missing and that task), each daemon in the foreground
as a child of the test, with a munge key, a socket, a slurm.conf, state, spool and logs in a temp
folder of their own (nothing under /etc or /var is used), and stops each by its pid at teardown,
whether the test passed or not.
"""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from harness.devenv import SLURM_PACKAGES, missing_programs   # what `invoke setup` installs
from spec.files import BUILD_DIR, ROOT

GATE_FIXTURES = ROOT / "tests" / "fixtures" / "gate"
SUBMISSIONS = ROOT / "tests" / "submissions"
ARRAY = ROOT / "slurm" / "gate_array.sbatch"
AGGREGATE = ROOT / "slurm" / "gate_aggregate.sbatch"

NODE = "mlpgate"
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
         "DEADLINE"}


# ----------------------------------------------------------------------------- the cluster

def _why_not() -> str | None:
    """Why the cluster cannot start here (a Slurm or munge program missing), or None."""
    missing = missing_programs()
    if not missing:
        return None
    return (f"{', '.join(missing)} not found: Debian's {' '.join(SLURM_PACKAGES)} are installed by "
            f"`invoke setup` (README's set-up; it needs root)")


def _program(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_line() -> str:
    """This machine as slurmd sees it (`slurmd -C`: its CPUs, their layout and RealMemory), as our node."""
    res = subprocess.run([_program("slurmd"), "-C"], capture_output=True, text=True, timeout=60)
    first = res.stdout.splitlines()[0] if res.returncode == 0 and res.stdout.strip() else ""
    fields = [f for f in first.split() if f.split("=")[0] in
              ("CPUs", "Boards", "SocketsPerBoard", "CoresPerSocket", "ThreadsPerCore", "RealMemory")]
    if not any(f.startswith("CPUs=") for f in fields):
        fields = [f"CPUs={os.cpu_count() or 1}"]
    return " ".join(fields)


@dataclass
class Cluster:
    base: Path
    conf: Path
    env: dict
    daemons: list = field(default_factory=list)   # (name, Popen), in start order
    jobs: list = field(default_factory=list)      # every job id submitted through sbatch()

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(list(argv), capture_output=True, text=True, env=self.env, cwd=ROOT, timeout=timeout)

    def sbatch(self, *argv: str) -> str:
        res = self.run("sbatch", "--parsable", *argv)
        assert res.returncode == 0, f"sbatch {' '.join(argv)}: {res.stderr.strip()}"
        job = res.stdout.strip().split(";")[0]
        self.jobs.append(job)
        return job

    def jobs_of(self, job: str) -> list[dict[str, str]]:
        """`scontrol show job -o JOB`: one record a job (an array's every task), its KEY=VALUE fields."""
        res = self.run("scontrol", "show", "job", "-o", job)
        assert res.returncode == 0, f"scontrol show job {job}: {res.stderr.strip()}"
        recs = []
        for line in res.stdout.splitlines():
            recs.append({m.group(1): m.group(2) for m in re.finditer(r"(?:^|\s)([A-Za-z]+)=(\S*)", line)})
        return recs

    def wait_ended(self, job: str, timeout: float) -> list[dict[str, str]]:
        """Poll scontrol (no accounting here, so no sacct) until every record of JOB has ended."""
        end = time.monotonic() + timeout
        while True:
            recs = self.jobs_of(job)
            if recs and all(r.get("JobState") in ENDED for r in recs):
                return recs
            if time.monotonic() > end:
                raise AssertionError(f"job {job} not ended after {timeout:.0f} s: "
                                     + "; ".join(f"{r.get('JobId')}_{r.get('ArrayTaskId', '')} {r.get('JobState')} "
                                                 f"{r.get('Reason')}" for r in recs))
            time.sleep(0.5)

    def log_tails(self) -> str:
        out = []
        for log in sorted((self.base / "log").glob("*")):
            lines = log.read_text(errors="replace").splitlines()[-15:]
            out.append(f"--- {log.name}\n" + "\n".join(lines))
        return "\n".join(out)


def _wait(what: str, ok, timeout: float, cluster: Cluster, proc=None) -> None:
    end = time.monotonic() + timeout
    while not ok():
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what}: the daemon exited {proc.returncode}\n{cluster.log_tails()}")
        if time.monotonic() > end:
            raise RuntimeError(f"{what}: not after {timeout:.0f} s\n{cluster.log_tails()}")
        time.sleep(0.2)


def _start(cluster: Cluster, name: str, argv: list[str]) -> subprocess.Popen:
    log = open(cluster.base / "log" / f"{name}.out", "w")
    # Its own session: a ^C to pytest does not reach it first; the teardown stops it by its pid.
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=cluster.env, cwd=cluster.base, start_new_session=True)
    log.close()
    cluster.daemons.append((name, proc))
    return proc


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the daemon's own pid, SIGKILL to that pid after 15 s."""
    if proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=15)


def _start_time(pid: int) -> str | None:
    """The process's start time (/proc/PID/stat field 22): the same pid later is the same process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _children(pid: int) -> list[tuple[int, str]]:
    """(pid, start time) of each child of `pid` (slurmctld forks slurmscriptd)."""
    kids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    kids.append((int(proc.name), _start_time(int(proc.name))))
            except (OSError, IndexError, ValueError):
                pass
    return kids


def _stop_child(pid: int, started: str | None) -> None:
    """A daemon's own child, by its pid (if that pid is still the same process): SIGTERM, then SIGKILL."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        end = time.monotonic() + 10
        while time.monotonic() < end:
            if _start_time(pid) != started or started is None:
                return
            time.sleep(0.2)
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return


SLURM_CONF = """\
# A one-node cluster for tests/test_slurm.py: no cgroups, no accounting, everything under {base}.
ClusterName=mlpgate
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
AuthType=auth/munge
AuthInfo=socket={base}/munge/munge.socket
CredType=cred/munge
StateSaveLocation={base}/state
SlurmdSpoolDir={base}/spool
SlurmctldPidFile={base}/slurmctld.pid
SlurmdPidFile={base}/slurmd.pid
SlurmctldLogFile={base}/log/slurmctld.log
SlurmdLogFile={base}/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
MailProg=/bin/true
SchedulerType=sched/builtin
ReturnToService=2
KillWait=5
MinJobAge=600
NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 {node_line} State=UNKNOWN
PartitionName=gate Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""


@pytest.fixture(scope="module")
def slurm_cluster():
    """munged, slurmctld and slurmd of our own, on this machine; every one stopped by pid at teardown."""
    why = _why_not()
    if why:
        pytest.skip(why)
    # Under /tmp, not pytest's 0700 tmp_path: munged wants every folder above its socket open to all.
    base = Path(tempfile.mkdtemp(prefix="mlp-slurm-"))
    base.chmod(0o755)
    for d in ("munge", "state", "spool", "log"):
        (base / d).mkdir(mode=0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SBATCH_", "SALLOC_", "SRUN_"))}
    # The jobs see no GPU on any machine (this cluster has no GRES): the gate's no-GPU path, and
    # the test's seconds, on a GPU machine too.
    env.update(SLURM_CONF=str(base / "slurm.conf"), PYTHON=sys.executable, CUDA_VISIBLE_DEVICES="")
    cluster = Cluster(base=base, conf=base / "slurm.conf", env=env)
    helpers: list[tuple[int, str]] = []
    try:
        key = base / "munge" / "munge.key"          # a key made for this test alone
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        sock = base / "munge" / "munge.socket"
        munged = _start(cluster, "munged", [_program("munged"), "--foreground", f"--key-file={key}",
                                            f"--socket={sock}", f"--pid-file={base / 'munge' / 'munged.pid'}",
                                            f"--log-file={base / 'log' / 'munged.log'}",
                                            f"--seed-file={base / 'munge' / 'munged.seed'}"])
        _wait("munged's socket", sock.exists, 20, cluster, munged)
        host = socket.gethostname().split(".")[0]
        cluster.conf.write_text(SLURM_CONF.format(base=base, host=host, node=NODE, node_line=_node_line(),
                                                  ctld_port=_free_port(), slurmd_port=_free_port()))
        ctld = _start(cluster, "slurmctld", [_program("slurmctld"), "-D", "-f", str(cluster.conf)])
        _wait("slurmctld up (scontrol ping)", lambda: "is UP" in cluster.run("scontrol", "ping").stdout, 30,
              cluster, ctld)
        helpers = _children(ctld.pid)   # slurmscriptd; it should end with slurmctld
        slurmd = _start(cluster, "slurmd", [_program("slurmd"), "-D", "-N", NODE, "-f", str(cluster.conf)])
        _wait(f"node {NODE} idle", lambda: "State=IDLE" in cluster.run("scontrol", "show", "node", "-o",
                                                                         NODE).stdout, 30, cluster, slurmd)
        yield cluster
    finally:
        # Jobs first (a job's slurmstepd outlives slurmd), then each daemon by its pid, newest first.
        if cluster.jobs and any(p.poll() is None for n, p in cluster.daemons if n == "slurmctld"):
            cluster.run("scancel", *cluster.jobs)
            end = time.monotonic() + 30
            while time.monotonic() < end:
                states = [r.get("JobState") for j in cluster.jobs for r in _records_or_none(cluster, j)]
                if all(s in ENDED for s in states):
                    break
                time.sleep(0.5)
        errors = []
        for stop, what in [*((lambda p=proc: _stop(p), name) for name, proc in reversed(cluster.daemons)),
                           *((lambda a=h: _stop_child(*a), "slurmscriptd") for h in helpers)]:
            try:
                stop()
            except (OSError, subprocess.SubprocessError) as exc:   # every daemon gets its stop, then the errors
                errors.append(f"{what}: {type(exc).__name__}: {exc}")
        shutil.rmtree(base, ignore_errors=True)
        if errors:
            raise RuntimeError("stopping the cluster: " + "; ".join(errors))


def _records_or_none(cluster: Cluster, job: str) -> list[dict[str, str]]:
    try:
        return cluster.jobs_of(job)
    except (AssertionError, subprocess.SubprocessError):
        return []


# ----------------------------------------------------------------------------- the array on Slurm

def _tail(path: Path) -> bytes:
    """The last three parts of `path`: on a command line whether the path is absolute or relative
    (the gate hands make the submission's path relative to the checkout)."""
    return os.fsencode(os.path.join(*path.parts[-3:]))


def _procs_with(path: Path, parts: int = 3) -> list[tuple[int, str]]:
    """(pid, wchan) of every process with `path` (its last `parts` parts) on its command line."""
    found = []
    tail = os.fsencode(os.path.join(*path.parts[-parts:]))
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes()
            wchan = (proc / "wchan").read_text()
        except OSError:
            continue
        if tail in cmd:
            found.append((int(proc.name), wchan))
    return found


def _blocked_on_fifo(src: Path) -> bool:
    """The submission's compiler sleeps in its FIFO's open (wchan wait_for_partner): its array task
    is mid-gate and stays there. (The compiler reads the gate's copy of the file, under
    build/gate/<name>/src/: the name alone is on its command line.)"""
    return any(w == "wait_for_partner" for _, w in _procs_with(src, parts=1))


def _gate_pid(src: Path) -> int | None:
    """The array task's own process: `python -m harness.gate.course --one SRC` (the script execs it)."""
    for pid, _ in _procs_with(src):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--one" in argv and b"harness.gate.course" in argv:
            return pid
    return None


def _kill_leftovers(srcs: list[Path]) -> list[int]:
    """SIGKILL, by process group id, any process still naming one of our submissions (none should be
    left: Slurm ends a task's processes; only a task's escaped children would be). Their pgids."""
    groups = set()
    for src in srcs:
        for pid, _ in _procs_with(src):
            try:
                groups.add(os.getpgid(pid))
            except ProcessLookupError:
                pass
    for g in groups - {0, 1, os.getpgrp()}:
        try:
            os.killpg(g, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return sorted(groups)


def _rows(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "leaderboard.csv", newline="") as fh:
        return {r["submission"]: r for r in csv.DictReader(fh)}


def _wait_for(what: str, ok, timeout: float, cl: Cluster) -> None:
    end = time.monotonic() + timeout
    while not ok():
        assert time.monotonic() < end, f"{what}: not after {timeout:.0f} s\n{cl.log_tails()}"
        time.sleep(0.3)


@pytest.mark.slow
def test_sbatch_array_afterany_aggregate_on_a_real_slurm(slurm_cluster, tmp_path, built):
    """Four submissions, one array task each, then the aggregate job, all through sbatch: naive
    (it builds; no GPU here, so the gate's no-GPU path, a FAIL that says so), one that does not
    compile, one whose task Slurm cancels mid-gate (scancel) and one whose task dies mid-gate (its
    process group SIGKILLed, as a node's OOM killer or a crash would): each of those two waits in
    its compile on a FIFO of its own, so each is killed while it runs, never after it finished."""
    built("mlp_train")   # the array tasks link its objects
    cl = slurm_cluster
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    out.mkdir()   # Slurm opens each task's log there before the script runs
    # Names of their own: the gate builds in build/gate/<name>/ of this checkout.
    naive, broken, cancelled, killed = (f"slurmtest_{n}" for n in ("naive", "broken", "cancelled", "killed"))
    shutil.copy2(SUBMISSIONS / "naive.cu", subs / f"{naive}.cu")
    shutil.copy2(SUBMISSIONS / "naive_base.cuh", subs / "naive_base.cuh")
    (subs / f"{broken}.cu").write_text('#include "submission.h"\nthis is not CUDA C++;\n')
    for n in (cancelled, killed):   # its compile never ends by itself (an absolute #include: the gate
        os.mkfifo(subs / f"{n}.fifo")  # compiles a copy of the file, and copies no FIFO)
        (subs / f"{n}.cu").write_text(f'#include "{subs / (n + ".fifo")}"\n')
    names = sorted([naive, broken, cancelled, killed])   # the array's order: task i gates names[i]
    src = {n: subs / f"{n}.cu" for n in names}
    task = {n: f"{{}}_{i}" for i, n in enumerate(names)}   # .format(jid)
    leftovers = []
    try:
        # The script's defaults ask for a GPU: this cluster has no GRES, so sbatch refuses it as written ...
        res = cl.run("sbatch", "--test-only", str(ARRAY), str(subs), str(out))
        assert res.returncode != 0 and "Invalid generic resource" in res.stderr, res.stderr
        # ... and command-line options win over the #SBATCH lines: no GRES, one CPU a task (2-CPU runners).
        jid = cl.sbatch(f"--array=0-{len(names) - 1}", "--gres=none", "--cpus-per-task=1",
                        f"--output={out}/slurm-%A_%a.log", str(ARRAY), str(subs), str(out))
        agg = cl.sbatch(f"--dependency=afterany:{jid}", f"--output={out}/slurm-%j-aggregate.log",
                        str(AGGREGATE), jid, str(subs), str(out))
        _wait_for(f"{cancelled}'s compile waiting on its FIFO", lambda: _blocked_on_fifo(src[cancelled]), 60, cl)
        # The array is not done, so the aggregate waits on it.
        (pending,) = cl.jobs_of(agg)
        assert pending["JobState"] == "PENDING" and pending["Reason"] == "Dependency", pending
        assert pending["Dependency"].startswith(f"afterany:{jid}_*"), pending
        res = cl.run("scancel", task[cancelled].format(jid))
        assert res.returncode == 0, res.stderr
        _wait_for(f"{killed}'s compile waiting on its FIFO", lambda: _blocked_on_fifo(src[killed]), 60, cl)
        pid = _gate_pid(src[killed])
        assert pid is not None, _procs_with(src[killed])
        # The task leads its own process group (slurmstepd makes it so): the gate and its compile, at once.
        assert os.getpgid(pid) == pid != os.getpgrp(), (pid, os.getpgid(pid))
        os.killpg(pid, signal.SIGKILL)
        tasks = {int(r["ArrayTaskId"]): r for r in cl.wait_ended(jid, 90)}
        (done,) = cl.wait_ended(agg, 90)
    finally:
        leftovers = _kill_leftovers(list(src.values()))
        for n in names:
            shutil.rmtree(BUILD_DIR / "gate" / n, ignore_errors=True)
    assert not leftovers, f"processes of our submissions outlived their tasks (process groups {leftovers})"

    logs = {p.name: p.read_text(errors="replace") for p in out.glob("slurm-*.log")}
    assert sorted(tasks) == list(range(len(names))), tasks
    by = {names[i]: r for i, r in tasks.items()}
    # A submission that does not build exits 1, one that reached no GPU 3 (Slurm: FAILED both); the
    # cancelled task is CANCELLED; the killed one FAILED, signal 9.
    assert by[broken]["JobState"] == "FAILED" and by[broken]["ExitCode"] == "1:0", (by[broken], logs)
    assert by[naive]["JobState"] == "FAILED" and by[naive]["ExitCode"] == "3:0", (by[naive], logs)
    assert by[cancelled]["JobState"] == "CANCELLED", by[cancelled]
    assert by[killed]["JobState"] == "FAILED" and by[killed]["ExitCode"] == "0:9", by[killed]
    # afterany: the aggregate ran after every task had ended, and succeeded.
    assert done["JobState"] == "COMPLETED" and done["ExitCode"] == "0:0", (done, logs)
    assert done["StartTime"] >= max(r["EndTime"] for r in tasks.values()), (done, tasks)
    agg_log = logs[f"slurm-{agg}-aggregate.log"]

    # How every task ended, from Slurm, in OUT/<name>/slurm.json.
    recs = {n: json.loads((out / n / "slurm.json").read_text()) for n in names}
    for n in names:
        r = recs[n]
        assert r["slurm_job"] == task[n].format(jid) and r["submission"] == str(src[n]), r
        assert r["state"] == by[n]["JobState"] and r["exit_code"] == by[n]["ExitCode"], (r, by[n])
        assert r["log"] == str(out / f"slurm-{task[n].format(jid)}.log"), r
        assert r["ended"].startswith(f"Slurm task {task[n].format(jid)} {r['state']}"), r
    for n, status in ((naive, 3), (broken, 1)):
        assert recs[n]["verdict_written"] and not recs[n]["cut_short"], recs[n]
        assert f"(exit status {status})" in recs[n]["ended"], recs[n]
    # Killed by a signal before the gate wrote anything: the record says so.
    dead = recs[killed]
    assert not dead["verdict_written"] and dead["cut_short"], dead
    assert "(killed by signal 9, SIGKILL)" in dead["ended"] and "the gate wrote no verdict" in dead["ended"], dead
    # Cancelled: Slurm signals the task's children before the task, so the gate may have written a
    # verdict about their deaths ("does not build: ... Error 143") or none; either way it is cut short.
    gone = recs[cancelled]
    assert gone["cut_short"], gone
    assert ("the gate's verdict is of a run cut short" if gone["verdict_written"] else
            "the gate wrote no verdict") in gone["ended"], gone
    for n in (cancelled, killed):
        assert f"slurm: {src[n]}: {recs[n]['ended']}" in agg_log, agg_log

    # The aggregate job's leaderboard: what the gate wrote a verdict for, each FAIL with its reason.
    rows = _rows(out)
    md = (out / "leaderboard.md").read_text()
    assert rows[broken]["verdict"] == "FAIL", rows
    assert rows[broken]["first_hint"].startswith("does not build: ") and "error" in rows[broken]["first_hint"], rows
    assert rows[naive]["verdict"] == "FAIL" and rows[naive]["first_hint"], rows
    for n in (naive, broken):
        assert f"| {n} | **FAIL** | 0/" in md, md

    # The gate's no-GPU path names what happened, and a task that died is a row naming how (issue 26).
    assert "no CUDA device" in rows[naive]["first_hint"] or "no GPU reached" in rows[naive]["first_hint"], rows[naive]
    for n, word in ((cancelled, "CANCELLED"), (killed, "signal 9")):
        row = rows.get(n)
        assert row is not None and row["verdict"] == "FAIL" and row["first_hint"].startswith(recs[n]["ended"]), (n, row)
        assert word in row["first_hint"] and f"| {n} | **FAIL** | 0/" in md, (row, md)


# ----------------------------------------------------------------------------- the scripts, on the CPU

def _aggregate_module():
    from importlib.machinery import SourceFileLoader
    from importlib.util import module_from_spec, spec_from_loader
    spec = spec_from_loader("gate_aggregate", SourceFileLoader("gate_aggregate", str(AGGREGATE)))
    mod = module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_aggregate_reads_scontrol_and_says_how_a_task_ended(tmp_path):
    agg = _aggregate_module()
    line = ("JobId=12 ArrayJobId=10 ArrayTaskId=2 JobName=mlp-gate UserId=root(0) JobState=TIMEOUT Reason=TimeLimit "
            "Dependency=(null) ExitCode=0:15 RunTime=00:20:01 TimeLimit=00:20:00 StdErr=/a b/slurm-10_2.log "
            "StdIn=/dev/null StdOut=/a b/slurm-10_2.log Power=")
    tasks = agg.parse_scontrol(line + "\nJobId=11 ArrayJobId=10 ArrayTaskId=1 JobState=FAILED ExitCode=1:0\n")
    assert sorted(tasks) == [1, 2] and tasks[2]["StdOut"] == "/a b/slurm-10_2.log" and tasks[2]["JobState"] == "TIMEOUT"
    assert agg.exit_code("0:9") == ("killed by signal 9, SIGKILL", 9)
    assert agg.exit_code("1:0") == ("exit status 1", 0)
    folder = tmp_path / "sub"
    folder.mkdir()
    doc = agg.record("10", 2, "subs/sub.cu", folder, tasks[2], "")
    assert doc["cut_short"] and not doc["verdict_written"]
    assert doc["ended"] == "Slurm task 10_2 TIMEOUT (killed by signal 15, SIGTERM); the gate wrote no verdict"
    (folder / "run.json").write_text("{}")
    doc = agg.record("10", 2, "subs/sub.cu", folder, tasks[2], "")
    assert doc["ended"].endswith("; the gate's verdict is of a run cut short")
    doc = agg.record("10", 1, "subs/sub.cu", folder, tasks[1], "")
    assert not doc["cut_short"] and doc["ended"] == "Slurm task 10_1 FAILED (exit status 1)"
    assert agg.record("10", 3, "s.cu", tmp_path / "none", None, "scontrol has no record of it: x")["ended"] == (
        "Slurm task 10_3: state unknown (scontrol has no record of it: x); the gate wrote no verdict")


def test_aggregate_and_array_refuse_bad_arguments(tmp_path):
    py = sys.executable
    res = subprocess.run([py, str(AGGREGATE), "x12", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.startswith("usage: "), res.stderr
    res = subprocess.run([py, str(AGGREGATE), "12", str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.strip() == f"error: {tmp_path}: no *.cu files", res.stderr
    (tmp_path / "a.cu").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    res = subprocess.run(["bash", str(ARRAY), str(tmp_path)], capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode != 0 and "not an array task" in res.stderr, res.stderr
    res = subprocess.run(["bash", str(ARRAY), str(tmp_path)], capture_output=True, text=True, timeout=60,
                         env={**env, "SLURM_ARRAY_TASK_ID": "1"})
    assert res.returncode == 2 and res.stderr.strip() == (
        f"error: array task 1: {tmp_path} has 1 submissions (*.cu), tasks 0-0"), res.stderr


def test_the_fixture_skips_naming_what_is_missing_and_the_task_that_installs_it(monkeypatch):
    mod = sys.modules[__name__]
    monkeypatch.setattr(mod, "missing_programs", lambda: ["slurmd", "munged"])
    assert mod._why_not() == ("slurmd, munged not found: Debian's slurmctld slurmd slurm-client munge are installed "
                              "by `invoke setup` (README's set-up; it needs root)")
    monkeypatch.setattr(mod, "missing_programs", lambda: [])
    assert mod._why_not() is None


def test_readme_and_the_scripts_give_the_same_two_sbatch_lines():
    lines = ("jid=$(sbatch --parsable --array=0-$((N-1)) slurm/gate_array.sbatch SUBS)",
             "sbatch --dependency=afterany:$jid slurm/gate_aggregate.sbatch $jid SUBS")
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("### Gating on a Slurm cluster"):]
    section = section[:section.index("\n## ")]
    for text in (section, ARRAY.read_text(), AGGREGATE.read_text()):
        assert all(line in text for line in lines)
    # The defaults README's table gives are the array script's #SBATCH lines.
    for option, value, cell in (("--gres", "gpu:1", "`gpu:1`"), ("--cpus-per-task", "4", "4"),
                                ("--time", "00:20:00", "00:20:00")):
        assert f"#SBATCH {option}={value}\n" in ARRAY.read_text()
        assert f"| array | `{option}` | {cell} |" in section
