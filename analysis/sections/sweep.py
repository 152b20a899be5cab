"""The width and batch sweep (results/sweep.json): its points as numbers, for SWEEP.md and for
RESULTS.md's memory, cost and full-split sections."""
from __future__ import annotations

from analysis.fmt import finite
from analysis.sections import common as c

EAGER, GRAPH = c.EAGER_VARIANT, c.TORCH_GRAPH_VARIANT


def point_label(hidden, batch) -> str:
    """A point's name as harness/studies/sweep.py gives it: h256_b128."""
    return f"h{int(hidden)}_b{int(batch)}"


def inv(x):
    return 1.0 / x if finite(x) and x > 0 else None


NO_METRICS = {"passed": False, "error": None, "median": None, "cv": None, "images_per_s": None,
              "step_us": None, "cost": None, "accuracy": None}


def metrics(m: dict | None) -> dict | None:
    """One path or variant at a point: its numbers and whether it passed."""
    if not m:
        return None
    return {"passed": bool(m.get("passed")) and finite(m.get("median_ms")),
            "error": m.get("error"), "median": m.get("median_ms"), "cv": m.get("cv_pct"),
            "images_per_s": m.get("images_per_s"), "step_us": m.get("step_us"),
            "cost": m.get("gpu_s_per_1000_images"), "accuracy": m.get("test_accuracy")}


def row(p: dict) -> dict:
    """One point: the best CUDA path, PyTorch eager and cuda-graph, the ratios."""
    ratio_e, ratio_g = p.get("ratio_best_cuda_vs_eager"), p.get("ratio_best_cuda_vs_cuda_graph")
    return {"label": p["label"], "hidden": p["hidden"], "batch": p["batch"],
            "steps": p.get("steps_per_epoch"), "train_size": p.get("train_size"),
            "epochs": p.get("epochs"), "best_path": p.get("best_cuda_path"),
            "first_error": p["errors"][0] if p["errors"] else "",
            "best": metrics(p.get("best_cuda")) or NO_METRICS,
            "eager": metrics(p["pytorch"].get(EAGER)) or NO_METRICS,
            "graph": metrics(p["pytorch"].get(GRAPH)) or NO_METRICS,
            "ratio_eager": ratio_e, "ratio_graph": ratio_g,
            "speedup_eager": inv(ratio_e), "speedup_graph": inv(ratio_g)}


def memory_row(p: dict) -> dict:
    mem = p.get("memory") or {}
    led = mem.get("ledger") or {}
    peak, total = mem.get("cuda_peak_used_bytes"), led.get("total_sgd_momentum_bytes")
    return {"label": p["label"], "ledger": led, "opt": led.get("optimizer_state_bytes") or {},
            "total": total, "peak": peak,
            "peak_over_ledger": peak / total if finite(peak) and finite(total) and total else None,
            "torch": mem.get("torch_max_memory_allocated_bytes") or {}}


def _names(points: list[dict], group: str, first=()) -> list[str]:
    """Path / variant names in first-seen order, `first` (the configured order) leading."""
    names = [n for n in first if any(n in p[group] for p in points)]
    for p in points:
        names += [n for n in p[group] if n not in names]
    return names


def sweep(doc: dict) -> dict:
    """The SWEEP.md context (numbers and records) and the points the plots draw."""
    cfg = doc["config"]
    points = doc["points"]
    width = sorted((p for p in points if "width" in p["sweeps"]), key=lambda p: p["hidden"])
    batch = sorted((p for p in points if "batch" in p["sweeps"]), key=lambda p: p["batch"])
    every = sorted(points, key=lambda p: (p["hidden"], p["batch"]))
    cuda = _names(points, "cuda", cfg.get("paths") or ())
    torch = _names(points, "pytorch", cfg.get("pytorch_variants") or ())
    gpu = doc.get("gpu") or {}
    return {
        "gpu_name": gpu.get("name"), "gpu_cc": gpu.get("compute_capability"),
        "driver": doc.get("driver"), "date": doc.get("date_utc"), "commit": doc.get("commit"),
        "torch_version": doc.get("torch_version"), "torch_cuda": doc.get("torch_cuda_version"),
        "complete": bool(doc.get("complete")), "config": cfg, "notes": doc.get("notes") or {},
        "epochs": sorted({p["epochs"] for p in points if finite(p.get("epochs"))}),
        "train_sizes": sorted({p["train_size"] for p in points if finite(p.get("train_size"))}),
        "cuda_names": cuda, "torch_names": torch,
        "width_rows": [row(p) for p in width], "batch_rows": [row(p) for p in batch],
        "all_rows": [{"label": p["label"],
                      "cells": [metrics(p["cuda"].get(n)) for n in cuda]
                      + [metrics(p["pytorch"].get(n)) for n in torch]} for p in every],
        "memory_rows": [memory_row(p) for p in every],
        "cost_rows": [{"label": p["label"], "best_path": p.get("best_cuda_path"),
                       "best": metrics(p.get("best_cuda")) or NO_METRICS,
                       "cells": [metrics(p["cuda"].get(n)) or NO_METRICS for n in cuda]
                       + [metrics(p["pytorch"].get(n)) or NO_METRICS for n in torch],
                       "torch": [metrics(p["pytorch"].get(n)) or NO_METRICS for n in torch]}
                      for p in every],
        "problems": [{"label": p["label"], "status": p["status"], "errors": p["errors"]}
                     for p in every if p["errors"]],
        "n_points": len(points), "n_ok": sum(1 for p in points if p["status"] == "ok"),
        "commands": [{"label": p["label"], "command": p.get("command"),
                      "pytorch_command": p.get("pytorch_command")}
                     for p in every if p.get("command")],
        "fastest_torch": fastest_torch(points),
        "_width_points": width, "_batch_points": batch,
    }


def fastest_torch(points: list[dict]) -> list[str]:
    """The PyTorch variants that are the fastest passing one at some point, in point order."""
    out = []
    for p in points:
        med = {n: m["median_ms"] for n, m in p["pytorch"].items()
               if m and m.get("passed") is not False and not m.get("error")
               and finite(m.get("median_ms"))}
        if med:
            best = min(med, key=lambda n: med[n])
            if best not in out:
                out.append(best)
    return out


def recipe_point(doc: dict, run: dict) -> tuple[str | None, dict | None]:
    """(label, point) of the sweep at run.json's recipe width and batch."""
    recipe = run["recipe"]
    hidden, batch = recipe.get("hidden_dim"), recipe.get("batch")
    if not (finite(hidden) and finite(batch)):
        return None, None
    name = point_label(hidden, batch)
    return name, next((p for p in doc["points"] if p["label"] == name), None)
