"""The width and batch sweep (results/sweep.json): its points as numbers, for SWEEP.md and for
RESULTS.md's memory, cost and full-split sections.

The headline of each point is the best CUDA path's median epoch over the fastest passed PyTorch
variant's at that point (named), judged against the issue's acceptance (a ratio of at most
ACCEPTANCE_RATIO) and goal (at most GOAL_RATIO). A sweep.json collected before the fastest
variant, the accumulators, the parity check and the roofline were recorded is read too: what it
lacks is derived from its medians where it can be, and shown as not recorded where it cannot.

Each precision (issue "Mixed precision with measured parity"): at each point, our best path of
that precision over PyTorch's fastest variant of the same precision (sweep.json's
points[].precisions, harness/studies/sweep_point.py precision_entry), judged by the same acceptance and
goal, with the best path's one-epoch parity against the fused fp32 path and both sides' first
epoch against the float64 epoch. The headline and every other table are fp32's: paths and
variants of another precision appear only in the tables of every path, memory and cost. A
sweep.json without per-precision entries (collected before them) is fp32 alone."""
from __future__ import annotations

from analysis import roofline_sweep
from analysis.fmt import finite
from analysis.sections import common as c
from spec.torch_variants import FP32, PRECISIONS

EAGER, GRAPH = c.EAGER_VARIANT, c.TORCH_GRAPH_VARIANT
ISSUE = "FP32 at scale"
ACCEPTANCE_RATIO = 0.8   # best CUDA / PyTorch's fastest at a point: the acceptance, at most this
GOAL_RATIO = 0.5         # ... and the goal
UNKNOWN = "unknown"      # an accumulator run.json does not state
SWEEP_ORDER = ("width", "batch", "extra")
PRECISION_ISSUE = "Mixed precision with measured parity"
PRECISION_LABELS = c.PRECISION_LABELS
OTHER_PRECISIONS = tuple(p for p in PRECISIONS if p != FP32)   # SWEEP.md's per-precision sections


def precision_of(m: dict | None) -> str | None:
    """A sweep.json METRICS entry's precision: its "precision"; fp32 where it has none (a
    sweep.json collected before the field, of float32 paths and variants only)."""
    return (m or {}).get("precision", FP32)


def _fp32(group: dict) -> dict:
    """The entries of a point's "cuda" or "pytorch" of precision fp32."""
    return {n: m for n, m in group.items() if precision_of(m) == FP32}


def point_label(hidden, batch) -> str:
    """A point's name as harness/studies/sweep_plan.py gives it: h256_b128."""
    return f"h{int(hidden)}_b{int(batch)}"


def inv(x):
    return 1.0 / x if finite(x) and x > 0 else None


NO_METRICS = {"passed": False, "error": None, "median": None, "cv": None, "images_per_s": None,
              "step_us": None, "cost": None, "accuracy": None, "skipped": None,
              "accumulator": None, "parity": None, "parity_fused": None, "parity_limit": None, "parity_ok": None,
              "epoch1_accuracy": None}


def metrics(m: dict | None) -> dict | None:
    """One path or variant at a point: its numbers, whether it passed, why it was skipped."""
    if not m:
        return None
    return {"passed": bool(m.get("passed")) and finite(m.get("median_ms")),
            "error": m.get("error"), "median": m.get("median_ms"), "cv": m.get("cv_pct"),
            "images_per_s": m.get("images_per_s"), "step_us": m.get("step_us"),
            "cost": m.get("gpu_s_per_1000_images"), "accuracy": m.get("test_accuracy"),
            "skipped": m.get("skipped"), "accumulator": m.get("accumulator") or UNKNOWN,
            "parity": m.get("parity_vs_fp64"), "parity_fused": m.get("parity_vs_fused"),
            "parity_limit": m.get("parity_limit"),
            "parity_ok": m.get("parity_ok"), "epoch1_accuracy": m.get("epoch1_test_accuracy")}


def _ratio(a, b):
    return a / b if finite(a) and finite(b) and b > 0 else None


def fastest_of(group: dict, order=()) -> str | None:
    """The passed entry with the lowest median (a tie: the first in `order`, then by name)."""
    rank = {n: i for i, n in enumerate(order)}
    ok = [(m["median_ms"], rank.get(n, len(rank)), n) for n, m in group.items()
          if m and m.get("passed") is not False and not m.get("error")
          and finite(m.get("median_ms"))]
    return min(ok)[2] if ok else None


def normal(p: dict, order=()) -> dict:
    """The point with the fields of the current sweep.json: those an older one lacks (the
    fastest variant, the per-variant ratios, skipped paths) derived from its medians."""
    q = dict(p)
    best = (p.get("best_cuda") or {}).get("median_ms")
    if "ratio_best_cuda_vs" not in p:
        q["ratio_best_cuda_vs"] = {
            n: _ratio(best, m.get("median_ms") if m and m.get("passed") is not False
                      and not m.get("error") else None)
            for n, m in _fp32(p["pytorch"]).items()}
    if "fastest_pytorch_variant" not in p:
        top = fastest_of(_fp32(p["pytorch"]), order)
        q["fastest_pytorch_variant"] = top
        q["fastest_pytorch_median_ms"] = p["pytorch"][top]["median_ms"] if top else None
        q["ratio_best_cuda_vs_fastest_pytorch"] = q["ratio_best_cuda_vs"].get(top) if top else None
    q.setdefault("skipped_paths", {n: m["skipped"] for n, m in p["cuda"].items()
                                   if m and m.get("skipped")})
    for key in ("fp64_reference", "fp64_epoch1_test_accuracy", "roofline", "torch_tf32",
                "parity_requested"):
        q.setdefault(key, None)
    if not p.get("precisions"):   # collected before per-precision entries: fp32's from the headline
        q["precisions"] = {FP32: {
            "paths": list(p["cuda"]), "variants": list(p["pytorch"]), "no_path": not p["cuda"],
            "best_cuda_path": p.get("best_cuda_path"), "best_cuda_median_ms": best,
            "fastest_pytorch_variant": q["fastest_pytorch_variant"],
            "fastest_pytorch_median_ms": q.get("fastest_pytorch_median_ms"),
            "ratio_best_cuda_vs_fastest_pytorch": q.get("ratio_best_cuda_vs_fastest_pytorch"),
            "ratio_best_cuda_vs": q["ratio_best_cuda_vs"]}}
    return q


def judge(ratio) -> dict:
    """The acceptance and the goal at a ratio: {"acceptance_met", "goal_met"} (None: no ratio)."""
    if not finite(ratio):
        return {"acceptance_met": None, "goal_met": None}
    return {"acceptance_met": ratio <= ACCEPTANCE_RATIO, "goal_met": ratio <= GOAL_RATIO}


def row(p: dict, torch_names=None) -> dict:
    """One point: the best CUDA path, each PyTorch variant, the fastest (named), the ratios."""
    p = normal(p, torch_names or ())
    torch_names = list(torch_names) if torch_names is not None else list(p["pytorch"])
    ratio_e, ratio_g = p.get("ratio_best_cuda_vs_eager"), p.get("ratio_best_cuda_vs_cuda_graph")
    top = p.get("fastest_pytorch_variant")
    ratio_f = p.get("ratio_best_cuda_vs_fastest_pytorch")
    best = metrics(p.get("best_cuda")) or NO_METRICS
    return {"label": p["label"], "hidden": p["hidden"], "batch": p["batch"],
            "sweeps": p.get("sweeps") or [],
            "steps": p.get("steps_per_epoch"), "train_size": p.get("train_size"),
            "epochs": p.get("epochs"), "best_path": p.get("best_cuda_path"),
            "first_error": p["errors"][0] if p["errors"] else "",
            "best": best,
            "eager": metrics(p["pytorch"].get(EAGER)) or NO_METRICS,
            "graph": metrics(p["pytorch"].get(GRAPH)) or NO_METRICS,
            "ratio_eager": ratio_e, "ratio_graph": ratio_g,
            "speedup_eager": inv(ratio_e), "speedup_graph": inv(ratio_g),
            "torch": [metrics(p["pytorch"].get(n)) or NO_METRICS for n in torch_names],
            "ratios": [p["ratio_best_cuda_vs"].get(n) for n in torch_names],
            "fastest": top, "fastest_m": metrics(p["pytorch"].get(top)) if top else NO_METRICS,
            "ratio_fastest": ratio_f, "speedup_fastest": inv(ratio_f), **judge(ratio_f),
            "fp64_epoch1_accuracy": p.get("fp64_epoch1_test_accuracy"),
            "epoch1_gap_pp": (100.0 * (best["epoch1_accuracy"] - p["fp64_epoch1_test_accuracy"])
                              if finite(best["epoch1_accuracy"])
                              and finite(p.get("fp64_epoch1_test_accuracy")) else None),
            "fp64": p.get("fp64_reference") or {},
            "parity_failed": [n for n, m in p["cuda"].items() if m and m.get("parity_ok") is False],
            "skipped": p.get("skipped_paths") or {}}


def precision_row(p: dict, precision: str) -> dict:
    """One point at one precision (a normal() point): our best path of that precision, PyTorch's
    fastest of the same precision (named), the ratio and its marks, the best path's parity with
    the fused fp32 path, and both sides' first epoch against the float64 epoch. `measured`: the
    point has a path of ours or a variant of that precision; `no_path`: none of ours."""
    e = (p.get("precisions") or {}).get(precision) or {}
    best, top = e.get("best_cuda_path"), e.get("fastest_pytorch_variant")
    ratio = e.get("ratio_best_cuda_vs_fastest_pytorch")
    return {"label": p["label"], "hidden": p["hidden"], "batch": p["batch"],
            "sweeps": p.get("sweeps") or [], "precision": precision,
            "measured": bool(e.get("paths") or e.get("variants")),
            "no_path": not e.get("paths"), "paths": e.get("paths") or [],
            "variants": e.get("variants") or [],
            "best_path": best, "best": metrics(p["cuda"].get(best)) if best else NO_METRICS,
            "fastest": top, "fastest_m": metrics(p["pytorch"].get(top)) if top else NO_METRICS,
            "ratio": ratio, "speedup": inv(ratio), **judge(ratio),
            "parity_fused": e.get("parity_vs_fused"), "parity_fp64": e.get("parity_vs_fp64"),
            "parity_limit": e.get("parity_limit"), "parity_ok": e.get("parity_ok"),
            "over_limit": e.get("paths_over_parity_limit") or [],
            "acc_gap": e.get("epoch1_accuracy_gap_pp"),
            "loss_rel": e.get("epoch1_loss_rel_vs_fp64"),
            "torch_acc_gap": e.get("pytorch_epoch1_accuracy_gap_pp"),
            "torch_loss_rel": e.get("pytorch_epoch1_loss_rel_vs_fp64")}


def precision_section(points: list[dict], precision: str) -> dict:
    """SWEEP.md's section of one precision: its rows in headline order (the points that
    measured it), how many meet the acceptance and the goal, the points without a path of ours
    and those where PyTorch ran none of that precision."""
    rows = [precision_row(p, precision) for p in headline_order(points)]
    shown = [r for r in rows if r["measured"]]
    judged = [r for r in shown if r["acceptance_met"] is not None]
    return {"key": precision, "name": PRECISION_LABELS[precision], "rows": shown,
            "measured": bool(shown), "n_points": len(rows),
            "n_judged": len(judged),
            "n_acceptance_met": sum(1 for r in judged if r["acceptance_met"]),
            "n_goal_met": sum(1 for r in judged if r["goal_met"]),
            "acceptance_missed": [r["label"] for r in judged if not r["acceptance_met"]],
            "goal_missed": [r["label"] for r in judged if not r["goal_met"]],
            "no_path": [r["label"] for r in shown if r["no_path"]],
            "no_variant": [r["label"] for r in shown if not r["variants"]],
            "over_limit": [r["label"] for r in shown if r["over_limit"]],
            "unmeasured": [r["label"] for r in rows if not r["measured"]]}


def precision_speedups(width_points: list[dict]) -> list[dict]:
    """The plot's lines: per precision with a ratio at some width-sweep point, [{"precision",
    "label", "points": [(hidden, speed-up over PyTorch's fastest of the same precision)]}]."""
    out = []
    for prec in PRECISIONS:
        pts = [(p["hidden"], inv(precision_row(p, prec)["ratio"])) for p in width_points]
        pts = [(h, x) for h, x in pts if x is not None]
        if pts:
            out.append({"precision": prec, "label": PRECISION_LABELS[prec], "points": pts})
    return out


def memory_row(p: dict, torch_names=()) -> dict:
    mem = p.get("memory") or {}
    led = mem.get("ledger") or {}
    peak, total = mem.get("cuda_peak_used_bytes"), led.get("total_sgd_momentum_bytes")
    held = mem.get("torch_max_memory_allocated_bytes") or {}
    return {"label": p["label"], "ledger": led, "opt": led.get("optimizer_state_bytes") or {},
            "total": total, "peak": peak,
            "peak_over_ledger": peak / total if finite(peak) and finite(total) and total else None,
            "torch": held, "torch_cells": [held.get(n) for n in torch_names]}


def roofline_row(p: dict, r: dict) -> dict:
    """The point's roofline (sweep.json "roofline"), with its row's names."""
    roof = p.get("roofline") or {}
    best, torch = roof.get("best") or {}, roof.get("pytorch_fastest") or {}
    return {"label": p["label"], "present": bool(roof), "gflop": roof.get("gflop_per_epoch"),
            "mb": roof.get("mb_per_epoch"), "floor_ms": roof.get("floor_ms"),
            "compute_ms": roof.get("compute_ms"), "memory_ms": roof.get("memory_ms"),
            "bound": roof.get("bound"), "steps": roof.get("steps"),
            "last_batch": roof.get("last_batch"), "best_path": r["best_path"],
            "accumulator": r["best"]["accumulator"], "best_ms": best.get("ms"),
            "share": best.get("share_of_floor"), "tflops": best.get("achieved_tflops"),
            "torch": torch.get("variant"), "torch_ms": torch.get("ms"),
            "torch_share": torch.get("share_of_floor"), "torch_tflops": torch.get("achieved_tflops")}


def _names(points: list[dict], group: str, first=()) -> list[str]:
    """Path / variant names in first-seen order, `first` (the configured order) leading."""
    names = [n for n in first if any(n in p[group] for p in points)]
    for p in points:
        names += [n for n in p[group] if n not in names]
    return names


def headline_order(points: list[dict]) -> list[dict]:
    """The width sweep by width, then the batch sweep's other points by batch, then the extra
    points' others by width and batch: every point once."""
    out, seen = [], set()
    for group, key in (("width", lambda p: p["hidden"]), ("batch", lambda p: p["batch"]),
                       ("extra", lambda p: (p["hidden"], p["batch"]))):
        for p in sorted((p for p in points if group in p["sweeps"]), key=key):
            if p["label"] not in seen:
                seen.add(p["label"])
                out.append(p)
    out += sorted((p for p in points if p["label"] not in seen), key=lambda p: (p["hidden"], p["batch"]))
    return out


def accumulators(points: list[dict], cuda: list[str]) -> list[dict]:
    """Per CUDA path, the accumulators run.json states at the points where it ran."""
    out = []
    for n in cuda:
        seen = []
        for p in points:
            m = p["cuda"].get(n)
            if m and not m.get("skipped"):
                a = m.get("accumulator") or UNKNOWN
                if a not in seen:
                    seen.append(a)
        out.append({"path": n, "accumulators": seen or [UNKNOWN]})
    return out


def tf32_state(points: list[dict]) -> dict:
    """What pytorch.json says of TF32 at the points that ran PyTorch: {"off": points with every
    setting off, "on": points with one on, "unrecorded": points whose pytorch.json predates it}."""
    out = {"off": [], "on": [], "unrecorded": []}
    for p in points:
        if not p["pytorch"]:
            continue
        t = p.get("torch_tf32")
        if not isinstance(t, dict):
            out["unrecorded"].append(p["label"])
        elif t.get("matmul_allow_tf32") is False and t.get("cudnn_allow_tf32") is not True \
                and t.get("float32_matmul_precision", "highest") == "highest":
            out["off"].append(p["label"])
        else:
            out["on"].append(p["label"])
    return out


def roofline_head(doc: dict) -> dict:
    """The ceilings the roofline used, or why there is none."""
    head = doc.get("roofline")
    if head is None:
        return {"ceilings": None, "absent": "this sweep.json was collected before the sweep "
                "recorded a roofline", "source": None, "other_gpu": None}
    ceil = head.get("ceilings")
    gpu = (doc.get("gpu") or {}).get("name")
    other = (ceil.get("gpu") if ceil and ceil.get("gpu") and gpu and ceil["gpu"] != gpu
             else None)
    return {"ceilings": ceil, "absent": head.get("absent"), "source": head.get("source"),
            "other_gpu": other}


def sweep(doc: dict) -> dict:
    """The SWEEP.md context (numbers and records) and the points the plots draw."""
    cfg = doc["config"]
    torch_first = cfg.get("pytorch_variants") or ()
    points = [normal(p, torch_first) for p in doc["points"]]
    width = sorted((p for p in points if "width" in p["sweeps"]), key=lambda p: p["hidden"])
    batch = sorted((p for p in points if "batch" in p["sweeps"]), key=lambda p: p["batch"])
    extra = sorted((p for p in points if "extra" in p["sweeps"]),
                   key=lambda p: (p["hidden"], p["batch"]))
    every = sorted(points, key=lambda p: (p["hidden"], p["batch"]))
    cuda = _names(points, "cuda", cfg.get("paths") or ())
    every_torch = _names(points, "pytorch", torch_first)
    # the headline's tables and plot set fp32 against fp32: the other precisions' variants are in
    # the per-precision sections (and in the tables of every path, memory and cost)
    torch = [n for n in every_torch if all(precision_of(p["pytorch"].get(n)) == FP32
                                           for p in points if n in p["pytorch"])]
    gpu = doc.get("gpu") or {}
    headline = [row(p, torch) for p in headline_order(points)]
    judged = [r for r in headline if r["acceptance_met"] is not None]
    rows_by_label = {r["label"]: r for r in headline}
    parity_rows = [r for r in headline if r["best"]["parity"] is not None
                   or r["fp64_epoch1_accuracy"] is not None or r["parity_failed"]]
    return {
        "gpu_name": gpu.get("name"), "gpu_cc": gpu.get("compute_capability"),
        "driver": doc.get("driver"), "date": doc.get("date_utc"), "commit": doc.get("commit"),
        "torch_version": doc.get("torch_version"), "torch_cuda": doc.get("torch_cuda_version"),
        "complete": bool(doc.get("complete")), "config": cfg, "notes": doc.get("notes") or {},
        "epochs": sorted({p["epochs"] for p in points if finite(p.get("epochs"))}),
        "train_sizes": sorted({p["train_size"] for p in points if finite(p.get("train_size"))}),
        "cuda_names": cuda, "torch_names": torch, "every_torch_names": every_torch,
        "precision_issue": PRECISION_ISSUE,
        "precision_sections": [precision_section(points, p) for p in OTHER_PRECISIONS],
        "precision_labels": PRECISION_LABELS,
        "path_precisions": path_precisions(points, cuda, every_torch),
        "issue": ISSUE, "acceptance": ACCEPTANCE_RATIO, "goal": GOAL_RATIO,
        "headline_rows": headline,
        "n_judged": len(judged),
        "acceptance_missed": [r["label"] for r in judged if not r["acceptance_met"]],
        "goal_missed": [r["label"] for r in judged if not r["goal_met"]],
        "n_acceptance_met": sum(1 for r in judged if r["acceptance_met"]),
        "n_goal_met": sum(1 for r in judged if r["goal_met"]),
        "unjudged": [r["label"] for r in headline if r["acceptance_met"] is None],
        "width_rows": [row(p, torch) for p in width], "batch_rows": [row(p, torch) for p in batch],
        "extra_rows": [row(p, torch) for p in extra],
        "parity_rows": parity_rows,
        "parity_recorded": bool(parity_rows),
        "parity_limits": sorted({r["best"]["parity_limit"] for r in headline
                                 if finite(r["best"]["parity_limit"])}),
        "roofline": roofline_head(doc),
        "roofline_rows": [roofline_row(p, rows_by_label[p["label"]]) for p in headline_order(points)],
        "roofline_model": {"flops": roofline_sweep.FLOPS_FORMULA,
                           "bytes": roofline_sweep.BYTES_FORMULA,
                           "floor": roofline_sweep.FLOOR_FORMULA},
        "accumulators": accumulators(points, cuda),
        "tf32": tf32_state(points),
        "paths_source": cfg.get("paths_source"),
        "all_rows": [{"label": p["label"],
                      "cells": [metrics(p["cuda"].get(n)) for n in cuda]
                      + [metrics(p["pytorch"].get(n)) for n in every_torch]} for p in every],
        "memory_rows": [memory_row(p, every_torch) for p in every],
        "cost_rows": [{"label": p["label"], "best_path": p.get("best_cuda_path"),
                       "best": metrics(p.get("best_cuda")) or NO_METRICS,
                       "cells": [metrics(p["cuda"].get(n)) or NO_METRICS for n in cuda]
                       + [metrics(p["pytorch"].get(n)) or NO_METRICS for n in every_torch],
                       "torch": [metrics(p["pytorch"].get(n)) or NO_METRICS
                                 for n in every_torch]}
                      for p in every],
        "problems": [{"label": p["label"], "status": p["status"], "errors": p["errors"]}
                     for p in every if p["errors"]],
        "n_points": len(points), "n_ok": sum(1 for p in points if p["status"] == "ok"),
        "commands": [{"label": p["label"], "command": p.get("command"),
                      "pytorch_command": p.get("pytorch_command")}
                     for p in every if p.get("command")],
        "fastest_torch": fastest_torch(points),
        "folders_not_collected": doc.get("folders_not_collected") or [],
        "points_of_other_commits": doc.get("points_of_other_commits") or {},
        "_width_points": width, "_batch_points": batch,
        "_precision_speedups": precision_speedups(width),
    }


def path_precisions(points: list[dict], cuda: list[str], torch: list[str]) -> list[dict]:
    """The paths and variants of a precision other than fp32, by precision ([{"precision",
    "name", "paths", "variants"}]; empty when every one is fp32, as in a sweep before them)."""
    out = []
    for prec in OTHER_PRECISIONS:
        paths = [n for n in cuda if any(precision_of(p["cuda"].get(n)) == prec for p in points
                                        if n in p["cuda"])]
        variants = [n for n in torch if any(precision_of(p["pytorch"].get(n)) == prec
                                            for p in points if n in p["pytorch"])]
        if paths or variants:
            out.append({"precision": prec, "name": PRECISION_LABELS[prec], "paths": paths,
                        "variants": variants})
    return out


def fastest_torch(points: list[dict]) -> list[str]:
    """The PyTorch variants that are the fastest passing one at some point, in point order."""
    out = []
    for p in points:
        best = fastest_of({n: m for n, m in _fp32(p["pytorch"]).items() if m})
        if best and best not in out:
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
