"""CPU: the course-scale gate's leaderboard (harness/gate/course.py) aggregated from fixture folders
(tests/fixtures/gate/: a passing submission, an epoch mutant, a racy one that fails only case 12
(racecheck), a hanging one, one that does not build), as `invoke gate --aggregate` and the Slurm array's last step build it."""
from __future__ import annotations

import csv
import shutil

import pytest

from harness.gate import course as gate_dir
from spec.files import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "gate"


@pytest.fixture
def FIX(tmp_path):
    """A copy of the fixture folders: aggregating renders each folder's RESULTS.md into it."""
    shutil.copytree(FIXTURES, tmp_path / "gate")
    return tmp_path / "gate"


def test_aggregate_ranks_and_says_what_failed(tmp_path, FIX):
    names = ("naive", "mutant_frozen_b2", "mutant_racy_tile", "mutant_spin_epoch", "broken")
    folders, _ = gate_dir.folders_of([FIX / n for n in names])
    rows = gate_dir.leaderboard(folders, tmp_path, results=FIX / "ours")
    assert [r["submission"] for r in rows] == ["naive", "mutant_frozen_b2", "mutant_racy_tile", "mutant_spin_epoch",
                                               "broken"]
    by = {r["submission"]: r for r in rows}
    assert by["naive"]["passed"] == "13/13" and by["naive"]["verdict"] == "PASS"
    assert by["naive"]["case11"] == by["naive"]["case12"] == "PASS"
    assert by["naive"]["ratio"] == f"{41.2 / 0.568:.2f}"
    assert by["mutant_frozen_b2"]["case9"] == "FAIL" and by["mutant_frozen_b2"]["passed"] == "12/13"
    racy = by["mutant_racy_tile"]
    assert racy["verdict"] == "FAIL" and racy["case12"] == "FAIL" and racy["passed"] == "12/13"
    assert "missing __syncthreads()" in racy["first_hint"]
    assert by["mutant_spin_epoch"]["first_hint"].startswith("timeout: a kernel spinning")
    assert by["broken"]["first_hint"].startswith("does not build: broken.cu(2): error")
    with open(tmp_path / "leaderboard.csv") as f:
        assert len(list(csv.DictReader(f))) == 5
    md = (tmp_path / "leaderboard.md").read_text()
    assert "Our fastest path: 0.568 ms" in md and md.count("\n| ") == 6
    assert "| 10 | 11 | 12 |" in md


def test_aggregate_of_a_parent_folder_finds_every_submission(tmp_path, FIX):
    assert gate_dir.main(["--aggregate", str(FIX), "--out", str(tmp_path)]) == 0
    # The hanging one's supervised doc gets the short report; the synthetic placeholders of the
    # finished ones (no recipe, no GPU) cannot be rendered and get none, and the board goes on.
    assert "timed out after 60 s" in (FIX / "mutant_spin_epoch" / "RESULTS.md").read_text()
    assert not (FIX / "naive" / "RESULTS.md").exists() and not (FIX / "broken" / "RESULTS.md").exists()
    names = {r["submission"] for r in csv.DictReader(open(tmp_path / "leaderboard.csv"))}
    assert {"naive", "mutant_frozen_b2", "mutant_racy_tile", "mutant_spin_epoch", "broken"} <= names


def test_aggregate_of_nothing_is_bad_input(tmp_path):
    assert gate_dir.main(["--aggregate", str(tmp_path), "--out", str(tmp_path)]) == 2


def _set_json(path, **keys):
    import json
    doc = json.loads(path.read_text())
    doc.update(keys)
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize("theirs, ratio_shown", [pytest.param("NVIDIA H200", True, id="same-gpu"),
                                                 pytest.param("NVIDIA H100 80GB HBM3", False, id="another-gpu")])
def test_x_ours_only_beside_a_time_on_a_gpu_of_the_same_name(tmp_path, FIX, theirs, ratio_shown):
    # Our run.json on one card, a submission gated on `theirs`: a ratio across two cards would
    # rank the submission by the cards, so it is left out and the row's notes say why.
    _set_json(FIX / "ours" / "run.json", gpu={"name": "NVIDIA H200"})
    _set_json(FIX / "naive" / "run.json", gate_gpu={"index": 0, "name": theirs})
    folders, _ = gate_dir.folders_of([FIX / "naive"])
    row, = gate_dir.leaderboard(folders, tmp_path, results=FIX / "ours", reports=False)
    assert row["median_ms"] == "41.200" and row["verdict"] == "PASS"
    if ratio_shown:
        assert row["ratio"] == f"{41.2 / 0.568:.2f}" and "no x ours" not in row["notes"]
    else:
        assert row["ratio"] == ""
        assert "no x ours: ours ran on NVIDIA H200, this submission on NVIDIA H100 80GB HBM3" in row["notes"]
    md = (tmp_path / "leaderboard.md").read_text()
    assert "Our fastest path: 0.568 ms an epoch on NVIDIA H200 (results/run.json)" in md
