"""Build the binary through the Makefile: pick the architecture, print and record the nvcc command."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from spec.files import BUILD_DIR, ROOT, write_json

DEFAULT_ARCH = "sm_90"  # the H200 this benchmark is measured on


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
        raise SystemExit(f"error: --arch {arch!r}: expected sm_XY, e.g. sm_90 (H100/H200) or sm_75")
    return arch


ACCUMULATORS = ("double", "float")  # the stepwise GEMMs' accumulator (cuda/kernels.cuh), default first


def make_command(arch: str, submission: str | None, build_dir: Path, target: str = "all",
                 accumulate: str = ACCUMULATORS[0]) -> list[str]:
    cmd = ["make", "--no-print-directory", "-C", str(ROOT), f"-j{os.cpu_count() or 2}", f"ARCH={arch}",
           f"BUILD={os.path.relpath(Path(build_dir).resolve(), ROOT)}", f"ACCUM={accumulate}"]
    if submission:
        cmd.append(f"SUBMISSION={submission}")
    return cmd + [target]


def build(arch: str | None = None, submission: str | None = None, build_dir: Path = BUILD_DIR,
          accumulate: str = ACCUMULATORS[0]) -> dict:
    """Run make; print the nvcc command; write build_dir/build_info.json. Returns that info."""
    if accumulate not in ACCUMULATORS:
        raise SystemExit(f"error: --accumulate {accumulate!r}: expected one of {', '.join(ACCUMULATORS)}")
    if arch:
        arch, why = validate_arch(arch), "from --arch"
    else:
        arch, why = detect_arch()
    if submission:
        sub = Path(submission)
        if not sub.is_file():
            raise SystemExit(f"error: --submission {submission}: no such file")
        submission = os.path.relpath(sub.resolve(), ROOT)
    build_dir = Path(build_dir)
    print(f"build: {arch} ({why})", flush=True)
    nvcc = subprocess.run(make_command(arch, submission, build_dir, "print-nvcc", accumulate),
                          capture_output=True, text=True, check=True).stdout.strip()
    print(f"build: nvcc command: {nvcc}", flush=True)
    cmd = make_command(arch, submission, build_dir, accumulate=accumulate)
    print("build: " + shlex.join(cmd), flush=True)
    if subprocess.run(cmd).returncode != 0:
        raise SystemExit("error: build failed (see the compiler output above)")
    info = {"arch": arch, "arch_reason": why, "submission": submission or "cuda/submission_ref.cu",
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
