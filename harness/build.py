"""Build the binary through the Makefile: pick the architecture, print and record the nvcc command.

Every value make receives is checked before anything of the build folder is touched: --arch is
sm_XY or sm_XYZ in ASCII digits and one that this nvcc compiles for; a learner's --submission
reaches make only as a copy under a safe name (spec.validate.safe_name) in the build folder, so a
file name holding a space, a quote, a `;`, `$(...)` or a backtick is never read by make or a shell.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from spec import validate
from spec.files import BUILD_DIR, ROOT, InputError, read_input, write_bytes, write_json

DEFAULT_ARCH = "sm_90"  # the H200 this benchmark is measured on
DEFAULT_SUBMISSION = "cuda/contract/submission_ref.cu"
# The five entry points of cuda/contract/submission.h, in the order a learner writes them.
ENTRY_POINTS = ("mlp_forward", "mlp_loss", "mlp_backward", "mlp_step", "mlp_train_epoch")
# submission.h's optional entry point: a submission without it is FP32 (cuda/common/declared_precision.h).
OPTIONAL_ENTRY_POINTS = ("mlp_precision",)
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
            if re.fullmatch(r"[0-9]+\.[0-9]", cap):
                return "sm_" + cap.replace(".", ""), f"detected compute capability {cap} on GPU 0"
        except (OSError, subprocess.SubprocessError, IndexError):
            pass
    return DEFAULT_ARCH, f"no GPU found: building for {DEFAULT_ARCH} (pass --arch to choose)"


def nvcc_archs() -> list[str]:
    """The sm_XY codes this nvcc compiles for (`nvcc --list-gpu-code`; NVCC as the Makefile reads it)."""
    nvcc = os.environ.get("NVCC", "nvcc")
    try:
        res = subprocess.run([nvcc, "--list-gpu-code"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        _fail(f"error: {nvcc} --list-gpu-code: {exc}", EXIT_BUILD_FAILED)
    if res.returncode != 0:
        _fail(f"error: {nvcc} --list-gpu-code: exit status {res.returncode}: {res.stderr.strip()[:200]}",
              EXIT_BUILD_FAILED)
    return [code for code in res.stdout.split() if validate.ARCH.fullmatch(code)]


def validate_arch(arch: str) -> str:
    """`arch` when it is sm_XY or sm_XYZ (ASCII digits) and this nvcc compiles for it, else one line, exit 2."""
    try:
        validate.arch(arch)
    except InputError as exc:
        _fail(str(exc))
    supported = nvcc_archs()
    if arch not in supported:
        _fail(f"error: --arch {arch!r}: this nvcc does not compile for it (it does: {', '.join(supported)})")
    return arch


# What make may receive as a path: letters, digits and _ . / - only (no space, quote, $, `, ;, #).
MAKE_SAFE_PATH = re.compile(r"[A-Za-z0-9_./-]+")
SUBMISSION_DIR = "submission"   # inside the build folder: the copy of a learner's file make compiles


def submission_name(src: Path) -> str:
    """The copy's file name: the stem when it is a safe name, else submission-<12 hex of the
    file's path> (so two hostile names in one build folder stay apart)."""
    stem = src.name[:-3]
    if validate.is_safe_name(stem):
        return f"{stem}.cu"
    return f"submission-{hashlib.sha256(str(src.resolve()).encode()).hexdigest()[:12]}.cu"


def make_path(path: Path, what: str) -> str:
    """`path` relative to the repository root as make gets it; one that make could misread is one line, exit 2."""
    rel = os.path.relpath(Path(path).resolve(), ROOT)
    if not MAKE_SAFE_PATH.fullmatch(rel):
        _fail(f"error: {what} {rel!r}: make would misread this path (want letters, digits and _ . / - only)")
    return rel


def stage_submission(src: Path, folder: Path) -> str:
    """Copy the submission `src` into folder/submission/ under submission_name(src) (rewritten only
    when its bytes differ, so an unchanged file rebuilds nothing); make's SUBMISSION for it."""
    copy = Path(folder) / SUBMISSION_DIR / submission_name(src)
    data = read_submission(src)
    if not (copy.is_file() and copy.read_bytes() == data):
        write_bytes(copy, data)
    return make_path(copy, "the copy of --submission")


def read_submission(src: Path) -> bytes:
    try:
        return read_input(src)
    except InputError as exc:
        _fail(str(exc).replace("error: ", "error: --submission ", 1))


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


def check_submission(arch: str, src: Path, build_dir: Path, accumulate: str) -> None:
    """Compile a copy of the submission `src` alone in build_dir/.submission-check/ and check
    that it defines the five entry points, before anything of the real build is touched: a
    submission that does not compile or lacks one exits here, and build_dir keeps its last good build."""
    check_dir = Path(build_dir) / CHECK_DIR
    obj = check_dir / "obj" / "submission.o"
    try:
        cmd = make_command(arch, stage_submission(src, check_dir), check_dir, make_path(obj, "the check's object"),
                           accumulate)
        print("build: " + shlex.join(cmd) + "   (the submission alone, for its entry points)", flush=True)
        if subprocess.run(cmd).returncode != 0:
            _fail(f"error: --submission {str(src)!r} does not compile (the compiler output is above); "
                  f"{build_dir} keeps its last good build", EXIT_BUILD_FAILED)
        missing = [f for f in ENTRY_POINTS if f not in defined_symbols(obj)]
    finally:
        shutil.rmtree(check_dir, ignore_errors=True)
    if missing:
        _fail(f"error: --submission {src} lacks {', '.join(missing)} (cuda/contract/submission.h's "
              f"entry points, extern \"C\"; a stub returns MLP_ERR_NOT_IMPLEMENTED, as in "
              f"cuda/contract/submission_starter.cu); {build_dir} keeps its last good build")


def build(arch: str | None = None, submission: str | None = None, build_dir: Path = BUILD_DIR,
          accumulate: str = ACCUMULATORS[0]) -> dict:
    """Run make; print the nvcc command; write build_dir/build_info.json. Returns that info.

    Every input is checked before build_dir is touched (a bad --arch, --accumulate or
    --submission is one line, exit 2, build_info.json and config.stamp as they were)."""
    if accumulate not in ACCUMULATORS:
        _fail(f"error: --accumulate {accumulate!r}: expected one of {', '.join(ACCUMULATORS)}")
    if arch:
        arch, why = validate_arch(arch), "from --arch"
    else:
        arch, why = detect_arch()
    src = None
    if submission:
        src = Path(submission)
        if src.suffix != ".cu":
            _fail(f"error: --submission {submission!r}: not a .cu file")
        read_submission(src)
        if src.resolve() == (ROOT / DEFAULT_SUBMISSION).resolve():
            src = None   # ours, by its own path
    build_dir = Path(build_dir)
    make_path(build_dir, "the build folder")
    print(f"build: {arch} ({why})", flush=True)
    nvcc = subprocess.run(make_command(arch, None, build_dir, "print-nvcc", accumulate),
                          capture_output=True, text=True, check=True).stdout.strip()
    print(f"build: nvcc command: {nvcc}", flush=True)
    make_submission = None
    if src is not None:
        check_submission(arch, src, build_dir, accumulate)
        make_submission = stage_submission(src, build_dir)
    cmd = make_command(arch, make_submission, build_dir, accumulate=accumulate)
    print("build: " + shlex.join(cmd), flush=True)
    if subprocess.run(cmd).returncode != 0:
        (build_dir / "build_info.json").unlink(missing_ok=True)   # build/ is no build of anything now
        _fail("error: build failed (see the compiler output above); build_info.json removed", EXIT_BUILD_FAILED)
    info = {"arch": arch, "arch_reason": why,
            "submission": os.path.relpath(src.resolve(), ROOT) if src is not None else DEFAULT_SUBMISSION,
            "make_submission": make_submission or DEFAULT_SUBMISSION,
            "accumulate": accumulate,
            "make_command": shlex.join(["make", f"ARCH={arch}"]
                                       + ([f"SUBMISSION={make_submission}"] if make_submission else [])
                                       + ([f"ACCUM={accumulate}"] if accumulate != ACCUMULATORS[0] else [])),
            "nvcc_command": nvcc}
    write_json(build_dir / "build_info.json", info)
    return info


def load_build_info(build_dir: Path = BUILD_DIR) -> dict:
    """build_dir/build_info.json; missing, special or malformed: one InputError line."""
    path = Path(build_dir) / "build_info.json"
    if not path.exists():
        raise InputError(f"error: {path} missing: run `invoke build` first")
    try:
        info = json.loads(read_input(path))
    except ValueError as exc:
        raise InputError(f"error: {path}: malformed JSON ({exc}): run `invoke build` again") from None
    if not isinstance(info, dict) or not isinstance(info.get("arch"), str):
        raise InputError(f"error: {path}: no build of this harness (no arch): run `invoke build` again")
    return info
