"""Build the binary through the Makefile: pick the architecture, print and record the nvcc command."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from spec.files import BUILD_DIR, ROOT, write_json

DEFAULT_ARCH = "sm_90"  # the H200 this benchmark is measured on
DEFAULT_SUBMISSION = "cuda/contract/submission_ref.cu"
# The five entry points of cuda/contract/submission.h, in the order a learner writes them.
ENTRY_POINTS = ("mlp_forward", "mlp_loss", "mlp_backward", "mlp_step", "mlp_train_epoch")
CHECK_DIR = ".submission-check"   # inside the build folder: the submission compiled alone
EXIT_BUILD_FAILED, EXIT_BAD_INPUT = 1, 2


def _fail(message: str, code: int = EXIT_BAD_INPUT):
    """One line on stderr, then the exit status (2 bad input, 1 the build failed)."""
    print(message, file=sys.stderr, flush=True)
    raise SystemExit(code)


def detect_arch() -> tuple[str, str]:
    """(arch, how it was chosen): the compute capability of GPU 0, else sm_90 when there is none."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30)
            cap = out.stdout.strip().splitlines()[0].strip() if out.returncode == 0 and out.stdout.strip() else ""
            if cap and cap.replace(".", "").isdigit():
                return "sm_" + cap.replace(".", ""), f"detected compute capability {cap} on GPU 0"
        except (OSError, subprocess.SubprocessError, IndexError):
            pass
    return DEFAULT_ARCH, f"no GPU found: building for {DEFAULT_ARCH} (pass --arch to choose)"


def validate_arch(arch: str) -> str:
    if not (arch.startswith("sm_") and arch[3:].isdigit() and len(arch) in (5, 6)):
        _fail(f"error: --arch {arch!r}: expected sm_XY, e.g. sm_90 (H100/H200) or sm_75")
    return arch


ACCUMULATORS = ("double", "float")  # the stepwise GEMMs' accumulator (cuda/kernels/stepwise.cuh), default first


def make_command(arch: str, submission: str | None, build_dir: Path, target: str = "all",
                 accumulate: str = ACCUMULATORS[0]) -> list[str]:
    cmd = ["make", "--no-print-directory", "-C", str(ROOT), f"-j{os.cpu_count() or 2}", f"ARCH={arch}",
           f"BUILD={os.path.relpath(Path(build_dir).resolve(), ROOT)}", f"ACCUM={accumulate}"]
    if submission:
        cmd.append(f"SUBMISSION={submission}")
    return cmd + [target]


def defined_symbols(obj: Path) -> set[str]:
    """The external symbols an object file defines (nm --defined-only -g)."""
    res = subprocess.run(["nm", "--defined-only", "-g", str(obj)], capture_output=True, text=True)
    if res.returncode != 0:
        _fail(f"error: nm {obj}: {res.stderr.strip() or 'failed'}", EXIT_BUILD_FAILED)
    return {line.split()[-1] for line in res.stdout.splitlines() if line.strip()}


def check_submission(arch: str, submission: str, build_dir: Path, accumulate: str) -> None:
    """Compile the submission alone into build_dir/.submission-check/ and check that it defines
    the five entry points, before anything of the real build is touched: a submission that does
    not compile or lacks one exits here, and build_dir keeps its last good build."""
    check_dir = Path(build_dir) / CHECK_DIR
    obj = check_dir / "obj" / "submission.o"
    cmd = make_command(arch, submission, check_dir, os.path.relpath(obj.resolve(), ROOT), accumulate)
    print("build: " + shlex.join(cmd) + "   (the submission alone, for its entry points)", flush=True)
    try:
        if subprocess.run(cmd).returncode != 0:
            _fail(f"error: --submission {submission} does not compile (the compiler output is above); "
                  f"{build_dir} keeps its last good build", EXIT_BUILD_FAILED)
        missing = [f for f in ENTRY_POINTS if f not in defined_symbols(obj)]
    finally:
        shutil.rmtree(check_dir, ignore_errors=True)
    if missing:
        _fail(f"error: --submission {submission} lacks {', '.join(missing)} (cuda/contract/submission.h's "
              f"entry points, extern \"C\"; a stub returns MLP_ERR_NOT_IMPLEMENTED, as in "
              f"cuda/contract/submission_starter.cu); {build_dir} keeps its last good build")


def build(arch: str | None = None, submission: str | None = None, build_dir: Path = BUILD_DIR,
          accumulate: str = ACCUMULATORS[0]) -> dict:
    """Run make; print the nvcc command; write build_dir/build_info.json. Returns that info."""
    if accumulate not in ACCUMULATORS:
        _fail(f"error: --accumulate {accumulate!r}: expected one of {', '.join(ACCUMULATORS)}")
    if arch:
        arch, why = validate_arch(arch), "from --arch"
    else:
        arch, why = detect_arch()
    if submission:
        sub = Path(submission)
        if not sub.is_file():
            _fail(f"error: --submission {submission}: no such file")
        submission = os.path.relpath(sub.resolve(), ROOT)
    build_dir = Path(build_dir)
    print(f"build: {arch} ({why})", flush=True)
    nvcc = subprocess.run(make_command(arch, submission, build_dir, "print-nvcc", accumulate),
                          capture_output=True, text=True, check=True).stdout.strip()
    print(f"build: nvcc command: {nvcc}", flush=True)
    if submission:
        check_submission(arch, submission, build_dir, accumulate)
    cmd = make_command(arch, submission, build_dir, accumulate=accumulate)
    print("build: " + shlex.join(cmd), flush=True)
    if subprocess.run(cmd).returncode != 0:
        (build_dir / "build_info.json").unlink(missing_ok=True)   # build/ is no build of anything now
        _fail("error: build failed (see the compiler output above); build_info.json removed", EXIT_BUILD_FAILED)
    info = {"arch": arch, "arch_reason": why, "submission": submission or DEFAULT_SUBMISSION,
            "accumulate": accumulate,
            "make_command": shlex.join(["make", f"ARCH={arch}"] + ([f"SUBMISSION={submission}"] if submission else [])
                                       + ([f"ACCUM={accumulate}"] if accumulate != ACCUMULATORS[0] else [])),
            "nvcc_command": nvcc}
    write_json(build_dir / "build_info.json", info)
    return info


def load_build_info(build_dir: Path = BUILD_DIR) -> dict:
    path = Path(build_dir) / "build_info.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise SystemExit(f"error: {path} missing: run `invoke build` first") from None
