"""analysis/roofline_sweep.py: the sweep's per-point roofline floor, against numbers worked out
by hand here (the ceilings are round invented values, not a measurement)."""
from __future__ import annotations

import pytest

from analysis import roofline_sweep as rs

I, O = 784, 10


def test_step_flops_by_hand():
    # H = 256, b = 128: forward 2·128·(784·256 + 256·10) = 256·203,264 = 52,035,584;
    # backward 2·128·(2·256·10 + 784·256) = 256·205,824 = 52,690,944
    assert rs.step_flops(I, 256, O, 128) == 52_035_584 + 52_690_944 == 104_726_528
    # the smallest case: I = H = O = b = 1 -> 2·(1 + 1) + 2·(2 + 1) = 10
    assert rs.step_flops(1, 1, 1, 1) == 10


def test_step_bytes_by_hand():
    # P = 784·256 + 256 + 2560 + 10 = 203,530; 4·5·P = 4,070,600; X 128·784·4 = 401,408;
    # labels 128·4 = 512; H written and read 2·128·256·4 = 262,144
    assert rs.n_params(I, 256, O) == 203_530
    assert rs.step_bytes(I, 256, O, 128) == 4_070_600 + 401_408 + 512 + 262_144 == 4_734_664
    assert rs.step_bytes(1, 1, 1, 1) == 4 * (5 * 4 + 1 + 1 + 2)


def test_epoch_batches():
    assert rs.epoch_batches(6000, 128) == [(128, 46), (112, 1)]
    assert rs.epoch_batches(6000, 2048) == [(2048, 2), (1904, 1)]
    assert rs.epoch_batches(6000, 1000) == [(1000, 6)]          # no short batch
    assert rs.epoch_batches(100, 2048) == [(100, 1)]            # one short step
    with pytest.raises(ValueError):
        rs.epoch_batches(0, 128)


def test_epoch_floor_by_hand():
    """H = 256, batch 128, 6,000 images, 50 TFLOP/s and 4,000 GB/s: every step compute-bound."""
    f = rs.epoch_floor(I, 256, O, 128, 6000, 50.0, 4000.0)
    flops_full, flops_last = 104_726_528, 2 * 112 * (2 * 784 * 256 + 3 * 256 * 10)
    bytes_full, bytes_last = 4_734_664, 4_070_600 + 4 * (112 * 784 + 112 + 2 * 112 * 256)
    assert f["steps"] == 47 and f["last_batch"] == 112
    assert f["flops_per_epoch"] == 46 * flops_full + flops_last
    assert f["bytes_per_epoch"] == 46 * bytes_full + bytes_last
    assert f["gflop_per_epoch"] == pytest.approx(f["flops_per_epoch"] / 1e9)
    assert f["mb_per_epoch"] == pytest.approx(f["bytes_per_epoch"] / 1e6)
    # per full step: 104,726,528 / 50e12 = 2.0945 µs of compute against 4,734,664 / 4e12 =
    # 1.1837 µs of memory: compute wins at every step, so the floor is the compute sum
    assert f["compute_ms"] == pytest.approx(f["flops_per_epoch"] / 50e12 * 1e3)
    assert f["memory_ms"] == pytest.approx(f["bytes_per_epoch"] / 4000e9 * 1e3)
    assert f["floor_ms"] == pytest.approx(f["compute_ms"]) and f["bound"] == "compute"
    assert f["floor_ms"] == pytest.approx(0.098_186, rel=1e-4)


def test_epoch_floor_memory_bound_and_mixed():
    """H = 64, batch 32: 2·32·(2·784·64 + 3·64·10) = 6,545,408 FLOPs (0.1309 µs at 50 TFLOP/s)
    against 4·(5·50,890 + 32·784 + 32 + 2·32·64) = 1,134,664 bytes (0.2837 µs at 4,000 GB/s):
    memory-bound, and the floor is the byte sum."""
    assert rs.step_flops(I, 64, O, 32) == 6_545_408
    assert rs.step_bytes(I, 64, O, 32) == 1_134_664
    f = rs.epoch_floor(I, 64, O, 32, 6000, 50.0, 4000.0)
    assert f["steps"] == 188 and f["last_batch"] == 6000 - 187 * 32 == 16
    assert f["bound"] == "memory" and f["floor_ms"] == pytest.approx(f["memory_ms"])
    # a floor takes the larger term step by step: with a bandwidth where the full steps are
    # compute-bound but the short last step memory-bound, it exceeds both sums
    flops_full, bytes_full = rs.step_flops(I, 64, O, 32), rs.step_bytes(I, 64, O, 32)
    bw = bytes_full / (flops_full / 50e12) * 1.01 / 1e9        # the full step just compute-bound
    g = rs.epoch_floor(I, 64, O, 32, 6000, 50.0, bw)
    last = 50e12, bw * 1e9
    want = (187 * flops_full / 50e12
            + max(rs.step_flops(I, 64, O, 16) / last[0], rs.step_bytes(I, 64, O, 16) / last[1])) * 1e3
    assert g["floor_ms"] == pytest.approx(want)
    assert g["floor_ms"] > max(g["compute_ms"], g["memory_ms"])


def test_against_and_point_roofline():
    ceil = {"fp32_tflops": 50.0, "dram_gb_per_s": 4000.0}
    r = rs.point_roofline(I, 256, O, 128, 6000, ceil, best_ms=0.5, best_path="tiled",
                          torch_ms=2.0, torch_variant="cuda-graph")
    assert r["best"]["path"] == "tiled" and r["best"]["ms"] == 0.5
    assert r["best"]["share_of_floor"] == pytest.approx(r["floor_ms"] / 0.5)
    assert r["best"]["achieved_tflops"] == pytest.approx(r["flops_per_epoch"] / 0.5e-3 / 1e12)
    assert r["pytorch_fastest"]["share_of_floor"] == pytest.approx(r["floor_ms"] / 2.0)
    assert r["fp32_tflops"] == 50.0 and r["dram_gb_per_s"] == 4000.0
    none = rs.against(r, None)
    assert none == {"ms": None, "share_of_floor": None, "achieved_tflops": None}


def test_ceilings_of():
    doc = {"gpu": "G", "commit": "c", "copy": {"gb_per_s": 4000}, "fp32_matmul": {"tflops": 50}}
    assert rs.ceilings_of(doc) == {"fp32_tflops": 50.0, "dram_gb_per_s": 4000.0, "gpu": "G",
                                   "commit": "c", "date_utc": None}
    for bad in ({}, {"copy": {"gb_per_s": 0}, "fp32_matmul": {"tflops": 50}},
                {"copy": {"gb_per_s": 4000}, "fp32_matmul": {"tflops": "fast"}}):
        with pytest.raises(ValueError):
            rs.ceilings_of(bad)
    with pytest.raises(ValueError):
        rs.epoch_floor(I, 256, O, 128, 6000, 0.0, 4000.0)
