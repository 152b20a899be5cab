"""CPU: the staged supervisor (harness/gate/stages.py) on a stand-in `mlp_train --stage NAME`
(tests/fakes/staged_mlp_train.py) that passes, fails, hangs, dies on SIGSEGV or exits 3 with a
CUDA fault per stage: each stage runs in its own process under its own limit, a bad stage fails
its own cases only, the later stages still run, and the merged run.json has the unstaged shape
plus the supervisor block (issue 15)."""
from __future__ import annotations

import json
import sys
import time

import pytest

from harness.gate import stages
from harness.gate import supervisor
from spec import catalog
from spec.files import ROOT
from spec.schema import validate

FAKE = ROOT / "tests" / "fakes" / "staged_mlp_train.py"
UNSTAGED_KEYS = ["schema", "date_utc", "run_id", "gpu", "device_limits", "submission", "gated_path", "run_command",
                 "recipe", "reference_source", "gate_precision", "gate_unit_roundoff", "gate_precision_declared",
                 "memory", "cases", "hints", "notes", "paths", "reference_fp64"]


def mlp_train_stages() -> list[str]:
    """The stages `mlp_train --stage` runs, from build/mlp_host's catalog: read in the tests, after
    tests/conftest.py's host_tools made mlp_host up to date (never at collection, from a stale one)."""
    return [s["name"] for s in catalog.stages("mlp_train")]


TIMEOUT = "timeout: a kernel spinning"
FAULT = "an illegal address or a fault"


def stage(name):
    return next(s for s in stages.binary_stages() if s.name == name)


@pytest.fixture
def gate(tmp_path, monkeypatch):
    exe = tmp_path / "mlp_train"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {FAKE} \"$@\"\n")
    exe.chmod(0o755)

    def go(plan=None, limit=2.0, path_failures=(), **kw):
        monkeypatch.setenv("FAKE_PLAN", json.dumps(plan or {}))
        monkeypatch.setenv("FAKE_PATH_FAILURES", json.dumps(list(path_failures)))
        out = tmp_path / "out"
        outcome = supervisor.supervise_run(exe, out, ["--paths", "submission"], limit=limit, **kw)
        doc = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else None
        return outcome, doc, out
    return go


def by_id(doc):
    return {c["id"]: c for c in doc["cases"]}


def test_every_stage_passing_merges_into_the_unstaged_shape(gate, capsys):
    outcome, doc, out = gate()
    assert outcome.rc == 0 and outcome.started
    # The one-process run.json's keys in its order (tests/test_gpu_gate.py compares the two on a GPU):
    # its path_failures too, then the verdict; the supervisor's block anywhere.
    assert list(doc)[:len(UNSTAGED_KEYS)] == UNSTAGED_KEYS and "supervisor" in doc
    assert [k for k in doc if k != "supervisor"][len(UNSTAGED_KEYS):] == ["path_failures", "verdict"]
    assert doc["verdict"]["word"] == "PASS" and doc["verdict"]["reasons"] == []
    assert [c["id"] for c in doc["cases"]] == [i for s in catalog.stages("mlp_train") for i in s["cases"]]
    assert all(c["passed"] for c in doc["cases"]) and doc["hints"] == []
    assert doc["paths"]["submission"]["median_ms"] == 6.3 and doc["memory"] == {"from_train": 1.0}
    assert (doc["gate_precision"], doc["gate_unit_roundoff"], doc["gate_precision_declared"]) == ("tf32", 2.0 ** -11, True)
    sup = doc["supervisor"]
    assert sup["staged"] and sup["ended"] == "exited 0" and sup["path_failures"] == sup["stage_failures"] == []
    assert doc["path_failures"] == []
    assert [s["name"] for s in sup["stages"]] == mlp_train_stages()
    assert all(s["ended"] == "exited 0" and s["limit_s"] == 2.0 for s in sup["stages"])
    assert "--stage" not in doc["run_command"] and "--run-id" not in doc["run_command"]
    validate(doc, "run", "run.json")
    shown = capsys.readouterr().out
    assert shown.count("time limit 2 s (--limit)") == len(mlp_train_stages()) and "gate: PASS" in shown
    assert (out / "stage-train.json").exists() and (out / "stage-entry.stdout.log").exists()
    assert "== stage guard-bands (exited 0)" in (out / "stdout.log").read_text()


def test_a_hang_a_signal_and_a_fault_fail_their_stages_and_the_rest_still_run(gate):
    t0 = time.time()
    outcome, doc, _ = gate({"epoch-check": "hang", "overfit": "segv", "train": "cuda"}, limit=1.5)
    assert time.time() - t0 < 30                     # bounded: one limit per stage
    assert outcome.rc == 1
    c = by_id(doc)
    assert all(c[i]["passed"] for i in (1, 2, 3, 4, 5, 10))    # before and after the bad stages
    assert c[9]["detail"] == "epoch-check hang" and c[9]["passed"]   # printed before the hang: kept
    assert c[6]["detail"] == "overfit segv" and c[6]["passed"]
    assert c[7]["detail"] == "train cuda" and c[7]["passed"]
    assert not c[8]["passed"] and c[8]["detail"] == "CUDA error: cudaErrorIllegalAddress"
    ended = {s["name"]: s["ended"] for s in doc["supervisor"]["stages"]}
    assert ended == {"entry": "exited 0", "epoch-check": "timed out after 2 s", "contract": "exited 0", "invalid-args": "exited 0",
                     "overfit": "died: SIGSEGV", "train": "CUDA error: cudaErrorIllegalAddress",
                     "guard-bands": "exited 0"}
    assert doc["supervisor"]["ended"] == "stage epoch-check: timed out after 2 s"
    assert doc["hints"][0].startswith(TIMEOUT) and doc["hints"][1].startswith(FAULT)
    assert doc["supervisor"]["stage_failures"] == ["epoch-check: timed out after 2 s", "overfit: died: SIGSEGV",
                                                   "train: CUDA error: cudaErrorIllegalAddress"]
    assert doc["paths"] == {}                        # the train stage wrote no part


def test_the_running_case_fails_and_the_later_ones_are_not_run(gate):
    outcome, doc, _ = gate({"entry": "segv"})
    c = by_id(doc)
    assert c[1]["passed"] and c[2]["detail"] == "died: SIGSEGV" and not c[2]["passed"]
    assert c[5]["detail"] == "not run: stage entry ended at case 2 (died: SIGSEGV)"
    assert c[9]["passed"] and c[10]["passed"]        # later stages, fresh processes
    assert outcome.rc == 1 and len(doc["hints"]) == 1 and doc["hints"][0].startswith(FAULT)  # no content hint


def test_a_case_that_fails_gets_its_hint_and_status_1(gate):
    outcome, doc, _ = gate({"entry": "fail"})
    assert outcome.rc == 1 and doc["supervisor"]["ended"] == "exited 1"
    assert any(h.startswith("grad-check:") for h in doc["hints"]) and any(h.startswith("forward:") for h in doc["hints"])


def test_a_path_that_fails_its_parity_fails_the_gate(gate, capsys):
    outcome, doc, _ = gate(path_failures=["path submission: one-epoch parity vs fused 0.17 > 1e-02"])
    assert all(c["passed"] for c in doc["cases"]) and outcome.rc == 1
    assert doc["path_failures"] == doc["supervisor"]["path_failures"] == [
        "path submission: one-epoch parity vs fused 0.17 > 1e-02"]
    assert "FAIL path submission: one-epoch parity" in capsys.readouterr().out


def test_a_stage_without_its_part_fails_naming_it(gate):
    outcome, doc, _ = gate({"overfit": "nopart"})
    assert by_id(doc)[6]["passed"]                    # its printed row is kept, the verdict fails
    assert doc["supervisor"]["stage_failures"] == ["overfit: exited 0 without writing stage-overfit.json"]
    assert [s for s in doc["supervisor"]["stages"] if s["name"] == "overfit"][0]["ended"] == \
        "exited 0 without writing stage-overfit.json"
    assert outcome.rc == 1


def test_bad_input_stops_at_once_with_status_2(gate):
    outcome, doc, out = gate({"entry": "badinput"})
    assert outcome.rc == 2 and doc is None and not (out / "stage-epoch-check.stdout.log").exists()


def test_no_stage_that_started_writes_a_short_doc_or_nothing(gate):
    plan = {s: "nodevice" for s in mlp_train_stages()}
    outcome, doc, _ = gate(plan, write_unstarted=False)
    assert not outcome.started and outcome.child_rc == 3 and doc is None
    outcome, doc, _ = gate(plan)
    # no GPU reached: exit 3, and the later stages were not started (they would say the same)
    assert doc["mode"] == "supervised" and "gpu" not in doc and outcome.rc == 3
    assert [s["ended"] for s in doc["supervisor"]["stages"]][1:] == \
        ["not run: exited 3: mlp_train: CUDA error: no CUDA device found"] * (len(mlp_train_stages()) - 1)
    assert all(not c["passed"] for c in doc["cases"])
    assert doc["supervisor"]["ended"].startswith("stage entry: exited 3: mlp_train: CUDA error: no CUDA device")
    validate(doc, "run_supervised", "run.json")


def test_stage_limits_have_floors_and_scale_with_our_time(tmp_path):
    entry, train = stage("entry"), stage("train")
    assert stages.stage_limit(entry, [], tmp_path)[0] == 30.0
    assert stages.stage_limit(train, [], tmp_path)[0] == 120.0
    (tmp_path / "run.json").write_text(json.dumps({"paths": {"fused": {"median_ms": 100.0}},
                                                   "reference_fp64": {"train_seconds": 4.0}}))
    limit, why = stages.stage_limit(stage("overfit"), [], tmp_path)       # overfit: 5 epochs' work
    assert limit == pytest.approx(30 + 50 * 0.1 * 5) and "50 x 100.000 ms x 5 epochs" in why
    limit, why = stages.stage_limit(train, ["--paths", "a,b"], tmp_path)  # same-run float64 reference
    assert limit == pytest.approx(50 * 0.1 * 30 * 2 + 30 + 10 * 4.0) and "x 2 paths" in why
    assert stages.stage_limit(train, ["--reference", "shipped", "--paths", "a"], tmp_path)[0] == \
        pytest.approx(max(60, 50 * 0.1 * 30 + 30))
    assert stages.stage_limit(train, ["--reference", "shipped"], tmp_path.parent / "none")[0] == 60.0
