"""Where a failed run's files go (spec.files.failed_path): the git-ignored results/failed/, at the
place of what the run would have replaced, so that a clean checkout stays clean after any failed
task (the tasks' own tests check that each one uses it: test_run, test_sweep, test_portability,
test_sanitize_study, test_tasks)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from spec.files import FAILED_DIR, RESULTS_DIR, ROOT, failed_path


def test_a_failed_runs_files_go_under_results_failed_at_the_place_of_their_target(tmp_path):
    assert failed_path(RESULTS_DIR / "sweep" / "h64_b128") == FAILED_DIR / "sweep" / "h64_b128"
    assert failed_path(RESULTS_DIR / "logs" / "run_supervised") == FAILED_DIR / "logs" / "run_supervised"
    assert failed_path(RESULTS_DIR / "sanitize.json") == FAILED_DIR / "sanitize.json"
    assert failed_path(FAILED_DIR / "sweep" / "h64_b128") == FAILED_DIR / "sweep" / "h64_b128"
    assert failed_path(tmp_path / "r" / "sweep" / "x", tmp_path / "r") == tmp_path / "r" / "failed" / "sweep" / "x"
    assert failed_path(tmp_path / "elsewhere" / "x") == tmp_path / "elsewhere" / "failed" / "x"


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_git_ignores_failed_runs_and_staging_folders_but_not_the_evidence():
    def ignored(rel: str) -> bool:
        return subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", "--no-index", rel]).returncode == 0
    for rel in ("results/failed/sweep/h64_b128/mlp_train.log", "results/failed/logs/run_supervised/stdout.log",
                "results/failed/sanitize.json", "results/sweep/h64_b128.new/run.json",
                "results/portability/t4.new/run.log"):
        assert ignored(rel), rel
    for rel in ("results/sweep/h64_b128/run.json", "results/logs/run_supervised/stdout.log", "results/run.json",
                "results/sanitize.json"):
        assert not ignored(rel), rel
