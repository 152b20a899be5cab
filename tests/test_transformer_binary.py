"""build/vit_forward without a GPU: it builds for sm_90 and sm_75 (compile only), its host modes and
exit statuses (bad input 2, no device 3), and its kernels under the CPU emulation
(build/vit_forward_emu: cuda/transformer/emu/): every check passes with each GEMM tile, the CUDA graph
replays the stream's result; both GEMM engines (FFMA, and 3xTF32 with the mma.sync fragments emulated
from the PTX ISA's layout)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.emu_mutants import assert_broken_copy_fails
from shared_build import make
from spec.files import BUILD_DIR, ROOT

BIN, EMU = BUILD_DIR / "vit_forward", BUILD_DIR / "vit_forward_emu"


def _make(target, *extra):
    res = make(["make", "--no-print-directory", "-s", "-C", str(ROOT), "-j4", *extra, str(target)],
               capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]


@pytest.fixture(scope="module")
def emu(built):
    return built("vit_forward_emu")   # EMU, up to date (tests/conftest.py)


def _run(binary, *args, env=None, timeout=600):
    return subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=None if env is None else dict(os.environ, **env))


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_90", "sm_75"])
def test_the_binary_builds(arch_build, arch):
    """`make all` for the architecture (the session's build, shared with test_host) makes vit_forward."""
    build = arch_build(arch)
    assert (build / "vit_forward").exists()


def test_exit_statuses_without_a_gpu(tmp_path, built):
    built("vit_forward")   # BIN, up to date
    assert _run(BIN, "--help").returncode == 0
    for args, code, text in ((("nope",), 2, "unknown mode"), (("check", "--random", "1", "--bogus", "2"), 2, "unknown flag"),
                             (("check",), 2, "exactly one of --weights"),
                             (("check", "--weights", tmp_path), 2, "manifest.json")):
        res = _run(BIN, *args)
        assert res.returncode == code and text in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    res = _run(BIN, "check", "--random", "1", "--layer-batch", "2", "--logits-batch", "2")
    if res.returncode == 0:
        pytest.skip("a CUDA device is present")
    assert res.returncode == 3 and "CUDA error" in res.stderr


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["fp32", "tf32x3"])
@pytest.mark.parametrize("tile", ["big", "mid", "small"])
def test_emulated_kernels_pass_every_check(emu, tmp_path, tile, engine):
    out = tmp_path / "check.json"
    res = _run(emu, "check", "--random", "7", "--gemm", engine, "--layer-batch", "3", "--logits-batch", "3",
               "--explain", "5,9", "--out", out, env={"VIT_TILE": tile, "VIT_EMU_SMS": "2"})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    doc = json.loads(out.read_text())
    assert doc["passed"] and doc["gemm"] == engine and len(doc["checks"]) == 30 and doc["argmax_agree"] == 3
    assert [e["index"] for e in doc["explain"]] == [5, 9]
    for e in doc["explain"]:
        assert all(abs(o - r) <= b for o, r, b in zip(e["ours"], e["ref"], e["bound"]))


@pytest.mark.slow
def test_emulated_split3_flow_passes_every_check(emu, tmp_path):
    """tf32x3's flow on the wgmma engine (a device of compute capability 9.0): LayerNorm as its own kernel
    writing the two TF32 parts, the attention writing the projection's parts, the weights' parts
    transposed, and the engine's three epilogues (bias; residual; GELU written split), here with
    split3_gemm_kernel in the engine's place (VIT_EMU_SPLIT3=1). Every check passes; the tile plan names
    the flow, and the checks read the MLP hidden joined from its parts."""
    out = tmp_path / "check.json"
    res = _run(emu, "check", "--random", "7", "--gemm", "tf32x3", "--layer-batch", "3", "--logits-batch", "3",
               "--out", out, env={"VIT_EMU_SPLIT3": "1", "VIT_EMU_SMS": "2"})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    doc = json.loads(out.read_text())
    assert doc["passed"] and doc["gemm"] == "tf32x3" and len(doc["checks"]) == 30 and doc["argmax_agree"] == 3
    res = _run(emu, "time", "--random", "7", "--gemm", "tf32x3", "--batches", "2", "--warmup", "1", "--repeats", "2",
               "--out", tmp_path / "time.json", env={"VIT_EMU_SPLIT3": "1"})
    assert res.returncode == 0, res.stderr
    rows = json.loads((tmp_path / "time.json").read_text())["timing"]["rows"]
    assert "3xTF32 flow" in rows[0]["tiles"] and "no tiles to tune" in rows[0]["tuning"], rows[0]


@pytest.mark.slow
def test_emulated_bf16_flow_passes_every_check_at_its_bounds(emu, tmp_path):
    """bf16's flow: LayerNorm writes bfloat16 operands, the attention runs on the (emulated) tensor
    cores with bfloat16 q, k, P and v and writes the projection's operand, the weights transposed to
    bfloat16 once, bf16_gemm_kernel in the wgmma engine's place (the emulation has no engine) with the
    three epilogues (bias; residual; GELU written as bfloat16). Every check passes at bfloat16's
    bounds: the rows of the GEMMs and the attention's products carry the operands' rounding (2*2^-8 of
    the |.|-scale and more), the others keep float32's; the JSON names the precision."""
    out, out32 = tmp_path / "check.json", tmp_path / "check32.json"
    args = ("--random", "7", "--layer-batch", "3", "--logits-batch", "3")
    res = _run(emu, "check", *args, "--gemm", "bf16", "--out", out, env={"VIT_EMU_SMS": "2"})
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr
    res32 = _run(emu, "check", *args, "--gemm", "fp32", "--out", out32, env={"VIT_EMU_SMS": "2"})
    assert res32.returncode == 0, res32.stdout[-3000:] + res32.stderr
    doc, doc32 = json.loads(out.read_text()), json.loads(out32.read_text())
    assert doc["passed"] and doc["gemm"] == "bf16" and doc["precision"] == "bf16" and doc["u_operands"] == 2.0 ** -8
    assert doc32["precision"] == "fp32" and doc32["u_operands"] == 0
    limits = {(r["name"], r["measure"]): r["limit"] for r in doc["checks"]}
    limits32 = {(r["name"], r["measure"]): r["limit"] for r in doc32["checks"]}
    gemm_rows = {"L1.q", "L1.k", "L1.v", "L1.attn_weights", "L1.attn_heads", "L1.attn_out", "L1.mlp_hidden", "L1.mlp_out"}
    for (name, measure), lim in limits.items():
        if name in gemm_rows:
            assert lim > 2 * 2.0 ** -8 if measure == "worst" else lim > 4 * 2 ** 0.5 * 2.0 ** -8, (name, measure, lim)
        elif "(images)" not in name:
            assert lim == limits32[(name, measure)], (name, measure)
    gemm_values = [r["value"] for r in doc["checks"] if r["name"] in gemm_rows]
    assert max(gemm_values) > 1e-4, "bfloat16's rounding must show in the GEMM rows (else the operands were not rounded)"
    res = _run(emu, "time", "--random", "7", "--gemm", "bf16", "--batches", "2", "--warmup", "1", "--repeats", "2",
               "--out", tmp_path / "time.json")
    assert res.returncode == 0, res.stderr
    rows = json.loads((tmp_path / "time.json").read_text())["timing"]["rows"]
    assert rows[0]["engine"] == "bf16" and "bfloat16 flow" in rows[0]["tiles"] and "bf16_gemm_kernel" in rows[0]["tiles"]


@pytest.mark.slow
def test_emulated_timing_and_graph(emu, tmp_path):
    out = tmp_path / "time.json"
    res = _run(emu, "time", "--random", "7", "--batches", "1,2", "--warmup", "1", "--repeats", "2", "--out", out)
    assert res.returncode == 0, res.stderr
    rows = json.loads(out.read_text())["timing"]["rows"]
    assert [r["batch"] for r in rows] == [1, 1, 2, 2] and all(len(r["graph"]["times_ms"]) == 2 for r in rows)
    assert [r["engine"] for r in rows] == ["fp32", "tf32x3"] * 2 and "ln1+qkv=" in rows[0]["tiles"]
    res = _run(emu, "profile", "--random", "7", "--batch", "1")
    assert res.returncode == 0 and "NVTX range vit-forward" in res.stdout


# Broken copies of the 3xTF32 flow's kernels (cuda/transformer/kernels.cuh), each of which the checks
# must fail under the emulation (VIT_EMU_SPLIT3=1): a lost correction or a lost lo part is an error of
# 2^-11 of an operand, far past float32's bounds.
SPLIT3_MUTANTS = {
    "the GEMM's corrections dropped": ("  const float acc = big + small;", "  const float acc = big + 0.f * small;"),
    "LayerNorm's lo part zero": ("    st4(hi_row + K + c, make_float4(lo[0], lo[1], lo[2], lo[3]));",
                                 "    st4(hi_row + K + c, make_float4(0.f, 0.f, 0.f, 0.f));"),
    "the attention's lo part zero": (
        "      if (split) mlp::split_tf32(o[r], &split[row * 2 * d + h * kHeadDim + lane], &split[row * 2 * d + d + h * kHeadDim + lane]);",
        "      if (split) { mlp::split_tf32(o[r], &split[row * 2 * d + h * kHeadDim + lane], &split[row * 2 * d + d + h * kHeadDim + lane]);"
        " split[row * 2 * d + d + h * kHeadDim + lane] = 0.f; }"),
}


# Broken copies of the bfloat16 flow's kernels, each of which the checks must fail under the emulation.
BF16_MUTANTS = {
    "the GEMM drops its last product": (
        "  for (int k = 0; k < K; ++k) acc = fmaf(__bfloat162float(a[k]), __bfloat162float(b[k]), acc);",
        "  for (int k = 0; k < K - 1; ++k) acc = fmaf(__bfloat162float(a[k]), __bfloat162float(b[k]), acc);"),
    "the attention's operand columns swapped in pairs": (
        "      *reinterpret_cast<uint32_t*>(operand + row * d + c) = mlp::mma::pack_bf16x2(o[n][2 * hh], o[n][2 * hh + 1]);",
        "      *reinterpret_cast<uint32_t*>(operand + row * d + c) = mlp::mma::pack_bf16x2(o[n][2 * hh + 1], o[n][2 * hh]);"),
    "LayerNorm's operand halves swapped": (
        "    *at = make_float2(__uint_as_float(bf16_bits(yv.x) | bf16_bits(yv.y) << 16),",
        "    *at = make_float2(__uint_as_float(bf16_bits(yv.y) | bf16_bits(yv.x) << 16),"),
    "the attention's P·v stops a 16-key step early": (
        "    if (16 * kk >= T) break;",
        "    if (16 * kk + 16 >= T) break;"),
    "the attention's row sum over half its quad": (
        "    z += __shfl_xor_sync(0xffffffffu, z, 2);",
        ""),
    "GELU's bias dropped": (
        "  else static_cast<__nv_bfloat16*>(C)[at] = __float2bfloat16_rn(gelu_erf(acc + bias[n]));",
        "  else static_cast<__nv_bfloat16*>(C)[at] = __float2bfloat16_rn(gelu_erf(acc));"),
}


@pytest.mark.slow
@pytest.mark.parametrize("what", list(BF16_MUTANTS))
def test_the_checks_catch_a_broken_bf16_flow(tmp_path, what):
    old, new = BF16_MUTANTS[what]
    assert_broken_copy_fails(tmp_path, "vit_forward_emu", "VIT_EMU_INCLUDES", what, "transformer/kernels.cuh", old, new,
                             args=("check", "--random", "7", "--gemm", "bf16", "--layer-batch", "3", "--logits-batch", "3",
                                   "--data", str(ROOT / "data"), "--config", str(ROOT / "transformer.toml")),
                             env={"VIT_EMU_SMS": "2"})


@pytest.mark.slow
@pytest.mark.parametrize("what", list(SPLIT3_MUTANTS))
def test_the_checks_catch_a_broken_split3_flow(tmp_path, what):
    old, new = SPLIT3_MUTANTS[what]
    assert_broken_copy_fails(tmp_path, "vit_forward_emu", "VIT_EMU_INCLUDES", what, "transformer/kernels.cuh", old, new,
                             args=("check", "--random", "7", "--gemm", "tf32x3", "--layer-batch", "3", "--logits-batch", "3",
                                   "--data", str(ROOT / "data"), "--config", str(ROOT / "transformer.toml")),
                             env={"VIT_EMU_SPLIT3": "1", "VIT_EMU_SMS": "2"})

