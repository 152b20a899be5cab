"""The transformer extension's section of RESULTS.md (templates/results_transformer.md.j2): records from
results/transformer.json alone (harness/transformer/results.py writes it), grouped per precision
(spec/transformer.py PRECISIONS, then PyTorch's reference precisions); when the file is absent,
{"present": False} and the template says what is not measured yet. A file from before the bf16 engine
has no precision anywhere: its checks, accuracy and timing rows are fp32's, bf16's "not measured yet"."""
from __future__ import annotations

from spec.transformer import (PRECISIONS, REFERENCE_PRECISIONS, TORCH_FAMILIES, TORCH_VARIANTS, precision_name,
                              torch_key)

# The PyTorch variants of each precision in the order the timing tables show them: family by family
# (TORCH_FAMILIES' order), variant by variant (TORCH_VARIANTS'); others follow, sorted.
TORCH_ORDER = tuple(torch_key(f, v) for f in TORCH_FAMILIES for v in TORCH_VARIANTS)
# How the report names each precision, ours and PyTorch's.
PRECISION_WORDS = {
    "fp32": {"label": "FP32", "ours": "float32 throughout (the `fp32` and `tf32x3` engines)",
             "torch": "float32 with TF32 off"},
    "bf16": {"label": "BF16", "ours": "every GEMM's operands rounded to bfloat16, products summed in float32, "
                                      "LayerNorm, softmax, GELU and the residual stream in float32 (the `bf16` engine)",
             "torch": "under `torch.autocast` to bfloat16 (`bf16/…`) and with model and images cast to bfloat16 "
                      "(`bf16-model/…`)"},
    "tf32": {"label": "TF32", "ours": "none of our engines (`tf32x3` is float32-accurate and compared at FP32)",
             "torch": "float32 tensors with TF32 matmuls and cuDNN (`tf32/…`)"},
}


def _share(r: dict) -> float:
    if r.get("value") is None:              # a NaN or infinite error (JSON null): the worst there is
        return float("inf")
    return r["value"] / r["limit"] if r.get("limit") else 0.0


def _check_table(runs: list) -> dict:
    """One table of runs [(engine, kind, doc)] of one precision: a row per (check, measure) with its
    limit and depth, a column per run; each run's weights, pass count, tightest row and top-1 agreement."""
    cols, rows = [], {}
    for engine, kind, c in runs:
        rs = c.get("checks") or []
        tight = max(rs, key=_share, default=None)
        cols.append({"engine": engine, "kind": kind, "weights": c.get("weights"), "passed": c.get("passed"),
                     "precision": c.get("precision") or "fp32", "u": c.get("u"), "u_operands": c.get("u_operands"),
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


def _checks(checks: dict) -> dict | None:
    """Every engine's and weights' checks: `cols` all runs; `tables` one per precision (its runs'
    limits are that precision's), in PRECISIONS' order, each {precision, u (float32's unit roundoff),
    u_operands (the GEMM operands' own rounding: 0 or absent at fp32), cols, rows, passed}."""
    runs = [(e, k, c) for e, kinds in checks.items() for k, c in kinds.items() if c is not None]
    if not runs:
        return None
    by_precision: dict[str, list] = {}
    for run in runs:
        by_precision.setdefault(run[2].get("precision") or "fp32", []).append(run)
    order = [p for p in PRECISIONS if p in by_precision] + sorted(set(by_precision) - set(PRECISIONS))
    tables = []
    for p in order:
        t = _check_table(by_precision[p])
        tables.append(t | {"precision": p, "words": PRECISION_WORDS.get(p, {}), "u": t["cols"][0]["u"],
                           "u_operands": t["cols"][0]["u_operands"]})
    cols = [c for t in tables for c in t["cols"]]
    return {"cols": cols, "tables": tables, "passed": all(c["passed"] for c in cols),
            "missing": [p for p in PRECISIONS if p not in by_precision]}


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


def _torch_names(rows: list) -> list[str]:
    names = [n for n in TORCH_ORDER if any(n in r["torch"] for r in rows)]
    return names + sorted({n for r in rows for n in r["torch"]} - set(names))


def _timing_table(precision: str, rows: list) -> dict:
    """One precision's rows (ours and PyTorch's at that precision) with what the template shows."""
    return {"precision": precision, "words": PRECISION_WORDS.get(precision, {}), "rows": rows,
            "torch_names": _torch_names(rows),
            "ours_names": list(dict.fromkeys(k for r in rows if r.get("ours") for k in r["ours"]["variants"])),
            "misses": [r for r in rows if r.get("acceptance_met") is False],
            "tiles": any(r.get("tiles") for r in rows),
            "judged": [r for r in rows if r.get("ratio") is not None],
            "n_acceptance": sum(1 for r in rows if r.get("acceptance_met")),
            "n_goal": sum(1 for r in rows if r.get("goal_met")),
            "failed_engine": any((r.get("ours") or {}).get("engine_passed") is False for r in rows)}


def _timing(t: dict | None) -> dict | None:
    """The timing rows per precision: `tables` for our precisions (each judged against PyTorch's fastest
    of the same precision; one with no rows is not measured yet), `reference` PyTorch's reference
    precisions (tf32) with rows only; `rows` every row (a row without "precision" is fp32's)."""
    if t is None:
        return None
    by_precision: dict[str, list] = {}
    for r in t["rows"]:
        by_precision.setdefault(r.get("precision") or "fp32", []).append(r)
    tables = [_timing_table(p, by_precision.get(p, [])) for p in PRECISIONS]
    reference = [_timing_table(p, by_precision.get(p, [])) for p in REFERENCE_PRECISIONS]
    misses = [r for tab in tables for r in tab["misses"]]
    return {"rows": t["rows"], "tables": tables, "reference": reference, "goal": t.get("goal"),
            "acceptance": t.get("acceptance"), "fp32_tflops": t.get("fp32_tflops"), "fp32_source": t.get("fp32_source"),
            "compile_modes": t.get("compile_modes") or {}, "warmup": t.get("warmup"), "repeats": t.get("repeats"),
            "torch_version": t.get("torch_version"), "torch_cut": t.get("torch_cut") or [], "misses": misses,
            "all_goal": all(r.get("goal_met") for r in t["rows"] if r.get("ours")) if t["rows"] else None}


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
            "accuracies": [{"precision": p, "words": PRECISION_WORDS[p], "doc": doc.get(precision_name("accuracy", p))}
                           for p in PRECISIONS],
            "timing": _timing(doc.get("timing")), "profile": _profile(doc.get("profile"), ceilings),
            "ceilings": ceilings}
