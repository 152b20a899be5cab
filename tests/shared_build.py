"""One `make` at a time into a shared build folder, across pytest-xdist's workers (and any other
pytest run in this checkout): tests that make a target of build/ (build/mlp_host, vit_forward_emu,
tiled_emu) run it under build/'s lock, and the builds for another architecture (build/arch/ARCH/)
under that folder's, so two workers never compile the same objects at once and a build one worker
made is the other's too (make brings it up to date: nothing to do, as a rule). Builds into a test's
own temp folder need no lock."""
from __future__ import annotations

import contextlib
import fcntl
import json
import subprocess
from pathlib import Path

from spec.files import BUILD_DIR, ROOT

DEFAULT_SUBMISSION = "cuda/contract/submission_ref.cu"


@contextlib.contextmanager
def build_lock(folder: Path = BUILD_DIR):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".tests-make.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def make(args: list[str], folder: Path = BUILD_DIR, **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run(args, **kwargs) of a make into `folder` (build/), under its build_lock()."""
    with build_lock(folder):
        return subprocess.run(args, **kwargs)


def is_default_build(arch: str, build_dir: Path = BUILD_DIR) -> bool:
    """build/ is `invoke build --arch ARCH` of our own submission (its build_info.json says so)."""
    try:
        info = json.loads((build_dir / "build_info.json").read_text())
    except (OSError, ValueError):
        return False
    return (info.get("arch") == arch and info.get("submission") == DEFAULT_SUBMISSION
            and info.get("accumulate", "double") == "double")


class ArchBuilds:
    """`make all` for an architecture (tests/conftest.py's arch_build fixture): for the architecture
    build/ was made for by `invoke build --arch ARCH` (README's set-up: sm_90), build/ itself; for any
    other, build/arch/ARCH/, shared by the workers of a run and kept between runs (git-ignored with
    build/). Either is brought up to date under its lock, once per worker, with the Makefile's flags
    (warnings as errors)."""

    def __init__(self):
        self.done = {}

    def __call__(self, arch: str) -> Path:
        if arch not in self.done:
            out = BUILD_DIR if is_default_build(arch) else BUILD_DIR / "arch" / arch
            args = ["make", "--no-print-directory", "-s", "-C", str(ROOT), "-j2", f"ARCH={arch}",
                    f"BUILD={out.relative_to(ROOT)}", "all"]
            res = make(args, out, capture_output=True, text=True)
            assert res.returncode == 0, f"make all for {arch}:\n{res.stderr[-3000:]}"
            self.done[arch] = out
        return self.done[arch]
