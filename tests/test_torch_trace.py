"""analysis.torch_trace on a small trace in torch.profiler's Chrome format."""
from __future__ import annotations

import json

import pytest

from analysis.torch_trace import read_trace, summarise


def write_trace(tmp_path, events):
    p = tmp_path / "trace.json"
    p.write_text(json.dumps({"traceEvents": events}))
    return p


def test_kernels_grouped_by_name_widest_first(tmp_path):
    ev = [{"ph": "X", "cat": "kernel", "name": "gemm_a", "ts": 0, "dur": 3.0},
          {"ph": "X", "cat": "kernel", "name": "gemm_a", "ts": 5, "dur": 5.0},
          {"ph": "X", "cat": "kernel", "name": "relu, fused", "ts": 9, "dur": 1.5},
          {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "ts": 0, "dur": 4.0},
          {"ph": "i", "cat": "kernel", "name": "marker", "ts": 1},
          {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 10.0}]
    trace = read_trace(write_trace(tmp_path, ev))
    k = summarise(trace)
    assert list(k["name"]) == ["gemm_a", "relu, fused"]
    assert k.loc[0, "instances"] == 2 and k.loc[0, "total_us"] == 8.0 and k.loc[0, "avg_us"] == 4.0
    assert k["share"].sum() == pytest.approx(1.0)
    api = summarise(trace, "cuda_runtime")
    assert api.loc[0, "name"] == "cudaLaunchKernel" and api.loc[0, "instances"] == 1


def test_bad_traces_fail_in_one_line(tmp_path):
    with pytest.raises(SystemExit, match="file not found"):
        read_trace(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SystemExit, match="not a Chrome trace JSON"):
        read_trace(bad)
    (tmp_path / "odd.json").write_text(json.dumps({"foo": 1}))
    with pytest.raises(SystemExit, match="no traceEvents"):
        read_trace(tmp_path / "odd.json")


def test_empty_category_gives_an_empty_frame(tmp_path):
    assert summarise(read_trace(write_trace(tmp_path, []))).empty
