"""persistent2's two big products (cuda/kernels/persistent.cuh: phase C's W1 tile with its momentum
update, and the split-K partials of the next step's pre-activations) on the CPU through
cuda/transformer/emu/'s emulation of the CUDA runtime, at FP32, TF32 and BF16 (the paths
persistent2, persistent2-tf32 and persistent2-bf16), against float64 over the inputs rounded as each
precision says (tests/emu/persistent_emu.cpp); and the same check against deliberately broken
copies of the kernel, each of which it must fail."""
from __future__ import annotations

import pytest

from tests.emu_mutants import assert_broken_copy_fails, assert_emulated_checks_pass


def test_the_big_products_match_float64_on_the_emulated_device(built):
    # 3 shapes x (FP32: 6 checks; TF32 and BF16: 9 each, with the three "rounded, not float32" ones)
    assert_emulated_checks_pass(built("persistent_emu"), 72)


# Each: (what it breaks, its file under cuda/, the text replaced, its replacement). Not here: db1's
# guard against reading dH past the hidden width, whose only effect is the out-of-bounds read itself
# (the values read are never used): compute-sanitizer's memcheck finds that on the GPU.
MUTANTS = [
    ("dH staged unrounded (16-byte)", "kernels/persistent.cuh",
     "*reinterpret_cast<float4*>(Ds + r * kTileCJ + 4 * v) = rin4<PREC>(d);",
     "*reinterpret_cast<float4*>(Ds + r * kTileCJ + 4 * v) = d;"),
    ("dH staged unrounded (scalar)", "kernels/persistent.cuh",
     "Ds[e] = r < rows && j < Hd ? rin<PREC>(ldcg(P.dH + (size_t)(rc + r) * Hd + j)) : 0.f;",
     "Ds[e] = r < rows && j < Hd ? ldcg(P.dH + (size_t)(rc + r) * Hd + j) : 0.f;"),
    ("X staged unrounded (16-byte)", "kernels/persistent.cuh",
     "*reinterpret_cast<float4*>(Xs + r * kTileC + 4 * v) = rin4<PREC>(x);",
     "*reinterpret_cast<float4*>(Xs + r * kTileC + 4 * v) = x;"),
    ("db1 summed from the rounded dH", "kernels/persistent.cuh",
     "      if constexpr (PREC == Precision::FP32) {\n        for (int r = 0; r < kRowsC; ++r) colsum += Ds[r * kTileCJ + tid];",
     "      if constexpr (true) {\n        for (int r = 0; r < kRowsC; ++r) colsum += Ds[r * kTileCJ + tid];"),
    ("the hand-over's W1 tile unrounded", "kernels/persistent.cuh",
     "smem[kWnOffset + i * kTileCJ + jj] = rin<PREC>(w_new);", "smem[kWnOffset + i * kTileCJ + jj] = w_new;"),
    ("the prologue's W1 read unrounded", "kernels/persistent.cuh",
     "Wn[e] = i < I && j < Hd ? rin<PREC>(ldcg(P.params + (size_t)i * Hd + j)) : 0.f;",
     "Wn[e] = i < I && j < Hd ? ldcg(P.params + (size_t)i * Hd + j) : 0.f;"),
    ("BF16 rounded by truncation", "common/precision.h",
     "else b = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;", "else b = b & 0xFFFF0000u;"),
]


@pytest.mark.slow
@pytest.mark.parametrize("what,name,old,new", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_each_broken_copy_fails_the_check(tmp_path, what, name, old, new):
    assert_broken_copy_fails(tmp_path, "persistent_emu", "PERSISTENT_EMU_INCLUDES", what, name, old, new)
