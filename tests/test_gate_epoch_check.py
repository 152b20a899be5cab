"""CPU: gate case 9's tolerance (cuda/gate/epoch_check.cpp) on a float32 epoch computed on the CPU like
tests/submissions/naive_base.cuh: correct float32 code (two summation orders) passes with margin;
an epoch that never updates b2, or that averages the tail batch over the full batch, fails by
orders of magnitude (tests/gate_sim/epoch_check_sim.cpp)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from spec.files import ROOT

SRC = ["tests/gate_sim/epoch_check_sim.cpp", "cuda/gate/epoch_check.cpp", "cuda/gate/cpu_reference.cpp", "cuda/io/dataset.cpp",
       "cuda/common/common.cpp", "cuda/io/sha256.cpp", "cuda/io/npy.cpp", "cuda/io/input_file.cpp"]


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    if not shutil.which("g++"):
        pytest.skip("no g++")
    exe = tmp_path_factory.mktemp("sim") / "epoch_check_sim"
    subprocess.run(["g++", "-O2", "-std=c++17", "-fopenmp", "-Wall", "-Wextra", "-Werror", "-Icuda", "-isystem",
                    "/usr/local/cuda/include", *SRC, "-o", str(exe)], cwd=ROOT, check=True)
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
