"""GPU: the gate on whole submissions. The naive second implementation passes; each mutant fails
the case meant to catch it; the starter fails every case with "not implemented", never crashing."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from spec import catalog
from spec.files import ROOT


def mlp_train_stages() -> list[str]:
    """The stages `mlp_train --stage` runs, from build/mlp_host's catalog: read in the tests, after
    tests/conftest.py's host_tools made mlp_host up to date (never at collection, from a stale one)."""
    return [s["name"] for s in catalog.stages("mlp_train")]


pytestmark = pytest.mark.gpu

EXPECTED = {  # mutant -> the case that must fail
    "mutant_no_relu_mask": "grad-check",
    "mutant_flipped_update": "step",
    "mutant_no_max_shift": "loss-extreme",
    "mutant_db_wrong_axis": "grad-check",
    "mutant_frozen_b2": "epoch-check",
    "mutant_tail_mean": "epoch-check",
    "mutant_forward_overrun": "guard-bands",
    "mutant_fixed_hyperparams": "step",
    "mutant_stride_784": "batch-forward",
    "mutant_legacy_stream": "stream-contract",
    "mutant_sync_in_epoch": "stream-contract",
    "mutant_leak_epoch": "stream-contract",
    "mutant_undeclared_tf32": "onebatch-forward",   # and batch-forward, grad-check, epoch-check (below)
    "mutant_bf16_no_relu_mask": "grad-check",        # at bfloat16's tolerances (it declares bf16)
    "mutant_unchecked_args": "invalid-args",
}
HINT = {  # mutant -> words its failure output must carry
    "mutant_no_relu_mask": "missing ReLU mask",
    "mutant_flipped_update": "sign of the update",
    "mutant_no_max_shift": "subtract each row's max",
    "mutant_db_wrong_axis": "wrong axis",
    "mutant_frozen_b2": "every tensor updated each step",
    "mutant_tail_mean": "the short last batch",
    "mutant_forward_overrun": "an index past a buffer",
    "mutant_fixed_hyperparams": "with the lr and momentum arguments",
    "mutant_stride_784": "a literal 784",
    "mutant_legacy_stream": "enqueue every launch",
    "mutant_sync_in_epoch": "no cudaDeviceSynchronize, cudaStreamSynchronize",
    "mutant_leak_epoch": "no cudaMalloc inside an entry point",
    "mutant_undeclared_tf32": "declare it with mlp_precision()",
    "mutant_bf16_no_relu_mask": "missing ReLU mask",
    "mutant_unchecked_args": "return MLP_ERR_INVALID_ARGUMENT before enqueuing",
}
ROW = re.compile(r"^(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(PASS|FAIL)\s*(.*)$")


_BUILT: dict[str, Path] = {}


def built(submission: str) -> Path:
    """The submission's mlp_train, built once per session the way the course gate builds it (our
    objects from build/, only the submission and cli/submission_info.o compiled: harness/gate/course.py)."""
    if submission not in _BUILT:
        from harness.gate import course
        src = ROOT / submission
        binary, error = course.build_one(course.Submission(src, course.name_of(src)), "sm_90", ROOT / "build")
        assert binary is not None, error
        _BUILT[submission] = binary
    return _BUILT[submission]


def build_and_gate(submission: str, *args: str):
    res = subprocess.run([str(built(submission)), "--data", "data", "--quick", *args], capture_output=True,
                         text=True, cwd=ROOT, timeout=600)
    rows = {}
    for line in res.stdout.splitlines():
        m = ROW.match(line)
        if m:
            rows[m.group(2)] = (m.group(5), m.group(6))
    return res, rows


def test_naive_submission_passes_cases_1_to_6_9_10_13_14():
    res, rows = build_and_gate("tests/submissions/naive.cu", "--paths", "submission")
    assert res.returncode == 0, res.stdout + res.stderr
    assert len(rows) == 10 and all(v[0] == "PASS" for v in rows.values()), rows   # 1-6, 9, 10, 13, 14
    assert "odd shape 37-19-3" in rows["batch-forward"][1] and "declined" not in rows["batch-forward"][1]


def test_a_correct_submission_summing_with_atomics_passes_with_a_note(tmp_path):
    """Issue 25: reruns that differ in the last bits are not a failure for a submission: the rerun
    must stay within the parity limit, and run.json and the leaderboard say so. atomic_bias.cu adds
    its bias gradients in an order that changes with every call (naive_base.cuh, VARIANT_ATOMIC_BIAS),
    so its rerun differs every time: this always tests the note, never a run that happened to agree."""
    import json
    import sys
    from harness.gate import course
    res = subprocess.run([sys.executable, "-m", "harness.gate.course", "--one", "tests/submissions/atomic_bias.cu",
                          "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    doc = json.loads((tmp_path / "atomic_bias" / "run.json").read_text())
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    sub = doc["paths"]["submission"]
    assert sub["bitwise_rerun_required"] is False
    assert sub["deterministic"] is False, sub                  # the forced order: the rerun differed
    assert any(n.startswith("path submission: nondeterministic: reruns differ by") for n in doc["notes"]), doc
    row = course.row_of(tmp_path / "atomic_bias", None)
    assert row["verdict"] == "PASS", row


def test_strict_determinism_holds_a_submission_to_bitwise_reruns():
    """The same submission, whose reruns always differ (the order of its atomics changes with every
    call), fails under --strict-determinism, every time."""
    res, _ = build_and_gate("tests/submissions/atomic_bias.cu", "--paths", "submission", "--strict-determinism")
    assert "rerun bitwise DIFFERENT" in res.stderr, res.stderr[-2000:]   # cli/path_checks.cpp's line: it differed
    assert res.returncode == 1 and "a rerun of one epoch was not bitwise identical" in res.stdout, res.stdout


def test_forward_overrun_names_the_buffer_and_the_call():
    res, rows = build_and_gate("tests/submissions/mutant_forward_overrun.cu", "--paths", "submission")
    assert rows["onebatch-forward"][0] == "FAIL"
    assert "guard band: mlp_forward wrote outside its buffer: H [256 elements]" in rows["onebatch-forward"][1], rows


@pytest.mark.parametrize("mutant, words", [("mutant_spin_epoch", "timed out after"),
                                           ("mutant_fault_epoch", "cudaErrorIllegalAddress")])
def test_hanging_and_faulting_epochs_end_in_bounded_time(mutant, words, tmp_path):
    """The supervisor (harness/gate/supervisor.py) ends the run at its limit or on the fault and writes
    run.json with the finished cases and a FAIL row naming what happened."""
    import json
    import sys
    binary = built(f"tests/submissions/{mutant}.cu")
    res = subprocess.run([sys.executable, "-m", "harness.gate.supervisor", "--binary", str(binary),
                          "--out", str(tmp_path), "--limit", "20", "--", "--paths", "submission", "--reference",
                          "shipped"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    doc = json.loads((tmp_path / "run.json").read_text())
    bad = [c for c in doc["cases"] if not c["passed"]]
    assert any(words in c["detail"] for c in bad), doc["cases"]
    assert all(c["passed"] for c in doc["cases"] if c["id"] <= 5), doc["cases"]  # stage entry kept
    stages = {s["name"]: s for s in doc["supervisor"]["stages"]}
    assert list(stages) == mlp_train_stages()   # every stage ran
    assert stages["entry"]["ended"] == "exited 0" and words in stages["epoch-check"]["ended"], stages
    assert all(s["seconds"] <= 20 + 10 for s in stages.values()), stages


def test_racy_tile_is_caught_by_racecheck():
    import shutil
    san = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    binary = built("tests/submissions/mutant_racy_tile.cu")
    res = subprocess.run([san, "--tool", "racecheck", str(binary), "--data", "data", "--smoke",
                          "--train-size", "300", "--paths", "submission"], capture_output=True, text=True, cwd=ROOT,
                         timeout=600)
    m = re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?", res.stdout + res.stderr)
    assert m and int(m.group(1)) > 0, (res.stdout + res.stderr)[-3000:]


def test_staged_gate_gives_the_unstaged_cases(tmp_path):
    """The gate in stages (each `--stage NAME` a fresh process) reaches the unstaged run's
    verdicts and values: every case's value equal (the fused path reruns bitwise), the same
    keys, and each stage's record in the supervisor block."""
    import json
    import sys
    docs = {}
    for mode in ("staged", "one-process"):
        out = tmp_path / mode
        res = subprocess.run([sys.executable, "-m", "harness.gate.supervisor", "--out", str(out),
                              *(["--one-process"] if mode == "one-process" else []), "--", "--paths", "fused",
                              "--reference", "shipped"], capture_output=True, text=True, cwd=ROOT, timeout=600)
        assert res.returncode == 0, res.stdout + res.stderr
        docs[mode] = json.loads((out / "run.json").read_text())
    a, b = docs["staged"], docs["one-process"]
    assert [k for k in a if k != "supervisor"] == [k for k in b if k != "supervisor"]
    va = {c["id"]: c["value"] for c in a["cases"]}
    vb = {c["id"]: c["value"] for c in b["cases"]}
    assert va.keys() == vb.keys() and all(va[i] == vb[i] for i in va if i != 8), (va, vb)
    assert a["paths"]["fused"]["parity_vs_fp64"] == b["paths"]["fused"]["parity_vs_fp64"]
    assert [s["ended"] for s in a["supervisor"]["stages"]] == ["exited 0"] * len(mlp_train_stages())


def test_racy_tile_fails_case_12_of_the_supervised_gate(tmp_path):
    """Issue 15: the race a normal run does not show fails the gate through case 12 (racecheck),
    with the race hint; memcheck (case 11) stays clean."""
    import json
    import sys
    binary = built("tests/submissions/mutant_racy_tile.cu")
    res = subprocess.run([sys.executable, "-m", "harness.gate.supervisor", "--binary", str(binary),
                          "--out", str(tmp_path), "--sanitize", "submission", "--", "--paths", "submission",
                          "--reference", "shipped"], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert res.returncode == 1, res.stdout + res.stderr
    doc = json.loads((tmp_path / "run.json").read_text())
    by = {c["id"]: c for c in doc["cases"]}
    assert by[12]["name"] == "racecheck" and not by[12]["passed"] and by[12]["value"] > 0, by.get(12)
    assert by[11]["passed"], by[11]
    assert any("missing __syncthreads()" in h for h in doc["hints"]), doc["hints"]


def test_warp_synchronous_reduction_fails_case_12_on_its_warnings(tmp_path):
    """Issue 25: a block reduction whose last steps skip __syncwarp() shows as racecheck warnings
    only; case 12 counts them, with the __syncwarp() hint."""
    import json
    import sys
    binary = built("tests/submissions/mutant_warp_race.cu")
    res = subprocess.run([sys.executable, "-m", "harness.gate.supervisor", "--binary", str(binary),
                          "--out", str(tmp_path), "--sanitize", "submission", "--", "--paths", "submission",
                          "--reference", "shipped"], capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert res.returncode == 1, res.stdout[-3000:] + res.stderr[-2000:]
    doc = json.loads((tmp_path / "run.json").read_text())
    by = {c["id"]: c for c in doc["cases"]}
    assert all(by[i]["passed"] for i in by if i not in (8, 12)), by
    assert not by[12]["passed"] and by[12]["value"] > 0, by[12]
    assert any("__syncwarp()" in h for h in doc["hints"]), doc["hints"]


@pytest.mark.parametrize("mutant", sorted(EXPECTED))
def test_mutant_fails_its_case(mutant):
    res, rows = build_and_gate(f"tests/submissions/{mutant}.cu", "--paths", "submission")
    print(res.stdout)
    assert res.returncode == 1
    assert rows[EXPECTED[mutant]][0] == "FAIL", rows
    assert HINT[mutant] in res.stdout, res.stdout


def test_flipped_update_also_fails_overfit():
    res, rows = build_and_gate("tests/submissions/mutant_flipped_update.cu", "--paths", "submission")
    assert rows["overfit-32"][0] == "FAIL"


def test_starter_fails_every_case_gracefully():
    res, rows = build_and_gate("cuda/contract/submission_starter.cu", "--paths", "submission")
    assert res.returncode == 1, res.stderr
    assert len(rows) == 10
    for name, (verdict, detail) in rows.items():
        if name == "guard-bands":
            assert verdict == "PASS"
            continue
        assert verdict == "FAIL" and "not implemented" in detail, (name, detail)
    assert "write mlp_forward (stage 1) next" in res.stdout


def test_silent_submission_is_caught_by_poisoned_outputs():
    res, rows = build_and_gate("tests/submissions/mutant_silent_forward.cu", "--paths", "submission")
    assert res.returncode == 1
    assert rows["onebatch-forward"][0] == "FAIL" and rows["batch-forward"][0] == "FAIL"
    assert rows["onebatch-forward"][1] and "inf" in res.stdout.split("onebatch-forward", 1)[1].split("\n", 1)[0]


def test_nan_loss_names_epoch_and_step():
    res, rows = build_and_gate("tests/submissions/mutant_nan_epoch.cu", "--paths", "submission")
    assert res.returncode == 1
    assert "non-finite loss nan at epoch 0 step 3" in res.stderr, res.stderr


def test_every_path_reruns_bitwise():
    """Two one-epoch runs of every path from the same state give bitwise-identical parameters."""
    res = subprocess.run([str(ROOT / "build" / "mlp_train"), "--data", "data", "--quick"], capture_output=True,
                         text=True, cwd=ROOT, timeout=600)
    lines = [ln for ln in res.stderr.splitlines() if "rerun bitwise" in ln]
    # One rerun line per path the run trained (each path prints its "overfit-32" line too).
    paths = {ln.split()[1].rstrip(":") for ln in res.stderr.splitlines() if ln.startswith("path ") and "overfit-32" in ln}
    assert "stationary" in paths and len(paths) >= 5 and len(lines) == len(paths), res.stderr
    assert all("rerun bitwise identical" in ln for ln in lines), lines


def test_binary_for_a_newer_architecture_names_arch():
    """A build for sm_100 has no code the H200 (sm_90) can run: one line naming --arch."""
    build = ROOT / "build" / "sub" / "sm100"
    made = subprocess.run(["make", "--no-print-directory", "-s", "-C", str(ROOT), "-j8", f"BUILD={build}", "ARCH=sm_100",
                           f"{build}/mlp_train"], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip("this nvcc cannot build sm_100: " + made.stderr.strip().splitlines()[-1])
    res = subprocess.run([str(build / "mlp_train"), "--data", "data", "--quick"], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)
    assert res.returncode == 3  # a CUDA error (cuda/common/exit_status.h)
    errors = [ln for ln in res.stderr.splitlines() if ln.startswith("mlp_train:")]
    assert len(errors) == 1 and "--arch sm_90" in errors[0], res.stderr


def test_experimental_persistent2_passes_cases_and_parity():
    """persistent2 (two grid barriers a step; written without a GPU, docs/PERFLOG.md): cases 1-6
    and the one-epoch parity against the fused path must hold before it joins the default paths."""
    res = subprocess.run([str(ROOT / "build" / "mlp_train"), "--data", "data", "--quick", "--paths", "persistent2"],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    line = [ln for ln in res.stderr.splitlines() if ln.startswith("path persistent2: one epoch")][0]
    parity = float(line.split("= ")[1].split(" ")[0])
    assert parity <= 1e-2, line


def test_shipped_reference_gives_the_same_case_7_as_same_run(tmp_path):
    """Issue 9: the fast gate (--reference shipped) must reach the verdict same-run retraining
    reaches. The shipped float64 result equals a same-run retraining bit for bit, so the case-7
    value itself must be identical, not merely the verdict."""
    import json
    binary = ROOT / "build" / "mlp_train"
    docs = {}
    for ref in ("same-run", "shipped"):
        out = tmp_path / ref
        res = subprocess.run([str(binary), "--data", "data", "--paths", "fused", "--reference", ref,
                              "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600)
        assert res.returncode == 0, res.stdout + res.stderr
        docs[ref] = json.loads((out / "run.json").read_text())
        assert docs[ref]["reference_source"] == ref
    assert "float64 reference: shipped" in res.stderr
    case7 = {ref: next(c for c in d["cases"] if c["id"] == 7) for ref, d in docs.items()}
    assert case7["shipped"]["passed"] == case7["same-run"]["passed"]
    assert case7["shipped"]["value"] == case7["same-run"]["value"], case7


def test_smoke_run_skips_case_6_and_passes():
    """--smoke (racecheck's short run): cases 1-5 gated, case 6 reported SKIP, every path's one
    short epoch run, exit 0; a tail batch is included (300 = 2 x 128 + 44)."""
    res = subprocess.run([str(ROOT / "build" / "mlp_train"), "--data", "data", "--smoke", "--train-size", "300",
                          "--paths", "fused,persistent"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert re.search(r"^6\s+overfit-32\s+\S+\s+\S+\s+SKIP\s+not run \(--smoke\)", res.stdout, re.M), res.stdout
    assert "quick run: all passed" in res.stdout
    assert res.stderr.count("overfit-32 skipped (--smoke)") == 2


def test_perf_only_run_json_carries_the_run_id(tmp_path):
    """--run-id goes into run.json ("run_id"); --perf-only writes run.json, init_params.npy and
    order.npy together once the paths have run (docs/formats.md)."""
    import json

    import numpy as np
    out = tmp_path / "perf"  # missing: the binary makes it (its parent exists)
    res = subprocess.run([str(ROOT / "build" / "mlp_train"), "--data", "data", "--perf-only", "--paths", "fused",
                          "--epochs", "2", "--run-id", "gpu-test.1", "--out", str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    doc = json.loads((out / "run.json").read_text())
    assert doc["mode"] == "perf-only" and doc["run_id"] == "gpu-test.1" and doc["recipe"]["epochs"] == 2
    assert np.load(out / "order.npy").shape == (2, 6000) and np.load(out / "init_params.npy").shape == (203530,)


# Issue 30: the gate per precision (README, "Declaring your precision"). What the CPU emulation of
# these submissions measured (tests/gate_sim/precision_sim.cpp): correct TF32 and BF16 arithmetic
# at most 0.1, 0.03, 0.45 and 0.45 of cases 1, 2, 4 and 9's limits; one epoch 0.044 (TF32) and
# 0.065 (BF16) of the update from float64's (the parity limit at those precisions: 0.2).
DECLARED = {"tf32_products": ("tf32", "2^-11"), "bf16_products": ("bf16", "2^-8")}


@pytest.mark.parametrize("submission", sorted(DECLARED))
def test_a_declared_precision_passes_the_quick_gate_at_its_tolerances(submission):
    precision, up = DECLARED[submission]
    res, rows = build_and_gate(f"tests/submissions/{submission}.cu", "--paths", "submission")
    assert res.returncode == 0, res.stdout + res.stderr
    assert len(rows) == 10 and all(v[0] == "PASS" for v in rows.values()), rows   # 1-6, 9, 10, 13, 14
    named = f"u_p = {up} ({precision}, declared by mlp_precision())"
    for case in ("onebatch-forward", "batch-forward", "loss-extreme", "grad-check", "step", "epoch-check"):
        assert named in rows[case][1], (case, rows[case][1])
    assert f"submission: {precision}, declared by mlp_precision()" in res.stderr
    line = next(ln for ln in res.stderr.splitlines() if ln.startswith("path submission: one epoch vs fused"))
    assert "(limit 0.2)" in line, line


def test_tf32_products_passes_every_case_of_the_supervised_gate_and_its_row_says_tf32(tmp_path):
    """The whole gate as a course runs it (stages, sanitizers, case 7 against the shipped float64
    result): every case passes at TF32; run.json and the leaderboard record the precision."""
    import json
    import sys
    from harness.gate import course
    res = subprocess.run([sys.executable, "-m", "harness.gate.course", "--one", "tests/submissions/tf32_products.cu",
                          "--out", str(tmp_path)], capture_output=True, text=True, cwd=ROOT, timeout=900)
    doc = json.loads((tmp_path / "tf32_products" / "run.json").read_text())
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    assert (doc["gate_precision"], doc["gate_unit_roundoff"], doc["gate_precision_declared"]) == ("tf32", 2.0 ** -11, True)
    assert all(c["passed"] for c in doc["cases"] if c["id"] != 8), [c for c in doc["cases"] if not c["passed"]]
    sub = doc["paths"]["submission"]
    assert sub["precision"] == "tf32" and sub["parity_limit"] == 0.2 and sub["passed"], sub
    row = course.row_of(tmp_path / "tf32_products", None)
    assert row["verdict"] == "PASS" and row["precision"] == "tf32", row


def test_tf32_arithmetic_undeclared_fails_the_float32_gate():
    """mutant_undeclared_tf32: float32's limits are ~1e-6 of the magnitudes, TF32's rounding ~1e-4
    (the CPU emulation: 58x case 1's limit, 22x case 2's, 300x case 9's), and the hint names
    mlp_precision()."""
    res, rows = build_and_gate("tests/submissions/mutant_undeclared_tf32.cu", "--paths", "submission")
    assert res.returncode == 1
    for case in ("onebatch-forward", "batch-forward", "grad-check", "epoch-check"):
        assert rows[case][0] == "FAIL" and "declared by mlp_precision()" not in rows[case][1], (case, rows[case])
    assert "within tf32's" in rows["onebatch-forward"][1], rows["onebatch-forward"]
    assert "hint: precision: the forward's errors are over float32's limits" in res.stdout
    assert not [ln for ln in res.stderr.splitlines() if ln.startswith("submission:")]   # nothing declared: FP32


def test_a_defect_declared_bf16_still_fails_at_bfloat16s_tolerances():
    """mutant_bf16_no_relu_mask: case 4 at bf16's rtol/atol (6.3e-2) still fails (the CPU emulation:
    21x its limit), while the forward, which it does not break, passes at bf16's."""
    res, rows = build_and_gate("tests/submissions/mutant_bf16_no_relu_mask.cu", "--paths", "submission")
    assert res.returncode == 1
    assert rows["grad-check"][0] == "FAIL" and "(bf16, declared by mlp_precision())" in rows["grad-check"][1], rows
    assert rows["onebatch-forward"][0] == rows["batch-forward"][0] == "PASS", rows
    assert "missing ReLU mask" in res.stdout and "declared precision:" in res.stdout
