"""Shared pytest setup: the repository root on sys.path, the `gpu` marker, and the `slow` marks held
exact.

Tests marked `@pytest.mark.gpu` are skipped where `nvidia-smi -L` fails or lists no GPU. A test not
marked `@pytest.mark.slow` that costs over 20 s (the least of its wall and CPU seconds, so a loaded
machine cannot fail it) fails the run, naming it: tests/slow_marks.py, whose hooks are taken here.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from slow_marks import (pytest_runtest_logreport, pytest_runtest_makereport,  # noqa: E402,F401  (hooks)
                        pytest_runtest_setup, pytest_sessionfinish, pytest_terminal_summary)

NO_GPU_REASON = "no CUDA device (nvidia-smi -L lists none)"


@functools.lru_cache(maxsize=1)
def have_gpu() -> bool:
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0 and any(line.startswith("GPU ")
                                        for line in proc.stdout.splitlines())


@pytest.fixture(scope="session")
def arch_build(tmp_path_factory):
    """arch_build(ARCH) -> a folder holding `make all` for ARCH, made once a session: build/ when it is
    `invoke build --arch ARCH` (brought up to date), else a folder of the session's (tests/shared_build.py)."""
    from shared_build import ArchBuilds
    return ArchBuilds(tmp_path_factory.mktemp("arch"))


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (invoke test): one worker a core, but one where there is a GPU, so that no two GPU tests
    share it (their time limits and timings assume the GPU to themselves)."""
    return 1 if have_gpu() else (os.cpu_count() or 1)


def pytest_configure(config):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Several test processes share the cores: the OpenMP programs the tests run (the float64
        # references) wait for work asleep instead of spinning on a core another process needs.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    config.addinivalue_line("markers", "gpu: needs a CUDA device (skipped when nvidia-smi -L lists none)")
    config.addinivalue_line("markers", "slow: runs by default; over ~20 s on a CPU (deselect with -m 'not slow'; "
                                       "an unmarked test over it fails the run, tests/slow_marks.py)")


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if gpu_items and not have_gpu():
        skip = pytest.mark.skip(reason=NO_GPU_REASON)
        for item in gpu_items:
            item.add_marker(skip)
