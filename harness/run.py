"""Run the gate binary and complete results/run.json with what only the host knows."""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from harness.build import load_build_info
from spec.files import BUILD_DIR, DATA_DIR, RESULTS_DIR, ROOT, write_json


def git_commit() -> str:
    """$MLP_COMMIT when set (a GPU machine's tree copy: its .git, where one exists, can be a stale
    snapshot that names an older commit, as one did on 2026-11-30), else the short commit of the
    working tree with -dirty when it has uncommitted changes."""
    if os.environ.get("MLP_COMMIT"):
        return os.environ["MLP_COMMIT"]
    try:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def driver_version() -> str:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return "unknown"
    out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True)
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"


def run_gate(build_dir: Path = BUILD_DIR, data_dir: Path = DATA_DIR, results_dir: Path = RESULTS_DIR,
             extra_args: list[str] | tuple[str, ...] = ()) -> int:
    """Run build/mlp_train; returns its exit code (0 pass, 1 a gate case failed); other codes stop."""
    info = load_build_info(build_dir)
    binary = Path(build_dir) / "mlp_train"
    if not binary.exists():
        raise SystemExit(f"error: {binary} missing: run `invoke build` first")
    def rel(p: Path) -> str:
        return os.path.relpath(Path(p).resolve(), ROOT)

    cmd = [rel(binary), "--data", rel(data_dir), "--out", rel(results_dir), *extra_args]
    print("run: " + shlex.join(cmd), flush=True)
    rc = subprocess.run(cmd, cwd=ROOT).returncode
    if rc not in (0, 1):
        raise SystemExit(f"error: mlp_train exited with status {rc} (its message is above)")
    run_json = Path(results_dir) / "run.json"
    data = json.loads(run_json.read_text())
    data["build"] = {"command": info["nvcc_command"], "make_command": info["make_command"],
                     "arch": info["arch"], "submission": info["submission"],
                     "accumulate": info.get("accumulate", "float")}  # builds before the choice used float
    data["run_command"] = shlex.join(cmd)
    data["commit"] = git_commit()
    data["gpu"]["driver"] = driver_version()
    write_json(run_json, data)
    return rc
