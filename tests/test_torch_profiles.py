"""The profiling studies (harness/baseline/profiles.py) and their trace arithmetic
(harness/baseline/trace_stats.py).

Synthetic Chrome-trace events check the step window, GPU busy union, launch-to-kernel matching
and the forward/backward attribution by autograd sequence number; a hand-made memory timeline
checks the category sums. On the CPU, each study runs on a small slice through torch.profiler
itself (no kernels there: the ops and the memory categories are checked); GPU runs of the three
studies on the recipe are marked gpu.
"""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from harness.baseline import trace_stats as ts


def _x(cat, name, ts_, dur, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts_, "dur": dur, "tid": tid, "args": args}


def test_union_of_intervals():
    assert ts.union_us([(0, 10), (5, 12), (20, 25), (25, 26)]) == 18
    assert ts.union_us([]) == 0


def test_step_stats_window_busy_and_counts():
    evs = ts.events({"traceEvents": [
        _x("user_annotation", "step", 100, 50), _x("user_annotation", "step", 160, 40),
        _x("cuda_runtime", "cudaLaunchKernel", 110, 5, correlation=1),
        _x("cuda_runtime", "cudaLaunchKernel", 170, 5, correlation=2),
        _x("cuda_runtime", "cudaMemsetAsync", 175, 2, correlation=3),
        _x("cuda_runtime", "cudaStreamSynchronize", 180, 15, correlation=9),   # no GPU work
        _x("kernel", "gemm", 120, 30, tid=7, correlation=1),
        _x("kernel", "relu", 140, 20, tid=7, correlation=2),     # overlaps gemm by 10
        _x("gpu_memset", "Memset", 240, 10, tid=7, correlation=3),  # ends after the host
        _x("kernel", "early", 50, 10, tid=7),                    # before the window: not counted
        {"ph": "i", "name": "instant", "ts": 1},
    ]})
    st = ts.step_stats(evs)
    assert st["steps"] == 2 and st["window_us"] == 150          # 100 .. 250
    assert st["wall_us_per_step"] == 75 and st["host_us_per_step"] == 45
    assert st["kernel_us_per_step"] == 25                       # (30 + 20) / 2
    assert st["gpu_busy_us_per_step"] == 25                     # (40 + 10) / 2
    assert st["gpu_busy_fraction"] == pytest.approx(50 / 150)
    assert st["kernels_per_step"] == 1 and st["launches_per_step"] == 1.5
    with pytest.raises(ts.TraceError, match="'nope'"):
        ts.step_stats(evs, step_name="nope")


def test_step_stats_without_gpu_events():
    st = ts.step_stats(ts.events([_x("user_annotation", "step", 0, 10)]))
    assert st["gpu_busy_fraction"] is None and st["kernel_us_per_step"] == 0


def _layer_trace():
    """fc1 forward (ops seq 21, 22), relu (23, outside), fc2 forward (24, 25); the backward on
    thread 2 in reverse; one kernel per launch."""
    bwd = ts.BACKWARD_PREFIX
    return ts.events([
        _x("user_annotation", "fc1.forward", 0, 20),
        _x("cpu_op", "aten::linear", 1, 18, **{"Sequence number": 21}),
        _x("cpu_op", "aten::addmm", 2, 16, **{"Sequence number": 22, "Input Dims": [[256], [8, 784], [784, 256]]}),
        _x("cuda_runtime", "cudaLaunchKernel", 3, 2, correlation=10),
        _x("cpu_op", "aten::relu", 25, 5, **{"Sequence number": 23}),
        _x("cuda_runtime", "cudaLaunchKernel", 26, 2, correlation=11),
        _x("user_annotation", "fc2.forward", 40, 20),
        _x("cpu_op", "aten::addmm", 41, 15, **{"Sequence number": 25}),
        _x("cuda_runtime", "cudaLaunchKernel", 42, 2, correlation=12),
        _x("cpu_op", bwd + "AddmmBackward0", 100, 30, tid=2, **{"Sequence number": 25}),
        _x("cpu_op", "aten::mm", 101, 10, tid=2),
        _x("cuda_runtime", "cudaLaunchKernel", 102, 2, tid=2, correlation=13),
        _x("cpu_op", "aten::mm", 112, 10, tid=2),
        _x("cuda_runtime", "cudaLaunchKernel", 113, 2, tid=2, correlation=14),
        _x("cpu_op", bwd + "ReluBackward0", 140, 10, tid=2, **{"Sequence number": 23}),
        _x("cuda_runtime", "cudaLaunchKernel", 141, 2, tid=2, correlation=15),
        _x("cpu_op", bwd + "AddmmBackward0", 160, 30, tid=2, **{"Sequence number": 22}),
        _x("cpu_op", "aten::sum", 170, 10, tid=2),
        _x("cuda_runtime", "cudaLaunchKernel", 171, 2, tid=2, correlation=16),
        _x("cpu_op", bwd + "TBackward0", 195, 3, tid=2, **{"Sequence number": 21}),
        *[_x("kernel", name, 200 + 10 * c, 4 + c - 10, tid=7, correlation=c)
          for c, name in ((10, "gemm_a"), (11, "relu_k"), (12, "gemm_b"), (13, "gemm_dH"),
                          (14, "gemm_dW2"), (15, "threshold_bwd"), (16, "reduce_db1"))],
    ])


def test_layer_ranges_pair_backward_nodes_by_sequence_number():
    ranges = ts.layer_ranges(_layer_trace(), ("fc1", "fc2"))
    got = {(r["layer"], r["phase"], r["node"]) for r in ranges}
    assert got == {("fc1", "forward", "fc1.forward"), ("fc1", "backward", "AddmmBackward0"),
                   ("fc1", "backward", "TBackward0"), ("fc2", "forward", "fc2.forward"),
                   ("fc2", "backward", "AddmmBackward0")}


def test_attribute_kernels_to_layers_and_group_per_step():
    evs = _layer_trace()
    rows = ts.attribute(evs, ts.layer_ranges(evs, ("fc1", "fc2")))
    kern = {(r["layer"], r["phase"], r["name"], r["op"]) for r in rows if r["kind"] == "kernel"}
    assert kern == {("fc1", "forward", "gemm_a", "aten::addmm"),
                    ("fc2", "forward", "gemm_b", "aten::addmm"),
                    ("fc2", "backward", "gemm_dH", "aten::mm"),
                    ("fc2", "backward", "gemm_dW2", "aten::mm"),
                    ("fc1", "backward", "reduce_db1", "aten::sum")}   # relu's kernels: no layer
    grouped = ts.group_rows(rows, n_steps=2)
    mm = [g for g in grouped if g["kind"] == "op" and g["name"] == "aten::mm"]
    assert len(mm) == 1 and mm[0]["instances_per_step"] == 1.0 and mm[0]["mean_us"] == 10
    gemm = next(g for g in grouped if g["name"] == "gemm_a")
    assert gemm["us_per_step"] == 2.0 and gemm["mean_us"] == 4.0 and gemm["node"] == "fc1.forward"
    addmm = next(g for g in grouped if g["name"] == "aten::addmm" and g["layer"] == "fc1")
    assert addmm["input_dims"] == [[256], [8, 784], [784, 256]]


def test_memory_timeline_parse_and_peaks():
    cats = ts.TORCH_CATEGORIES
    row = lambda **kw: [0] + [kw.get(c, 0) for c in cats]   # noqa: E731
    doc = [[1000, 1010, 1030, 1040],
           [row(PARAMETER=100, INPUT=1000),
            row(PARAMETER=100, INPUT=1000, ACTIVATION=50, TEMPORARY=7),
            row(PARAMETER=100, INPUT=1000, ACTIVATION=20, GRADIENT=100, OPTIMIZER_STATE=100),
            row(PARAMETER=100, INPUT=1000, GRADIENT=100, OPTIMIZER_STATE=100, UNKNOWN=3)]]
    times, sizes = ts.parse_timeline(doc)
    m = ts.memory_summary(times, sizes)
    assert m["peak_total_bytes"] == 1320 and m["peak_at_us"] == 30
    assert m["category_peak"]["ACTIVATION"] == 50 and m["at_peak"]["ACTIVATION"] == 20
    assert m["groups_peak"] == {"parameters": 100, "gradients": 100, "optimizer_state": 100,
                                "activations": 50, "inputs": 1000, "other": 10}
    assert m["groups_at_peak"]["other"] == 0 and m["duration_us"] == 40
    with pytest.raises(ts.TraceError, match="row 1"):
        ts.parse_timeline([[0, 1], [row(), [0, 1]]])
    with pytest.raises(ts.TraceError):
        ts.parse_timeline({"times": []})


# --------------------------------------------------------------------------------------------
# The studies through torch.profiler on the CPU
# --------------------------------------------------------------------------------------------

torch = pytest.importorskip("torch")
from harness.baseline import profiles as tp  # noqa: E402
from spec import layout  # noqa: E402


@pytest.fixture(scope="module")
def setup_small():
    rng = np.random.default_rng(5)
    shape = layout.Shape(784, 32, 10)
    data = {"train_images": rng.uniform(0, 1, (256, 784)).astype(np.float32),
            "train_labels": rng.integers(0, 10, 256).astype(np.int32),
            "test_images": rng.uniform(0, 1, (16, 784)).astype(np.float32),
            "test_labels": rng.integers(0, 10, 16).astype(np.int32)}
    init = (rng.uniform(-1, 1, layout.n_params(shape)) / 28).astype(np.float32)
    order = rng.permutation(256)[None, :].astype(np.int32)
    return tp.Setup("cpu", data=data, init_params=init, order=order), shape


def test_torch_categories_match_the_parser():
    assert tuple(tp.torch_categories()) == ts.TORCH_CATEGORIES


def test_memory_study_on_cpu(setup_small, tmp_path):
    s, shape = setup_small
    doc = tp.memory_study(s, tmp_path / "profile", tmp_path / "results", batch=16)
    written = json.loads((tmp_path / "results" / "torch_memory.json").read_text())
    assert written == json.loads(json.dumps(doc))
    assert written["commit"] and written["date_utc"].endswith("Z")   # spec.provenance.stamp
    p_bytes = layout.n_params(shape) * 4
    assert set(doc["optimizers"]) == {"sgd", "sgd_momentum", "adam"}
    for key, state in (("sgd", 0), ("sgd_momentum", p_bytes), ("adam", 2 * p_bytes)):
        o = doc["optimizers"][key]
        assert o["groups_peak"]["parameters"] == p_bytes == o["ledger_bytes"]["parameters"]
        assert o["groups_peak"]["gradients"] == p_bytes
        # Adam also keeps one step count per parameter tensor (4 float32 scalars)
        assert state <= o["groups_peak"]["optimizer_state"] <= state + 16
        assert o["ledger_bytes"]["optimizer_state"] == state
        assert o["groups_peak"]["activations"] > 0 and o["html"] is None      # HTML: CUDA only
        assert o["peak_total_bytes"] == sum(o["at_peak"].values())
        assert o["timeline"].endswith(f"torch_memory_{key}.json")
        assert (tmp_path / "profile" / f"torch_memory_{key}.json").exists()
    png = (tmp_path / "profile" / "torch_memory.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.rglob(".*.tmp"))


def test_batch_study_on_cpu(setup_small, tmp_path):
    s, _ = setup_small
    doc = tp.batch_study(s, tmp_path / "profile", tmp_path / "results", steps=2,
                         batches=(8, 64), warmup=1, timed=2)
    rows = doc["batches"]
    assert [r["batch"] for r in rows] == [8, 64] and rows[1]["work_vs_first"] == 8
    for r in rows:
        assert r["steps"] == 2 and r["wall_us_per_step"] >= r["host_us_per_step"] > 0
        assert r["untraced_us_per_step"] > 0 and r["gpu_busy_fraction"] is None
    trace = json.loads(gzip.decompress((tmp_path / "profile" / "torch_steps_b8.json.gz").read_bytes()))
    assert sum(e.get("name") == "step" for e in trace["traceEvents"]) == 2
    assert (tmp_path / "results" / "torch_batch_steps.json").exists()


def test_linear_study_on_cpu(setup_small, tmp_path):
    s, shape = setup_small
    doc = tp.linear_study(s, tmp_path / "profile", tmp_path / "results", steps=2,
                          batches=(8,), warmup=1)
    (b,) = doc["batches"]
    fc1, fc2 = b["layers"]
    assert fc1["in_out"] == [784, 32] and fc2["in_out"] == [32, 10]
    for layer in (fc1, fc2):
        fwd = {o["name"] for o in layer["forward"]["ops"]}
        bwd = {(o["node"], o["name"]) for o in layer["backward"]["ops"]}
        assert "aten::addmm" in fwd
        assert ("AddmmBackward0", "aten::mm") in bwd and ("AddmmBackward0", "aten::sum") in bwd
        assert layer["forward"]["kernels"] == [] and layer["forward"]["gpu_us_per_step"] == 0
    # fc1's input needs no gradient: one mm (dW1); fc2's backward has two (dH and dW2)
    mm = lambda layer: next(o for o in layer["backward"]["ops"] if o["name"] == "aten::mm")  # noqa: E731
    assert mm(fc1)["instances_per_step"] == 1 and mm(fc2)["instances_per_step"] == 2
    addmm = next(o for o in fc1["forward"]["ops"] if o["name"] == "aten::addmm")
    assert [8, 784] in addmm["input_dims"]


def test_cli_rejects_unknown_study():
    with pytest.raises(SystemExit) as exc:
        tp.main(["--only", "memory,bogus", "--device", "cpu"])
    assert exc.value.code == 2


# --------------------------------------------------------------------------------------------
# GPU: the three studies on the recipe
# --------------------------------------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_studies(tmp_path):
    from spec.files import RESULTS_DIR
    if not (RESULTS_DIR / "init_params.npy").exists():
        pytest.skip("results/init_params.npy missing: run build/mlp_train first")
    s = tp.Setup("cuda")
    mem = tp.memory_study(s, tmp_path, tmp_path)
    for o in mem["optimizers"].values():
        assert o["html"] and o["groups_peak"]["parameters"] == o["ledger_bytes"]["parameters"]
        assert o["max_memory_allocated_bytes"] >= o["peak_total_bytes"] * 0.5
    steps = tp.batch_study(s, tmp_path, tmp_path, steps=5)
    assert all(0 < r["gpu_busy_fraction"] <= 1 and r["kernel_us_per_step"] > 0
               for r in steps["batches"])
    lin = tp.linear_study(s, tmp_path, tmp_path, steps=3)
    for b in lin["batches"]:
        for layer in b["layers"]:
            assert layer["forward"]["kernels"] and layer["backward"]["kernels"]
