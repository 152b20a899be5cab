"""One `make` at a time into the shared build/ folder, across pytest-xdist's workers (and any other
pytest run in this checkout): tests that make a target of build/ (build/mlp_host, vit_forward_emu,
tiled_emu) run it under this lock, so two workers never compile the same objects at once. Builds
into a test's own temp folder need no lock."""
from __future__ import annotations

import contextlib
import fcntl
import subprocess

from spec.files import BUILD_DIR


@contextlib.contextmanager
def build_lock():
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    with open(BUILD_DIR / ".tests-make.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def make(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run(args, **kwargs) of a make into build/, under build_lock()."""
    with build_lock():
        return subprocess.run(args, **kwargs)
