"""GPU: the binary's exit status is its run.json's verdict (cuda/gate/verdict.h), and the owner asked
again of that file (`mlp_host verdict`, spec/verdict.py) gives the same: for our build (PASS) and a
mutant (FAIL in its case), unstaged and staged."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from spec import verdict
from spec.files import BUILD_DIR, ROOT
from tests.test_gpu_gate import built

pytestmark = pytest.mark.gpu


def gate(binary, out, *args):
    return subprocess.run([str(binary), "--data", "data", "--out", str(out), "--reference", "shipped", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)


@pytest.mark.parametrize("binary, paths, word, case", [
    (BUILD_DIR / "mlp_train", "fused", "PASS", None),
    ("tests/submissions/mutant_no_relu_mask.cu", "submission", "FAIL", 4),
])
def test_the_exit_status_is_the_written_verdict(binary, paths, word, case, tmp_path):
    exe = binary if isinstance(binary, Path) else built(binary)
    res = gate(exe, tmp_path, "--paths", paths)
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["verdict"]["word"] == word, doc["verdict"]
    assert res.returncode == (0 if word == "PASS" else 1), res.stdout[-2000:] + res.stderr[-2000:]
    assert f"gate: {word}" in res.stdout
    again = verdict.of_run(doc, "run.json")
    assert again.word == word and again.record() == doc["verdict"]
    if case is not None:
        assert case in doc["verdict"]["failed_cases"] and doc["verdict"]["first_hint"]


def test_a_staged_run_and_its_parts_carry_the_verdict_the_supervisor_exits_by(tmp_path):
    exe = built("tests/submissions/mutant_no_relu_mask.cu")
    res = subprocess.run([sys.executable, "-m", "harness.gate.supervisor", "--binary", str(exe), "--out", str(tmp_path),
                          "--", "--paths", "submission", "--reference", "shipped"],
                         capture_output=True, text=True, cwd=ROOT, timeout=900)
    doc = json.loads((tmp_path / "run.json").read_text())
    assert res.returncode == 1 and doc["verdict"]["word"] == "FAIL" and 4 in doc["verdict"]["failed_cases"]
    entry = json.loads((tmp_path / "stage-entry.json").read_text())
    assert entry["verdict"]["word"] == "FAIL" and entry["verdict"]["required_cases"] == [1, 2, 3, 4, 5]
    train = json.loads((tmp_path / "stage-train.json").read_text())
    assert train["verdict"]["required_cases"] == [7]
    assert verdict.of_run(doc, "run.json").record() == doc["verdict"]
