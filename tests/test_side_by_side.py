"""analysis/side_by_side.py: two kernel summaries per training step, side by side."""
from __future__ import annotations

from pathlib import Path

import pytest

from analysis import side_by_side as sbs
from analysis.nsys_csv import read_kern_sum

OURS = Path("results/experiments/tiled/run3_6412f9e/prof_h8192_b128/tiled_cuda_gpu_kern_sum.csv")

THEIRS = '''Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name
60.0,6000000,94,63829.8,63000.0,60000,70000,100.0,"sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_kernel"
40.0,4000000,47,85106.4,85000.0,80000,90000,100.0,"triton_poi_fused_addmm_relu_0"
'''


def test_short_names_drop_the_signature_and_casts_but_keep_the_template():
    assert sbs.short_name("void mlp::tiled::k_tiled_gemm<(int)2, (mlp::tiled::ALayout)1, (bool)1>(mlp::tiled::GemmArgs)") \
        == "mlp::tiled::k_tiled_gemm<2, 1, 1>"
    assert sbs.short_name("triton_poi_fused_addmm_relu_0") == "triton_poi_fused_addmm_relu_0"
    assert len(sbs.short_name("k<" + "x" * 100 + ">(int)")) == 60


def test_per_step_divides_by_the_epochs_steps_and_ranks_by_time(tmp_path):
    (tmp_path / "t.csv").write_text(THEIRS)
    df = sbs.per_step(read_kern_sum(tmp_path / "t.csv"), 47)
    assert df["kernel"].tolist()[0].startswith("sm90_xmma_gemm")
    assert df["launches_per_step"].tolist() == [2.0, 1.0]
    assert df["us_per_step"].tolist() == pytest.approx([6000 / 47, 4000 / 47])
    assert df["share_pct"].sum() == pytest.approx(100.0)
    with pytest.raises(ValueError):
        sbs.per_step(read_kern_sum(tmp_path / "t.csv"), 0)


def test_the_committed_profile_beside_a_pytorch_summary(tmp_path):
    (tmp_path / "t.csv").write_text(THEIRS)
    out = tmp_path / "side.md"
    assert sbs.main([str(OURS), str(tmp_path / "t.csv"), "--steps", "47", "--ours-label", "tiled",
                     "--theirs-label", "compiled-step", "--out", str(out)]) == 0
    text = out.read_text()
    # our four kernels a step: dW1 + update 66.30 us, the forward 50.27 us (results/experiments/tiled)
    assert "| 1 | `mlp::tiled::k_tiled_gemm<2, 1, 2, 1>` | 1.00 | 66.30 |" in text
    assert "tiled: " in text and "4.00 launches a step, 4 distinct kernels." in text
    assert "compiled-step: 212.77 µs of kernels a step, 3.00 launches a step, 2 distinct kernels." in text


def test_a_missing_file_is_one_line_and_exit_2(tmp_path, capsys):
    assert sbs.main([str(tmp_path / "none.csv"), str(OURS), "--steps", "47"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")
