"""One GPU session's evidence, stage by stage, each under its own time limit so that a slow stage
cannot cost the others their results (`invoke gpu.session`). Run in the repository root of the
GPU machine:

    invoke gpu.session --commit <commit> [--stages build,run,...] [--run-paths unfused,fused]

Stages, in the order they run (DEFAULT_STAGES without --stages): build, ceilings, run, phases,
stationary-check, profile, torchprof, oursstudies, pytest, sanitize; gate, gate0, sweep, ncu, accum
and gemm only on request. A full set takes longer than one 10-minute call on the lent H200 (the PyTorch
baseline's max-autotune compile alone is about 4 minutes), so split it:
"build,ceilings,run,phases,stationary-check,profile", then "build,pytest,sanitize".
--commit names the commit in run.json (MLP_COMMIT; the machine's tree copy can carry a stale
.git); --run-paths picks the paths the run stage times. Each stage's output goes to
results/logs/<stage>.log and its exit status to results/logs/stages.txt (124: its time limit),
after a "# session DATE, MLP_COMMIT=..., stages ..." line.
With $OUT set (the lent machine) the session ends by packing results/, profile/ and SWEEP.md into
$OUT/evidence.tgz without .npy and .sqlite files: unpack it in the repository root.
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import NamedTuple, Sequence

from spec import provenance
from spec.files import BUILD_DIR, DATA_DIR, PROFILE_DIR, RESULTS_DIR, ROOT

TIME_LIMIT_STATUS = 124          # as timeout(1) reports it
KILL_GRACE_S = 10                # SIGTERM, then this long before SIGKILL
INVOKE = (sys.executable, "-m", "invoke")
# test_pytorch_cpu.py's GPU tests train every PyTorch variant (torch.compile's max-autotune
# compile alone takes minutes), hence the pytest stage's longer limit.
GPU_TESTS = ("tests/test_gpu_entry_points.py", "tests/test_gpu_gate.py", "tests/test_host.py",
             "tests/test_reference.py", "tests/test_pytorch_cpu.py")


class Stage(NamedTuple):
    name: str
    limit_s: int
    argv: tuple[str, ...]


def all_stages(run_paths: str | None = None) -> list[Stage]:
    """Every stage, in run order."""
    return [
        Stage("build", 120, (*INVOKE, "build")),
        Stage("ceilings", 120, (*INVOKE, "ceilings")),
        Stage("run", 480, (*INVOKE, "run", *(("--paths", run_paths) if run_paths else ()))),
        Stage("phases", 90, (*INVOKE, "gpu.phases")),
        Stage("stationary-check", 180, (sys.executable, "-c", "import sys; from harness.gpu_session import "
                                        "stationary_check; sys.exit(stationary_check())")),
        Stage("profile", 240, (*INVOKE, "profile")),
        Stage("torchprof", 240, (*INVOKE, "gpu.torch-profiles")),
        Stage("oursstudies", 180, (*INVOKE, "gpu.ours-studies")),
        Stage("pytest", 500, (sys.executable, "-m", "pytest", "-q", "-ra", *GPU_TESTS)),
        Stage("sanitize", 600, (*INVOKE, "sanitize")),
        # tests/submissions/ on every GPU, 4 at a time on each (their timed stages alone) -> results/gate/
        Stage("gate", 560, (*INVOKE, "gate", "tests/submissions", "--gpus", "all", "--jobs", "4")),
        # the same folder on GPU 0 alone, beside it: the two leaderboards' verdicts must agree
        Stage("gate0", 560, (*INVOKE, "gate", "tests/submissions", "--gpus", "0", "--jobs", "4", "--out",
                             "results/experiments/gate_gpu0")),
        Stage("sweep", 580, (*INVOKE, "sweep")),
        Stage("ncu", 300, (*INVOKE, "gpu.ncu")),
        Stage("accum", 200, (*INVOKE, "gpu.accumulate-ab")),
        # our tiled GEMMs against cuBLAS at the sweep's and transformer's shapes -> results/gemm.json
        # (issue 38; after ceilings, whose bf16 rate it reads)
        Stage("gemm", 480, (*INVOKE, "gpu.gemm")),
    ]


STAGE_NAMES = tuple(s.name for s in all_stages())
DEFAULT_STAGES = ("build", "ceilings", "run", "phases", "stationary-check", "profile", "torchprof",
                  "oursstudies", "pytest", "sanitize")


def stationary_check(build_dir: Path = BUILD_DIR, data_dir: Path = DATA_DIR) -> int:
    """The stationary-check stage: make build/stationary_epoch with the last `invoke build`'s
    configuration, then run its bitwise check of the shipped stationary kernel against dev's build
    of the same variant bits (dev/stationary/README.md). Its exit status: 0 equal, 1 not, 3 a CUDA
    error or no stationary shape on this device, 2 the make failed."""
    from harness.studies.phases import remake_command
    binary = os.path.relpath(Path(build_dir, "stationary_epoch").resolve(), ROOT)
    make = remake_command(binary, build_dir)
    print("stationary-check: " + shlex.join(make), flush=True)
    if subprocess.run(make, cwd=ROOT).returncode != 0:
        print(f"error: make {binary} failed (see the compiler output above)", flush=True)
        return 2
    cmd = [binary, "--check-shipped", "--data", os.path.relpath(Path(data_dir).resolve(), ROOT)]
    print("stationary-check: " + shlex.join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode


def parse_stages(text: str | None) -> list[str]:
    """The comma-separated stage names, checked; None or "" gives DEFAULT_STAGES."""
    names = [s.strip() for s in (text or "").split(",") if s.strip()] or list(DEFAULT_STAGES)
    unknown = [n for n in names if n not in STAGE_NAMES]
    if unknown:
        raise ValueError(f"--stages: unknown stage {unknown[0]!r} (stages: {', '.join(STAGE_NAMES)})")
    return names


def run_stage(stage: Stage, log_dir: Path, env: dict | None = None, cwd: Path = ROOT) -> int:
    """Run one stage into log_dir/<name>.log under its time limit; append "<name>: exit N" to
    log_dir/stages.txt, print that line and the log's last 4 lines; return the status (124 when
    the limit stopped it: its whole process group is ended)."""
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{stage.name}.log"
    print(f"== {stage.name} (limit {stage.limit_s} s)", flush=True)
    with open(log, "wb") as fh:
        try:
            proc = subprocess.Popen(stage.argv, stdout=fh, stderr=subprocess.STDOUT, cwd=cwd,
                                    env=env, start_new_session=True)
        except OSError as exc:
            fh.write(f"cannot start {stage.argv[0]}: {exc}\n".encode())
            rc = 127
        else:
            try:
                rc = proc.wait(timeout=stage.limit_s)
            except subprocess.TimeoutExpired:
                _end_group(proc)
                rc = TIME_LIMIT_STATUS
    line = f"{stage.name}: exit {rc}" + (" (time limit)" if rc == TIME_LIMIT_STATUS else "")
    with open(log_dir / "stages.txt", "a") as fh:
        fh.write(line + "\n")
    print(line, flush=True)
    tail = log.read_text(errors="replace").splitlines()[-4:]
    if tail:
        print("\n".join(tail), flush=True)
    return rc


def _end_group(proc: subprocess.Popen) -> None:
    """SIGTERM the stage's process group (it leads one: start_new_session), SIGKILL after a grace."""
    for sig, wait_s in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def gpu_snapshot(path: Path) -> None:
    """nvidia-smi's name, driver, clocks and temperature as CSV (its error text where it fails)."""
    cmd = ["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu",
           "--format=csv"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        text = res.stdout + res.stderr
    except (OSError, subprocess.SubprocessError) as exc:
        text = f"nvidia-smi: {exc}\n"
    Path(path).write_text(text)


def _evidence_filter(info: tarfile.TarInfo):
    return None if info.name.endswith((".npy", ".sqlite")) else info


def pack_evidence(out_dir: Path, root: Path = ROOT) -> Path:
    """out_dir/evidence.tgz of results/, profile/ and SWEEP.md (where present), without .npy
    (a width-8192 sweep point's weights alone are 25 MB) and .sqlite files."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    dest = Path(out_dir) / "evidence.tgz"
    tmp = dest.with_name(".evidence.tgz.tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for name in ("results", "profile", "SWEEP.md"):
            if (Path(root) / name).exists():
                tar.add(Path(root) / name, arcname=name, filter=_evidence_filter)
    os.replace(tmp, dest)
    print(f"evidence: {dest} ({dest.stat().st_size:,} bytes)", flush=True)
    return dest


def session_header(stage_names: Sequence[str], commit: str | None) -> str:
    """The comment line stages.txt gets at the start of a session: its date, its commit and its
    stages."""
    return (f"# session {provenance.utc_now()}, MLP_COMMIT={commit or 'unset'}, "
            f"stages {','.join(stage_names)}")


def session(stage_names: Sequence[str], commit: str | None = None, run_paths: str | None = None,
            out: str | None = None, results_dir: Path = RESULTS_DIR, profile_dir: Path = PROFILE_DIR,
            stages: list[Stage] | None = None, root: Path = ROOT) -> int:
    """Run the named stages in run order; pack the evidence into `out` (default $OUT) when set.
    Returns 0 when every stage exited 0, else 1 (stages.txt says which)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    if commit:
        env["MLP_COMMIT"] = commit
    elif not env.get("MLP_COMMIT"):
        print("gpu.session: no --commit and no MLP_COMMIT: run.json takes its commit from this "
              "tree's .git, which on a lent machine can be stale", flush=True)
    log_dir = Path(results_dir) / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    gpu_snapshot(log_dir / "nvidia-smi.csv")
    with open(log_dir / "stages.txt", "a") as fh:   # which commit and when, before its stages' lines
        fh.write(session_header(stage_names, env.get("MLP_COMMIT")) + "\n")
    failed = []
    for stage in stages or all_stages(run_paths):
        if stage.name in stage_names and run_stage(stage, log_dir, env, cwd=root) != 0:
            failed.append(stage.name)
    for f in Path(profile_dir).glob("*.sqlite"):
        f.unlink()
    out = out if out is not None else os.environ.get("OUT")
    if out:
        pack_evidence(Path(out), root)
    if failed:
        print(f"gpu.session: stages that did not exit 0: {', '.join(failed)} "
              f"({os.path.relpath(log_dir / 'stages.txt', root)})", flush=True)
    return 1 if failed else 0
