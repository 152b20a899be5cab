"""CPU: gate case 9's tolerance (cuda/gate/epoch_check.cpp) on a float32 epoch computed on the CPU like
tests/submissions/naive_base.cuh: correct float32 code (two summation orders) passes with margin;
an epoch that never updates b2, or that averages the tail batch over the full batch, fails by
orders of magnitude (tests/gate_sim/epoch_check_sim.cpp)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from spec.files import BUILD_DIR, ROOT

SIM = "tests/gate_sim/epoch_check_sim.cpp"
# The gate's host code it links: build/'s objects (the very objects of build/mlp_host, which the
# host_tools fixture made up to date), not a second compile of them.
OBJECTS = ["gate/epoch_check", "gate/tolerances", "gate/cpu_reference", "io/dataset", "common/common", "io/sha256",
           "io/npy", "io/input_file", "common/declared_precision"]


@pytest.fixture(scope="module")
def scores(tmp_path_factory, host_tools):
    if not shutil.which("g++"):
        pytest.skip("no g++")
    exe = tmp_path_factory.mktemp("sim") / "epoch_check_sim"
    subprocess.run(["g++", "-O2", "-std=c++17", "-fopenmp", "-Wall", "-Wextra", "-Werror", "-Icuda", "-isystem",
                    "/usr/local/cuda/include", SIM,
                    *(str(BUILD_DIR / "obj" / f"{o}.o") for o in OBJECTS), "-o", str(exe)], cwd=ROOT, check=True)
    out = subprocess.run([str(exe), "data"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    rows = {}
    for line in out.splitlines():
        name, value = line.split()[:2]
        rows[name] = float(value)
    return rows


def test_correct_float32_epochs_pass_with_margin(scores):
    assert scores["ok"] < 0.6 and scores["fma_order"] < 0.6, scores


def test_epoch_bugs_fail_by_orders_of_magnitude(scores):
    assert scores["frozen_b2"] > 30, scores
    assert scores["tail_mean"] > 100, scores
