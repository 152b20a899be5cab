"""Shared pytest setup: the repository root on sys.path, and the `gpu` marker.

Tests marked `@pytest.mark.gpu` are skipped where `nvidia-smi -L` fails or lists no GPU.
"""
from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

NO_GPU_REASON = "no CUDA device (nvidia-smi -L lists none)"


@functools.lru_cache(maxsize=1)
def have_gpu() -> bool:
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and any(line.startswith("GPU ")
                                        for line in proc.stdout.splitlines())


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped when nvidia-smi -L lists none)")
    config.addinivalue_line("markers", "slow: runs by default; over ~20 s on a CPU (deselect with -m 'not slow')")


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if gpu_items and not have_gpu():
        skip = pytest.mark.skip(reason=NO_GPU_REASON)
        for item in gpu_items:
            item.add_marker(skip)
