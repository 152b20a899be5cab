"""GPU: our TF32 and BF16 paths at the recipe's shape (stationary-tf32, stationary-bf16, tiled-tf32,
tiled-bf16, persistent2-tf32, persistent2-bf16):
each trains, lands within its precision's parity limit of the fused path after one epoch (and not
at float32's distance: its products really are rounded), names its precision and accumulator in
run.json, and keeps test accuracy near float64's. The GEMMs themselves: tests/test_gpu_tiled.py."""
from __future__ import annotations

import json
import subprocess

import pytest

from spec.files import BUILD_DIR, DATA_DIR

pytestmark = pytest.mark.gpu

TRAIN = BUILD_DIR / "mlp_train"
PATHS = {"stationary-tf32": "tf32", "stationary-bf16": "bf16", "tiled-tf32": "tf32", "tiled-bf16": "bf16",
         "persistent2-tf32": "tf32", "persistent2-bf16": "bf16"}


def test_precision_paths_at_the_recipe(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.run([str(TRAIN), "--perf-only", "--parity", "--paths", ",".join(["fused", *PATHS]),
                           "--epochs", "4", "--data", str(DATA_DIR), "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    print(proc.stdout[-4000:], proc.stderr[-4000:])
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = json.loads((out / "run.json").read_text())
    fp64 = run["fp64_reference"]
    fused = run["paths"]["fused"]
    assert fused["precision"] == "fp32" and fused["parity_limit"] == 1e-2
    for name, precision in PATHS.items():
        p = run["paths"][name]
        assert p["passed"] and p["precision"] == precision, (name, p.get("error"))
        assert precision.upper() in p["accumulator"], p["accumulator"]
        assert p["parity_limit"] == 0.2   # cli/path_checks.h kParityLimitLowPrecision
        assert 0.01 < p["parity_reference_drift"] < 0.1, p   # correct rounding's own drift here: the limit stays 0.2
        # rounded products: farther from the fused path than float32 summation order (~3e-7), within the limit
        assert 1e-6 < p["parity_vs_fused"] <= p["parity_limit"], (name, p["parity_vs_fused"])
        assert abs(p["test_accuracy_per_epoch"][0] - fp64["test_accuracy"]) <= 0.03, name


def test_precision_paths_pass_the_gates_train_stage(tmp_path):
    """Through the gate (`--stage train`): each path's parity, rerun, accuracy and case-9 verdicts at
    its precision's limits, beside the FP32 paths' unchanged ones."""
    out = tmp_path / "run"
    proc = subprocess.run([str(TRAIN), "--stage", "train", "--paths", ",".join(["fused", *PATHS]),
                           "--data", str(DATA_DIR), "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    print(proc.stdout[-6000:], proc.stderr[-4000:])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    stage = json.loads((out / "stage-train.json").read_text())
    assert not stage["path_failures"], stage["path_failures"]
    assert stage["paths"]["fused"]["parity_limit"] == 1e-2          # the FP32 rule unchanged
    for name, precision in PATHS.items():
        p = stage["paths"][name]
        assert p["passed"] and p["precision"] == precision and p["deterministic"], name
        # case 9 on the path's own epoch, at its precision's bound (gate/cases.h case_path_epoch_check)
        assert p["epoch_check"]["passed"] and p["epoch_check"]["value"] <= 1, (name, p["epoch_check"])
        assert p["parity_limit"] == 0.2 and p["parity_vs_fused"] <= p["parity_limit"]
        assert abs(p["accuracy_gap_pp"]) <= 1.0, (name, p["accuracy_gap_pp"])  # the goal: 1 pp of float64


def test_at_batch_32_the_limit_follows_the_rounded_input_references_drift(tmp_path):
    """cli/path_checks.h parity_limit: at batch 32 correct TF32/BF16 rounding alone carries one
    epoch about 0.7 of the update from float32's (the CPU reference, tests/test_gate_precision.py),
    so the limit there is twice the rounded-input reference's drift, measured in the run, and our
    stationary paths land within it; the fused FP32 path keeps 1e-2."""
    out = tmp_path / "run"
    paths = ["fused", "stationary-tf32", "stationary-bf16"]
    proc = subprocess.run([str(TRAIN), "--perf-only", "--parity", "--paths", ",".join(paths), "--batch", "32",
                           "--epochs", "2", "--data", str(DATA_DIR), "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    print(proc.stdout[-3000:], proc.stderr[-3000:])
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = json.loads((out / "run.json").read_text())
    assert run["paths"]["fused"]["parity_limit"] == 1e-2 and run["paths"]["fused"]["parity_reference_drift"] is None
    for name in paths[1:]:
        p = run["paths"][name]
        drift = p["parity_reference_drift"]
        assert 0.3 < drift < 1.2, (name, drift)
        assert p["parity_limit"] == pytest.approx(max(0.2, 2 * drift)), (name, p["parity_limit"], drift)
        assert p["passed"] and p["parity_vs_fused"] <= p["parity_limit"], (name, p["parity_vs_fused"])
