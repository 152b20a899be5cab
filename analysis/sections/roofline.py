"""The roofline section: the ceilings of ceilings.json and, per profiled path of ROOFLINE_PATHS,
each kernel row against them (the model is analysis/roofline.py)."""
from __future__ import annotations

from analysis import roofline
from analysis.fmt import is_number
from analysis.sections import common as c

ROOFLINE_PATHS = (c.HEADLINE_PATH, "persistent")
VERDICT_ORDER = (roofline.LATENCY_BOUND, roofline.MEMORY_BOUND, roofline.COMPUTE_BOUND,
                 roofline.NOT_TIMED, roofline.NOT_MODELLED)


def table(name: str, kern, run: dict, ceil: dict) -> dict:
    rows = roofline.roofline_rows(kern, run["recipe"], ceil)
    counts = {v: sum(1 for r in rows if r["verdict"] == v) for v in VERDICT_ORDER}
    timed = [r for r in rows if r["compute_fraction"] is not None]
    out = {"path": name, "rows": rows, "n": len(rows),
           "counts": [{"verdict": v, "n": n} for v, n in counts.items() if n], "totals": None}
    if len(timed) > 1:
        flops = sum(r["flops"] for r in timed)
        nbytes = sum(r["bytes"] for r in timed)
        ns = sum(r["total_ns"] for r in timed)
        out["top_compute"] = max(timed, key=lambda r: r["compute_fraction"])
        out["top_memory"] = max(timed, key=lambda r: r["memory_fraction"])
        out["totals"] = {"flops": flops, "bytes": nbytes, "ns": ns, "gflops": flops / ns,
                         "gbps": nbytes / ns, "compute": flops / ns / timed[0]["fp32_gflops"],
                         "memory": nbytes / ns / timed[0]["copy_gbps"]}
    return out


def section(ceil: dict | None, profiles: dict, run: dict) -> dict:
    out = {"ceilings": ceil, "rates": None, "shape": None, "shape_error": None, "tables": [],
           "headline": c.HEADLINE_PATH, "headline_profiled": c.HEADLINE_PATH in profiles,
           "latency_fraction": roofline.LATENCY_FRACTION,
           "accumulate_double": (run.get("build") or {}).get("accumulate") == "double",
           "l2_bytes": (run.get("gpu") or {}).get("l2_bytes")}
    if ceil is None:
        return out
    out["rates"] = roofline.ceiling_rates(ceil)
    copy = ceil["copy"]
    tensor = copy.get("tensor_bytes")
    if not is_number(tensor) and is_number(copy.get("bytes")):
        tensor = copy["bytes"] / 2
    run_gpu = (run.get("gpu") or {}).get("name")
    out["copy_tensor_bytes"] = tensor if is_number(tensor) else None
    out["other_gpu"] = run_gpu if ceil.get("gpu") and run_gpu and ceil["gpu"] != run_gpu else None
    if c.HEADLINE_PATH not in profiles:
        return out
    try:
        out["shape"] = roofline.shape_from_recipe(run["recipe"])
    except ValueError as exc:
        out["shape_error"] = str(exc)
        return out
    for name in ROOFLINE_PATHS:
        if name in profiles:
            out["tables"].append(table(name, profiles[name]["kern"], run, ceil))
    return out
