"""The gate, the epoch times, the tiers, the goals, test accuracy and the loss curves."""
from __future__ import annotations

from analysis.fmt import is_number, missing
from analysis.sections import common as c
from spec import torch_variants
from spec.stats import last_n_mean


def cases(run: dict, verdict) -> dict:
    """The gate's cases; case 8 (perf, README's numbering) is marked `timing`: the epoch-time
    table holds its numbers, so RESULTS.md leaves its row out. The hints are the verdict's
    (spec/verdict.py: its one owner's, over the same evidence)."""
    rows = [{"id": x["id"], "name": x["name"], "value": x["value"], "limit": x["limit"],
             "detail": x.get("detail", ""), "passed": x["passed"],
             "timing": x["id"] == 8 or x["name"] == "perf"} for x in run["cases"]]
    return {"rows": rows, "passed": sum(1 for x in run["cases"] if x["passed"] is True),
            "total": len(rows), "hints": list(verdict.hints),
            "notes": [n for n in run.get("notes", []) if isinstance(n, str)]}


def path_checks(run: dict) -> list[dict] | None:
    """One row per CUDA path of run.json's per-path checks; None when run.json has none."""
    keys = ("parity_vs_fused", "parity_limit", "parity_vs_fp64", "deterministic",
            "accuracy_gap_pp", "test_accuracy_last5_mean", "warmup_epoch_ms")
    paths = run["paths"]
    if not any(k in rec for rec in paths.values() for k in keys):
        return None
    rows = []
    for name, rec in paths.items():
        parity, limit = rec.get("parity_vs_fused"), rec.get("parity_limit")
        rows.append({"path": name, "status": c.status(rec),
                     "launches": c.declared_launches(rec),
                     "parity_fused": parity, "parity_limit": limit,
                     "over_limit": not missing(parity) and not missing(limit) and parity > limit,
                     "parity_ref": rec.get("parity_vs_fp64"),
                     "deterministic": rec.get("deterministic"),
                     "last_mean": rec.get("test_accuracy_last5_mean"),
                     "gap": rec.get("accuracy_gap_pp"), "warmup": rec.get("warmup_epoch_ms")})
    return rows


def timing(run: dict, torch: dict | None) -> dict:
    """A row per CUDA path and PyTorch variant, with the median against PyTorch eager's and
    against PyTorch's fastest passing variant of the row's own precision (fp32's for a record
    that names none: `best_torch`; a tf32 or bf16 row's: `other_precisions` names them)."""
    variants = (torch or {}).get("variants", {})
    eager = c.passed_median(variants.get(c.EAGER_VARIANT))
    best_torch = c.fastest(variants)
    best_torch_ms = c.passed_median(variants.get(best_torch)) if best_torch else None
    by_precision = {p: c.passed_median(variants.get(top)) if (top := c.fastest(variants, p))
                    else None for p in torch_variants.PRECISIONS}
    rows, others = [], {}
    for kind, records in (("cuda", run["paths"]), ("pytorch", variants)):
        for name, rec in records.items():
            m = rec.get("median_ms")
            prec = rec.get("precision", torch_variants.FP32)
            against = by_precision.get(prec)
            if prec != torch_variants.FP32 and prec in by_precision:
                others[prec] = c.fastest(variants, prec)
            rows.append({"name": name, "kind": kind, "status": c.status(rec),
                         "epochs_timed": len(rec.get("epoch_ms") or []),
                         "mean": rec.get("mean_ms"), "median": m, "min": rec.get("min_ms"),
                         "max": rec.get("max_ms"), "cv": rec.get("cv_pct"),
                         "vs_eager": m / eager if eager and not missing(m) else None,
                         "vs_best_torch": m / against if against and not missing(m) else None,
                         "compile_seconds": rec.get("compile_seconds"),
                         "config": rec.get("config") if kind == "cuda" else None})
    return {"rows": rows, "eager_median": eager, "best_torch": best_torch,
            "best_torch_median": best_torch_ms, "torch_run": torch is not None,
            "other_precisions": [{"label": c.PRECISION_LABELS[p], "variant": v,
                                  "median": by_precision[p]} for p, v in others.items()]}


def tier_for(name: str, paths: dict, eager: dict | None) -> dict:
    """The tier ladder for one path; each criterion with its numbers and met: True, False or
    None (not evaluable)."""
    rec = paths[name]
    if c.is_skipped(rec):
        return {"path": name, "tier": "none", "excluded": c.error_line(rec), "criteria": []}
    if not c.passed(rec):
        return {"path": name, "tier": "none", "excluded": "failed the gate", "criteria": []}
    median = c.passed_median(rec)
    if median is None:
        return {"path": name, "tier": "none", "excluded": "no median epoch time", "criteria": []}
    base = c.passed_median(paths.get(c.BASELINE_PATH))
    eager_median = c.passed_median(eager)
    cv = rec.get("cv_pct")
    ratio = median / eager_median if eager_median else None
    cv_ok = not missing(cv) and float(cv) < c.GOLD_MAX_CV_PCT
    criteria = [
        {"tier": "bronze", "met": None if base is None else median < base, "median": median,
         "against": base, "ratio": median / base if base else None},
        {"tier": "silver", "met": None if ratio is None else ratio <= c.SILVER_MAX_RATIO,
         "median": median, "against": eager_median, "ratio": ratio},
        {"tier": "gold", "met": None if ratio is None else (ratio <= c.GOLD_MAX_RATIO and cv_ok),
         "median": median, "against": eager_median, "ratio": ratio, "cv": cv}]
    tier = "none"
    for crit in criteria:
        if crit["met"] is not True:
            break
        tier = crit["tier"]
    return {"path": name, "tier": tier, "excluded": None, "criteria": criteria}


def tiers(run: dict, torch: dict | None) -> dict:
    """The tiers of every passing path but the baseline; `same` names the tier when every path
    has it (the table then collapses to one line)."""
    paths = run["paths"]
    eager = (torch or {}).get("variants", {}).get(c.EAGER_VARIANT)
    rows = [tier_for(n, paths, eager) for n, r in paths.items()
            if n != c.BASELINE_PATH and c.passed(r)]
    kinds = {r["tier"] for r in rows}
    return {"rows": rows, "same": kinds.pop() if len(kinds) == 1 else None,
            "headline": tier_for(c.HEADLINE_PATH, paths, eager) if c.HEADLINE_PATH in paths
            else None,
            "rules": {"silver": c.SILVER_MAX_RATIO, "gold": c.GOLD_MAX_RATIO,
                      "gold_cv": c.GOLD_MAX_CV_PCT, "baseline": c.BASELINE_PATH,
                      "headline": c.HEADLINE_PATH}}


def _all(conds: list) -> bool | None:
    """False when any condition fails, else None when any is not evaluable, else True."""
    return False if False in conds else (None if None in conds else True)


def goals(run: dict, torch: dict | None) -> dict:
    """The goals of GOALS_SOURCE: each {"key", numbers..., "met": True/False/None}."""
    paths = run["paths"]
    variants = (torch or {}).get("variants", {})
    best = c.fastest(paths)
    best_ms = c.passed_median(paths.get(best)) if best else None
    eager = c.passed_median(variants.get(c.EAGER_VARIANT))
    tgraph = c.passed_median(variants.get(c.TORCH_GRAPH_VARIANT))
    fused = c.passed_median(paths.get(c.HEADLINE_PATH))
    base = c.passed_median(paths.get(c.BASELINE_PATH))
    rows = [{"key": "fastest_ms", "limit": c.GOAL_FASTEST_MAX_MS, "path": best, "median": best_ms,
             "met": None if best_ms is None else best_ms <= c.GOAL_FASTEST_MAX_MS}]
    for key, limit, against, variant in (
            ("fastest_vs_eager", c.GOAL_FASTEST_VS_EAGER, eager, c.EAGER_VARIANT),
            ("fastest_vs_graph", c.GOAL_FASTEST_VS_TORCH_GRAPH, tgraph, c.TORCH_GRAPH_VARIANT)):
        ratio = best_ms / against if best_ms is not None and against else None
        rows.append({"key": key, "limit": limit, "path": best, "median": best_ms,
                     "variant": variant, "against": against, "ratio": ratio,
                     "met": None if ratio is None else ratio <= limit})
    ratio = fused / eager if fused is not None and eager else None
    conds = [None if ratio is None else ratio <= c.GOAL_FUSED_VS_EAGER,
             None if fused is None or base is None else fused < base]
    rows.append({"key": "fused_vs_eager", "limit": c.GOAL_FUSED_VS_EAGER, "path": c.HEADLINE_PATH,
                 "baseline": c.BASELINE_PATH, "median": fused, "against": eager, "ratio": ratio,
                 "base": base, "base_ratio": fused / base if fused is not None and base else None,
                 "met": None if fused is None else _all(conds)})
    cvs = {n: r.get("cv_pct") for n, r in paths.items()}
    have = {n: float(v) for n, v in cvs.items() if not missing(v)}
    worst = max(have, key=lambda n: have[n]) if have else None
    rows.append({"key": "cv", "limit": c.GOAL_MAX_CV_PCT, "worst": worst,
                 "cv": have.get(worst), "n": len(have),
                 "lacking": [n for n, v in cvs.items() if missing(v)],
                 "met": None if not have else _all([v < c.GOAL_MAX_CV_PCT for v in have.values()]
                                                   + [None] * (len(cvs) - len(have)))})
    return {"rows": rows, "source": c.GOALS_SOURCE}


def last_n_accuracy(rec: dict):
    """The mean test accuracy over the last LAST_N_ACCURACY epochs of a path, variant or the
    float64 reference: its recorded `test_accuracy_last5_mean`, else from its per-epoch list;
    None where neither has it."""
    return _last_n(rec)


def relative_losses(losses, ref) -> list[tuple[int, float]]:
    """[(epoch from 1, loss / float64 loss − 1)] over the epochs both curves have, a finite
    float64 loss that is not zero beside a finite loss (signed: above float64 is positive)."""
    return [(e + 1, x / r - 1.0) for e, (x, r) in enumerate(zip(losses or [], ref or []))
            if is_number(x) and is_number(r) and r]


def _last_n(rec: dict):
    v = rec.get("test_accuracy_last5_mean") if c.LAST_N_ACCURACY == 5 else None
    if not missing(v):
        return float(v)
    per = rec.get("test_accuracy_per_epoch") or []
    if len(per) >= c.LAST_N_ACCURACY and all(is_number(a) for a in per[-c.LAST_N_ACCURACY:]):
        return last_n_mean(per, c.LAST_N_ACCURACY)
    return None


def accuracy(run: dict, torch: dict | None) -> dict:
    ref = run.get("reference_fp64") or {}
    variants = (torch or {}).get("variants", {})
    ref_acc, ref_last = ref.get("test_accuracy"), _last_n(ref)
    rows = []
    for kind, name, rec in ([("cuda", n, r) for n, r in run["paths"].items()]
                            + [("reference", "float64 reference", ref)]
                            + [("pytorch", n, r) for n, r in variants.items()]):
        a, last = rec.get("test_accuracy"), _last_n(rec)
        rows.append({"kind": kind, "name": name, "status": c.status(rec, default_pass=True),
                     "accuracy": a, "last": last,
                     "vs_ref": None if missing(a) or missing(ref_acc) else 100.0 * (a - ref_acc),
                     "last_vs_ref": None if last is None or ref_last is None
                     else 100.0 * (last - ref_last)})
    return {"rows": rows, "last_n": c.LAST_N_ACCURACY}


def loss_series(run: dict, torch: dict | None) -> list[dict]:
    """Every loss curve: [{"kind", "name", "loss": [...]}], CUDA paths, the float64 reference,
    then the PyTorch variants."""
    variants = (torch or {}).get("variants", {})
    ref = run.get("reference_fp64") or {}
    out = [{"kind": "cuda", "name": n, "loss": r["loss_per_epoch"]}
           for n, r in run["paths"].items() if r.get("loss_per_epoch")]
    if ref.get("loss_per_epoch"):
        out.append({"kind": "reference", "name": "float64 reference",
                    "loss": ref["loss_per_epoch"]})
    out += [{"kind": "pytorch", "name": n, "loss": r["loss_per_epoch"]}
            for n, r in variants.items() if r.get("loss_per_epoch")]
    return out


def loss_deviation(run: dict, torch: dict | None) -> list[dict]:
    """|loss / float64 loss − 1| per epoch of each CUDA path and PyTorch variant: [{"kind",
    "name", "epochs": [1..], "dev": [...]}] (a zero deviation stays 0; the plot drops it)."""
    ref = (run.get("reference_fp64") or {}).get("loss_per_epoch") or []
    out = []
    for s in loss_series(run, torch):
        if s["kind"] == "reference":
            continue
        pts = [(e, abs(d)) for e, d in relative_losses(s["loss"], ref)]
        if pts:
            out.append({"kind": s["kind"], "name": s["name"], "epochs": [e for e, _ in pts],
                        "dev": [d for _, d in pts]})
    return out


def loss_curve(run: dict, torch: dict | None) -> dict | None:
    """The first LOSS_CURVE_EPOCHS epochs of each CUDA path and PyTorch eager against float64:
    cells {"loss", "rel", "flagged"}; None without a float64 curve."""
    ref = (run.get("reference_fp64") or {}).get("loss_per_epoch") or []
    if not ref:
        return None
    eager = (torch or {}).get("variants", {}).get(c.EAGER_VARIANT)
    series = [(f"CUDA {n}", r.get("loss_per_epoch") or []) for n, r in run["paths"].items()]
    if eager is not None:
        series.append((f"PyTorch {c.EAGER_VARIANT}", eager.get("loss_per_epoch") or []))
    n = min(c.LOSS_CURVE_EPOCHS, len(ref))
    rows, flagged = [], []
    for e in range(n):
        r = float(ref[e])
        cells = []
        for label, losses in series:
            if e >= len(losses) or missing(losses[e]):
                cells.append(None)
                continue
            x = float(losses[e])
            rel = (x - r) / r if r else None
            flag = rel is not None and abs(rel) > c.LOSS_CURVE_FLAG
            if flag:
                flagged.append({"label": label, "epoch": e + 1, "rel": rel})
            cells.append({"loss": x, "rel": rel, "flagged": flag})
        rows.append({"epoch": e + 1, "ref": r, "cells": cells})
    by_label: dict[str, list] = {}
    for f in flagged:
        by_label.setdefault(f["label"], []).append(f)
    return {"epochs": n, "labels": [label for label, _ in series], "rows": rows,
            "flag": c.LOSS_CURVE_FLAG,
            "flagged": [{"label": k, "epochs": v} for k, v in by_label.items()]}
