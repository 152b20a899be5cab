"""What a results file records about where it was made: the commit of the tree and the GPU
driver. Every writer of a results file (harness/run.py, the PyTorch baseline, the studies) reads
them here."""
from __future__ import annotations

import os
import shutil
import subprocess

from spec.files import ROOT


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
    """The GPU driver's version as nvidia-smi prints it; "unknown" without nvidia-smi."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return "unknown"
    out = subprocess.run([smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True)
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"
