"""The tiled paths' kernels (cuda/kernels/tiled.cuh, tiled_mma.cuh) on the CPU through
cuda/transformer/emu/'s emulation of the CUDA runtime, against float64 (tests/emu/tiled_emu.cpp:
every tile shape, the tensor-core ones at TF32 and BF16 with a check that their inputs really are
rounded, split-K and its ticket reset, float4 and scalar loads, row gathers, the head kernels'
splits, row blocks and dZ chunks); and the same check against deliberately broken copies of the
kernels, each of which it must fail."""
from __future__ import annotations

import pytest

from tests.emu_mutants import assert_broken_copy_fails, assert_emulated_checks_pass


def test_the_kernels_match_float64_on_the_emulated_device(built):
    # 32 FP32 GEMM checks, 96 tensor-core ones (3 shapes x 2 precisions x 2 splits x 2 sizes x
    # 2 GEMMs, each with its "rounded, not float32" check), 12 of the head (4 of them its bf16-dH
    # variant), 1 of the GEMM engine's bf16 operands
    assert_emulated_checks_pass(built("tiled_emu"), 141)


# Each: (what it breaks, its file under cuda/, the text replaced, its replacement).
MUTANTS = [
    ("split-K sums skip split 0", "kernels/tiled.cuh", "for (unsigned z = 0; z < gridDim.z; ++z)",
     "for (unsigned z = 1; z < gridDim.z; ++z)"),
    ("split-K tickets never reset", "kernels/tiled.cuh", "if (tid == 0) a.tickets[tile] = 0;", "(void)0;"),
    ("the ReLU mask lets zeros through", "kernels/tiled.cuh", "d = h[u] > 0.f ? d : 0.f;", "d = h[u] >= 0.f ? d : 0.f;"),
    ("every row takes the first row's label", "kernels/tiled.cuh", "const int y = __ldg(labels_all + rows[gr]);",
     "const int y = __ldg(labels_all + rows[0]);"),
    ("the gather ignored in the forward", "kernels/tiled.cuh", "(a.a_rows ? a.a_rows[gm < a.M ? gm : 0] : gm)", "(gm)"),
    ("TF32 b1 read from row t, not t + 4", "kernels/tiled_mma.cuh", "bf[j][1] = mma::tf32_rna(Bs[buf][kk + t + 4][n]);",
     "bf[j][1] = mma::tf32_rna(Bs[buf][kk + t][n]);"),
    ("BF16 a2's two halves swapped", "kernels/tiled_mma.cuh",
     "mma::pack_bf16x2(As[buf][2 * t + 8][r], As[buf][2 * t + 9][r])",
     "mma::pack_bf16x2(As[buf][2 * t + 9][r], As[buf][2 * t + 8][r])"),
    ("split-K partials of the lower half row lost", "kernels/tiled_mma.cuh",
     "make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1])", "make_float2(acc[i][j][0], acc[i][j][1])"),
    ("the engine's bf16 dH of a masked unit is 1, not 0", "kernels/tiled.cuh",
     "else dH[(size_t)(r0 + r) * Hd + j] = __float2bfloat16_rn(d);",
     "else dH[(size_t)(r0 + r) * Hd + j] = __float2bfloat16_rn(h[u] > 0.f ? d : d + 1.f);"),
    ("the engine's bf16 batches ignore the epoch order", "kernels/tiled.cuh",
     "__ldg(src + (size_t)rows[r] * cols + c)", "__ldg(src + (size_t)(r + 0 * rows[0]) * cols + c)"),
    ("the db2 block does nothing", "kernels/tiled.cuh", "if (blockIdx.y != 0) return;      // then class",
     "return;      // then class"),
    ("W2's update from a velocity of zero", "kernels/tiled.cuh",
     "for (int o = 0; o < OM; ++o) vw[o] = o < O && j < Hd ? vW2[(size_t)j * O + o] : 0.f;",
     "for (int o = 0; o < OM; ++o) vw[o] = 0.f;"),
    ("BF16 inputs truncated, not rounded", "common/mma.cuh",
     "__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) { return emu_pack_bf16x2(lo, hi); }",
     "__device__ __forceinline__ uint32_t pack_bf16x2(float lo, float hi) { "
     "return (__float_as_uint(hi) & 0xffff0000u) | (__float_as_uint(lo) >> 16); }"),
]


@pytest.mark.slow
@pytest.mark.parametrize("what,name,old,new", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_each_broken_copy_fails_the_check(tmp_path, what, name, old, new):
    assert_broken_copy_fails(tmp_path, "tiled_emu", "TILED_EMU_INCLUDES", what, name, old, new)
