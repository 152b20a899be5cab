"""Figures derived from the three nsys summaries of one profiled path (one epoch).

Inputs are the frames of analysis.nsys_csv (kernel, API and NVTX summaries), all times in ns.
Every function returns plain Python values (floats, ints, str, dicts), never pandas objects,
so the report can format them and tests can compare them.
"""
from __future__ import annotations

import math
import re

import pandas as pd

from analysis.labels import kernel_labels

EPOCH_RANGE = "profile-epoch"

# Launch APIs counted as launch work, matched on the API name with any "_v<digits>" version
# suffix removed (nsys 2024+ prints e.g. "cudaLaunchKernel_v7000"), then by prefix: the
# cudaLaunchKernel group also holds cudaLaunchKernelExC, the cooperative group its multi-device
# form. Driver-API launches (cuLaunchKernel, cuGraphLaunch) are counted too, in their own rows.
LAUNCH_APIS = ("cudaLaunchKernel", "cudaGraphLaunch", "cudaLaunchCooperativeKernel",
               "cuLaunchKernel", "cuGraphLaunch", "cuLaunchCooperativeKernel")

_VERSION_SUFFIX = re.compile(r"_v\d+$")


def api_base_name(name: str) -> str:
    """'cudaLaunchKernel_v7000' -> 'cudaLaunchKernel'."""
    return _VERSION_SUFFIX.sub("", name.strip())


def _f(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def epoch_range(nvtx: pd.DataFrame, range_name: str = EPOCH_RANGE) -> dict | None:
    """The captured range row (by normalised name): name, raw_name, total_ns, instances."""
    rows = nvtx[nvtx["name"] == range_name]
    if rows.empty:
        rows = nvtx[nvtx["raw_name"].str.endswith(range_name)]
    if rows.empty:
        return None
    row = rows.iloc[0]
    return {"name": row["name"], "raw_name": row["raw_name"], "total_ns": _f(row["total_ns"]),
            "instances": _f(row["instances"]), "avg_ns": _f(row["avg_ns"])}


def epoch_range_ns(nvtx: pd.DataFrame, range_name: str = EPOCH_RANGE) -> float | None:
    """Total time (ns) of the captured `profile-epoch` range, None when nvtx_sum lacks it."""
    row = epoch_range(nvtx, range_name)
    return None if row is None else row["total_ns"]


def summed_kernel_ns(kern: pd.DataFrame) -> float:
    """Sum of the kernel rows' total times (ns): GPU time spent in kernels in the capture."""
    return float(kern["total_ns"].sum())


def total_kernel_instances(kern: pd.DataFrame) -> int:
    return int(round(float(kern["instances"].sum())))


def kernel_label_map(kern: pd.DataFrame) -> dict[str, str]:
    """{kernel name: its short label}, the labels unique within this table (labels.kernel_labels)."""
    names = kern["name"].tolist()
    return dict(zip(names, kernel_labels(names)))


def widest_kernel(kern: pd.DataFrame) -> dict | None:
    """The kernel row with the largest total time: name, base (its unique short label), total_ns,
    instances, share."""
    if kern.empty:
        return None
    row = kern.loc[kern["total_ns"].idxmax()]
    total = summed_kernel_ns(kern)
    return {"name": row["name"], "base": kernel_label_map(kern)[row["name"]],
            "total_ns": _f(row["total_ns"]), "instances": _f(row["instances"]),
            "avg_ns": _f(row["avg_ns"]),
            "share": (float(row["total_ns"]) / total) if total > 0 else None}


def largest_api(api: pd.DataFrame) -> dict | None:
    """The CUDA API row with the largest total time: name, total_ns, num_calls, share."""
    if api.empty:
        return None
    row = api.loc[api["total_ns"].idxmax()]
    total = float(api["total_ns"].sum())
    return {"name": row["name"], "base": api_base_name(row["name"]),
            "total_ns": _f(row["total_ns"]), "num_calls": _f(row["num_calls"]),
            "avg_ns": _f(row["avg_ns"]),
            "share": (float(row["total_ns"]) / total) if total > 0 else None}


def launch_calls(api: pd.DataFrame) -> dict:
    """Calls and total time of each launch API group, and of all of them together.

    {"by_api": {"cudaLaunchKernel": {"calls", "total_ns", "rows": [names]}, ...},
     "calls": int, "total_ns": float}
    """
    by_api: dict[str, dict] = {}
    for _, row in api.iterrows():
        base = api_base_name(row["name"])
        group = next((g for g in LAUNCH_APIS if base.startswith(g)), None)
        if group is None:
            continue
        entry = by_api.setdefault(group, {"calls": 0, "total_ns": 0.0, "rows": []})
        entry["calls"] += int(round(float(row["num_calls"])))
        entry["total_ns"] += float(row["total_ns"])
        entry["rows"].append(row["name"])
    ordered = {g: by_api[g] for g in LAUNCH_APIS if g in by_api}
    return {"by_api": ordered,
            "calls": sum(e["calls"] for e in ordered.values()),
            "total_ns": float(sum(e["total_ns"] for e in ordered.values()))}


def launches_per_step(kern: pd.DataFrame, steps_per_epoch: int,
                      declared: int | float | None) -> dict:
    """Kernel instances in the captured epoch / steps, against the path's declared count.

    `matches` is True when the instances are declared × steps (None without a declaration); the
    declaration may be a fraction (the persistent path's one launch an epoch declares 1/47). A
    CUDA graph's kernels still appear as kernel instances, so this counts kernels run, not
    launch calls.
    """
    instances = total_kernel_instances(kern)
    measured = instances / steps_per_epoch if steps_per_epoch else math.nan
    if declared is None:
        matches = None
    else:
        expected = float(declared) * int(steps_per_epoch)
        matches = abs(instances - expected) <= 1e-6 * max(1.0, expected)
    return {"launches_per_step_measured": measured, "declared": declared, "matches": matches,
            "kernel_instances": instances, "steps_per_epoch": steps_per_epoch}


def epoch_filler(kern: pd.DataFrame, api: pd.DataFrame) -> dict:
    """Which work fills the epoch: 'kernel' (summed kernel time) or 'launch' (launch API time).

    With kernels queued asynchronously on one stream the epoch lasts about the larger of the GPU
    time in kernels and the host time spent launching them; the larger one is the filler.
    """
    kernel_ns = summed_kernel_ns(kern)
    launch = launch_calls(api)
    filler = "launch" if launch["total_ns"] > kernel_ns else "kernel"
    return {"filler": filler, "kernel_ns": kernel_ns, "launch_ns": launch["total_ns"],
            "launch_calls": launch["calls"]}


def find_kernel_row(kern: pd.DataFrame, needle: str) -> dict | None:
    """The widest kernel row whose name contains `needle` (case-sensitive), or None."""
    rows = kern[kern["name"].str.contains(needle, regex=False)]
    if rows.empty:
        return None
    row = rows.loc[rows["total_ns"].idxmax()]
    total = summed_kernel_ns(kern)
    return {"name": row["name"], "base": kernel_label_map(kern)[row["name"]],
            "total_ns": _f(row["total_ns"]), "instances": _f(row["instances"]),
            "share": (float(row["total_ns"]) / total) if total > 0 else None}


def path_profile(kern: pd.DataFrame, api: pd.DataFrame, nvtx: pd.DataFrame,
                 steps_per_epoch: int, declared: int | None) -> dict:
    """Everything above for one path, in one dict."""
    rng = epoch_range(nvtx)
    kernel_ns = summed_kernel_ns(kern)
    return {
        "range": rng,
        "range_ns": None if rng is None else rng["total_ns"],
        "kernel_ns": kernel_ns,
        "kernel_share_of_range": (kernel_ns / rng["total_ns"]) if rng and rng["total_ns"] else None,
        "widest_kernel": widest_kernel(kern),
        "largest_api": largest_api(api),
        "launch": launch_calls(api),
        "launches": launches_per_step(kern, steps_per_epoch, declared),
        "filler": epoch_filler(kern, api),
    }
