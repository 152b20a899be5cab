"""The Nsight Systems profiles of each path (summary figures for RESULTS.md, the raw tables for
PROFILES.md), what limits an epoch, the predictions, the PyTorch trace and the ncu counters."""
from __future__ import annotations

from analysis import derive
from analysis.labels import operation_labels
from analysis.sections import common as c

# Which profile CSVs each prediction measure reads.
MEASURE_REPORTS = {"lower_epoch_time": (), "epoch_filler": ("kern", "api"),
                   "widest_kernel": ("kern",)}
TORCH_TRACE_ROWS = 12
NCU_TOP_STALLS = 3
# What each warp-state sampling reason means (Nsight Compute's definitions, shortened).
STALL_MEANING = {
    "long_scoreboard": "waiting for a global or local memory (L1TEX) result",
    "barrier": "waiting at a block barrier (__syncthreads, or a grid barrier's block part)",
    "wait": "a fixed-latency dependency between instructions",
    "short_scoreboard": "waiting for a shared-memory or special-function result",
    "selected": "issuing (not a stall)",
    "not_selected": "ready, but another warp was picked",
    "math_pipe_throttle": "the math pipe was busy",
    "mio_throttle": "the shared-memory instruction queue was full",
    "lg_throttle": "the global-memory instruction queue was full",
    "imc_miss": "waiting for a constant-cache miss",
    "branch_resolving": "waiting for a branch target",
    "membar": "waiting at a memory barrier",
    "no_instructions": "the instruction cache had nothing to issue",
    "dispatch_stall": "the dispatcher stalled",
    "drain": "waiting for memory stores to drain at exit",
    "misc": "other",
    "sleeping": "sleeping (nanosleep)",
    "tex_throttle": "the texture queue was full",
}


def _records(df, columns) -> list[dict]:
    return [{k: r[k] for k in columns} for _, r in df.iterrows()]


def profile(name: str, prof: dict, run: dict) -> dict:
    """One profiled path: the derived figures (analysis/derive.py) and its three tables."""
    steps = run["recipe"]["steps_per_epoch"]
    d = derive.path_profile(prof["kern"], prof["api"], prof["nvtx"], steps,
                            c.declared_launches(run["paths"][name]))
    labels = derive.kernel_label_map(prof["kern"])
    ops = dict(zip(prof["kern"]["name"], operation_labels(prof["kern"]["name"])))
    kern = [r | {"label": labels[r["name"]], "op": ops[r["name"]]}
            for r in _records(prof["kern"], list(prof["kern"].columns))]
    return {"name": name, "files": prof["files"], "d": d, "steps": steps,
            "is_graph": name in c.GRAPH_PATHS, "kernels": kern, "kern_frame": prof["kern"],
            "api": _records(prof["api"], list(prof["api"].columns)),
            "nvtx": _records(prof["nvtx"], list(prof["nvtx"].columns))}


def limit(name: str, prof: dict | None, breakdown: dict | None) -> dict | None:
    """What limits one path's epoch, from its phase breakdown when the phase file has one for
    this kernel, else from its profile: {"path", "source": "phases" | "profile", ...}."""
    if breakdown is not None:
        parts = [{"what": "grid barriers", "us": breakdown["barriers"]}] + \
                [{"what": f"phase {p['phase']}", "label": p["label"], "us": p["us"]}
                 for p in breakdown["parts"]]
        top = max(parts, key=lambda p: p["us"])
        whole = breakdown["full"] or breakdown["sum"]
        return {"path": name, "source": "phases", "top": top, "top_share": top["us"] / whole,
                "whole_us": whole, "parts": parts}
    if prof is None:
        return None
    d = prof["d"]
    fill = d["filler"]
    main_launch = max(d["launch"]["by_api"].items(), key=lambda kv: kv[1]["total_ns"],
                      default=(None, None))
    instances = d["launches"]["kernel_instances"]
    return {"path": name, "source": "profile", "filler": fill["filler"],
            "is_graph": prof["is_graph"], "kernel_ns": fill["kernel_ns"],
            "launch_ns": fill["launch_ns"], "launch_calls": fill["launch_calls"],
            "launch_api": main_launch[0], "range_ns": d["range_ns"],
            "kernel_share": d["kernel_share_of_range"], "widest": d["widest_kernel"],
            "widest_op": next((k["op"] for k in prof["kernels"]
                               if d["widest_kernel"] and k["name"] == d["widest_kernel"]["name"]),
                              None),
            "n_kernels": len(prof["kernels"]), "instances": instances,
            "avg_kernel_ns": fill["kernel_ns"] / instances if instances else None,
            "per_launch_ns": (main_launch[1]["total_ns"] / main_launch[1]["calls"]
                              if main_launch[1] and main_launch[1]["calls"] else None)}


def graph_evidence(profiles: dict, run: dict) -> dict | None:
    """Launch calls, range and kernel time of the fused capture against the graph capture's."""
    if "graph" not in profiles or c.HEADLINE_PATH not in profiles:
        return None
    out = {}
    for key, name in (("fused", c.HEADLINE_PATH), ("graph", "graph")):
        d = profiles[name]["d"]
        out[key] = {"name": name, "passed": c.passed(run["paths"].get(name)),
                    "launch": [{"api": api, "calls": e["calls"], "total_ns": e["total_ns"]}
                               for api, e in d["launch"]["by_api"].items()],
                    "range_ns": d["range_ns"], "kernel_ns": d["kernel_ns"]}
    return out


# ----------------------------------------------------------------------------- predictions

def _lower_epoch_time(pred, run, profiles):
    between = pred.get("between") or [c.HEADLINE_PATH, c.BASELINE_PATH]
    medians = {}
    for p in between:
        rec = run["paths"].get(p)
        if rec is None:
            return None, {"missing_path": p}
        m = c.passed_median(rec)
        if m is None:
            return None, {"failed_path": p}
        medians[p] = m
    return min(medians, key=lambda p: medians[p]), {"medians": medians}


def _epoch_filler(pred, run, profiles):
    path = pred.get("path", c.HEADLINE_PATH)
    d = profiles[path]["d"]
    rows = [r for e in d["launch"]["by_api"].values() for r in e["rows"]]
    return d["filler"]["filler"], {"path": path, "launch_rows": rows, **d["filler"]}


def _widest_kernel(pred, run, profiles):
    path = pred.get("path", c.HEADLINE_PATH)
    wk = profiles[path]["d"]["widest_kernel"]
    if wk is None:
        return None, {"path": path, "no_rows": True}
    kern = profiles[path]["kern_frame"]
    predicted = derive.find_kernel_row(kern, pred["predicted"])
    return wk["base"], {"path": path, "widest": wk,
                        "predicted_row": predicted if predicted is None
                        or predicted["name"] != wk["name"] else None,
                        "predicted_found": predicted is not None}


MEASURES = {"lower_epoch_time": _lower_epoch_time, "epoch_filler": _epoch_filler,
            "widest_kernel": _widest_kernel}


def prediction(pred: dict, run: dict, profiles: dict, missing_files: dict) -> dict:
    """The prediction against what the inputs hold: {"measured", "verdict": "match" |
    "mismatch" | "not measured", "evidence": {...}}; "missing" names the profile CSVs a
    measure needs when they are absent."""
    needs = MEASURE_REPORTS[pred["measure"]]
    path = pred.get("path", c.HEADLINE_PATH)
    base = {"id": pred["id"], "question": pred["question"], "predicted": pred["predicted"],
            "measure": pred["measure"], "reason": " ".join(pred["reason"].split())}
    if needs and path not in profiles:
        files = missing_files.get(path, {})
        return base | {"measured": None, "verdict": "not measured",
                       "missing": [files.get(k, f"{path}_{k}.csv") for k in needs],
                       "evidence": {}}
    measured, evidence = MEASURES[pred["measure"]](pred, run, profiles)
    if measured is None:
        verdict = "not measured"
    elif pred["measure"] == "widest_kernel":
        verdict = "match" if (pred["predicted"] in measured
                              or pred["predicted"] in evidence["widest"]["name"]) else "mismatch"
    else:
        verdict = "match" if measured == pred["predicted"] else "mismatch"
    return base | {"measured": measured, "verdict": verdict, "missing": None,
                   "evidence": evidence}


# ----------------------------------------------------------------------------- PyTorch, ncu

def torch_trace(frames) -> dict | None:
    """PyTorch eager's widest kernel rows of one epoch and its kernel-launch calls."""
    if frames is None:
        return None
    kern, api = frames
    launch = api[api["name"].str.startswith("cudaLaunchKernel")]
    return {"kernels": int(kern["instances"].sum()) if not kern.empty else 0,
            "kernel_us": float(kern["total_us"].sum()) if not kern.empty else None,
            "launch_calls": int(launch["instances"].sum()) if not launch.empty else 0,
            "launch_us": float(launch["total_us"].sum()) if not launch.empty else None,
            "rows": [{"name": r.name, "instances": int(r.instances), "total_us": r.total_us,
                      "avg_us": r.avg_us, "share": r.share}
                     for r in kern.head(TORCH_TRACE_ROWS).itertuples()]}


def ncu(pages: list[dict]) -> dict | None:
    """One row per kernel launch Nsight Compute profiled, with its largest warp-stall shares."""
    if not pages:
        return None
    rows, reasons = [], []
    for page in pages:
        for k in page["kernels"]:
            m = k["metrics"]
            top = k["stalls"][:NCU_TOP_STALLS]
            reasons += [reason for reason, _, _ in top if reason not in reasons]
            rows.append({"path": page["name"], "kernel": k["kernel"],
                         "grid": m.get("grid", "—"), "block": m.get("block", "—"),
                         "metrics": m, "registers": m.get("registers/thread", "—").split(" ")[0],
                         "stalls": [{"reason": r, "share": s} for r, _, s in top]})
    return {"rows": rows, "meanings": [{"reason": r, "meaning": STALL_MEANING.get(
        r, "see the Nsight Compute documentation")} for r in reasons]}
