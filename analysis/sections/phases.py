"""Where the persistent kernels' epoch time goes (results/persistent_phases.json, schema 2).

Rows are told apart by what the file says of them (kernel, phases on, staging, production),
never by bit fields. A kernel's breakdown needs its barrier-only row (phases []) and its
single-phase rows at the same staging; the cost of a phase is its row's time above the
barrier-only row's."""
from __future__ import annotations

from analysis.fmt import missing

ALL_PHASES = ("A", "B", "C")


def _us(v: dict, steps: int) -> float:
    return float(v["median_ms"]) * 1000.0 / steps


def kernel_breakdown(phases: dict, kernel: str, steps: int) -> dict | None:
    """{"kernel", "staging", "barriers", "parts": [{"phase", "label", "us"}], "sum", "full"
    (the row running every phase at that staging, or None), "diff"} for one kernel; None when the
    file lacks its barrier-only row or its single-phase rows."""
    rows = [v for v in phases["variants"] if v["kernel"] == kernel]
    base = next((v for v in rows if not v["phases"] and v.get("production") is not True), None) \
        or next((v for v in rows if not v["phases"]), None)
    if base is None:
        return None
    staging = base["staging"]
    singles = [v for v in rows if len(v["phases"]) == 1 and v["staging"] == staging]
    if not singles:
        return None
    b = _us(base, steps)
    parts = [{"phase": v["phases"][0], "label": v["label"], "us": _us(v, steps) - b}
             for v in sorted(singles, key=lambda v: ALL_PHASES.index(v["phases"][0]))]
    total = b + sum(p["us"] for p in parts)
    full = next((v for v in rows if tuple(v["phases"]) == ALL_PHASES and v["staging"] == staging),
                None)
    full_us = None if full is None else _us(full, steps)
    return {"kernel": kernel, "staging": staging, "barriers": b, "barrier_label": base["label"],
            "parts": parts, "sum": total, "full_label": None if full is None else full["label"],
            "full": full_us, "diff": None if full_us is None else full_us - total,
            "diff_frac": None if full_us is None else abs(full_us - total) / total}


def staging_comparisons(phases: dict, steps: int) -> list[dict]:
    """Each kernel's production row against its other full-epoch rows (another staging), timed
    in the same process: [{"kernel", "production", "other", "production_us", "other_us",
    "diff", "frac"}]."""
    out = []
    rows = phases["variants"]
    for prod in (v for v in rows if v.get("production")):
        for other in rows:
            if (other is prod or other["kernel"] != prod["kernel"]
                    or tuple(other["phases"]) != tuple(prod["phases"])
                    or other["staging"] == prod["staging"]):
                continue
            p, o = _us(prod, steps), _us(other, steps)
            out.append({"kernel": prod["kernel"], "production": prod["label"],
                        "production_staging": prod["staging"], "other": other["label"],
                        "other_staging": other["staging"], "production_us": p, "other_us": o,
                        "diff": p - o, "frac": abs(p - o) / o})
    return out


def breakdown(phases: dict, run: dict) -> dict:
    """The section: one row per variant (median ms, µs a step, CV, µs above its kernel's
    barrier-only row), the per-kernel breakdowns, the staging comparisons, and the training
    run's median of each kernel's path."""
    steps = run["recipe"]["steps_per_epoch"]
    kernels = list(dict.fromkeys(v["kernel"] for v in phases["variants"]))
    parts = {k: kernel_breakdown(phases, k, steps) for k in kernels}
    rows = []
    for v in phases["variants"]:
        bd = parts.get(v["kernel"])
        us = _us(v, steps)
        above = (us - bd["barriers"] if bd is not None and v["phases"]
                 and v["staging"] == bd["staging"] else None)
        rows.append({"kernel": v["kernel"], "label": v["label"], "phases": v["phases"],
                     "staging": v["staging"], "production": v["production"],
                     "median": v["median_ms"], "us_step": us, "cv": v.get("cv_pct"),
                     "above": above})
    run_medians = {k: run["paths"][k].get("median_ms") for k in kernels
                   if k in run["paths"] and not missing(run["paths"][k].get("median_ms"))}
    return {"rows": rows, "steps": steps, "file_steps": phases.get("steps_per_epoch"),
            "breakdowns": [b for b in parts.values() if b is not None],
            "comparisons": staging_comparisons(phases, steps),
            "run_medians": {k: {"ms": m, "us": m * 1000.0 / steps} for k, m in run_medians.items()}}
