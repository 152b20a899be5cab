"""`invoke setup`: what the CPU tests need beyond `pip install -r requirements-test.txt` (README's
"Anywhere"), the same on a laptop and in CI (`.ci/run` runs the README's commands and nothing else):

  slurm   Debian's slurmctld, slurmd, slurm-client and munge, for tests/test_slurm.py (its fixture
          starts its own one-node cluster from them and skips, naming this task, without them);
          installed with apt-get (root; the package lists are updated once when an install fails)
          where a program is missing, nothing done where all are there
  data    data/full/, the 60,000-image train split the data tests read (not committed): `invoke
          data --full`, which also checks that data/ rebuilds with no difference

Each part can be left out (`--no-slurm`, `--no-data`); a part that cannot be done is one line
saying why and what to run instead, and exit status 1 (2 for a bad --deb, as `invoke data`).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

SLURM_PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")   # Debian 12: slurm-wlm 22.05, munge 0.5
SLURM_PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "scontrol", "scancel")
APT_TIMEOUT_S = 900


class SetupError(Exception):
    """A part of the set-up could not be done: str() is the one line saying why and what to do."""


def missing_programs() -> list[str]:
    """The Slurm and munge programs not found on PATH or in /usr/sbin."""
    return [p for p in SLURM_PROGRAMS if not (shutil.which(p) or Path("/usr/sbin", p).exists())]


def _apt_install(packages) -> subprocess.CompletedProcess:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    return subprocess.run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages],
                          capture_output=True, text=True, env=env, timeout=APT_TIMEOUT_S)


def install_slurm() -> str:
    """Install SLURM_PACKAGES with apt-get when a program is missing; what was done, one line.
    SetupError when they cannot be installed (no apt-get, not root, apt-get failed)."""
    missing = missing_programs()
    if not missing:
        return f"slurm: {', '.join(SLURM_PROGRAMS)} found; nothing to install"
    skip = "or leave it out with --no-slurm (tests/test_slurm.py then skips, saying why)"
    if shutil.which("apt-get") is None:
        raise SetupError(f"setup: slurm: no apt-get to install Debian's {' '.join(SLURM_PACKAGES)} "
                         f"(missing: {', '.join(missing)}); install them by hand, {skip}")
    if os.geteuid() != 0:
        raise SetupError(f"setup: slurm: not root: apt-get cannot install {' '.join(SLURM_PACKAGES)} "
                         f"(and slurmd runs as root): run `sudo invoke setup`, {skip}")
    print(f"setup: apt-get install {' '.join(SLURM_PACKAGES)} (missing: {', '.join(missing)})", flush=True)
    res = _apt_install(SLURM_PACKAGES)
    if res.returncode != 0:   # stale package lists: update once, then again
        print("setup: apt-get install failed; apt-get update, then once more", flush=True)
        subprocess.run(["apt-get", "update", "-q"], capture_output=True, text=True, timeout=APT_TIMEOUT_S,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        res = _apt_install(SLURM_PACKAGES)
    if res.returncode != 0:
        last = (res.stderr.strip() or res.stdout.strip() or f"exit {res.returncode}").splitlines()[-1]
        raise SetupError(f"setup: slurm: apt-get install {' '.join(SLURM_PACKAGES)} failed: {last}; {skip}")
    if missing_programs():
        raise SetupError(f"setup: slurm: installed {' '.join(SLURM_PACKAGES)} but "
                         f"{', '.join(missing_programs())} still missing; {skip}")
    return f"slurm: installed {' '.join(SLURM_PACKAGES)}"


def full_data(deb=None) -> str:
    """data/full/ (and data/ checked to rebuild with no difference), as `invoke data --full`.
    harness.data.dataset.DataError when it cannot be built."""
    from harness.data.dataset import build_data
    from spec.files import DATA_DIR
    build_data(DATA_DIR, deb=deb, full=True)
    return "data: data/full/ built and data/ rebuilt with no difference"
