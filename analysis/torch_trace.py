"""Reads the torch.profiler Chrome trace of one PyTorch eager epoch (profile/pytorch_eager_trace.json,
written by harness.baseline.eager_trace.trace_eager_epoch) into per-kernel rows, so RESULTS.md can list
PyTorch's kernels and times beside ours."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from spec.files import InputError, read_input

# torch.profiler's categories: GPU kernels, and the CUDA runtime calls that launch them.
KERNEL_CAT = "kernel"
RUNTIME_CAT = "cuda_runtime"


def read_trace(path: Path) -> dict:
    """The trace's JSON; a missing, special (spec.files.read_input) or malformed file is one InputError line."""
    try:
        doc = json.loads(read_input(path).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(f"error: {path}: not a Chrome trace JSON ({exc})") from None
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(events, list):
        raise InputError(f"error: {path}: no traceEvents list")
    return {"events": events}


def summarise(trace: dict, cat: str = KERNEL_CAT) -> pd.DataFrame:
    """Complete events ("ph": "X") of one category grouped by name: instances, total and mean
    duration in microseconds, share of the category's total; widest first."""
    rows = [(e.get("name", ""), float(e.get("dur", 0.0))) for e in trace["events"]
            if isinstance(e, dict) and e.get("ph") == "X" and e.get("cat") == cat]
    df = pd.DataFrame(rows, columns=["name", "dur_us"])
    if df.empty:
        return pd.DataFrame(columns=["name", "instances", "total_us", "avg_us", "share"])
    g = df.groupby("name", sort=False)["dur_us"].agg(["count", "sum", "mean"]).reset_index()
    g.columns = ["name", "instances", "total_us", "avg_us"]
    g["share"] = g["total_us"] / g["total_us"].sum()
    return g.sort_values(["total_us", "name"], ascending=[False, True], kind="mergesort").reset_index(drop=True)
