"""Shared pytest setup: the repository root on sys.path, the `gpu` marker, the `slow` marks held
exact, and the build.

Tests marked `@pytest.mark.gpu` are skipped where `nvidia-smi -L` fails or lists no GPU. A test not
marked `@pytest.mark.slow` that costs over 20 s (the least of its wall and CPU seconds, so a loaded
machine cannot fail it) fails the run, naming it: tests/slow_marks.py, whose hooks are taken here.

The build: a test never runs a stale or missing program of build/. The session fixture `built`
brings a target of the Makefile up to date with make (incremental: a few tenths of a second when
nothing changed; under tests/shared_build.py's lock, so pytest-xdist's workers never compile the same
objects at once) and fails the test that asked for it when make fails, never skips it; the host-only
tools every CPU test may reach (build/mlp_host, which spec/catalog.py reads too, and build/mlp_fit)
are made once per session by the autouse fixture `host_tools`.
"""
from __future__ import annotations

import functools
import os
import subprocess
import sys
from dataclasses import dataclass
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
def arch_build():
    """arch_build(ARCH) -> a folder holding `make all` for ARCH, brought up to date once a session:
    build/ when it is `invoke build --arch ARCH`, else build/arch/ARCH/ (tests/shared_build.py)."""
    from shared_build import ArchBuilds
    return ArchBuilds()


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
    # The files with the most tests marked slow first, each file's tests together and in their own
    # order: pytest-xdist (--dist loadfile) hands out files in this order, so the long ones start
    # early and the short ones fill the workers' ends (about a minute of the whole suite on two
    # cores, where alphabetical order left the transformer's and the emulation's files for last).
    slow = {}
    for item in items:
        slow[item.fspath] = slow.get(item.fspath, 0) + (item.get_closest_marker("slow") is not None)
    items.sort(key=lambda item: -slow[item.fspath])


# ---------------------------------------------------------------------------------------- the build

BUILD = ROOT / "build"
CONFIG_KEYS = ("ARCH", "SUBMISSION", "ACCUM")


def build_config() -> list[str]:
    """The make variables of the existing build (build/config.stamp: "ARCH=sm_90 SUBMISSION=...
    ACCUM=double"), so that make only brings targets up to date and never switches the build to
    another architecture or submission; [] when there is none yet (the Makefile's defaults)."""
    try:
        words = (BUILD / "config.stamp").read_text().split()
    except FileNotFoundError:
        return []
    return [w for w in words if w.partition("=")[0] in CONFIG_KEYS and w.partition("=")[2]]


def make(*targets: str) -> None:
    """make TARGETS (paths relative to the repository root) with the build's own configuration; a
    failure fails the calling test, with make's output, and is never a skip."""
    from shared_build import make as locked_make
    cmd = ["make", "--no-print-directory", "-s", "-j2", "-C", str(ROOT), *build_config(), *targets]
    res = locked_make(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        pytest.fail(f"{' '.join(cmd)} exited {res.returncode}:\n{res.stdout[-3000:]}\n{res.stderr[-5000:]}",
                    pytrace=False)


@pytest.fixture(scope="session")
def built():
    """built("mlp_train") -> build/mlp_train, made up to date once per session (make, incremental);
    built("asan/mlp_host") likewise. Make failing fails the test."""
    done: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in done:
            make(f"build/{name}")
            done[name] = BUILD / name
        return done[name]
    return get


@dataclass(frozen=True)
class HostTools:
    host: Path   # build/mlp_host: the host-only parts (catalog, limits, tolerances, reference, ...)
    fit: Path    # build/mlp_fit: each path's fit to a device's limits


@pytest.fixture(scope="session", autouse=True)
def host_tools(built) -> HostTools:
    """build/mlp_host and build/mlp_fit, up to date, before any test runs (autouse: many tests reach
    mlp_host through spec/catalog.py without naming it)."""
    return HostTools(host=built("mlp_host"), fit=built("mlp_fit"))
