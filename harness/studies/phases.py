"""The persistent kernel's phase breakdown (`invoke gpu.phases`): makes the dev experiment
build/persistent_phases (dev/persistent_phases.cu) for the last build's architecture, then runs

    build/persistent_phases --data data --out results --commit COMMIT

which writes results/persistent_phases.json (docs/formats.md), its date and COMMIT
(spec.provenance.git_commit) in it."""
from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from harness.build import DEFAULT_SUBMISSION, MAKE_SAFE_PATH, load_build_info, make_command
from spec import provenance
from spec.files import BUILD_DIR, DATA_DIR, RESULTS_DIR, ROOT, InputError

BINARY = "persistent_phases"


def _rel(p: Path) -> str:
    return os.path.relpath(Path(p).resolve(), ROOT)


def remake_command(target: str, build_dir: Path = BUILD_DIR) -> list[str]:
    """make `target` with the last `invoke build`'s ARCH, SUBMISSION and ACCUM (build_info.json),
    so that nothing else of the build is remade."""
    info = load_build_info(build_dir)
    sub = info.get("make_submission", info.get("submission"))
    if sub is not None and not MAKE_SAFE_PATH.fullmatch(str(sub)):
        raise InputError(f"error: {Path(build_dir) / 'build_info.json'}: submission {sub!r} is no path make "
                         f"reads as written: run `invoke build` again")
    return make_command(info["arch"], None if sub in (None, DEFAULT_SUBMISSION) else sub,
                        build_dir, target, info.get("accumulate", "double"))


def phases(build_dir: Path = BUILD_DIR, data_dir: Path = DATA_DIR, results_dir: Path = RESULTS_DIR) -> int:
    """Make and run the phase breakdown; returns its exit status (2 when the make fails)."""
    binary = Path(build_dir) / BINARY
    make = remake_command(_rel(binary), build_dir)
    print("phases: " + shlex.join(make), flush=True)
    if subprocess.run(make).returncode != 0:
        print(f"error: make {_rel(binary)} failed (see the compiler output above)", flush=True)
        return 2
    cmd = [_rel(binary), "--data", _rel(data_dir), "--out", _rel(results_dir), "--commit", provenance.git_commit()]
    print("phases: " + shlex.join(cmd), flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode
