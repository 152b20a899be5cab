"""CPU: every `python -m` entry point of analysis/, harness/studies/ and harness/data/ answers a bad
flag or a bad input file with one line and exit status 2, never a traceback (issue 28 item 7), and
writes nothing."""
from __future__ import annotations

import os
from pathlib import Path
import subprocess
import sys

import pytest

from spec.files import ROOT

ENTRY_POINTS = ["analysis.report", "analysis.sweep_report", "analysis.accumulate_ab", "harness.data.dataset",
                "harness.data.reference", "harness.studies.sweep", "harness.studies.ceilings",
                "harness.studies.arch_resources", "harness.studies.loss_band_study",
                "harness.studies.ours_studies", "harness.studies.gemm_bench"]   # harness.studies.portability hands unknown flags to mlp_train


def python_m(module: str, *args, cwd=ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(ROOT)))


def one_line_exit_2(res, *words) -> None:
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    for w in words:
        assert w in res.stderr, res.stderr


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_an_unknown_flag_is_one_line_exit_2(module):
    one_line_exit_2(python_m(module, "--bogus"), f"error: python -m {module}: unrecognized arguments: --bogus")


@pytest.mark.parametrize("module, args, words", [
    ("harness.studies.sweep", ["--epochs", "1"], ["epoch 0 is a warm-up"]),
    ("harness.studies.sweep", ["--widths", "0x40"], ["--widths '0x40'"]),
    ("harness.studies.sweep", ["--widths", "none", "--batches", "none"], ["no sweep point to run"]),
    ("harness.studies.sweep", ["--timeout", "nan"], ["--timeout 'nan'"]),
    ("harness.studies.loss_band_study", ["--band", "inf"], ["--band 'inf'"]),
    ("harness.studies.loss_band_study", ["--seeds", "-1"], ["--seeds '-1'"]),
    ("harness.studies.arch_resources", ["--jobs", "abc"], ["--jobs 'abc'"]),
    ("harness.studies.arch_resources", ["--arch", "sm_٩٠"], ["--arch 'sm_٩٠'"]),
    ("harness.studies.portability", ["--classes", "t4,a100", "--out", "/nonexistent"], ["--classes 't4,a100'"]),
])
def test_a_bad_number_is_one_line_exit_2(module, args, words):
    one_line_exit_2(python_m(module, *args), *words)


def test_bad_input_files_are_one_line_exit_2(tmp_path):
    (tmp_path / "results" / "run.json").mkdir(parents=True)
    one_line_exit_2(python_m("analysis.report", "--results", tmp_path / "results", "--out", tmp_path / "R.md"),
                    "run.json: a folder, not a file")
    os.mkfifo(tmp_path / "sweep.json")
    one_line_exit_2(python_m("analysis.sweep_report", "--sweep", tmp_path / "sweep.json", "--out", tmp_path / "S.md"),
                    "sweep.json: a FIFO, not a file")
    one_line_exit_2(python_m("harness.data.dataset", "--deb", "/dev/zero", "--data-dir", tmp_path / "d"),
                    "/dev/zero: a character device, not a file")
    one_line_exit_2(python_m("analysis.accumulate_ab", tmp_path / "none"), "no such folder")
    (tmp_path / "ceilings.json").mkdir()
    one_line_exit_2(python_m("harness.studies.ceilings", "--out", tmp_path / "ceilings.json"), "is in the way")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ceilings.json", "results", "sweep.json"]


@pytest.fixture(scope="module")
def scratch_tree(tmp_path_factory, built):
    """A copy of the working tree to break recipe.toml in: build/ only as far as a run reads it before
    anything else (mlp_train, made up to date first, and the build's records), without .git and the
    device folders. A task that forgot to check the recipe would run that mlp_train and write. One
    copy for the module (65 MB): each test restores the recipe it broke (scratch_repo)."""
    import shutil
    built("mlp_train")
    repo = tmp_path_factory.mktemp("scratch") / "repo"
    keep_in_build = {"mlp_train", "build_info.json", "config.stamp", "catalog.json"}

    def ignore(folder, names):
        if Path(folder) == ROOT / "build":
            return [n for n in names if n not in keep_in_build]
        return [n for n in names if n in (".git", "__pycache__", ".devbuild", ".device-kit")]
    shutil.copytree(ROOT, repo, ignore=ignore, symlinks=True)
    return repo


@pytest.fixture
def scratch_repo(scratch_tree):
    """scratch_tree with the repository's recipe.toml put back after the test. Any other write a
    test's task made fails that test (its snapshot comparison) before a later test sees the tree."""
    yield scratch_tree
    (scratch_tree / "recipe.toml").write_bytes((ROOT / "recipe.toml").read_bytes())


def _snapshot(root):
    """Every file under root with its size and modification time (ns): any write, even of the same
    bytes, changes the mtime, and a new or removed file changes the keys."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            st = p.stat()
            out[p] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.mark.parametrize("breakage, words", [
    (lambda t: "".join(ln + "\n" for ln in t.splitlines() if not ln.startswith("epochs")), "missing key epochs"),
    (None, "recipe.toml: file not found"),
    (lambda t: t.replace("momentum = 0.9", "momentum = 1"), "momentum = 1 is out of range"),
    (lambda t: t.replace("batch = 128", "batch = 1_28"), "batch: '1_28' is not a number"),
])
@pytest.mark.parametrize("task", [["run", "--one-process", "--no-pytorch"], ["reference"]])
def test_invoke_with_a_bad_or_missing_recipe_is_one_line_exit_2(scratch_repo, breakage, words, task):
    assert (scratch_repo / "build" / "mlp_train").is_file()   # scratch_repo copied it, made up to date
    recipe = scratch_repo / "recipe.toml"
    if breakage is None:
        recipe.unlink()
    else:
        recipe.write_text(breakage(recipe.read_text()))
    before = _snapshot(scratch_repo)
    res = subprocess.run([sys.executable, "-m", "invoke", *task], cwd=scratch_repo, capture_output=True, text=True,
                         timeout=300)
    one_line_exit_2(res, words)
    assert _snapshot(scratch_repo) == before
