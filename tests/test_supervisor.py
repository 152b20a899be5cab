"""CPU: harness/gate/supervisor.py in one child (`--one-process`; the stages: tests/test_stages.py) on stand-in binaries that print the gate's first rows and then hang,
die on a signal or exit with a CUDA error: run.json is written each time, keeps the finished
cases and fails the case that was running with what happened."""
from __future__ import annotations

import json
import stat

import pytest

from harness.gate import child

from harness.gate import supervisor

ROWS = ("#  case value limit verdict\n"
        "1  onebatch-forward 1e-07 6.2e-05  PASS   fine\n"
        "2  batch-forward 1e-07 1.9e-06  PASS   fine\n")


def fake(tmp_path, tail: str):
    exe = tmp_path / "fake_mlp_train"
    exe.write_text(f"#!/bin/sh\nprintf '{ROWS}'\n{tail}\n")
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    return exe


@pytest.mark.parametrize("tail, words", [
    ("sleep 30", "timed out after 2 s"),
    ("kill -SEGV $$", "died: SIGSEGV"),
    ("echo 'mlp_train: CUDA error: gate.cu:40: cudaDeviceSynchronize() failed: cudaErrorIllegalAddress (x)' >&2; exit 3",
     "CUDA error: cudaErrorIllegalAddress"),
])
def test_a_bad_end_fails_the_running_case_and_keeps_the_rest(tmp_path, tail, words):
    out = tmp_path / "out"
    rc = supervisor.supervise(fake(tmp_path, tail), out, [], limit=2, staged=False)
    assert rc == 1
    doc = json.loads((out / "run.json").read_text())
    by_id = {c["id"]: c for c in doc["cases"]}
    assert by_id[1]["passed"] and by_id[2]["passed"]
    assert not by_id[3]["passed"] and by_id[3]["detail"] == words
    assert not by_id[10]["passed"] and by_id[10]["detail"].startswith("not run: the run ended at case 3")
    assert doc["supervisor"]["ended"] == words and doc["hints"]


def test_a_run_that_writes_its_own_run_json_is_kept(tmp_path):
    out = tmp_path / "out"
    # The stand-in writes run.json with the --run-id it was given (the last argument), then exits 1.
    tail = ('for a; do id=$a; done; printf \'{"run_id": "%s", "cases": []}\' "$id" > "$4/run.json"; exit 1')
    rc = supervisor.supervise(fake(tmp_path, tail), out, [], limit=5, staged=False)
    assert rc == 1
    doc = json.loads((out / "run.json").read_text())
    assert doc["cases"] == [] and doc["supervisor"]["ended"] == "exited 1"


def test_the_time_limit_has_a_floor_and_scales_with_our_time(tmp_path):
    assert child.time_limit(20, tmp_path)[0] == child.FLOOR_S
    (tmp_path / "run.json").write_text(json.dumps({"paths": {"fused": {"median_ms": 100.0}}}))
    limit, why = child.time_limit(20, tmp_path)
    assert limit == pytest.approx(50 * 0.1 * 30 + 30) and "50 x 100.000 ms" in why
