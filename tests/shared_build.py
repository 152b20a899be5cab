"""One `make` at a time into the shared build/ folder, across pytest-xdist's workers (and any other
pytest run in this checkout): tests that make a target of build/ (build/mlp_host, vit_forward_emu,
tiled_emu) run it under this lock, so two workers never compile the same objects at once. Builds
into a test's own temp folder need no lock."""
from __future__ import annotations

import contextlib
import fcntl
import json
import subprocess
from pathlib import Path

from spec.files import BUILD_DIR, ROOT

DEFAULT_SUBMISSION = "cuda/contract/submission_ref.cu"


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


def is_default_build(arch: str, build_dir: Path = BUILD_DIR) -> bool:
    """build/ is `invoke build --arch ARCH` of our own submission (its build_info.json says so)."""
    try:
        info = json.loads((build_dir / "build_info.json").read_text())
    except (OSError, ValueError):
        return False
    return (info.get("arch") == arch and info.get("submission") == DEFAULT_SUBMISSION
            and info.get("accumulate", "double") == "double")


class ArchBuilds:
    """`make all` for an architecture, once per session (tests/conftest.py's arch_build fixture):
    for the architecture build/ was made for by `invoke build --arch ARCH` (README's set-up: sm_90),
    build/ itself, brought up to date under the lock (a make with nothing to do, as a rule); for any
    other, a folder of the session's own. Each with the Makefile's flags (warnings as errors)."""

    def __init__(self, tmp_root: Path):
        self.tmp_root, self.done = Path(tmp_root), {}

    def __call__(self, arch: str) -> Path:
        if arch not in self.done:
            shared = is_default_build(arch)
            out = BUILD_DIR if shared else self.tmp_root / arch
            where = out.relative_to(ROOT) if shared else out       # build/ as invoke build names it
            args = ["make", "--no-print-directory", "-s", "-C", str(ROOT), "-j2", f"ARCH={arch}", f"BUILD={where}", "all"]
            res = make(args, capture_output=True, text=True) if shared else \
                subprocess.run(args, capture_output=True, text=True)
            assert res.returncode == 0, f"make all for {arch}:\n{res.stderr[-3000:]}"
            self.done[arch] = out
        return self.done[arch]
