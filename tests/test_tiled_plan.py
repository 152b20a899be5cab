"""The tiled path's GEMM plans (cuda/kernels/tiled_plan.h through `mlp_host plan-gemm`): every
plan covers its problem, splits K only into chunks that all have work, and fills the GPU where
the output alone has too few tiles."""
from __future__ import annotations

import json
import subprocess

import pytest

from spec.files import BUILD_DIR

HOST = BUILD_DIR / "mlp_host"


def plan(m, n, k, sms=132):
    out = subprocess.run([str(HOST), "plan-gemm", str(m), str(n), str(k), str(sms)], capture_output=True,
                         text=True, check=True).stdout
    return json.loads(out)


@pytest.mark.parametrize("m,n,k", [(128, 8192, 784), (784, 8192, 128), (2048, 256, 784), (784, 256, 2048),
                                   (1, 64, 784), (7, 1000, 784), (784, 1000, 7), (784, 64, 1), (37, 19, 3),
                                   (128, 16384, 784), (4096, 4096, 4096)])
def test_a_plan_covers_its_problem(m, n, k):
    p = plan(m, n, k)
    assert p["tiles_m"] * p["bm"] >= m > (p["tiles_m"] - 1) * p["bm"]
    assert p["tiles_n"] * p["bn"] >= n > (p["tiles_n"] - 1) * p["bn"]
    assert p["k_chunk"] % p["bk"] == 0
    assert p["split"] * p["k_chunk"] >= k > (p["split"] - 1) * p["k_chunk"]  # every split has K


def test_too_few_output_tiles_split_k_to_fill_the_sms():
    p = plan(128, 8192, 784)  # batch 128 against 784 inputs at width 8,192: 64 tiles of 128x128
    assert p["tiles_m"] * p["tiles_n"] * p["split"] >= 100


def test_a_large_square_problem_takes_the_largest_tile_unsplit():
    p = plan(4096, 4096, 4096)
    assert (p["bm"], p["bn"], p["split"]) == (128, 128, 1)


def test_one_sm_never_splits():
    assert plan(128, 8192, 784, sms=1)["split"] == 1


def test_bad_dimensions_are_one_line_and_exit_2():
    proc = subprocess.run([str(HOST), "plan-gemm", "0", "8", "8", "132"], capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
