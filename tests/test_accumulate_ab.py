"""analysis.accumulate_ab: the A/B summary's numbers come from the run folders, and a broken
folder stops it with one line naming the file."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from analysis import accumulate_ab

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "results" / "run.json"


def make_run(folder: Path, median_ms: float, loss_scale: float) -> None:
    run = json.loads(FIXTURE_RUN.read_text())
    ref = run["reference_fp64"]["loss_per_epoch"]
    for p in run["paths"].values():
        p["median_ms"] = median_ms
        p["loss_per_epoch"] = [x * (loss_scale if e == 3 else 1.0) for e, x in enumerate(ref)]
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps(run))


def test_summary_reports_ratio_and_first_epoch_outside_the_band(tmp_path):
    make_run(tmp_path / "double_1", 2.2, 1.0)
    make_run(tmp_path / "float_1", 2.0, 1.05)   # 5% off in epoch 4
    text = accumulate_ab.summarise(tmp_path)
    fused = [ln for ln in text.splitlines() if ln.startswith("| fused |")]
    assert any("| double | 1 | 2.200 |" in ln and "| 0.000% | — |" in ln for ln in fused), fused
    assert any("| float | 1 | 2.000 |" in ln and "| 5.000% | 4 |" in ln for ln in fused), fused
    assert "| fused | 2.200 | 2.000 | 1.100 |" in text


def test_a_broken_run_folder_names_its_file(tmp_path):
    make_run(tmp_path / "double_1", 2.2, 1.0)
    (tmp_path / "float_1").mkdir()
    (tmp_path / "float_1" / "run.json").write_text("{")
    with pytest.raises(SystemExit, match=r"float_1/run.json"):
        accumulate_ab.summarise(tmp_path)
