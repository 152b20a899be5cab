"""The PyTorch sections: which variants a run included and each one's precision, each
variant's compile and capture seconds apart from its epoch times, each variant's test accuracy
against float64 as pytorch.json records it, and the three profiling studies of
harness/baseline/profiles.py
(memory peaks by category per optimizer against spec.layout's ledger and our binary's peak; step
time against batch size; the kernels of each Linear layer)."""
from __future__ import annotations

import re

from analysis.fmt import is_number, missing
from analysis.sections import common as c
from spec import torch_variants

MEMORY_GROUPS = ("parameters", "gradients", "optimizer_state", "activations", "inputs", "other")
GROUP_WORDS = {"parameters": "parameters", "gradients": "gradients",
               "optimizer_state": "optimizer state", "activations": "activations",
               "inputs": "inputs (the batch and the train set)", "other": "other"}
OUR_OPTIMIZER = "sgd_momentum"  # the binary trains with SGD, momentum 0.9
KERNEL_NAME_MAX = 72
HOST_BOUND_SHARE = 0.5  # the host issues the step for more than this share of every step's wall
PRECISION_BEFORE = ("written before the baseline recorded each variant's precision, when it ran "
                    "every variant in float32 with TF32 off")


def precisions(torch: dict | None) -> dict | None:
    """{"rows": [{"name", "precision"}], "words": [{"key", "what"}]}: each variant's precision
    (spec.torch_variants.precision_of: "fp32" for a file written before the field, None where
    unknown) and what each precision that occurs means; None without pytorch.json."""
    if torch is None:
        return None
    rows = [{"name": n, "precision": torch_variants.precision_of(rec, torch)}
            for n, rec in torch["variants"].items()]
    seen = {r["precision"] for r in rows}
    recorded = any("precision" in rec for rec in torch["variants"].values())
    return {"rows": rows, "words": [{"key": k, "what": w}
                                    for k, w in torch_variants.PRECISIONS.items() if k in seen],
            "note": None if recorded or "fastest_by_precision" in torch else PRECISION_BEFORE}


def variants(torch: dict | None) -> dict | None:
    """{"run": [...], "left_out": [{"name", "why"}], "rows": [...], "skipped_graphs": [...]}
    of pytorch.json; None without it. A row's `graph_skips` > 0 means Inductor skipped its CUDA
    graphs (the variant then runs eagerly between compiled kernels); its `precision` is
    spec.torch_variants.precision_of's. `fastest` is the fastest fp32 variant (common.fastest)."""
    if torch is None:
        return None
    recs = torch["variants"]
    rows = []
    for name, rec in recs.items():
        skips = rec.get("cudagraph_skips")
        rows.append({"name": name, "status": c.status(rec), "median": rec.get("median_ms"),
                     "precision": torch_variants.precision_of(rec, torch),
                     "cv": rec.get("cv_pct"), "compile": rec.get("compile_seconds"),
                     "capture": rec.get("capture_seconds"), "setup": rec.get("setup_seconds"),
                     "graph_skips": skips, "flag": is_number(skips) and skips > 0,
                     "memory": rec.get("max_memory_allocated_bytes")})
    left_out = [{"name": n, "why": w} for n, w in (torch.get("variants_left_out") or {}).items()]
    return {"run": torch.get("variants_run") or list(recs), "left_out": left_out, "rows": rows,
            "flagged": [r["name"] for r in rows if r["flag"]],
            "any_seconds": any(not missing(r[k]) for r in rows
                               for k in ("compile", "capture", "setup")),
            "fastest": c.fastest(recs), "full": torch.get("full")}


def accuracy(torch: dict | None) -> dict | None:
    """pytorch.json's accuracy on case 7's terms, as the baseline recorded it: per variant its
    last-N mean (`test_accuracy_last5_mean`), float64's (the top level's
    `fp64_test_accuracy_last5_mean`), the signed gap in pp (`accuracy_gap_pp_vs_fp64`) and its
    `accuracy_note`, and its precision (precisions(): "—" where unknown, with the words of each
    precision that occurs); None without pytorch.json. A file written before these fields has
    none of them: every value None and `recorded` False (the template shows "—")."""
    if torch is None:
        return None
    recs = torch["variants"]
    fp64 = torch.get("fp64_test_accuracy_last5_mean")
    rows = [{"name": name, "status": c.status(rec), "last": rec.get("test_accuracy_last5_mean"),
             "precision": torch_variants.precision_of(rec, torch),
             "fp64": fp64 if "test_accuracy_per_epoch" in rec else None,
             "gap": rec.get("accuracy_gap_pp_vs_fp64"), "note": rec.get("accuracy_note")}
            for name, rec in recs.items()]
    epochs = (torch.get("recipe") or {}).get("epochs")
    return {"rows": rows, "source": torch.get("fp64_source"),
            "precisions": precisions(torch)["words"], "precision_note": precisions(torch)["note"],
            "recorded": "fp64_source" in torch or any(
                "test_accuracy_last5_mean" in rec for rec in recs.values()),
            "last_n": min(c.LAST_N_ACCURACY, epochs) if is_number(epochs) else c.LAST_N_ACCURACY,
            "notes": sum(1 for r in rows if r["note"])}


def memory(doc: dict | None, run: dict) -> dict | None:
    """One row per category group: each optimizer's measured peak of that group beside the
    ledger's prediction (None where the ledger predicts no such group), then the totals."""
    if doc is None:
        return None
    opts = list(doc["optimizers"])
    cols = [{"key": k, "label": doc["optimizers"][k]["label"],
             "html": doc["optimizers"][k].get("html"),
             "timeline": doc["optimizers"][k].get("timeline")} for k in opts]
    rows = []
    for g in MEMORY_GROUPS:
        cells = []
        for k in opts:
            o = doc["optimizers"][k]
            led = o["ledger_bytes"].get(g)
            meas = o["groups_peak"][g]
            cells.append({"measured": meas, "ledger": led,
                          "diff": None if led is None else meas - led})
        rows.append({"group": g, "what": GROUP_WORDS[g], "cells": cells})
    totals = []
    for k in opts:
        o = doc["optimizers"][k]
        totals.append({"key": k, "label": o["label"], "peak_total": o["peak_total_bytes"],
                       "ledger_sum": sum(o["ledger_bytes"].values()),
                       "max_allocated": o.get("max_memory_allocated_bytes")})
    ledger = doc.get("ledger") or {}
    ours = (run.get("memory") or {}).get("peak_used_bytes")
    return {"batch": doc["batch"], "shape": doc.get("shape"), "device": doc.get("device"),
            "cols": cols, "rows": rows, "totals": totals, "plot": doc.get("plot"),
            "ours_peak": ours, "ours_optimizer": doc["optimizers"].get(OUR_OPTIMIZER, {})
            .get("label"), "ledger_total": ledger.get("total_sgd_momentum_bytes"),
            "ledger_data": ledger.get("data_bytes"), "run_batch": run["recipe"].get("batch"),
            "commit": doc.get("commit")}


def batch_steps(doc: dict | None) -> dict | None:
    """The step-time-vs-batch rows, and the numbers of the sentence on why 64× the work is not
    64× the time: the untraced step time and the summed kernel time from the first batch to the
    last, the GPU's busy fraction range, and the host's share of the traced wall time."""
    if doc is None:
        return None
    rows = [dict(b) for b in doc["batches"]]
    first, last = rows[0], rows[-1]
    for r in rows:
        r["kernel_vs_first"] = r["kernel_us_per_step"] / first["kernel_us_per_step"]
        r["host_share"] = r["host_us_per_step"] / r["wall_us_per_step"]
    busy = [r["gpu_busy_fraction"] for r in rows if is_number(r.get("gpu_busy_fraction"))]
    return {"rows": rows, "optimizer": doc.get("optimizer"), "steps_traced": doc.get("steps_traced"),
            "steps_timed": doc.get("steps_timed"), "first": first, "last": last,
            "work": last["work_vs_first"], "time": last["untraced_time_vs_first"],
            "kernel": last["kernel_vs_first"],
            "busy_min": min(busy) if busy else None, "busy_max": max(busy) if busy else None,
            "host_share_min": min(r["host_share"] for r in rows),
            "host_bound": min(r["host_share"] for r in rows) > HOST_BOUND_SHARE
            and (not busy or max(busy) < 1.0 - HOST_BOUND_SHARE),
            "commit": doc.get("commit")}


def short_kernel(name: str) -> str:
    """A kernel's name without 'void ' and its parameter list, cut to KERNEL_NAME_MAX."""
    n = name.removeprefix("void ").strip()
    depth, cut = 0, len(n)
    for i, ch in enumerate(n):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0 and not n[i - 1].isspace():
            cut = i
            break
    n = re.sub(r"\s+", " ", n[:cut])
    return n if len(n) <= KERNEL_NAME_MAX else n[:KERNEL_NAME_MAX - 1] + "…"


def linear(doc: dict | None) -> dict | None:
    """One row per kernel of each (batch, layer, phase), with the phase's GPU time a step."""
    if doc is None:
        return None
    groups = []
    for b in doc["batches"]:
        for layer in b["layers"]:
            for phase in ("forward", "backward"):
                ph = layer[phase]
                groups.append({"batch": b["batch"], "layer": layer["layer"],
                               "in_out": layer.get("in_out"), "phase": phase,
                               "gpu_us": ph["gpu_us_per_step"],
                               "kernels": [{"name": short_kernel(k["name"]), "op": k.get("op"),
                                            "per_step": k["instances_per_step"],
                                            "mean_us": k["mean_us"],
                                            "us_step": k["us_per_step"]}
                                           for k in ph["kernels"]]})
    return {"groups": groups, "batches": [b["batch"] for b in doc["batches"]],
            "optimizer": doc.get("optimizer"), "steps_traced": doc.get("steps_traced"),
            "commit": doc.get("commit")}
