"""The distance to the floor of the fastest passing path (issue 19), and the stationary kernel's
phase table (results/stationary_phases.json, written by dev/stationary/stationary_epoch.cu).

Each floor term is computed from measurements of the same session, never typed:
- FMA: the step's FLOPs (analysis/roofline.py's model of the whole step, the persistent kernel's
  row: every operation of the fused path's step) at the FP32 rate of ceilings.json's matmul;
- synchronisation: cross-SM synchronisations a step × the measured cost of one: for the
  stationary kernel its counter wait (the phase of stationary_phases.json whose name says
  "wait"), one a step; for the persistent kernels the barrier-only row of
  persistent_phases.json over PERSISTENT_BARRIERS a step;
- cluster barriers (the stationary kernel): its phases of stationary_phases.json whose names
  start "cluster barrier" (two a step: each a GPU-scope fence and a wait for the cluster's
  slowest block), their slowest-block times summed;
- bytes: the bytes a step must move from L2 or DRAM (the persistent kernels: the roofline
  model's minimum bytes; the stationary kernel keeps the weights and velocities on chip, so its
  batch only: the images as bytes and the labels) at ceilings.json's copy rate, a DRAM rate and
  so an upper bound on the time of L2 traffic;
- the remainder: the measured step less the terms that were measured.
"""
from __future__ import annotations

from analysis import roofline
from analysis.fmt import is_number
from analysis.sections import common as c

STATIONARY = "stationary"
PERSISTENT_BARRIERS = 3       # grid barriers a step of the persistent kernels (cuda/paths/persistent_path.cu)
STATIONARY_SYNCS = 1          # one grid-wide dependency a step: the logits' counter
LABEL_BYTES = 4               # an int32 label


def _wait_phase(sp: dict) -> dict | None:
    return next((p for p in sp["phases"] if "wait" in p["name"].lower()), None)


def stationary(sp: dict | None, run: dict) -> dict | None:
    """The phase section: each phase's slowest-block and mean µs a step and its share of the
    median step, the largest phase, the wait skew, and the variants against the shipped one."""
    if sp is None:
        return None
    step = float(sp["step_us"])
    rows = [{"name": p["name"], "slowest": p["slowest_us"], "mean": p["mean_us"],
             "share": p["slowest_us"] / step} for p in sp["phases"]]
    top = max(rows, key=lambda r: r["slowest"])
    shipped = next((v for v in sp.get("variants", []) if v["shipped"]), None)
    variants = [{"name": v["name"], "us": v["us_per_step"], "cv": v.get("cv_pct"),
                 "shipped": v["shipped"],
                 "vs_shipped": None if shipped is None or v is shipped
                 else v["us_per_step"] / shipped["us_per_step"] - 1.0}
                for v in sp.get("variants", [])]
    steps = run["recipe"]["steps_per_epoch"]
    m = c.passed_median(run["paths"].get(sp.get("kernel", STATIONARY)))
    return {"kernel": sp.get("kernel", STATIONARY), "shape": sp.get("shape"),
            "source": sp.get("source"), "commit": sp.get("commit"), "step_us": step,
            "rows": rows, "top": top, "phase_sum": sum(r["slowest"] for r in rows),
            "wait_skew": sp.get("wait_skew_us"), "variants": variants,
            "run_us": None if m is None else m * 1000.0 / steps}


def stationary_limit(section: dict | None, path: str) -> dict | None:
    """The summary's "what limits it" for the stationary path from its phases."""
    if section is None or path != section["kernel"]:
        return None
    return {"path": path, "source": "stationary", "top": section["top"],
            "step_us": section["step_us"],
            "others": [r for r in section["rows"] if r is not section["top"]]}


def _barrier_us(phases: dict | None, kernel: str, steps: int) -> float | None:
    if phases is None:
        return None
    rows = [v for v in phases["variants"] if v["kernel"] == kernel and not v["phases"]]
    return float(rows[0]["median_ms"]) * 1000.0 / steps if rows else None


def floor(run: dict, ceilings: dict | None, phases: dict | None, sp: dict | None) -> dict:
    """The fastest passing path's measured step beside each floor term; terms that lack their
    measurement are None with `why`."""
    paths = run["paths"]
    best = c.fastest(paths)
    out = {"path": best, "ceilings": ceilings is not None, "terms": [], "measured_us": None}
    if best is None or ceilings is None:
        return out
    recipe = run["recipe"]
    steps = recipe["steps_per_epoch"]
    measured = c.passed_median(paths[best]) * 1000.0 / steps
    rates = roofline.ceiling_rates(ceilings)
    try:
        shape = roofline.shape_from_recipe(recipe)
    except ValueError as exc:
        out["shape_error"] = str(exc)
        return out
    model = roofline.epoch_model(shape)["k_persistent_epoch"]
    flops = model["flops"] / steps
    terms = [{"term": "fma", "count": flops, "mflop": flops / 1e6,
              "unit_cost": rates["fp32_gflops"],
              "us": flops / rates["fp32_gflops"] / 1e3}]
    if best == STATIONARY:
        wait = _wait_phase(sp) if sp is not None else None
        terms.append({"term": "sync", "kernel": best, "count": STATIONARY_SYNCS,
                      "source": "stationary_phases",
                      "phase": None if wait is None else wait["name"],
                      "unit_cost": None if wait is None else wait["slowest_us"],
                      "us": None if wait is None else STATIONARY_SYNCS * wait["slowest_us"],
                      "why": None if wait is not None else
                      ("no_file" if sp is None else "no_wait_phase")})
        bars = [p for p in sp["phases"] if p["name"].lower().startswith("cluster barrier")] if sp else []
        terms.append({"term": "cluster_sync", "kernel": best, "count": len(bars),
                      "phases": [p["name"] for p in bars], "source": "stationary_phases",
                      "us": sum(p["slowest_us"] for p in bars) if bars else None,
                      "why": None if bars else ("no_file" if sp is None else "no_barrier_phase")})
        nbytes = (shape.train_size * shape.I + shape.train_size * LABEL_BYTES) / steps
        byte_model = "batch"
    elif best in c.PERSISTENT_KERNELS:
        b = _barrier_us(phases, best, steps)
        terms.append({"term": "sync", "kernel": best, "count": PERSISTENT_BARRIERS,
                      "source": "persistent_phases", "phase": None,
                      "unit_cost": None if b is None else b / PERSISTENT_BARRIERS,
                      "us": b, "why": None if b is not None else "no_file"})
        nbytes = model["bytes"] / steps
        byte_model = "model"
    else:
        terms.append({"term": "sync", "kernel": best, "count": None, "source": None,
                      "phase": None, "unit_cost": None, "us": None, "why": "not_modelled"})
        nbytes = model["bytes"] / steps
        byte_model = "model"
    terms.append({"term": "bytes", "count": nbytes, "unit_cost": rates["copy_gbps"],
                  "us": nbytes / rates["copy_gbps"] / 1e3, "model": byte_model})
    known = sum(t["us"] for t in terms if is_number(t["us"]))
    terms.append({"term": "remainder", "us": measured - known,
                  "complete": all(is_number(t["us"]) for t in terms)})
    for t in terms:
        t["share"] = t["us"] / measured if is_number(t["us"]) else None
    out |= {"terms": terms, "measured_us": measured, "median_ms": measured * steps / 1000.0,
            "steps": steps, "fp32_tflops": rates["fp32_gflops"] / 1e3,
            "copy_gbps": rates["copy_gbps"], "other_gpu": ceilings.get("gpu")
            if ceilings.get("gpu") and ceilings.get("gpu") != (run.get("gpu") or {}).get("name")
            else None, "ceilings_commit": ceilings.get("commit"),
            "ceilings_date": ceilings.get("date_utc")}
    return out
