"""One sweep point's record in sweep.json (harness/studies/sweep.py), read from its folder
(run.json of the binary, pytorch.json of the baseline): each CUDA path's and PyTorch variant's
numbers, the best path of ours against PyTorch's fastest at each precision, the roofline floor
and the memory ledger. It runs nothing."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

from analysis import roofline_sweep
from harness.baseline import registry
from harness.studies.sweep_plan import COST_IMAGES, CEILINGS_JSON, UNKNOWN, rel
from spec import files, schema
from spec.files import InputError
from spec.layout import memory_ledger
from spec.torch_variants import (CUDA_GRAPH, EAGER, FP32, PRECISIONS, precision_of,
                                 precision_of_path)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def _number(x) -> bool:
    """A finite number, zero included (a parity, an accuracy)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def metrics(entry: dict | None, train_size: int, steps: int) -> dict:
    """One CUDA path's or PyTorch variant's numbers at a point: median_ms, cv_pct,
    test_accuracy, images_per_s, step_us, gpu_s_per_1000_images, passed, error (None where
    absent). A PyTorch entry passes when it has no error and a median."""
    entry = entry or {}
    med = entry.get("median_ms")
    med = float(med) if _finite(med) else None
    error = entry.get("error") or ""
    passed = entry.get("passed")
    if passed is None:   # pytorch.json has no "passed": a variant passed when it ran and timed
        passed = not error and med is not None
    passed = bool(passed) and med is not None
    out = {
        "passed": passed,
        "error": error,
        "median_ms": med,
        "cv_pct": entry.get("cv_pct"),
        "min_ms": entry.get("min_ms"),
        "max_ms": entry.get("max_ms"),
        "test_accuracy": entry.get("test_accuracy"),
        "images_per_s": train_size / (med / 1000.0) if med and train_size else None,
        "step_us": med * 1000.0 / steps if med and steps else None,
        "gpu_s_per_1000_images": (med / 1000.0) / train_size * COST_IMAGES
        if med and train_size else None,
    }
    if "launches_per_step" in entry:
        out["launches_per_step"] = entry["launches_per_step"]
    if "max_memory_allocated_bytes" in entry:
        out["max_memory_allocated_bytes"] = entry["max_memory_allocated_bytes"]
    return out


def cuda_metrics(name: str, entry: dict | None, train_size: int, steps: int,
                 parity: bool = False) -> tuple[dict, list[str]]:
    """(METRICS of one CUDA path with its skip, accumulator, parity and epoch-1 accuracy, the
    point's error lines about it). A skipped path (run.json "skipped": why) is no error. A path
    whose parity_vs_fp64 exceeds its parity_limit (or is not finite: null) has not passed, and
    its error says why; with `parity` (the point was run with --parity) a timed path that
    records no parity is an error line too, but not a failure.

    The judged distance is parity_vs_fused where run.json has it (the binary's rule since
    a2a40ff, the gate's: one epoch against the fused path's, relative to its update), else
    parity_vs_fp64: at some widths every float32 trainer leaves the float64 trajectory at a ReLU
    kink within one epoch (width 1,024 on the H200: unfused, persistent, tiled and fused all
    2.35e-2 from float64 and within 1e-6 of each other), so float64's distance is recorded and
    printed, not judged."""
    entry = entry or {}
    m = metrics(entry, train_size, steps)
    skipped = entry.get("skipped")
    m["skipped"] = str(skipped) if skipped else None
    acc = entry.get("accumulator")
    m["accumulator"] = acc if isinstance(acc, str) and acc else UNKNOWN
    m["precision"] = precision_of_path(entry)
    m["epoch1_test_accuracy"] = _epoch1(entry, "test_accuracy_per_epoch")
    m["epoch1_loss"] = _epoch1(entry, "loss_per_epoch")
    pv, limit = entry.get("parity_vs_fp64"), entry.get("parity_limit")
    m["parity_vs_fp64"] = float(pv) if _number(pv) else None
    pf = entry.get("parity_vs_fused")
    m["parity_vs_fused"] = float(pf) if _number(pf) else None
    m["parity_judged"] = "fused" if "parity_vs_fused" in entry else "float64"
    if m["parity_judged"] == "fused":
        pv = pf
    m["parity_limit"] = float(limit) if _number(limit) else None
    drift = entry.get("parity_reference_drift")   # TF32/BF16: cli/path_checks.h rounded_reference_drift
    m["parity_reference_drift"] = float(drift) if _number(drift) else None
    m["parity_ok"] = None
    if m["skipped"]:
        m["passed"] = False
        return m, []
    judged = m["parity_vs_fused"] if m["parity_judged"] == "fused" else m["parity_vs_fp64"]
    if judged is not None and m["parity_limit"] is not None:
        m["parity_ok"] = judged <= m["parity_limit"]
    elif "parity_vs_fp64" in entry and pv is None and m["median_ms"] is not None and parity:
        m["parity_ok"] = False        # recorded, but not finite (NaN is written as null)
    if m["parity_ok"] is False and m["passed"]:
        m["passed"] = False
        what = "the fused path" if m["parity_judged"] == "fused" else "float64"
        why = (f"parity vs {what} {judged:.3g} > limit {m['parity_limit']:g}"
               if judged is not None else f"parity vs {what} not finite")
        m["error"] = f"{why}; {m['error']}" if m["error"] else why
    problems = []
    if m["precision"] is None:
        problems.append(f"path {name}: precision {entry.get('precision')!r} is none of "
                        f"{', '.join(PRECISIONS)}: left out of every precision's best path")
    if not m["passed"]:
        problems.append(f"path {name}: {(m['error'] or 'failed').splitlines()[0]}")
    elif parity and m["parity_ok"] is None:
        problems.append(f"path {name}: no parity against float64 in run.json "
                        "(parity_vs_fp64 and parity_limit; --parity given)")
    return m, problems


def _epoch1(entry: dict, key: str):
    """The first epoch's value of a per-epoch list (`test_accuracy_per_epoch`, `loss_per_epoch`)
    of a run.json path or pytorch.json variant; None where there is none."""
    tape = entry.get(key) if isinstance(entry, dict) else None
    return tape[0] if isinstance(tape, list) and tape and _number(tape[0]) else None


def _gap_pp(acc, ref):
    """acc − ref in percentage points (both fractions); None unless both are numbers."""
    return 100.0 * (acc - ref) if _number(acc) and _number(ref) else None


def _rel_diff(x, ref):
    """x / ref − 1 (a loss against float64's); None unless both are numbers and ref is not 0."""
    return x / ref - 1.0 if _number(x) and _number(ref) and ref != 0 else None


def precision_entry(rec: dict, precision: str, order: Sequence[str] = ()) -> dict:
    """sweep.json's points[].precisions.<precision>: our paths and PyTorch's variants of that
    precision at the point (rec["cuda"] and rec["pytorch"], each METRICS with its "precision"),
    the best of ours (fastest()) over PyTorch's fastest of the same precision (named; `order`,
    the configured variants, breaks a tie), and the ratio over each variant of that precision;
    the best path's one-epoch parity (parity_vs_fused: against the fp32 fused path, the gate's
    rule; parity_vs_fp64: against one float64 epoch) and the paths of that precision over their
    limit; and the first epoch of the best path and of PyTorch's fastest against the float64
    epoch (rec["fp64_reference"]): test accuracy in percentage points, training loss as a
    relative difference. no_path: no path of ours has that precision at the point (not a
    failure: the entry's best is null and SWEEP.md says "no path")."""
    paths = [n for n, m in rec["cuda"].items() if m.get("precision") == precision]
    variants = [n for n, m in rec["pytorch"].items() if m.get("precision") == precision]
    best = fastest({n: rec["cuda"][n] for n in paths})
    top = fastest({n: rec["pytorch"][n] for n in variants}, order)
    bm = rec["cuda"][best] if best else {}
    tm = rec["pytorch"][top] if top else {}
    best_ms = bm.get("median_ms")
    ratios = {n: _ratio(best_ms, rec["pytorch"][n]["median_ms"]
                        if rec["pytorch"][n]["passed"] else None) for n in variants}
    ref = rec.get("fp64_reference") or {}
    ref_acc, ref_loss = ref.get("test_accuracy"), ref.get("loss")
    return {
        "paths": paths, "variants": variants, "no_path": not paths,
        "best_cuda_path": best, "best_cuda_median_ms": best_ms,
        "fastest_pytorch_variant": top, "fastest_pytorch_median_ms": tm.get("median_ms"),
        "ratio_best_cuda_vs_fastest_pytorch": ratios.get(top) if top else None,
        "ratio_best_cuda_vs": ratios,
        "parity_vs_fused": bm.get("parity_vs_fused"), "parity_vs_fp64": bm.get("parity_vs_fp64"),
        "parity_limit": bm.get("parity_limit"), "parity_ok": bm.get("parity_ok"),
        "paths_over_parity_limit": [n for n in paths if rec["cuda"][n].get("parity_ok") is False],
        "epoch1_test_accuracy": bm.get("epoch1_test_accuracy"),
        "epoch1_accuracy_gap_pp": _gap_pp(bm.get("epoch1_test_accuracy"), ref_acc),
        "epoch1_loss_rel_vs_fp64": _rel_diff(bm.get("epoch1_loss"), ref_loss),
        "pytorch_epoch1_test_accuracy": tm.get("epoch1_test_accuracy"),
        "pytorch_epoch1_accuracy_gap_pp": _gap_pp(tm.get("epoch1_test_accuracy"), ref_acc),
        "pytorch_epoch1_loss_rel_vs_fp64": _rel_diff(tm.get("epoch1_loss"), ref_loss),
    }


def unrecorded_variants(got: dict) -> list[str]:
    """The variants a point folder without point.json (hand-made, or from a sweep before
    point.json) is held to: the registry's fp32 sweep variants, each expected, and its other
    precisions' sweep variants where its pytorch.json variants `got` have them (a sweep before
    they joined it, cd41cc6 and older, ran fp32 alone)."""
    return [n for n in registry.sweep_names()
            if n in registry.sweep_names([FP32]) or n in got]


def fastest(group: dict, order: Sequence[str] = ()) -> str | None:
    """The passed entry of `group` ({name: METRICS}) with the lowest median; a tie goes to the
    one first in `order` (the configured order), then by name."""
    rank = {n: i for i, n in enumerate(order)}
    ok = [(m["median_ms"], rank.get(n, len(rank)), n) for n, m in group.items()
          if m and m.get("passed") and _finite(m.get("median_ms"))]
    return min(ok)[2] if ok else None


def _ratio(a, b):
    return a / b if a is not None and b else None


def read_json(path: Path):
    """(object, None) or (None, one-line reason)."""
    if not Path(path).exists():
        return None, f"{path.name} not written"
    try:
        obj = json.loads(files.read_input(path).decode("utf-8"))
    except InputError as exc:
        return None, f"{path.name}: " + str(exc).removeprefix(f"error: {path}: ")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"{path.name}: malformed JSON: {exc}"
    if not isinstance(obj, dict):
        return None, f"{path.name}: malformed JSON: the top level is not an object"
    return obj, None


def load_ceilings(results_dir: Path) -> dict:
    """sweep.json's "roofline" head: {"source", "ceilings": {"fp32_tflops", "dram_gb_per_s",
    "gpu", "commit", "date_utc"} or None, "absent": why there are none (None when there are),
    "model"} from results_dir/ceilings.json (checked against spec/schema.py)."""
    path = Path(results_dir) / CEILINGS_JSON
    head = {"source": rel(path), "ceilings": None, "absent": None,
            "model": "analysis/roofline_sweep.py"}
    if not path.exists():
        head["absent"] = f"no {rel(path)} (`invoke ceilings` measures it)"
        return head
    doc, why = read_json(path)
    if doc is None:
        head["absent"] = f"{rel(path)}: {why.removeprefix(path.name + ': ')}"
        return head
    try:
        schema.validate(doc, "ceilings", rel(path))
        head["ceilings"] = roofline_sweep.ceilings_of(doc)
    except (schema.SchemaError, ValueError) as exc:
        head["absent"] = f"{rel(path)}: {str(exc).removeprefix(rel(path) + ': ')}"
    return head


def collect_point(point_dir: Path, point: dict, pytorch: bool = True,
                  binary_error: str = "", pytorch_error: str = "", *,
                  variants: Sequence[str] | None = None, parity: bool = False,
                  ceilings: dict | None = None) -> dict:
    """The sweep.json record of one point from its folder (run.json, pytorch.json).

    binary_error / pytorch_error: why the binary or the baseline stopped (a non-zero exit
    status other than 1, a time limit), as the driver saw it; "" when they finished.
    variants: the PyTorch variants the point ran (point.json's; None, for a folder without one:
    unrecorded_variants() of its pytorch.json);
    parity: the binary was given --parity (its float64 check is then expected);
    ceilings: load_ceilings()'s "ceilings" (None: no roofline).
    """
    point_dir = Path(point_dir)
    rec = {"label": point["label"], "hidden": int(point["hidden"]), "batch": int(point["batch"]),
           "sweeps": list(point.get("sweeps", [])), "dir": point.get("dir", point_dir.name),
           "status": "ok", "errors": [], "steps_per_epoch": None, "n_params": None,
           "train_size": None, "test_size": None, "epochs": None,
           "cuda": {}, "skipped_paths": {}, "best_cuda_path": None, "best_cuda": None,
           "pytorch": {}, "torch_tf32": None,
           "fastest_pytorch_variant": None, "fastest_pytorch_median_ms": None,
           "ratio_best_cuda_vs_fastest_pytorch": None, "ratio_best_cuda_vs": {},
           "ratio_best_cuda_vs_eager": None, "ratio_best_cuda_vs_cuda_graph": None,
           "parity_requested": bool(parity), "fp64_reference": None,
           "fp64_epoch1_test_accuracy": None, "precisions": {}, "roofline": None,
           "memory": None}
    errors = rec["errors"]
    run, why = read_json(point_dir / "run.json")
    if binary_error:
        errors.append(f"mlp_train: {binary_error}")
    if run is None:
        if not binary_error:
            errors.append(f"mlp_train: {why}")
        if pytorch and pytorch_error:
            errors.append(f"pytorch: {pytorch_error}")
        rec["status"] = "failed"
        return rec
    rec["gpu"] = run.get("gpu")
    rec["date_utc"] = run.get("date_utc")
    recipe = run.get("recipe") or {}
    for key in ("steps_per_epoch", "n_params", "train_size", "test_size", "epochs"):
        rec[key] = recipe.get(key)
    if recipe.get("hidden_dim") not in (None, rec["hidden"]) or \
            recipe.get("batch") not in (None, rec["batch"]):
        errors.append(f"run.json is for hidden {recipe.get('hidden_dim')} batch "
                      f"{recipe.get('batch')}, not {rec['hidden']} x {rec['batch']}")
    train_size = int(recipe.get("train_size") or 0)
    steps = int(recipe.get("steps_per_epoch") or 0)
    for name, entry in (run.get("paths") or {}).items():
        m, problems = cuda_metrics(name, entry, train_size, steps, parity)
        rec["cuda"][name] = m
        if m["skipped"]:
            rec["skipped_paths"][name] = m["skipped"]
        errors.extend(problems)
    no_best_at = len(errors)    # where "no CUDA path passed" goes, once the best is known
    ref = run.get("fp64_reference")
    if isinstance(ref, dict):
        rec["fp64_reference"] = {k: ref.get(k) for k in ("epochs", "test_accuracy", "loss",
                                                          "seconds")}
        acc = ref.get("test_accuracy")
        rec["fp64_epoch1_test_accuracy"] = acc if _number(acc) else None
    elif parity:
        errors.append("mlp_train: run.json has no fp64_reference (--parity given)")

    if pytorch:
        torch_json, why = read_json(point_dir / "pytorch.json")
        if pytorch_error:
            errors.append(f"pytorch: {pytorch_error}")
        elif torch_json is None:
            errors.append(f"pytorch: {why}")
        torch_json = torch_json or {}
        rec["torch_version"] = torch_json.get("torch_version")
        rec["torch_cuda_version"] = torch_json.get("cuda_version")
        rec["torch_tf32"] = torch_json.get("tf32")
        got = torch_json.get("variants") or {}
        if variants is None:
            variants = unrecorded_variants(got)
        for name in variants:
            if name not in got and torch_json:
                errors.append(f"pytorch {name}: not in pytorch.json")
            if name not in got:
                continue
            m = metrics(got[name], train_size, steps)
            m["precision"] = precision_of(got[name], torch_json)
            m["epoch1_test_accuracy"] = _epoch1(got[name], "test_accuracy_per_epoch")
            m["epoch1_loss"] = _epoch1(got[name], "loss_per_epoch")
            rec["pytorch"][name] = m
            if m["precision"] is None:
                errors.append(f"pytorch {name}: precision {got[name].get('precision')!r} is "
                              f"none of {', '.join(PRECISIONS)}")
            if not m["passed"]:
                errors.append(f"pytorch {name}: {(m['error'] or 'no timing').splitlines()[0]}")
    # Each precision's best path of ours over PyTorch's fastest of the same precision; ratios only
    # against a variant that passed (ran, timed, finite loss). The point's headline is fp32's:
    # the best fp32 path over the fastest fp32 variant, as before there were other precisions.
    rec["precisions"] = {p: precision_entry(rec, p, variants or ()) for p in PRECISIONS}
    head = rec["precisions"][FP32]
    if head["best_cuda_path"] is not None:
        rec["best_cuda_path"] = head["best_cuda_path"]
        rec["best_cuda"] = rec["cuda"][head["best_cuda_path"]]
    else:
        others = [e["best_cuda_path"] for e in rec["precisions"].values() if e["best_cuda_path"]]
        errors.insert(no_best_at, f"no {FP32} CUDA path passed (passed at other precisions: "
                                  f"{', '.join(others)})" if others else "no CUDA path passed")
    best_med = head["best_cuda_median_ms"]
    rec["ratio_best_cuda_vs"] = head["ratio_best_cuda_vs"]
    top = head["fastest_pytorch_variant"]
    if top is not None:
        rec["fastest_pytorch_variant"] = top
        rec["fastest_pytorch_median_ms"] = head["fastest_pytorch_median_ms"]
        rec["ratio_best_cuda_vs_fastest_pytorch"] = head["ratio_best_cuda_vs_fastest_pytorch"]
    rec["ratio_best_cuda_vs_eager"] = rec["ratio_best_cuda_vs"].get(EAGER)
    rec["ratio_best_cuda_vs_cuda_graph"] = rec["ratio_best_cuda_vs"].get(CUDA_GRAPH)

    in_dim, out_dim = recipe.get("input_dim"), recipe.get("output_dim")
    if ceilings and all(isinstance(recipe.get(k), int) and recipe[k] > 0
                        for k in ("input_dim", "output_dim", "train_size")):
        rec["roofline"] = roofline_sweep.point_roofline(
            in_dim, rec["hidden"], out_dim, rec["batch"], recipe["train_size"], ceilings,
            best_ms=best_med, best_path=rec["best_cuda_path"],
            torch_ms=rec["fastest_pytorch_median_ms"], torch_variant=rec["fastest_pytorch_variant"])

    mem = run.get("memory") or {}
    led = None
    if all(isinstance(recipe.get(k), int) for k in ("input_dim", "output_dim", "train_size",
                                                       "test_size")):
        led = memory_ledger((in_dim, rec["hidden"], out_dim), rec["batch"], recipe["train_size"],
                            recipe["test_size"], recipe.get("epochs"))
    rec["memory"] = {
        "cuda_peak_used_bytes": mem.get("peak_used_bytes"),
        "device_total_bytes": mem.get("device_total_bytes"),
        "free_before_bytes": mem.get("free_before_bytes"),
        "torch_max_memory_allocated_bytes": {
            name: m.get("max_memory_allocated_bytes") for name, m in rec["pytorch"].items()},
        "ledger": led,
    }
    if errors:
        # "partial": a best CUDA path was timed, but something else at the point failed.
        rec["status"] = "partial" if rec["best_cuda"] is not None else "failed"
    return rec
