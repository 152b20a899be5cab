"""CPU: the course benchmark's judgement (harness/studies/gate_bench.py): each gated folder's verdict, the
owner's, held against the generator's intent (a correct file PASSes; a defect FAILs in every case its
entry names), a file the gate never reached is not as intended, each stage's seconds summarised, and
bad arguments are one line and exit status 2."""
from __future__ import annotations

import json

import pytest

from harness.studies import gate_bench
from tests.test_verdict_outputs import passing, set_case


def folder(root, name, doc):
    (root / name).mkdir(parents=True)
    (root / name / "run.json").write_text(json.dumps(doc))


def entry(file, intent, must_fail=(), defect=None):
    return {"file": file, "base": "tiled", "defect": defect, "intent": intent, "must_fail": list(must_fail)}


def test_each_verdict_is_held_to_the_generators_intent(tmp_path):
    slow = passing()
    for st in slow["supervisor"]["stages"]:
        st["seconds"] = 3.0 if st["name"] == "train" else 1.0
    folder(tmp_path, "sub-000", slow)                                                        # correct, passes
    folder(tmp_path, "sub-001", set_case(passing(), 4, passed=False, detail="worst at W1"))  # its defect's case
    folder(tmp_path, "sub-002", set_case(passing(), 9, passed=False, detail="epoch"))        # another case only
    folder(tmp_path, "sub-003", set_case(passing(), 9, passed=False, detail="epoch"))        # a correct file failing
    manifest = {"submissions": [entry("sub-000.cu", "PASS"), entry("sub-001.cu", "FAIL", [4], "MUTANT_X"),
                                entry("sub-002.cu", "FAIL", [4], "MUTANT_X"), entry("sub-003.cu", "PASS"),
                                entry("sub-004.cu", "PASS")]}
    rows = {r["file"]: r for r in gate_bench.judged(manifest, tmp_path)}
    assert rows["sub-000.cu"]["verdict"] == "PASS" and rows["sub-000.cu"]["as_intended"]
    assert rows["sub-001.cu"]["verdict"] == "FAIL" and rows["sub-001.cu"]["as_intended"]
    assert rows["sub-001.cu"]["failed_cases"] == [4] and rows["sub-001.cu"]["first_hint"].startswith("grad-check")
    assert rows["sub-002.cu"]["verdict"] == "FAIL" and not rows["sub-002.cu"]["as_intended"]   # caught, but elsewhere
    assert rows["sub-003.cu"]["verdict"] == "FAIL" and not rows["sub-003.cu"]["as_intended"]
    assert rows["sub-004.cu"]["verdict"] == "FAIL" and rows["sub-004.cu"]["first_hint"] == "not gated (no folder)"
    times = gate_bench.stage_times([tmp_path / "sub-000", tmp_path / "sub-001"])
    assert times["train"] == {"n": 2, "median_s": 2.0, "p90_s": 3.0, "max_s": 3.0, "total_s": 4.0}


def test_an_exclusive_stages_wait_for_the_gpu_is_summed_apart_from_its_seconds(tmp_path):
    for k, (seconds, wait) in enumerate([(5.0, 4.0), (2.5, 0.5), (1.0, None)]):
        doc = passing()
        for st in doc["supervisor"]["stages"]:
            if st["name"] == "train":
                st["seconds"] = seconds
                if wait is not None:
                    st["gpu_wait_s"] = wait
        folder(tmp_path, f"sub-{k:03d}", doc)
    times = gate_bench.stage_times([tmp_path / f"sub-{k:03d}" for k in range(3)])
    assert times["train"] == {"n": 3, "median_s": 1.0, "p90_s": 2.0, "max_s": 2.0, "total_s": 4.0,
                              "wait_total_s": 4.5}
    assert all("wait_total_s" not in v for name, v in times.items() if name != "train")


@pytest.mark.parametrize("args, words", [(["--n", "0"], "--n"), (["--n", "5", "--jobs", "0"], "--jobs"),
                                         (["--n", "5", "--correct-share", "2"], "--correct-share")])
def test_bad_arguments_are_one_line_and_status_2(args, words, capsys):
    assert gate_bench.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err
