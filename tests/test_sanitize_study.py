"""CPU: harness/studies/sanitize.py keeps the committed results/sanitize.json when no run reached a
CUDA device (issue 28: a failed run destroys no evidence), and replaces it when the runs did."""
from __future__ import annotations

import hashlib
import json

import pytest

from harness.studies import sanitize as sz


@pytest.fixture
def committed(tmp_path, monkeypatch):
    monkeypatch.setattr(sz, "find_sanitizer", lambda: "compute-sanitizer")
    (tmp_path / "sanitize.json").write_text('{"schema": 1, "clean": true, "runs": []}\n')
    return tmp_path


def _rows(exit_code):
    def run_one(sanitizer, tool, target, label, timeout_s=300):
        code = exit_code if label.startswith("path ") else 0
        return {"tool": tool, "target": label, "errors": None if code else 0, "exit_code": code, "seconds": 0.1}
    return run_one


def test_no_device_leaves_the_committed_sanitize_json(committed, monkeypatch, capsys):
    before = hashlib.sha256((committed / "sanitize.json").read_bytes()).hexdigest()
    monkeypatch.setattr(sz, "run_one", _rows(sz.EXIT_CUDA_ERROR))
    assert sz.sanitize(["fused"], ("memcheck",), results_dir=committed) == sz.EXIT_CUDA_ERROR
    assert hashlib.sha256((committed / "sanitize.json").read_bytes()).hexdigest() == before
    failed = json.loads((committed / "failed" / "sanitize.json").read_text())   # git-ignored
    assert [r["exit_code"] for r in failed["runs"]] == [3, 0]
    assert not (committed / "sanitize.partial.json").exists()
    assert "left as it was" in capsys.readouterr().err


def test_runs_that_reached_the_device_replace_it(committed, monkeypatch):
    monkeypatch.setattr(sz, "run_one", _rows(0))
    assert sz.sanitize(["fused"], ("memcheck",), results_dir=committed) == 0
    doc = json.loads((committed / "sanitize.json").read_text())
    assert doc["clean"] and doc["complete"] and len(doc["runs"]) == 2
    assert not (committed / "sanitize.partial.json").exists()
