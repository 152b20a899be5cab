"""GPU: our TF32 and BF16 paths at the recipe's shape (stationary-tf32, stationary-bf16, tiled-tf32,
tiled-bf16):
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
PATHS = {"stationary-tf32": "tf32", "stationary-bf16": "bf16", "tiled-tf32": "tf32", "tiled-bf16": "bf16"}


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
