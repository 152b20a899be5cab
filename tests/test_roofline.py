"""analysis/roofline.py (the per-kernel FLOP and minimum-byte model, the verdicts), the report's
roofline section, and harness/studies/ceilings.py's arithmetic and its no-GPU exit.

tests/fixtures/nsys holds real H200 kernel summaries (fused, unfused); tests/fixtures/results/
ceilings.json is SYNTHETIC (round invented ceilings: copy 4,000 GB/s, FP32 50 TFLOP/s, TF32
400 TFLOP/s), so every fraction and verdict quoted from a report here is a placeholder."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from analysis import roofline
from analysis.loaders import InputError, load_json
from analysis.sections.roofline import section
from analysis.nsys_csv import read_kern_sum
from spec.kernels import ENUMS
from harness.studies import ceilings as ceilings_mod
from spec.files import ROOT

FIXTURES = Path(__file__).resolve().parent / "fixtures"
NSYS = FIXTURES / "nsys"
PREDICTIONS = ROOT / "predictions.toml"
GAPS = ROOT / "GAPS.toml"
RECIPE = json.loads((FIXTURES / "results" / "run.json").read_text())["recipe"]
CEILINGS = json.loads((FIXTURES / "results" / "ceilings.json").read_text())
I, HD, O, B = 784, 256, 10, 128
P = I * HD + HD + HD * O + O  # 203,530
LAST = 6000 - 46 * B          # 112


# ----------------------------------------------------------------------------- the model

def test_fixture_ceilings_are_marked_synthetic():
    assert CEILINGS["note"].startswith("SYNTHETIC")


def test_shape_of_the_recipe():
    s = roofline.shape_from_recipe(RECIPE)
    assert (s.I, s.Hd, s.O, s.B, s.S) == (I, HD, O, B, 47)
    assert s.last_batch == LAST == 112
    assert s.batches == [B] * 46 + [112] and sum(s.batches) == 6000
    assert s.n_params == P == RECIPE["n_params"]
    with pytest.raises(ValueError, match="train_size"):
        roofline.shape_from_recipe(RECIPE | {"steps_per_epoch": 46})
    with pytest.raises(ValueError, match="lacks"):
        roofline.shape_from_recipe({k: v for k, v in RECIPE.items() if k != "train_size"})


def expected_step(b: int) -> dict[str, tuple[int, int]]:
    """The formulas of the module docstring, written out again independently."""
    g = lambda M, N, K, extra=0: (2 * M * N * K, 4 * (M * K + K * N + M * N + extra))  # noqa: E731
    fused_flops = (2 * b * HD * I + 2 * b * O * HD + b * (6 * O + 3) + 2 * HD * O * b + b * O
                   + 2 * b * HD * O + 2 * I * HD * b + b * HD + 4 * P)
    return {
        "k_gather_batch": (0, 4 * (2 * b * I + 3 * b)),
        "k_fwd_hidden_bias_relu": g(b, HD, I, HD),
        "k_fwd_hidden_gemm": g(b, HD, I),
        "k_add_bias<hidden>": (b * HD, 4 * (2 * b * HD + HD)),
        "k_relu": (0, 4 * 2 * b * HD),
        "k_fwd_logits_bias": g(b, O, HD, O),
        "k_fwd_logits_gemm": g(b, O, HD),
        "k_add_bias<logits>": (b * O, 4 * (2 * b * O + O)),
        "k_softmax_xent": (b * (6 * O + 3), 4 * (2 * b * O + b + 1)),
        "k_dW2": g(HD, O, b),
        "k_colsum<db2>": (b * O, 4 * (b * O + O)),
        "k_dH_relu_mask": g(b, HD, O, b * HD),
        "k_dH_gemm": g(b, HD, O),
        "k_relu_mask": (0, 4 * 3 * b * HD),
        "k_dW1": g(I, HD, b),
        "k_colsum<db1>": (b * HD, 4 * (b * HD + HD)),
        "k_momentum_flat": (4 * P, 4 * 5 * P),
        "k_momentum_tensor<W1>": (4 * I * HD, 4 * 5 * I * HD),
        "k_momentum_tensor<b1>": (4 * HD, 4 * 5 * HD),
        "k_momentum_tensor<W2>": (4 * HD * O, 4 * 5 * HD * O),
        "k_momentum_tensor<b2>": (4 * O, 4 * 5 * O),
        "k_persistent_epoch": (fused_flops, 4 * (b * I + 2 * b + 4 * P + 1)),
    }


@pytest.mark.parametrize("b", [B, LAST])
def test_step_model_matches_the_formulas(b):
    s = roofline.shape_from_recipe(RECIPE)
    assert roofline.step_costs(s, b) == expected_step(b)


def test_forward_hidden_gemm_at_the_recipe_shape():
    s = roofline.shape_from_recipe(RECIPE)
    flops, nbytes = roofline.step_costs(s, 128)["k_fwd_hidden_bias_relu"]
    assert flops == 2 * 128 * 256 * 784 == 51_380_224
    assert nbytes == (128 * 784 + 784 * 256 + 128 * 256 + 256) * 4 == 1_336_320
    epoch = roofline.epoch_model(s)["k_fwd_hidden_bias_relu"]
    assert epoch["flops"] == 46 * 2 * 128 * 256 * 784 + 2 * 112 * 256 * 784 == 2 * 6000 * 256 * 784
    assert epoch["bytes"] == 46 * 1_336_320 + (112 * 784 + 784 * 256 + 112 * 256 + 256) * 4
    assert epoch["launches"] == 47


def test_epoch_model_sums_the_true_batches():
    s = roofline.shape_from_recipe(RECIPE)
    model = roofline.epoch_model(s)
    full, last = expected_step(B), expected_step(LAST)
    for key, entry in model.items():
        assert entry["flops"] == 46 * full[key][0] + last[key][0], key
        assert entry["bytes"] == 46 * full[key][1] + last[key][1], key
        assert entry["launches"] == (1 if key == "k_persistent_epoch" else 47)
        assert entry["what"]
    # The four per-tensor updates are the flat update split up.
    for i in (0, 1):
        assert sum(model[f"k_momentum_tensor<{t}>"]["flops" if i == 0 else "bytes"]
                   for t in ("W1", "b1", "W2", "b2")) == \
            model["k_momentum_flat"]["flops" if i == 0 else "bytes"]
    # The persistent epoch does the fused step's arithmetic.
    assert model["k_persistent_epoch"]["flops"] == sum(model[k]["flops"] for k in roofline.FUSED_STEP)
    assert model["k_momentum_flat"]["bytes"] == 47 * 5 * P * 4


def test_enum_order_matches_the_cuda_sources():
    """spec.kernels.ENUMS, the one Python copy of the enumerators' order, against the C++."""
    src = "\n".join(p.read_text() for p in sorted((ROOT / "cuda").rglob("*"))
                    if p.suffix in (".cuh", ".h", ".cu"))
    for func, (enum, values) in ENUMS.items():
        found = re.findall(rf"enum class {enum}\s*\{{([^}}]*)\}}", src)
        assert len(found) == 1, enum
        m = re.match(r"(.*)", found[0], re.S)
        assert tuple(v.strip() for v in m.group(1).split(",")) == values, enum
    assert ENUMS["k_colsum"][1][1] == "db2"  # (mlp::Col)1 is db2


def test_every_kernel_of_the_real_captures_is_modelled():
    keys = {}
    for path in ("fused", "unfused"):
        kern = read_kern_sum(NSYS / f"{path}_cuda_gpu_kern_sum.csv")
        keys[path] = {roofline.model_key(n) for n in kern["name"]}
        assert None not in keys[path], path
    assert keys["fused"] == set(roofline.FUSED_STEP)
    assert keys["unfused"] == {
        "k_gather_batch", "k_fwd_hidden_gemm", "k_add_bias<hidden>", "k_relu",
        "k_fwd_logits_gemm", "k_add_bias<logits>", "k_softmax_xent", "k_dW2", "k_colsum<db2>",
        "k_dH_gemm", "k_relu_mask", "k_dW1", "k_colsum<db1>", "k_momentum_tensor<W1>",
        "k_momentum_tensor<b1>", "k_momentum_tensor<W2>", "k_momentum_tensor<b2>"}


@pytest.mark.parametrize("name,key", [
    # newer builds: a leading int (the split-K chunk) in every GEMM's parameter list
    ("mlp::k_fwd_hidden_bias_relu(int, int, int, int, const float *, const float *, "
     "const float *, float *)", "k_fwd_hidden_bias_relu"),
    ("mlp::k_fwd_hidden_bias_relu(int, int, int, const float *, const float *, "
     "const float *, float *)", "k_fwd_hidden_bias_relu"),
    ("k_dW1", "k_dW1"),
    ("void mlp::k_colsum<(mlp::Col)0>(int, int, const float *, float *)", "k_colsum<db1>"),
    ("void mlp::k_colsum<(mlp::Col)1>(int, int, const float *, float *)", "k_colsum<db2>"),
    ("void k_colsum<mlp::Col::db2>(int, int, const float *, float *)", "k_colsum<db2>"),
    ("void mlp::k_add_bias<(mlp::Layer)1>(int, int, float *, const float *)", "k_add_bias<logits>"),
    ("void mlp::k_momentum_tensor<(mlp::Tensor)2>(unsigned long, float, float, float *, "
     "float *, const float *)", "k_momentum_tensor<W2>"),
    ("mlp::k_persistent_epoch(mlp::Persist)", "k_persistent_epoch"),
    # not in the model: never guessed
    ("mlp::k_persistent2_epoch(mlp::Persist)", None),
    ("mlp::k_dX(int, int, int, int, const float *, const float *, float *)", None),
    ("void mlp::k_colsum<(mlp::Col)2>(int, int, const float *, float *)", None),
    ("void mlp::k_colsum<(mlp::Layer)0>(int, int, const float *, float *)", None),
    ("mlp::k_colsum(int, int, const float *, float *)", None),
    ("void mlp::k_relu<(mlp::Layer)0>(unsigned long, float *)", None),
    ("ampere_sgemm_128x64_nn", None),
    ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"
     "(int, at::native::CUDAFunctor_add<float>)", None),
])
def test_model_key(name, key):
    assert roofline.model_key(name) == key


# ----------------------------------------------------------------------------- verdicts

@pytest.mark.parametrize("compute,memory,expected", [
    (0.0, 0.0, "latency-bound"),
    (0.05, 0.0999, "latency-bound"),
    (0.05, 0.10, "memory-bound"),      # the threshold itself is not "below"
    (0.10, 0.05, "compute-bound"),
    (0.60, 0.20, "compute-bound"),
    (0.20, 0.60, "memory-bound"),
    (0.30, 0.30, "memory-bound"),      # a tie: memory
    (0.02, 1.40, "memory-bound"),      # L2-served bytes can pass the copy ceiling
])
def test_verdict(compute, memory, expected):
    assert roofline.LATENCY_FRACTION == 0.10
    assert roofline.verdict(compute, memory) == expected


def kern_frame(rows: list[tuple[str, float, float]]) -> pd.DataFrame:
    """A cuda_gpu_kern_sum frame from (name, total_ns, instances) rows."""
    lines = ["Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name"]
    for name, total, inst in rows:
        lines.append(f'1.0,{total},{inst},{total / inst},{total / inst},1,1,0,"{name}"')
    return read_kern_sum("\n".join(lines) + "\n")


def test_rows_on_synthetic_times():
    s = roofline.shape_from_recipe(RECIPE)
    model = roofline.epoch_model(s)
    dw1, mom = model["k_dW1"], model["k_momentum_flat"]
    # k_dW1 at 25,000 GFLOP/s (50% of the 50 TFLOP/s ceiling); the flat update at 3,000 GB/s
    # (75% of 4,000 GB/s); a softmax that takes 1 ms; two epochs of gather; an odd count.
    kern = kern_frame([
        ("mlp::k_dW1(int, int, int, const float *, const float *, float *)", dw1["flops"] / 25000, 47),
        ("mlp::k_momentum_flat(unsigned long, float, float, float *, float *, const float *)",
         mom["bytes"] / 3000, 47),
        ("mlp::k_softmax_xent(int, int, const float *, const int *, float *, float *)", 1e6, 47),
        ("mlp::k_gather_batch(int, int, const float *, const int *, const int *, float *, int *)",
         1e5, 94),
        ("mlp::k_relu_mask(unsigned long, float *, const float *)", 1e5, 50),
        ("void cutlass::Kernel2<cutlass_80_simt_sgemm>(Params)", 1e5, 47),
    ])
    rows = {r["label"]: r for r in roofline.roofline_rows(kern, RECIPE, CEILINGS)}
    r = rows["k_dW1"]
    assert r["key"] == "k_dW1" and r["flops"] == dw1["flops"] and r["bytes"] == dw1["bytes"]
    assert r["gflops"] == pytest.approx(25000) and r["compute_fraction"] == pytest.approx(0.5)
    assert r["memory_fraction"] == pytest.approx(dw1["bytes"] / (dw1["flops"] / 25000) / 4000)
    assert r["verdict"] == "compute-bound"
    assert r["ridge"] == pytest.approx(12.5)  # 50,000 GFLOP/s / 4,000 GB/s
    assert r["intensity"] == pytest.approx(dw1["flops"] / dw1["bytes"])
    assert r["intensity_vs_ridge"] == pytest.approx(r["intensity"] / 12.5)
    r = rows["k_momentum_flat"]
    assert r["gbps"] == pytest.approx(3000) and r["memory_fraction"] == pytest.approx(0.75)
    assert r["verdict"] == "memory-bound"
    r = rows["k_softmax_xent"]
    assert r["verdict"] == "latency-bound"
    assert r["gflops"] == pytest.approx(model["k_softmax_xent"]["flops"] / 1e6)
    r = rows["k_gather_batch"]  # a capture of two epochs: twice the model
    assert r["bytes"] == 2 * model["k_gather_batch"]["bytes"] and r["flops"] == 0
    assert r["gbps"] == pytest.approx(2 * model["k_gather_batch"]["bytes"] / 1e5)
    for label in ("k_relu_mask", "Kernel2<cutlass_80_simt_sgemm>"):
        r = rows[label]
        assert r["verdict"] == "not modelled" and r["key"] is None
        assert r["flops"] is None and r["bytes"] is None and r["gflops"] is None
    assert "not a whole number of epochs" in rows["k_relu_mask"]["note"]
    frame = roofline.roofline_frame(kern, RECIPE, CEILINGS)
    # the gather: 2 × 37,704,000 bytes in 0.1 ms = 754 GB/s, 18.9% of the copy ceiling
    assert rows["k_gather_batch"]["memory_fraction"] == pytest.approx(0.18852)
    assert list(frame["verdict"]) == ["compute-bound", "memory-bound", "latency-bound",
                                      "memory-bound", "not modelled", "not modelled"]
    assert {"flops", "bytes", "gflops", "gbps", "compute_fraction", "memory_fraction",
            "intensity", "ridge", "verdict"} <= set(frame.columns)


def test_rows_on_the_real_fused_capture():
    kern = read_kern_sum(NSYS / "fused_cuda_gpu_kern_sum.csv")
    rows = {r["key"]: r for r in roofline.roofline_rows(kern, RECIPE, CEILINGS)}
    r = rows["k_fwd_hidden_bias_relu"]
    assert r["total_ns"] == 2424038 and r["instances"] == 47
    assert r["flops"] == 2 * 6000 * 256 * 784
    assert r["gflops"] == pytest.approx(2 * 6000 * 256 * 784 / 2424038)
    assert r["compute_fraction"] == pytest.approx(r["gflops"] / 50000)
    assert r["gbps"] == pytest.approx(r["bytes"] / 2424038)
    assert all(r["verdict"] != "not modelled" for r in rows.values())


# ----------------------------------------------------------------------------- the section

def fused_profiles(extra: dict | None = None) -> dict:
    out = {"fused": {"kern": read_kern_sum(NSYS / "fused_cuda_gpu_kern_sum.csv")}}
    return out | (extra or {})


def run_doc(**build) -> dict:
    return {"recipe": RECIPE, "gpu": {"name": "NVIDIA H200", "l2_bytes": 62914560},
            "build": build}


def test_section_numbers_with_ceilings_and_the_fused_profile():
    sec = section(CEILINGS, fused_profiles(), run_doc())
    assert sec["rates"] == {"fp32_gflops": 50000.0, "copy_gbps": 4000.0, "ridge": 12.5}
    assert sec["shape"].S == 47 and sec["shape"].last_batch == 112
    assert [t["path"] for t in sec["tables"]] == ["fused"]
    t = sec["tables"][0]
    assert t["n"] == 10 and sum(c["n"] for c in t["counts"]) == 10
    row = next(r for r in t["rows"] if r["key"] == "k_fwd_hidden_bias_relu")
    # 2·6000·256·784 FLOPs in 2,424,038 ns = 994 GFLOP/s, 1.99% of 50 TFLOP/s.
    assert row["flops"] == 2_408_448_000 and row["bytes"] == 62_740_480
    assert row["compute_fraction"] == pytest.approx(2_408_448_000 / 2424038 / 50000)
    assert row["verdict"] == "latency-bound"
    assert {r["key"] for r in t["rows"]} >= {"k_colsum<db1>", "k_colsum<db2>"}
    assert t["totals"]["flops"] == sum(r["flops"] for r in t["rows"])
    assert sec["other_gpu"] is None and not sec["accumulate_double"]


def test_section_adds_the_persistent_path_when_profiled():
    kern = read_kern_sum(
        "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name\n"
        '99.0,1200000,1,1200000.0,1200000.0,1200000,1200000,0.0,"mlp::k_persistent_epoch(mlp::Persist)"\n'
        '1.0,5000,1,5000.0,5000.0,5000,5000,0.0,"mlp::k_persistent2_epoch(mlp::Persist)"\n')
    sec = section(CEILINGS, fused_profiles({"persistent": {"kern": kern}}), run_doc())
    t = sec["tables"][1]
    model = roofline.epoch_model(roofline.shape_from_recipe(RECIPE))["k_persistent_epoch"]
    assert t["path"] == "persistent"
    assert (t["rows"][0]["flops"], t["rows"][0]["bytes"]) == (model["flops"], model["bytes"])
    assert t["rows"][1]["verdict"] == "not modelled" and t["rows"][1]["flops"] is None
    assert t["counts"] == [{"verdict": "latency-bound", "n": 1}, {"verdict": "not modelled", "n": 1}]


def test_section_without_ceilings_or_the_fused_profile():
    sec = section(None, fused_profiles(), run_doc())
    assert sec["rates"] is None and sec["tables"] == [] and sec["headline_profiled"]
    sec = section(CEILINGS, {}, run_doc())
    assert sec["rates"] is not None and sec["tables"] == [] and not sec["headline_profiled"]


def test_ceilings_from_another_gpu_and_float64_accumulation_are_flagged():
    sec = section(dict(CEILINGS, gpu="NVIDIA A100-SXM4-80GB"), fused_profiles(),
                  run_doc(accumulate="double"))
    assert sec["other_gpu"] == "NVIDIA H200" and sec["accumulate_double"]


@pytest.mark.parametrize("content, field", [
    ('{"copy": {"gb_per_s": 4000}}', "missing key 'fp32_matmul'"),
    ('{"copy": {"gb_per_s": 0}, "fp32_matmul": {"tflops": 50}}', "copy.'gb_per_s'"),
    ('{"copy": {"gb_per_s": 4000}, "fp32_matmul": {"tflops": "fast"}}', "fp32_matmul.'tflops'"),
    ('{"copy": {"gb_per_s": 4000}, "fp32_matmul": {"tflops": 50}, "tf32_matmul": {}}',
     "tf32_matmul.'tflops'"),
    ('{"copy": {"gb_per_s": 4000}, "fp32_matmul": {"tflops": 50}, "gpu": {"name": "H200"}}',
     "'gpu'"),
])
def test_malformed_ceilings_are_one_line_naming_the_file_and_field(tmp_path, content, field):
    f = tmp_path / "ceilings.json"
    f.write_text(content)
    with pytest.raises(InputError) as info:
        load_json(f, "ceilings")
    msg = str(info.value.code)
    assert msg.startswith(f"error: {f}: ") and field in msg and "\n" not in msg


# ----------------------------------------------------------------------------- the ceilings

def test_ceiling_summaries():
    copy = ceilings_mod.copy_summary(2 * 2**30, [1.2, 1.073741824, 1.0, 1.5, 1.073741824], 3)
    assert copy["bytes"] == 4 * 2**30 and copy["tensor_bytes"] == 2 * 2**30
    assert copy["median_ms"] == 1.073741824
    assert copy["gb_per_s"] == pytest.approx(4000.0)
    assert (copy["timed"], copy["warmup"], copy["min_ms"], copy["max_ms"]) == (5, 3, 1.0, 1.5)
    mm = ceilings_mod.matmul_summary(8192, [21.99023255552, 30.0, 20.0], 3, False)
    assert mm["flop"] == 2 * 8192 ** 3 and mm["tflops"] == pytest.approx(50.0)
    assert mm["allow_tf32"] is False and mm["n"] == 8192
    rates = roofline.ceiling_rates({"copy": copy, "fp32_matmul": mm})
    assert rates["ridge"] == pytest.approx(12.5)


class _FakeEvent:
    """A CUDA event stand-in on the host clock (for running the loops on the CPU)."""

    def __init__(self, enable_timing=False):
        self.t = None

    def record(self):
        import time
        self.t = time.perf_counter()

    def synchronize(self):
        pass

    def elapsed_time(self, end):
        return max((end.t - self.t) * 1e3, 1e-6)


class _CpuTorch:
    """torch with a host stand-in for torch.cuda, so the measurement loops run on the CPU."""

    def __init__(self, torch):
        import types
        self._torch = torch
        self.cuda = types.SimpleNamespace(Event=_FakeEvent, synchronize=lambda: None,
                                          empty_cache=lambda: None)

    def __getattr__(self, name):
        return getattr(self._torch, name)


def test_ceiling_loops_run_on_the_cpu():
    torch = pytest.importorskip("torch")
    fake = _CpuTorch(torch)
    before = torch.backends.cuda.matmul.allow_tf32
    copy = ceilings_mod.measure_copy(fake, tensor_bytes=4096, warmup=1, timed=5, device="cpu")
    assert copy["bytes"] == 8192 and copy["timed"] == 5 and copy["gb_per_s"] > 0
    for tf32 in (False, True):
        mm = ceilings_mod.measure_matmul(fake, tf32, n=16, warmup=1, timed=3, device="cpu")
        assert mm["flop"] == 2 * 16 ** 3 and mm["tflops"] > 0 and mm["timed"] == 3
        assert mm["allow_tf32"] is tf32 and mm["allow_tf32_read_back"] is tf32
    assert torch.backends.cuda.matmul.allow_tf32 == before  # put back


def test_ceilings_without_cuda_is_one_line_and_exit_1(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    out = tmp_path / "ceilings.json"
    assert ceilings_mod.main(["--out", str(out)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ceilings: no CUDA device") and "\n" not in err
    assert not out.exists()


def test_ceilings_task_and_session_stage():
    import tasks
    assert tasks.ceilings.__doc__ and "ceilings.json" in tasks.ceilings.__doc__
    from harness.gpu_session import DEFAULT_STAGES
    assert DEFAULT_STAGES.index("ceilings") == DEFAULT_STAGES.index("run") - 1
