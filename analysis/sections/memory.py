"""RESULTS.md's "Memory and cost" (the recipe's point of the sweep: the ledger beside the
measured peaks, the optimizer state, throughput and cost) and "The full train split"."""
from __future__ import annotations

from analysis.fmt import finite, is_number
from analysis.sections import common as c
from analysis.sections.sweep import NO_METRICS, metrics, recipe_point, row
from spec.layout import Shape, memory_ledger

# The ledger's optimizer-state keys: plain SGD, SGD with momentum (the recipe's), Adam.
OPTIMIZERS = ("sgd", "sgd_momentum", "adam")
# The commands that write the two sweeps, named where one is absent.
SWEEP_COMMAND = "python -m harness.studies.sweep"
FULL_SPLIT_COMMAND = ("python -m harness.studies.sweep --full --widths 256 --batches none --epochs 5 "
                      "--results results/full60k")
RECIPE_OPTIMIZER = "sgd_momentum"


def run_ledger(recipe: dict) -> dict | None:
    """spec.layout.memory_ledger of run.json's recipe; None when the recipe lacks a shape."""
    keys = ("hidden_dim", "batch", "input_dim", "output_dim", "train_size", "test_size")
    if not all(isinstance(recipe.get(k), int) for k in keys):
        return None
    epochs = recipe.get("epochs")
    return memory_ledger(Shape(recipe["input_dim"], recipe["hidden_dim"], recipe["output_dim"]),
                         recipe["batch"], recipe["train_size"], recipe["test_size"],
                         epochs if isinstance(epochs, int) else None)


def _source(doc: dict) -> dict:
    return {"date": doc.get("date_utc"), "commit": doc.get("commit")}


def memory_cost(doc: dict | None, run: dict, torch: dict | None) -> dict:
    if doc is None:
        return {"absent": "no sweep", "command": SWEEP_COMMAND}
    name, point = recipe_point(doc, run)
    if point is None:
        return {"absent": "no point", "name": name, "held": [p["label"] for p in doc["points"]]}
    mem = point.get("memory") or {}
    led = mem.get("ledger") or {}
    opt = led.get("optimizer_state_bytes") or {}
    total = led.get("total_sgd_momentum_bytes")
    optimizers = []
    for key in OPTIMIZERS:
        state = opt.get(key)
        with_it = (total - opt[RECIPE_OPTIMIZER] + state
                   if all(is_number(x) for x in (total, state, opt.get(RECIPE_OPTIMIZER)))
                   else None)
        optimizers.append({"key": key, "recipe": key == RECIPE_OPTIMIZER, "bytes": state,
                           "total": with_it})
    run_led = run_ledger(run["recipe"])
    run_total = (run_led or {}).get("total_sgd_momentum_bytes")
    variants = (torch or {}).get("variants", {})
    point_torch = mem.get("torch_max_memory_allocated_bytes") or {}
    peaks = [{"kind": "cuda", "point": mem.get("cuda_peak_used_bytes"),
              "run": (run.get("memory") or {}).get("peak_used_bytes")}]
    peaks += [{"kind": "pytorch", "variant": v, "point": point_torch.get(v),
               "run": (variants.get(v) or {}).get("max_memory_allocated_bytes")}
              for v in (c.EAGER_VARIANT, c.TORCH_GRAPH_VARIANT)]
    for p in peaks:
        p["point_x"] = p["point"] / total if finite(p["point"]) and finite(total) and total else None
        p["run_x"] = (p["run"] / run_total if finite(p["run"]) and finite(run_total) and run_total
                      else None)
    cost = [{"kind": "cuda", "name": point.get("best_cuda_path"),
             "m": metrics(point.get("best_cuda")) or NO_METRICS, "vs_best": None}]
    cost += [{"kind": "pytorch", "name": v, "m": metrics(point["pytorch"].get(v)) or NO_METRICS,
              "vs_best": 1.0 / r if finite(r := point.get(key)) and r > 0 else None}
             for v, key in ((c.EAGER_VARIANT, "ratio_best_cuda_vs_eager"),
                            (c.TORCH_GRAPH_VARIANT, "ratio_best_cuda_vs_cuda_graph"))]
    return {"absent": None, "name": name, "point": point, "source": _source(doc),
            "notes": doc.get("notes") or {}, "ledger": led, "opt": opt, "total": total,
            "optimizers": optimizers, "peaks": peaks, "run_ledger": run_led,
            "run_total": run_total, "same_ledger": run_led == led,
            "torch_run": torch is not None, "cost": cost,
            "cost_images": doc["config"]["cost_images"], "momentum": run["recipe"].get("momentum")}


def _column(doc: dict, point: dict) -> dict:
    r = row(point)
    return {"data_dir": doc["config"].get("data_dir"), "cost_images": doc["config"]["cost_images"],
            "row": r, "eager_ips": r["eager"].get("images_per_s"),
            "graph_ips": r["graph"].get("images_per_s")}


def full_split(doc: dict | None, subset_doc: dict | None, run: dict) -> dict:
    """The recipe's point of the full-split sweep beside the same point of the subset's sweep."""
    if doc is None:
        return {"absent": "no sweep", "command": FULL_SPLIT_COMMAND}
    name, point = recipe_point(doc, run)
    if point is None:
        return {"absent": "no point", "name": name, "held": [p["label"] for p in doc["points"]]}
    subset = recipe_point(subset_doc, run)[1] if subset_doc is not None else None
    return {"absent": None, "name": name, "source": _source(doc),
            "train_size": point.get("train_size"), "epochs": point.get("epochs"),
            "data_dir": doc["config"].get("data_dir"),
            "columns": [_column(doc, point)] + ([_column(subset_doc, subset)] if subset else []),
            "subset_doc": subset_doc is not None, "subset": subset is not None,
            "problems": [p for p in (point, subset) if p and p["errors"]]}
