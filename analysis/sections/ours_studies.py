"""Our binary's side of the two PyTorch studies (harness/studies/ours_studies.py, from nsys): step time
against batch size for our fastest path at each batch, beside PyTorch eager's rows and with the
numbers of a computed comparison; the fused path's kernels by Linear layer and phase at batch 32
and 1024, beside PyTorch's kernels for the same layer, phase and batch."""
from __future__ import annotations

from analysis.fmt import is_number
from analysis.sections.torch_studies import short_kernel

HOST_BOUND_SHARE = 0.5  # as torch_studies: the host issues for more than this share of the wall


def _name(raw: str) -> str:
    return short_kernel(raw).removeprefix("mlp::")


def batch_steps(doc: dict | None, torch_doc: dict | None) -> dict | None:
    """Our rows (with kernel_vs_first, host_share and PyTorch's untraced step at the same batch),
    and the comparison: how each side's step grows from the first batch to the last, ours against
    PyTorch's at both ends, each side's GPU busy range and our host's largest share."""
    if doc is None:
        return None
    torch_by_batch = {b["batch"]: b for b in (torch_doc or {}).get("batches", [])}
    rows = [dict(b) for b in doc["batches"]]
    first, last = rows[0], rows[-1]
    for r in rows:
        r["kernel_vs_first"] = r["kernel_us_per_step"] / first["kernel_us_per_step"]
        r["host_share"] = r["host_us_per_step"] / r["wall_us_per_step"]
        t = torch_by_batch.get(r["batch"])
        r["torch_us"] = t["untraced_us_per_step"] if t else None
        r["vs_torch"] = r["untraced_us_per_step"] / r["torch_us"] if t else None
        r["others"] = [c for c in r.get("candidates", []) if c["path"] != r["path"]]
    busy = [r["gpu_busy_fraction"] for r in rows if is_number(r.get("gpu_busy_fraction"))]
    t_first, t_last = torch_by_batch.get(first["batch"]), torch_by_batch.get(last["batch"])
    tbusy = [b["gpu_busy_fraction"] for b in torch_by_batch.values()
             if is_number(b.get("gpu_busy_fraction"))]
    both = t_first is not None and t_last is not None
    return {"rows": rows, "first": first, "last": last, "work": last["work_vs_first"],
            "time": last["untraced_time_vs_first"], "kernel": last["kernel_vs_first"],
            "paths": sorted({r["path"] for r in rows}, key=[r["path"] for r in rows].index),
            "tried": doc.get("tried"), "epochs_timed": doc.get("epochs_timed"),
            "busy_min": min(busy) if busy else None, "busy_max": max(busy) if busy else None,
            "host_share_max": max(r["host_share"] for r in rows),
            "host_bound": min(r["host_share"] for r in rows) > HOST_BOUND_SHARE,
            "torch": both, "torch_first": t_first, "torch_last": t_last,
            "torch_time": (t_last["untraced_us_per_step"] / t_first["untraced_us_per_step"]
                           if both else None),
            "torch_busy_min": min(tbusy) if tbusy else None,
            "torch_busy_max": max(tbusy) if tbusy else None,
            "commit": doc.get("commit"), "gpu": doc.get("gpu")}


def _torch_phases(torch_doc: dict | None) -> dict:
    """{(batch, layer, phase): (kernel count, GPU µs a step)} of torch_linear_kernels.json."""
    out = {}
    for b in (torch_doc or {}).get("batches", []):
        for layer in b["layers"]:
            for phase in ("forward", "backward"):
                ph = layer[phase]
                out[(b["batch"], layer["layer"], phase)] = {
                    "count": len(ph["kernels"]), "gpu_us": ph["gpu_us_per_step"]}
    return out


def _kernels(ph: dict) -> list[dict]:
    return [{"name": _name(k["name"]), "what": k.get("what") or "", "phase": k.get("phase"),
             "per_step": k["instances_per_step"], "mean_us": k["mean_us"],
             "us_step": k["us_per_step"]} for k in ph["kernels"]]


def linear(doc: dict | None, torch_doc: dict | None) -> dict | None:
    """One group per (batch, layer, phase) of our kernels, each beside PyTorch's kernel count and
    GPU time for the same (None where PyTorch's file lacks it); then the kernels of no layer."""
    if doc is None:
        return None
    theirs = _torch_phases(torch_doc)
    groups, other = [], []
    for b in doc["batches"]:
        for layer in b["layers"]:
            for phase in ("forward", "backward"):
                ph = layer[phase]
                t = theirs.get((b["batch"], layer["layer"], phase))
                groups.append({"batch": b["batch"], "layer": layer["layer"],
                               "in_out": layer.get("in_out"), "phase": phase,
                               "gpu_us": ph["gpu_us_per_step"], "kernels": _kernels(ph),
                               "torch_count": t["count"] if t else None,
                               "torch_us": t["gpu_us"] if t else None,
                               "vs_torch": ph["gpu_us_per_step"] / t["gpu_us"]
                               if t and t["gpu_us"] else None})
        if b.get("other"):
            other.append({"batch": b["batch"], "gpu_us": b["other"]["gpu_us_per_step"],
                          "kernels": _kernels(b["other"])})
    return {"groups": groups, "other": other, "path": doc["path"],
            "batches": [b["batch"] for b in doc["batches"]], "torch": torch_doc is not None,
            "commit": doc.get("commit")}
