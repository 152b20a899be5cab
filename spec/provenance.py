"""What a results file records about where it was made: the commit of the tree, the UTC date
and the GPU driver. Every writer of a results file (harness/run.py, the PyTorch baseline, the
studies) reads them here: `stamp()` is the {"commit", "date_utc"} pair each results JSON carries
(docs/formats.md). And how far apart two recorded commits are (`age`), which the report's summary
says of every evidence file older than the run of record: `git rev-list --count`, computed when the
report is rendered, so the same repository always gives the same words."""
from __future__ import annotations

import os
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from spec.files import ROOT

DATE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"   # run.json's date_utc, as the binary writes it


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


def utc_now() -> str:
    """The present moment as results files record it: 2026-12-01T14:37:09Z."""
    return datetime.now(timezone.utc).strftime(DATE_FORMAT)


def stamp() -> dict:
    """{"commit": git_commit(), "date_utc": utc_now()}: what every results JSON records of where
    and when it was made."""
    return {"commit": git_commit(), "date_utc": utc_now()}


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)


def _resolve(commit: str, repo: Path) -> str | None:
    """The full hash of `commit` (a "-dirty" suffix dropped) in repo, or None when it names none."""
    name = commit.removesuffix("-dirty")
    if not name or name.startswith("-"):
        return None
    try:
        proc = _git(repo, "rev-parse", "--verify", "--quiet", "--end-of-options", name + "^{commit}")
    except OSError:
        return None
    return proc.stdout.strip() if proc.returncode == 0 and proc.stdout.strip() else None


def _count(repo: Path, a: str, b: str) -> int:
    """The commits reachable from b and not from a (git rev-list --count a..b)."""
    return int(_git(repo, "rev-list", "--count", f"{a}..{b}").stdout.strip())


def committed_in(path: Path, repo: Path = ROOT) -> str | None:
    """The commit that last changed `path` in repo's history (git log -1), None when it was never
    committed or git cannot say: where a results file records no commit, when it reached the
    repository."""
    try:
        proc = _git(repo, "log", "-1", "--format=%H", "--", str(Path(path).resolve().relative_to(Path(repo).resolve())))
    except (OSError, ValueError):
        return None
    return proc.stdout.strip() or None


def is_shallow(repo: Path = ROOT) -> bool:
    """A shallow clone: its history is cut, so it cannot count the commits between two others."""
    try:
        return _git(repo, "rev-parse", "--is-shallow-repository").stdout.strip() == "true"
    except OSError:
        return False


def age(commit: str | None, of_record: str | None, repo: Path = ROOT) -> dict:
    """How the commit a file records stands to the run of record's commit, in repo's history:
    {"state": one of
        "same"       the same commit (nothing to say),
        "older"      an ancestor of the run's: "commits" is how many the run has that it lacks,
        "newer"      a descendant: "commits" is how many it has that the run lacks,
        "apart"      neither: "commits" the run's it lacks, "ahead" its own the run lacks,
        "unknown"    not a commit of this repository (or the run's is not),
        "none"       no commit recorded (absent, empty or "unknown")}."""
    if not commit or commit == "unknown":
        return {"state": "none", "commits": None}
    mine, theirs = _resolve(commit, repo), _resolve(of_record or "", repo)
    if mine is None or theirs is None:
        return {"state": "unknown", "commits": None}
    if mine == theirs:
        return {"state": "same", "commits": 0}
    behind, ahead = _count(repo, mine, theirs), _count(repo, theirs, mine)
    if ahead == 0:
        return {"state": "older", "commits": behind}
    if behind == 0:
        return {"state": "newer", "commits": ahead}
    return {"state": "apart", "commits": behind, "ahead": ahead}
