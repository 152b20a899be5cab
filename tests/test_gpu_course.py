"""GPU: the gate on learner-style submissions and on a generated course (issue 40). The correct
learner-style files of tests/submissions/ (tiled16, tiled32, regtile, launch_heavy) pass every case;
each defect their headers document fails every case its entry names (harness/gate/course_gen.py
defects_of, the one table); launch_heavy's epoch is tiled16's bit for bit; and each file of a
generated course gets the verdict its manifest says. Built and gated as tests/test_gpu_gate.py does
(its built() and build_and_gate())."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.gate import course_gen as cg
from spec import catalog
from spec.files import ROOT
from tests.test_gpu_gate import build_and_gate, built

pytestmark = pytest.mark.gpu

# Under `compute-sanitizer --tool racecheck ... --smoke --train-size 300` on one H200 beside six other
# such runs, tiled16 and regtile took about 300 s and tiled32 (1,024-thread blocks) over 420 s: issue
# 40's slowness, which their course-gate test meets wherever the racecheck stage's limit is shorter.
LEARNER = ["tiled16", "tiled32", "regtile", "launch_heavy"]
QUICK_CASES = {1, 2, 3, 4, 5, 6, 9, 10, 13}   # the rows a --quick run prints
SANITIZER_CASES = {11, 12}                     # the supervisor's compute-sanitizer runs
# Each defect of the learner-style headers on one file of its base (the base's parameters as in that
# file); tiled_base.cuh's at both tile sizes.
FILES = {"tiled16": ("tiled", {"TILE": 16}), "tiled32": ("tiled", {"TILE": 32}), "regtile": ("regtile", {})}
DEFECTS = ([("tiled16", m) for m in (*cg.defects_of("learner_common.cuh"), *cg.defects_of("tiled_base.cuh"))]
           + [("tiled32", m) for m in cg.defects_of("tiled_base.cuh")]
           + [("regtile", m) for m in cg.defects_of("regtile_base.cuh")])
TABLE = {**cg.BASES["tiled"].defects(), **cg.BASES["regtile"].defects()}
QUICK = [(f, m) for f, m in DEFECTS if set(TABLE[m].must_fail) <= QUICK_CASES]
# The races on tiled16 and regtile only: racecheck of tiled32's blocks runs longer than that stage's
# limit (above), and a run that times out has no hazard count to check.
SANITIZED = [(f, m) for f, m in DEFECTS if set(TABLE[m].must_fail) & SANITIZER_CASES and f != "tiled32"]
COURSE = (6, 40)   # n, seed of the generated course gated whole


def defect_file(folder: Path, file: str, macro: str) -> str:
    """`file` of tests/submissions/ with `macro` defined, written with the headers it includes into
    `folder`; its path for built()."""
    base, params = FILES[file]
    name = f"{file}-{macro.lower().replace('_', '-')}"
    (folder / f"{name}.cu").write_text(cg.source_of(name, cg.BASES[base], params, macro, "tests/test_gpu_course.py gates it."))
    for h in cg.includes_of(cg.BASES[base].header):
        (folder / h).write_bytes((cg.SUBMISSIONS / h).read_bytes())
    return str(folder / f"{name}.cu")


def course_gate(src: str, out: Path) -> tuple[subprocess.CompletedProcess, dict, dict]:
    """The whole gate as a course runs it on one file (stages, sanitizers, case 7 against the shipped
    float64 result): (the process, run.json, its leaderboard row)."""
    from harness.gate import course
    res = subprocess.run([sys.executable, "-m", "harness.gate.course", "--one", src, "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=3600)
    name = course.name_of(Path(src))
    doc = json.loads((out / name / "run.json").read_text())
    return res, doc, course.row_of(out / name, None)


@pytest.mark.parametrize("name", LEARNER)
def test_a_learner_style_submission_passes_the_quick_gate(name):
    res, rows = build_and_gate(f"tests/submissions/{name}.cu", "--paths", "submission")
    assert res.returncode == 0, res.stdout + res.stderr
    names = catalog.case_names()
    assert {names[i] for i in QUICK_CASES} <= set(rows) and all(v[0] == "PASS" for v in rows.values()), rows
    assert "odd shape 37-19-3" in rows["batch-forward"][1] and "declined" not in rows["batch-forward"][1]


@pytest.mark.slow
@pytest.mark.parametrize("name", LEARNER)
def test_a_learner_style_submission_passes_every_case_of_the_course_gate(name, tmp_path):
    res, doc, row = course_gate(f"tests/submissions/{name}.cu", tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    ids = {c["id"] for c in doc["cases"]}
    assert set(catalog.verdict_case_ids()) <= ids, ids
    assert all(c["passed"] for c in doc["cases"] if c["id"] != 8), [c for c in doc["cases"] if not c["passed"]]
    assert row["verdict"] == "PASS" and row["precision"] == "fp32", row


@pytest.mark.parametrize("file, macro", QUICK, ids=[f"{f}-{m}" for f, m in QUICK])
def test_a_learner_style_defect_fails_each_case_its_entry_names(file, macro, tmp_path):
    names = catalog.case_names()
    res, rows = build_and_gate(defect_file(tmp_path, file, macro), "--paths", "submission")
    print(res.stdout)
    assert res.returncode != 0, res.stdout
    for case in TABLE[macro].must_fail:
        if names[case] in rows:
            assert rows[names[case]][0] == "FAIL", (macro, names[case], rows)
        else:   # the run stopped at a fault before printing the case: the fault is the gate catching it
            assert "cudaError" in res.stdout + res.stderr, (macro, names[case], res.stdout[-2000:], res.stderr[-2000:])


@pytest.mark.slow
@pytest.mark.parametrize("file, macro", SANITIZED, ids=[f"{f}-{m}" for f, m in SANITIZED])
def test_a_learner_style_race_fails_its_sanitizer_case(file, macro, tmp_path):
    binary = built(defect_file(tmp_path, file, macro))
    res = subprocess.run([sys.executable, "-m", "harness.gate.supervisor", "--binary", str(binary),
                          "--out", str(tmp_path / "out"), "--sanitize", "submission", "--", "--paths", "submission",
                          "--reference", "shipped"], capture_output=True, text=True, cwd=ROOT, timeout=3600)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-2000:]
    by = {c["id"]: c for c in json.loads((tmp_path / "out" / "run.json").read_text())["cases"]}
    for case in TABLE[macro].must_fail:
        assert not by[case]["passed"] and by[case]["value"] is not None and by[case]["value"] > 0, by.get(case)


def libmlp(submission: str) -> Path:
    """build/libmlp.so linked with `submission` (harness/binding.py's library), beside the mlp_train
    that built() made from our copied objects: only the link runs."""
    binary = built(submission)
    bdir, rel = binary.parent, (lambda p: os.path.relpath(p, ROOT))
    source = bdir / "src" / f"{bdir.name}.cu"
    res = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), "-j8", "ARCH=sm_90", f"BUILD={rel(bdir)}",
                          f"SUBMISSION={rel(source)}", "-o", rel(bdir / "config.stamp"), f"{rel(bdir)}/libmlp.so"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return bdir / "libmlp.so"


EPOCH_SCRIPT = r"""
import sys
import numpy as np
from harness.binding import Submission
from spec import layout
lib, out = sys.argv[1], sys.argv[2]
shape, n, batch = (784, 256, 10), 6000, 128
rng = np.random.default_rng(40)
total = layout.n_params(shape)
params = rng.uniform(-0.035, 0.035, total).astype(np.float32)
velocity = np.zeros(total, np.float32)
X = (rng.integers(0, 256, (n, shape[0])) / 255.0).astype(np.float32)
y = rng.integers(0, shape[2], n).astype(np.int32)
order = rng.permutation(n).astype(np.int32)
p, v, losses = Submission(lib).train_epoch(shape, params, velocity, X, y, order, batch, 0.1, 0.9)
np.savez(out, p=p, v=v, losses=losses)
"""


def test_launch_heavy_trains_tiled16s_bits(tmp_path):
    """One recipe-shaped epoch (6000 rows, batch 128: a 112-row tail) from the same state: every
    parameter, velocity element and step loss of launch_heavy.cu equal to tiled16.cu's bit for bit."""
    got = {}
    for name in ("tiled16", "launch_heavy"):
        lib = libmlp(f"tests/submissions/{name}.cu")
        res = subprocess.run([sys.executable, "-c", EPOCH_SCRIPT, str(lib), str(tmp_path / f"{name}.npz")],
                             capture_output=True, text=True, cwd=ROOT, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
        got[name] = np.load(tmp_path / f"{name}.npz")
    for key in ("p", "v", "losses"):
        a, b = got["tiled16"][key], got["launch_heavy"][key]
        assert np.isfinite(a).all() and a.view(np.uint32).tobytes() == b.view(np.uint32).tobytes(), key


@pytest.mark.slow
def test_a_generated_course_gets_what_its_manifest_says(tmp_path):
    """course_gen's files gated as a course (`python -m harness.gate.course DIR`): a PASS file's row is
    PASS; a FAIL file's row is FAIL with every case of its must_fail FAIL."""
    src = tmp_path / "course"
    manifest = cg.write_course(src, *COURSE)
    print(json.dumps(manifest["submissions"], indent=1))
    out = tmp_path / "gate"
    res = subprocess.run([sys.executable, "-m", "harness.gate.course", str(src), "--out", str(out), "--jobs", "3"],
                         capture_output=True, text=True, cwd=ROOT, timeout=5400)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    with open(out / "leaderboard.csv", newline="") as fh:
        rows = {r["submission"]: r for r in csv.DictReader(fh)}
    wrong = []
    for s in manifest["submissions"]:
        row = rows[s["file"][:-3]]
        if s["intent"] == "PASS":
            ok = row["verdict"] == "PASS"
        else:
            ok = row["verdict"] == "FAIL" and all(row[f"case{i}"] == "FAIL" for i in s["must_fail"])
        if not ok:
            wrong.append((s, {k: v for k, v in row.items() if k.startswith("case") or k in ("verdict", "first_hint")}))
    assert not wrong, wrong
    exclusive = {st["name"] for st in catalog.stages("mlp_train") if st["exclusive"]}
    for s in manifest["submissions"]:   # each exclusive stage took the GPU alone by the binary's handshake
        doc = json.loads((out / s["file"][:-3] / "run.json").read_text())
        for st in doc["supervisor"]["stages"]:
            assert ("gpu_wait_s" in st) == (st["name"] in exclusive), st
