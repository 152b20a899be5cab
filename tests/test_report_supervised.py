"""CPU: RESULTS.md for a supervised run (issue 15). The supervisor's own run.json of a run that
faulted (a real H200 doc: no GPU, recipe or paths) gets a short report saying what happened; a
finished run with a staged supervisor block gets the full report with its stage table; a broken
supervised doc is one line and exit status 2."""
from __future__ import annotations

import json
import shutil

from analysis import report
from spec.files import ROOT

FIX = ROOT / "tests" / "fixtures" / "supervised"


def render(tmp_path, doc) -> tuple[int, str]:
    (tmp_path / "run.json").write_text(json.dumps(doc))
    rc = report.main(["--results", str(tmp_path), "--out", str(tmp_path / "RESULTS.md")])
    md = tmp_path / "RESULTS.md"
    return rc, md.read_text() if md.exists() else ""


def test_a_supervised_failure_doc_gets_a_short_report(tmp_path, capsys):
    doc = json.loads((FIX / "run.json").read_text())
    assert "gpu" not in doc and "recipe" not in doc          # what the full report would need
    rc, md = render(tmp_path, doc)
    assert rc == 0, capsys.readouterr().err
    assert "**Gate: FAIL.** First hint: an illegal address or a fault usually means an index past a buffer" in md
    assert "5 of 10 cases passed" in md
    assert "**CUDA error: cudaErrorIllegalAddress**" in md and "60 s time limit" in md
    assert "cudaDeviceSynchronize() failed: cudaErrorIllegalAddress" in md          # the stderr tail
    assert "| 9 | epoch-check | — | — | FAIL | CUDA error: cudaErrorIllegalAddress |" in md
    assert "- an illegal address or a fault usually means an index past a buffer" in md
    assert not (tmp_path / "PROFILES.md").exists()
    assert "the short report" in capsys.readouterr().out


def test_a_staged_supervisor_block_shows_in_the_full_report(tmp_path):
    doc = json.loads((FIX / "naive" / "run.json").read_text())
    doc["supervisor"] = {"staged": True, "limit_s": 300.0, "seconds": 41.0, "ended": "stage overfit: timed out after 30 s",
                         "stages": [{"name": "entry", "cases": [1, 2, 3, 4, 5], "limit_s": 30.0, "limit_why": "floor",
                                     "seconds": 4.1, "ended": "exited 0"},
                                    {"name": "overfit", "cases": [6], "limit_s": 30.0, "seconds": 30.0,
                                     "ended": "timed out after 30 s"}],
                         "path_failures": ["path submission: a rerun of one epoch was not bitwise identical"]}
    rc, md = render(tmp_path, doc)
    assert rc == 0
    assert "# Results: 784-256-10 MLP training on NVIDIA H200" in md       # the full report
    assert "| entry | 1, 2, 3, 4, 5 | 30 (floor) | 4.1 | exited 0 |" in md
    assert "| overfit | 6 | 30 | 30 | **timed out after 30 s** |" in md
    assert "Paths that fail the gate: path submission: a rerun" in md
    assert (tmp_path / "PROFILES.md").exists()


def test_a_broken_supervised_doc_is_one_line_and_status_2(tmp_path, capsys):
    doc = json.loads((FIX / "run.json").read_text())
    doc["supervisor"]["ended"] = 3
    rc, _ = render(tmp_path, doc)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1 and "supervisor.'ended'" in err, err
    assert not (tmp_path / "RESULTS.md").exists()


def test_gate_dir_renders_each_submissions_report(tmp_path):
    """harness/gate/course.py: every folder gets its RESULTS.md, the finished run's and the
    faulted one's."""
    from harness.gate import course as gate_dir
    for name, src in (("naive", FIX / "naive" / "run.json"), ("fault", FIX / "run.json")):
        (tmp_path / name).mkdir()
        shutil.copy(src, tmp_path / name / "run.json")
    assert gate_dir.main(["--aggregate", str(tmp_path), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "naive" / "RESULTS.md").read_text().startswith("# Results: 784-256-10")
    assert "did not finish" in (tmp_path / "fault" / "RESULTS.md").read_text()
