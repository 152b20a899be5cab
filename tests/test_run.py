"""harness/run.py against a fake mlp_train: each exit status by its meaning, and a run.json that
is this run's only when its run_id is the one passed (issue 17, item 1); in one child
(`staged=False`) and, with tests/fakes/staged_mlp_train.py, in stages (the default)."""
from __future__ import annotations

import json
import sys

import pytest

from harness import run
from spec import catalog, provenance

FAKE = """#!{python}
import json, os, sys
args = sys.argv[1:]
out = args[args.index("--out") + 1]
run_id = args[args.index("--run-id") + 1] if "--run-id" in args else None
mode = os.environ["FAKE_MODE"]
if mode == "write":   # every case the gate runs, all passing for status 0, case 1 failing for 1
    rows = [{{"id": i, "name": "x", "passed": not (i == 1 and os.environ["FAKE_RC"] == "1"), "value": 0, "limit": 1}}
            for i in json.loads(os.environ["FAKE_CASES"])]
    json.dump({{"run_id": run_id, "gpu": {{"name": "fake"}}, "cases": rows}}, open(out + "/run.json", "w"))
if mode in ("hang", "segv"):
    print("1  onebatch-forward 1e-07 6.2e-05  PASS   fine", flush=True)
    import signal, time
    os.kill(os.getpid(), signal.SIGSEGV) if mode == "segv" else time.sleep(60)
print("fake mlp_train " + mode, file=sys.stderr)
sys.exit(int(os.environ["FAKE_RC"]))
"""

STALE = {"run_id": "an-older-run", "gpu": {"name": "old"}, "commit": "old-commit",
         "run_command": "old command"}


@pytest.fixture
def setup(tmp_path, monkeypatch):
    build = tmp_path / "build"
    build.mkdir()
    (build / "build_info.json").write_text(json.dumps(
        {"arch": "sm_90", "submission": "cuda/contract/submission_ref.cu", "accumulate": "double",
         "make_command": "make ARCH=sm_90", "nvcc_command": "nvcc -O3"}))
    fake = build / "mlp_train"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    results = tmp_path / "results"
    results.mkdir()
    monkeypatch.setattr(provenance, "git_commit", lambda: "test-commit")
    monkeypatch.setattr(provenance, "driver_version", lambda: "test-driver")

    (results / "run.json").write_text(json.dumps(STALE))
    monkeypatch.setenv("FAKE_CASES", json.dumps([i for st in catalog.stages("mlp_train") for i in st["cases"]]))

    def go(mode, rc, limit=None):
        monkeypatch.setenv("FAKE_MODE", mode)
        monkeypatch.setenv("FAKE_RC", str(rc))
        return run.run_gate(build_dir=build, data_dir=tmp_path, results_dir=results, limit=limit, staged=False)
    return go, results


@pytest.mark.parametrize("rc", [0, 1])
def test_a_run_that_wrote_its_run_json_is_completed(setup, rc, capsys):
    go, results = setup
    assert go("write", rc) == rc
    doc = json.loads((results / "run.json").read_text())
    assert doc["commit"] == "test-commit" and doc["gpu"]["driver"] == "test-driver"
    assert doc["build"]["arch"] == "sm_90" and doc["build"]["accumulate"] == "double"
    passed_id = capsys.readouterr().out.split("--run-id ")[1].split()[0]
    assert doc["run_id"] == passed_id != STALE["run_id"]
    assert "--run-id" not in doc["run_command"]      # the command a user repeats


@pytest.mark.parametrize("rc, meaning", [(2, "bad input"), (3, "CUDA error"), (4, "internal error"),
                                         (139, "no documented meaning")])
def test_other_statuses_leave_run_json_untouched(setup, rc, meaning):
    go, results = setup
    before = (results / "run.json").read_bytes()
    with pytest.raises(run.RunFailed, match=rf"status {rc} \({meaning};") as exc:
        go("silent", rc)
    assert exc.value.code == (rc if rc <= 4 else 4)
    assert (results / "run.json").read_bytes() == before


@pytest.mark.parametrize("rc", [0, 1])
def test_a_stale_run_json_is_not_this_runs(setup, rc):
    """Status 0 or 1 without this run's run.json (the issue's repro: a stale file got a new
    commit and command): an error, and the stale file keeps its commit."""
    go, results = setup
    before = (results / "run.json").read_bytes()
    with pytest.raises(run.RunFailed, match="wrote no run.json for this run"):
        go("silent", rc)
    assert (results / "run.json").read_bytes() == before


def test_no_run_json_at_all(setup):
    go, results = setup
    (results / "run.json").unlink()
    with pytest.raises(run.RunFailed, match="missing or another run's"):
        go("silent", 0)
    assert not (results / "run.json").exists()


def test_strict_adds_the_sanitizer_cases_and_fails_without_the_tool(setup, monkeypatch, tmp_path):
    """`invoke run --strict` without compute-sanitizer (this CPU machine): cases 11 and 12 FAIL
    "compute-sanitizer not found", and a run that passed exits 1."""
    monkeypatch.delenv("COMPUTE_SANITIZER", raising=False)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path))
    go, results = setup
    monkeypatch.setenv("FAKE_MODE", "write")
    monkeypatch.setenv("FAKE_RC", "0")
    rc = run.run_gate(build_dir=tmp_path / "build", data_dir=tmp_path, results_dir=results, strict=True,
                      staged=False)
    assert rc == 1
    doc = json.loads((results / "run.json").read_text())
    by = {c["id"]: c for c in doc["cases"]}
    assert by[11]["name"] == "memcheck" and by[12]["name"] == "racecheck"
    assert not by[11]["passed"] and by[12]["detail"].startswith("compute-sanitizer not found")
    assert doc["commit"] == "test-commit"          # the host's completion is kept


@pytest.mark.parametrize("mode, ended", [("hang", "timed out after 2 s"), ("segv", "died: SIGSEGV")])
def test_a_run_that_hangs_or_dies_after_a_case_gets_a_supervised_run_json(setup, mode, ended):
    """`invoke run` under the supervisor: the finished case is kept, the running one fails with
    what happened, exit status 1, and the host's completion (commit, build) is added."""
    go, results = setup
    assert go(mode, 0, limit=2) == 1
    doc = json.loads((results / "run.json").read_text())
    by = {c["id"]: c for c in doc["cases"]}
    assert by[1]["passed"] and by[2]["detail"] == ended and not by[10]["passed"]
    assert doc["mode"] == "supervised" and doc["supervisor"]["ended"] == ended
    assert doc["commit"] == "test-commit" and doc["build"]["arch"] == "sm_90" and "gpu" not in doc
    assert (results / "logs" / "run_supervised" / "stdout.log").read_text().startswith("1  onebatch-forward")


@pytest.fixture
def staged(tmp_path, monkeypatch, setup):
    """run_gate in stages on tests/fakes/staged_mlp_train.py (FAKE_PLAN: what each stage does)."""
    go, results = setup
    from spec.files import ROOT
    fake = tmp_path / "build" / "mlp_train"
    fake.write_text(f"#!/bin/sh\nexec {sys.executable} {ROOT / 'tests' / 'fakes' / 'staged_mlp_train.py'} \"$@\"\n")

    def go_staged(plan):
        monkeypatch.setenv("FAKE_PLAN", json.dumps(plan))
        return run.run_gate(build_dir=tmp_path / "build", data_dir=tmp_path, results_dir=results, limit=2)
    return go_staged, results


def test_a_staged_run_is_merged_and_completed(staged):
    go, results = staged
    assert go({}) == 0
    doc = json.loads((results / "run.json").read_text())
    assert doc["supervisor"]["staged"] and len(doc["supervisor"]["stages"]) == len(catalog.stages("mlp_train"))
    assert doc["commit"] == "test-commit" and doc["gpu"]["driver"] == "test-driver"
    assert "--stage" not in doc["run_command"]
    assert (results / "logs" / "run_supervised" / "stage-train.json").exists()
    assert not (results / "stage-train.json").exists()     # the parts are kept with the logs


def test_a_staged_fault_fails_one_stage(staged):
    go, results = staged
    assert go({"overfit": "segv"}) == 1
    doc = json.loads((results / "run.json").read_text())
    by = {c["id"]: c for c in doc["cases"]}
    assert by[7]["passed"] and by[10]["passed"] and doc["paths"]
    assert doc["supervisor"]["stage_failures"] == ["overfit: died: SIGSEGV"]


def test_a_staged_run_on_a_machine_without_a_gpu_keeps_run_json(staged):
    go, results = staged
    before = (results / "run.json").read_bytes()
    with pytest.raises(run.RunFailed, match=r"status 3 \(CUDA error;") as exc:
        go({s["name"]: "nodevice" for s in catalog.stages("mlp_train")})
    assert exc.value.code == 3 and (results / "run.json").read_bytes() == before


def _tree(root):
    import hashlib
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_run_that_reaches_no_gpu_keeps_the_committed_logs_and_stops_after_its_first_stage(staged):
    """Issue 28: without a GPU, the committed logs stay as they were (this run's go to the git-ignored
    results/failed/, which the message names; nothing new beside the evidence), the later stages never
    start, and the exit status is 3."""
    go, results = staged
    assert go({}) == 0
    committed = _tree(results / "logs" / "run_supervised")
    run_json = (results / "run.json").read_bytes()
    with pytest.raises(run.RunFailed) as exc:
        go({s["name"]: "nodevice" for s in catalog.stages("mlp_train")})
    assert exc.value.code == 3
    assert _tree(results / "logs" / "run_supervised") == committed and (results / "run.json").read_bytes() == run_json
    failed = results / "failed" / "logs" / "run_supervised"
    assert (failed / "stage-entry.stderr.log").exists() and not (failed / "stage-epoch-check.stderr.log").exists()
    assert "this run's logs in " in str(exc.value) and str(exc.value).endswith("failed/logs/run_supervised/")
    assert sorted(p.name for p in (results / "logs").iterdir()) == ["run_supervised"]
    assert sorted(p.name for p in (results / "failed").iterdir()) == ["logs"]


def test_bad_input_keeps_the_committed_logs(staged):
    go, results = staged
    assert go({}) == 0
    committed = _tree(results / "logs" / "run_supervised")
    with pytest.raises(run.RunFailed) as exc:
        go({"entry": "badinput"})
    assert exc.value.code == 2 and _tree(results / "logs" / "run_supervised") == committed
