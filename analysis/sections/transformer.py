"""The transformer extension's section of RESULTS.md (templates/results_transformer.md.j2): records from
results/transformer.json alone (harness/transformer/results.py writes it); when the file is absent,
{"present": False} and the template says what is not measured yet."""
from __future__ import annotations

# The PyTorch variants in the order the timing table shows them (others follow, sorted).
TORCH_ORDER = ("eager-encoder", "eager-sdpa-auto", "eager-sdpa-efficient", "eager-sdpa-math",
               "eager-sdpa-flash", "eager-sdpa-cudnn", "cuda-graph-encoder", "cuda-graph-sdpa",
               "compiled-default", "compiled-reduce-overhead")


def _share(r: dict) -> float:
    if r.get("value") is None:              # a NaN or infinite error (JSON null): the worst there is
        return float("inf")
    return r["value"] / r["limit"] if r.get("limit") else 0.0


def _checks(checks: dict) -> dict | None:
    """One table for every engine and weights: a row per (check, measure) with its limit and depth, a
    column per run; each run's weights, pass count, tightest row and top-1 agreement."""
    runs = [(e, k, c) for e, kinds in checks.items() for k, c in kinds.items() if c is not None]
    if not runs:
        return None
    cols, rows = [], {}
    for engine, kind, c in runs:
        rs = c.get("checks") or []
        tight = max(rs, key=_share, default=None)
        cols.append({"engine": engine, "kind": kind, "weights": c.get("weights"), "passed": c.get("passed"),
                     "n_pass": sum(1 for r in rs if r.get("passed")), "n": len(rs),
                     "layer_batch": c.get("layer_batch"), "logits_batch": c.get("logits_batch"),
                     "argmax_agree": c.get("argmax_agree"), "argmax_n": c.get("argmax_n"),
                     "tightest": tight, "tightest_share": _share(tight) if tight else None})
        for r in rs:
            row = rows.setdefault((r["name"], r["measure"]), {"name": r["name"], "measure": r["measure"],
                                                             "limit": r["limit"], "depth": r.get("depth"),
                                                             "values": [None] * len(runs), "passed": True})
            row["values"][len(cols) - 1] = r["value"]
            row["passed"] = row["passed"] and bool(r.get("passed"))
    return {"cols": cols, "rows": list(rows.values()), "passed": all(c["passed"] for c in cols)}


def _limiter(k: dict, ceilings: dict) -> dict:
    """The share of the FP32 rate and of the copy bandwidth a kernel row reached; the larger names what
    bounds it (None where a rate or ceiling is missing)."""
    fp32, bw = ceilings.get("fp32_tflops"), ceilings.get("copy_gb_per_s")
    f = k["tflops"] / fp32 if fp32 and k.get("tflops") is not None else None
    m = k["gb_per_s"] / bw if bw and k.get("gb_per_s") is not None else None
    bound = None
    if f is not None and m is not None:
        bound = "compute" if f >= m else "memory"
    return {"fp32_share": f, "bw_share": m, "bound": bound}


def _timing(t: dict | None) -> dict | None:
    if t is None:
        return None
    names = [n for n in TORCH_ORDER if any(n in r["torch"] for r in t["rows"])]
    names += sorted({n for r in t["rows"] for n in r["torch"]} - set(names))
    misses = [r for r in t["rows"] if r.get("acceptance_met") is False]
    ours_names = list(dict.fromkeys(k for r in t["rows"] if r.get("ours") for k in r["ours"]["variants"]))
    return {"rows": t["rows"], "torch_names": names, "ours_names": ours_names, "tiles": any(r.get("tiles") for r in t["rows"]), "goal": t.get("goal"), "acceptance": t.get("acceptance"),
            "fp32_tflops": t.get("fp32_tflops"), "fp32_source": t.get("fp32_source"),
            "compile_modes": t.get("compile_modes") or {}, "warmup": t.get("warmup"), "repeats": t.get("repeats"),
            "torch_version": t.get("torch_version"), "misses": misses,
            "all_goal": all(r.get("goal_met") for r in t["rows"]) if t["rows"] else None}


def _profile(p: dict | None, ceilings: dict) -> dict | None:
    if p is None or not p.get("kernels"):
        return None
    rows = [k | _limiter(k, ceilings) for k in p["kernels"]]
    return {"batch": p.get("batch"), "engine": p.get("engine"), "report": p.get("report"), "csv": p.get("csv") or {}, "rows": rows,
            "widest": rows[0], "gpu_ns": p.get("gpu_ns")}


def section(doc: dict | None) -> dict:
    """Everything the template shows; {"present": False} without results/transformer.json."""
    if doc is None:
        return {"present": False}
    ceilings = doc.get("ceilings") or {}
    checks = doc.get("checks") or {}
    model = doc.get("model") or {}
    origin = (doc.get("weights") or {}).get("origin") or {}
    accs = origin.get("test_accuracy_per_epoch") or []
    definitions = list(dict.fromkeys(r["detail"] for kinds in checks.values() for c in kinds.values() if c
                                     for r in c.get("checks") or [] if r.get("detail")))
    return {"present": True, "mflop_per_image": (model.get("flop_per_image") or 0) / 1e6,
            "last_train_accuracy": accs[-1] if accs else None, "definitions": definitions, "commit": doc.get("commit"), "date": doc.get("date_utc"), "gpu": doc.get("gpu"),
            "model": doc.get("model") or {}, "config": doc.get("config") or {}, "weights": doc.get("weights"),
            "checks": _checks(checks), "checks_passed": doc.get("checks_passed"),
            "engines_passed": doc.get("engines_passed"), "accuracy": doc.get("accuracy"),
            "timing": _timing(doc.get("timing")), "profile": _profile(doc.get("profile"), ceilings),
            "ceilings": ceilings}
