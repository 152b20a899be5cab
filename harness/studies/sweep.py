"""The width and batch sweep (issue 8; "FP32 at scale"): the best CUDA path against PyTorch's
fastest variant, point by point, at each precision (issue 30: our best path of a precision
against PyTorch's fastest of the same precision).

    python -m harness.studies.sweep [--widths 64,128,...|none] [--batches 32,128,...|none]
                            [--points 4096x2048,...|none] [--epochs 20] [--paths a,b]
                            [--variants a,b | --precisions fp32[,tf32][,bf16]] [--no-parity]
                            [--no-pytorch] [--full] [--report] [--collect-only]

Three groups of points on one GPU, in one run or in parts (each part a call of its own, then
--collect-only over every folder):
  width sweep   hidden width in WIDTHS at batch WIDTH_SWEEP_BATCH (128)
  batch sweep   batch in BATCHES at hidden width BATCH_SWEEP_HIDDEN (256)
  extra points  the (width, batch) pairs of EXTRA_POINTS (4096 x 2048), tagged "extra"
A point in two groups (width 256, batch 128) is run once. Each point, labelled "h<width>_b<batch>":

  1. build/mlp_train --perf-only --parity --paths P --hidden W --batch B --epochs E
     --out results/sweep/<label> (run.json, init_params.npy and order.npy of that shape; its
     output in mlp_train.log). P defaults to every path of the binary's registry (those a
     plain run times and the opt-in ones: the sweep is where the opt-in `tiled` path is for) (spec.catalog, `build/mlp_host catalog`); where the catalog cannot be read, the
     fallback FALLBACK_PATHS, said on stdout and in sweep.json's config.paths_source. A path
     that does not fit the point is skipped by the binary (run.json "skipped": why): recorded
     as skipped, not as a failure. --parity: the binary also trains one epoch in float64 on the
     CPU and records each path's one-epoch distance to it (parity_vs_fp64, parity_limit) and the
     float64 epoch's accuracy (fp64_reference);
  2. the PyTorch baseline, the variants harness/baseline/registry.py marks for the sweep (eager,
     cuda-graph, compiled-step in float32 with TF32 off; cuda-graph and compiled-step also at tf32
     and bf16, registry.SWEEP_AT_PRECISION; --precisions fp32 leaves those four out), on that
     point's init_params.npy and order.npy, with --batch B and the same data folder
     (pytorch.json; pytorch.log);
  3. collection: per CUDA path and PyTorch variant the median epoch, its CV, the test accuracy,
     images per second and µs per step; per CUDA path its accumulator (float32 / float64, as
     run.json says; "unknown" where it does not), its parity against float64 and its epoch-1
     accuracy; the best CUDA path (the passed path with the lowest median; a path whose parity
     exceeds its limit has not passed) over the fastest passed PyTorch variant (named) and over
     each variant (the headline: fp32 paths against fp32 variants, a path without a "precision"
     in run.json being fp32); per precision (fp32, tf32, bf16: precision_entry) the best of our
     paths of that precision over PyTorch's fastest of the same precision (named), "no path"
     where none of ours has it, the best path's parity with the fused fp32 path and both sides'
     first epoch against the float64 epoch; the roofline floor of the point (analysis/roofline_sweep.py, on
     results/ceilings.json); the measured memory peaks beside a ledger computed from the shapes
     (spec.layout.memory_ledger); GPU-seconds per 1,000 images.

A point that fails (a path fails, the binary stops, the baseline fails, a time limit) is recorded
with its error and the sweep goes on. The committed evidence is never lost to a failure: each point
runs in a staging folder, results/sweep/<label>.new/; a point that timed a CUDA path then replaces
results/sweep/<label>/ (the old folder removed only after the rename), while one that did not keeps
the old folder and leaves its own files in results/sweep/<label>.failed/. At the end sweep.json
(and, with `report`, SWEEP.md and its three plots) are written together, all or none, and only when
some point timed a CUDA path: a sweep that timed nothing (no GPU) writes none of them. An
interrupted sweep leaves the points it finished in their folders (point.json each), from which
--collect-only rebuilds sweep.json. The format is in docs/formats.md.
"""
from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from analysis import roofline_sweep
from harness.baseline import registry
from spec import catalog, files, provenance, schema, validate
from spec.files import BUILD_DIR, DATA_DIR, RESULTS_DIR, ROOT, TEMPLATES_DIR, InputError
from spec.layout import DATA_NOTE, FLOAT_BYTES, GRADIENT_NOTE, LABEL_BYTES, memory_ledger
from spec.recipe import load_recipe
from spec.torch_variants import (CUDA_GRAPH, EAGER, FP32, PRECISIONS, precision_of,
                                 precision_of_path)

WIDTHS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
BATCHES = (32, 64, 128, 256, 512, 1024, 2048)
EXTRA_POINTS = ((4096, 2048),)  # (hidden, batch) pairs outside the two sweeps: sweeps ["extra"]
WIDTH_SWEEP_BATCH = 128        # the batch of the width sweep
BATCH_SWEEP_HIDDEN = 256       # the hidden width of the batch sweep
FALLBACK_PATHS = ("persistent", "fused")   # when the binary's catalog cannot be read
SWEEP_DIR = "sweep"            # per-point folders: results/sweep/<label>/
SWEEP_JSON = "sweep.json"
POINT_JSON = "point.json"      # per point: its record's inputs (how it was run, what stopped it)
POINT_CONFIG_KEYS = ("epochs", "paths", "pytorch_variants", "data_dir", "train_size", "parity",
                     "precisions")
CEILINGS_JSON = "ceilings.json"   # the roofline's ceilings, beside sweep.json (invoke ceilings)
UNKNOWN = "unknown"            # a path's accumulator where run.json does not say it
FULL_TRAIN_SIZE = 60_000       # data/full (invoke data --full)
COST_IMAGES = 1000             # cost is GPU-seconds per this many training images
DEFAULT_TIMEOUT_S = 300        # per subprocess (the binary, the baseline) of one point
LOG_TAIL_LINES = 20
DEFAULT_EPOCHS = 20
MIN_EPOCHS, MAX_EPOCHS = 2, 1000   # epoch 0 is a warm-up, not timed; the recipe's bound
MAX_WIDTH, MAX_BATCH = 16384, 65536   # the recipe bounds of hidden_dim and batch (spec.recipe.BOUNDS)
STAGING, FAILED = ".new", ".failed"   # a point folder's suffixes while it runs, when it failed
SWEEP_MD = ROOT / "SWEEP.md"
_LABEL = re.compile(r"^h([0-9]+)_b([0-9]+)$")


def label(hidden: int, batch: int) -> str:
    """The point's name and folder: h256_b128."""
    return f"h{int(hidden)}_b{int(batch)}"


def sweep_points(widths: Sequence[int] = WIDTHS, batches: Sequence[int] = BATCHES,
                 width_batch: int = WIDTH_SWEEP_BATCH, batch_hidden: int = BATCH_SWEEP_HIDDEN,
                 extra_points: Sequence[Sequence[int]] = EXTRA_POINTS) -> list[dict]:
    """The points to run, in run order (the width sweep, then the batch sweep's new points, then
    the extra points' new ones); each {"label", "hidden", "batch", "sweeps": a list of "width",
    "batch", "extra"}. A point in two groups (256 x 128 by default) appears once."""
    points: dict[str, dict] = {}
    for sweep_name, shapes in (("width", [(int(w), int(width_batch)) for w in widths]),
                               ("batch", [(int(batch_hidden), int(b)) for b in batches]),
                               ("extra", [(int(h), int(b)) for h, b in extra_points])):
        for hidden, batch in shapes:
            if hidden < 1 or batch < 1:
                raise ValueError(f"widths and batches must be positive, got {hidden}x{batch}")
            key = label(hidden, batch)
            point = points.setdefault(key, {"label": key, "hidden": hidden, "batch": batch,
                                            "sweeps": []})
            if sweep_name not in point["sweeps"]:
                point["sweeps"].append(sweep_name)
    return list(points.values())


# ----------------------------------------------------------------------------- arithmetic

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


def _read_json(path: Path):
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
    head = {"source": _rel(path), "ceilings": None, "absent": None,
            "model": "analysis/roofline_sweep.py"}
    if not path.exists():
        head["absent"] = f"no {_rel(path)} (`invoke ceilings` measures it)"
        return head
    doc, why = _read_json(path)
    if doc is None:
        head["absent"] = f"{_rel(path)}: {why.removeprefix(path.name + ': ')}"
        return head
    try:
        schema.validate(doc, "ceilings", _rel(path))
        head["ceilings"] = roofline_sweep.ceilings_of(doc)
    except (schema.SchemaError, ValueError) as exc:
        head["absent"] = f"{_rel(path)}: {str(exc).removeprefix(_rel(path) + ': ')}"
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
    run, why = _read_json(point_dir / "run.json")
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
        torch_json, why = _read_json(point_dir / "pytorch.json")
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


# ----------------------------------------------------------------------------- running

def _rel(p: Path) -> str:
    """A path as the commands show it: relative to the repository root where that is short."""
    p = Path(p)
    try:
        return os.path.relpath(p.resolve(), ROOT)
    except ValueError:
        return str(p)


def _tail(log_path: Path) -> str:
    """The last non-empty line of a log (the one-line error of the binary or the baseline)."""
    try:
        lines = [ln.strip() for ln in log_path.read_text(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln for ln in lines if ln]
    return lines[-1] if lines else ""


def _run_logged(cmd: list[str], log_path: Path, timeout_s: float) -> tuple[int | None, str]:
    """Run cmd from the repository root with its output in log_path; (exit code or None on a
    time limit, a one-line reason when it did not finish normally)."""
    with open(log_path, "w", encoding="utf-8") as log:
        log.write("$ " + shlex.join(cmd) + "\n")
        log.flush()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None, f"stopped after the {timeout_s:g} s time limit (log: {_rel(log_path)})"
        except OSError as exc:
            return None, f"could not start {cmd[0]}: {exc}"
    return proc.returncode, ""


def _fmt_ms(x) -> str:
    return "—" if x is None else f"{x:.4g} ms"


def progress_line(i: int, n: int, rec: dict, seconds: float) -> str:
    """The point's closing line: `[sweep i/n] <label>: best ...` or `... FAILED: ...`."""
    head = f"[sweep {i}/{n}] {rec['label']}:"
    if rec["best_cuda"] is None:
        first = rec["errors"][0] if rec["errors"] else "failed"
        return f"{head} FAILED: {first} ({seconds:.1f} s)"
    best = rec["best_cuda"]
    cv = best.get("cv_pct")
    parts = [f"best {rec['best_cuda_path']} ({best.get('accumulator', UNKNOWN)}) "
             f"{_fmt_ms(best['median_ms'])}"
             + (f" (CV {cv:.1f}%)" if isinstance(cv, (int, float)) else "")]
    top = rec.get("fastest_pytorch_variant")
    if top is not None:
        r = rec["ratio_best_cuda_vs_fastest_pytorch"]
        parts.append(f"fastest PyTorch {top} {_fmt_ms(rec['fastest_pytorch_median_ms'])}"
                     + (f" (ratio {r:.3g})" if r is not None else ""))
    elif rec["pytorch"]:
        parts.append("no PyTorch variant passed")
    if best.get("parity_vs_fused") is not None:
        parts.append(f"parity vs fused {best['parity_vs_fused']:.2g}"
                     + (f" (limit {best['parity_limit']:g})" if best.get("parity_limit") else ""))
    if best.get("parity_vs_fp64") is not None:
        parts.append(f"vs float64 {best['parity_vs_fp64']:.2g}"
                     + (f" (limit {best['parity_limit']:g})"
                        if best.get("parity_limit") and best.get("parity_vs_fused") is None else ""))
    for prec, e in (rec.get("precisions") or {}).items():
        if prec == FP32 or not (e["paths"] or e["variants"]):
            continue
        if e["best_cuda_path"] is None:
            parts.append(f"{prec}: " + ("no path" if e["no_path"] else "no path passed"))
            continue
        ours = f"{prec}: best {e['best_cuda_path']} {_fmt_ms(e['best_cuda_median_ms'])}"
        if e["fastest_pytorch_variant"]:
            r = e["ratio_best_cuda_vs_fastest_pytorch"]
            ours += (f" vs {e['fastest_pytorch_variant']} {_fmt_ms(e['fastest_pytorch_median_ms'])}"
                     + (f" (ratio {r:.3g})" if r is not None else ""))
        parts.append(ours)
    roof = rec.get("roofline") or {}
    if roof.get("floor_ms") is not None:
        share = (roof.get("best") or {}).get("share_of_floor")
        parts.append(f"floor {_fmt_ms(roof['floor_ms'])} ({roof['bound']}"
                     + (f", {100 * share:.0f}% of it" if share is not None else "") + ")")
    if rec["skipped_paths"]:
        parts.append("skipped " + ", ".join(rec["skipped_paths"]))
    tail = f"; {len(rec['errors'])} problem(s): {rec['errors'][0]}" if rec["errors"] else ""
    return f"{head} " + ", ".join(parts) + f" ({seconds:.1f} s){tail}"


def _summary(records: list[dict]) -> dict:
    """GPU, date and versions from the first point that has them."""
    first = next((r for r in records if r.get("gpu")), {})
    torch_first = next((r for r in records if r.get("torch_version")), {})
    return {"date_utc": first.get("date_utc"), "gpu": first.get("gpu"),
            "torch_version": torch_first.get("torch_version"),
            "torch_cuda_version": torch_first.get("torch_cuda_version")}


def _new_doc(widths, batches, width_batch, batch_hidden, extra_points, epochs, paths, pytorch,
             data_dir, train_size, timeout_s, note: str, *, variants=None, parity=None,
             paths_source=None, roofline=None, precisions=None) -> dict:
    recipe = load_recipe()
    return {
        "schema": 1,
        "note": note,
        "date_utc": None, "gpu": None, "torch_version": None, "torch_cuda_version": None,
        "commit": provenance.git_commit(), "driver": provenance.driver_version(),
        "config": {
            "widths": [int(w) for w in widths], "batches": [int(b) for b in batches],
            "width_sweep_batch": int(width_batch), "batch_sweep_hidden": int(batch_hidden),
            "extra_points": [[int(h), int(b)] for h, b in extra_points],
            "epochs": epochs, "paths": list(paths) if paths is not None else None,
            "paths_source": paths_source,
            "pytorch_variants": (list(variants) if variants is not None
                                 else registry.sweep_names()) if pytorch else [],
            "parity": parity,
            "precisions": list(precisions) if precisions is not None else None,
            "data_dir": data_dir, "train_size": train_size,
            "input_dim": recipe["input_dim"], "output_dim": recipe["output_dim"],
            "lr": recipe["lr"], "momentum": recipe["momentum"],
            "float_bytes": FLOAT_BYTES, "label_bytes": LABEL_BYTES,
            "cost_images": COST_IMAGES, "timeout_s": timeout_s,
        },
        "notes": {"gradients": GRADIENT_NOTE, "data": DATA_NOTE},
        "roofline": roofline,
        "points": [],
        "complete": False,
    }


def _check_point_folders(sweep_root: Path, points: list[dict]) -> None:
    """InputError naming the first path in the way of a point's folders (a file where a folder goes)."""
    for path in [sweep_root] + [sweep_root / (p["label"] + sfx) for p in points for sfx in ("", STAGING, FAILED)]:
        if path.exists() and not path.is_dir():
            raise InputError(f"error: {path}: not a folder, but the sweep writes a folder there")


def resolve_paths(paths, build_dir: Path = BUILD_DIR) -> tuple[list[str], str]:
    """(the CUDA paths to time, where the list came from). `paths` (a comma-separated string or
    a list) is taken as given; None: every path of the binary's registry, those a plain run
    times and the opt-in ones (spec.catalog.path_names of build_dir's mlp_host), or, when that cannot be read,
    FALLBACK_PATHS with the reason (the sweep prints it and records it in config.paths_source)."""
    if paths is not None:
        items = paths.split(",") if isinstance(paths, str) else list(paths)
        path_list = [validate.safe_name(str(p).strip(), "--paths: path") for p in items
                     if str(p).strip()]
        if not path_list:
            raise InputError("error: --paths names no path")
        return path_list, "--paths"
    try:
        names = list(catalog.path_names(Path(build_dir)))
        if not names:
            raise ValueError("the catalog lists no path")
        return names, f"{_rel(Path(build_dir) / 'mlp_host')} catalog (every path, opt-in ones included)"
    except (InputError, OSError, ValueError, KeyError, TypeError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return list(FALLBACK_PATHS), (f"fallback: the binary's catalog could not be read "
                                      f"({why.removeprefix('error: ')}); --paths names others")


def parse_precisions(text: str | Sequence[str] | None) -> list[str]:
    """--precisions: "fp32,tf32" -> ["fp32", "tf32"], in PRECISIONS' order; None -> every
    precision. Each must be one of spec.torch_variants.PRECISIONS, none twice, and fp32 among
    them (the sweep's headline, and the path every parity is taken against): anything else is an
    InputError naming --precisions."""
    if text is None:
        return list(PRECISIONS)
    items = text.split(",") if isinstance(text, str) else [str(x) for x in text]
    items = [x.strip() for x in items]
    shown = ",".join(items) if not isinstance(text, str) else text
    bad = [x for x in items if x not in PRECISIONS]
    if bad or not items:
        raise InputError(f"error: --precisions {shown!r}: expected comma-separated names of "
                         f"{', '.join(PRECISIONS)}" + (f" (not: {', '.join(map(repr, bad))})"
                                                        if bad else ""))
    twice = sorted({x for x in items if items.count(x) > 1})
    if twice:
        raise InputError(f"error: --precisions {shown!r}: {', '.join(twice)} given twice")
    if FP32 not in items:
        raise InputError(f"error: --precisions {shown!r}: must include {FP32} (the sweep's "
                         f"headline and every point's parity are fp32's)")
    return [p for p in PRECISIONS if p in items]


def resolve_variants(variants, precisions: Sequence[str] | None = None) -> list[str]:
    """The PyTorch variants of every point: the registry's sweep variants of `precisions`
    (default: every precision: cuda-graph and compiled-step also at tf32 and bf16,
    registry.SWEEP_AT_PRECISION), or those named (then `precisions` must be None: --variants
    and --precisions are two ways to say the same, and one is given)."""
    if variants is None:
        return registry.sweep_names(parse_precisions(precisions))
    if precisions is not None:
        raise InputError("error: --variants and --precisions: give one (--variants names every "
                         "variant to run; --precisions picks the sweep variants' precisions)")
    items = variants.split(",") if isinstance(variants, str) else list(variants)
    chosen = [str(v).strip() for v in items if str(v).strip()]
    try:
        registry.select(chosen)
    except ValueError as exc:
        raise InputError(f"error: --variants {','.join(chosen) or repr(variants)}: {exc}") from None
    return chosen


def sweep(widths: Sequence[int] = WIDTHS, batches: Sequence[int] = BATCHES, epochs: int = DEFAULT_EPOCHS,
          paths: str | Sequence[str] | None = None, results_dir: Path = RESULTS_DIR,
          pytorch: bool = True, data_dir: Path = DATA_DIR, train_size: int | None = None, *,
          binary: Path | None = None, pytorch_cmd: Sequence[str] | None = None,
          device: str = "cuda", timeout_s: float = DEFAULT_TIMEOUT_S,
          width_batch: int = WIDTH_SWEEP_BATCH, batch_hidden: int = BATCH_SWEEP_HIDDEN,
          extra_points: Sequence[Sequence[int]] = EXTRA_POINTS,
          variants: str | Sequence[str] | None = None, parity: bool = True,
          report: Path | None = None, precisions: str | Sequence[str] | None = None) -> dict:
    """Run every point and, when some point timed a CUDA path, write results_dir/sweep.json
    (with `report`: also that SWEEP.md and results_dir/plots' three sweep plots, all together);
    returns the sweep's object either way.

    binary: the mlp_train to run (default build/mlp_train; the default paths come from the
    mlp_host beside it); pytorch_cmd: the command prefix of the baseline (default: this Python,
    -m harness.baseline.pytorch_baseline), given --results, --variants, --batch, --data and
    --device; device: the baseline's torch device; timeout_s: the time limit of each subprocess
    of a point; extra_points: (hidden, batch) pairs run after the two sweeps; variants: the
    PyTorch variants (default: the registry's sweep variants); precisions: the precisions of
    the registry's sweep variants to run (default every one; parse_precisions; not with
    `variants`); parity: pass --parity to the binary (its one-epoch float64 check). Each point's folder also gets point.json (its record
    and how it was run), from which collect() rebuilds sweep.json when a sweep was run in parts.
    """
    results_dir = Path(results_dir)
    data_dir = Path(data_dir)
    binary = Path(binary) if binary is not None else BUILD_DIR / "mlp_train"
    if not binary.exists():
        raise SystemExit(f"error: {binary} missing: run `invoke build` first")
    if not data_dir.is_dir():
        raise InputError(f"error: {data_dir}: data folder not found"
                         + (" (run `invoke data --full`)" if data_dir.name == "full" else ""))
    epochs = parse_epochs(epochs)
    timeout_s = validate.positive_seconds(timeout_s, "--timeout")
    chosen = resolve_variants(variants, precisions)   # checked even with pytorch off
    variant_list = chosen if pytorch else []
    precision_list = (parse_precisions(precisions) if variants is None
                      else sorted({registry.get(v).precision for v in chosen},
                                  key=list(PRECISIONS).index))
    points = sweep_points(widths, batches, width_batch, batch_hidden, extra_points)
    if not points:
        raise InputError("error: no sweep points (empty widths, batches and extra points)")
    path_list, paths_source = resolve_paths(paths, binary.parent)
    pytorch_cmd = list(pytorch_cmd) if pytorch_cmd else [sys.executable, "-m",
                                                         "harness.baseline.pytorch_baseline"]
    sweep_root = results_dir / SWEEP_DIR
    out_path = results_dir / SWEEP_JSON
    plots_dir = results_dir / "plots"
    _check_point_folders(sweep_root, points)
    files.check_targets([out_path] + ([Path(report)] + [plots_dir / f for f in _sweep_plot_files()]
                                      if report is not None else []))
    roof = load_ceilings(results_dir)
    doc = _new_doc(widths, batches, width_batch, batch_hidden, extra_points, epochs, path_list,
                   pytorch, _rel(data_dir), train_size, timeout_s,
                   "written by harness/studies/sweep.py; see docs/formats.md",
                   variants=variant_list, parity=bool(parity), paths_source=paths_source,
                   roofline=roof, precisions=precision_list if pytorch else None)
    n = len(points)
    print(f"sweep: {n} point(s), {epochs} epochs each; CUDA paths {','.join(path_list)} "
          f"({paths_source}); PyTorch {','.join(variant_list) or 'not run'}; "
          f"precisions {','.join(precision_list) if pytorch else '—'}; "
          f"float64 parity {'on' if parity else 'off'}; roofline "
          + ("on " + roof["source"] if roof["ceilings"] else f"off ({roof['absent']})"), flush=True)
    for i, point in enumerate(points, 1):
        t0 = time.perf_counter()
        final = sweep_root / point["label"]
        pdir = final.with_name(final.name + STAGING)
        if pdir.exists():
            shutil.rmtree(pdir)        # left by an interrupted sweep
        pdir.mkdir(parents=True)
        point = dict(point, dir=_rel(final))
        cmd = [_rel(binary), "--data", _rel(data_dir), "--out", _rel(pdir), "--perf-only",
               *(["--parity"] if parity else []),
               "--paths", ",".join(path_list), "--hidden", str(point["hidden"]),
               "--batch", str(point["batch"]), "--epochs", str(epochs)]
        if train_size is not None:
            cmd += ["--train-size", str(int(train_size))]
        stage = f"[sweep {i}/{n}] {point['label']} -"
        print(f"{stage} mlp_train ({'/'.join(point['sweeps'])} sweep): {len(path_list)} path(s), "
              f"{epochs} epochs{', float64 parity' if parity else ''} ...", flush=True)
        rc, why = _run_logged(cmd, pdir / "mlp_train.log", timeout_s)
        # 0: every path trained; 1 with run.json: a path failed (run.json says which); any
        # other status (1 without run.json included) stopped the binary: its last line says why.
        finished = rc == 0 or (rc == 1 and (pdir / "run.json").is_file())
        binary_error = why or ("" if finished else
                               f"exit status {rc}: {_tail(pdir / 'mlp_train.log')}")
        print(f"{stage} mlp_train: " + (f"exit status {rc}" if not binary_error else binary_error)
              + f" ({time.perf_counter() - t0:.1f} s)", flush=True)
        pytorch_error, tcmd = "", None
        if pytorch:
            if (pdir / "init_params.npy").exists() and (pdir / "order.npy").exists():
                tcmd = [*pytorch_cmd, "--results", _rel(pdir),
                        "--variants", ",".join(variant_list),
                        "--batch", str(point["batch"]), "--data", _rel(data_dir),
                        "--device", device]
                t1 = time.perf_counter()
                print(f"{stage} PyTorch {','.join(variant_list)} ...", flush=True)
                trc, twhy = _run_logged(tcmd, pdir / "pytorch.log", timeout_s)
                pytorch_error = twhy or ("" if trc == 0 else
                                         f"exit status {trc}: {_tail(pdir / 'pytorch.log')}")
                print(f"{stage} PyTorch: {pytorch_error or 'exit status 0'} "
                      f"({time.perf_counter() - t1:.1f} s)", flush=True)
            else:
                pytorch_error = "not run: mlp_train wrote no init_params.npy / order.npy"
        rec = collect_point(pdir, point, pytorch=pytorch, binary_error=binary_error,
                            pytorch_error=pytorch_error, variants=variant_list,
                            parity=bool(parity), ceilings=roof["ceilings"])
        if rec["best_cuda"] is None:   # the old folder stays; this run's files go beside it
            final = final.with_name(final.name + FAILED)
            rec["dir"] = point["dir"] = _rel(final)
        rec["command"] = shlex.join(cmd)
        rec["pytorch_command"] = (shlex.join(["python" if x == sys.executable else x
                                              for x in tcmd]) if tcmd else None)
        rec["exit_code"] = rc
        files.write_json(pdir / POINT_JSON, {
            "schema": 1, "point": point, "binary_error": binary_error,
            "pytorch": pytorch, "pytorch_error": pytorch_error, "parity": bool(parity),
            "command": rec["command"], "pytorch_command": rec["pytorch_command"],
            "exit_code": rc, "commit": doc["commit"], "driver": doc["driver"],
            "paths_source": paths_source,
            "config": {k: doc["config"][k] for k in POINT_CONFIG_KEYS}})
        files.replace_folder(pdir, final)
        doc["points"].append(rec)
        doc.update(_summary(doc["points"]))
        doc["complete"] = i == n
        print(progress_line(i, n, rec, time.perf_counter() - t0), flush=True)
    ok = sum(1 for r in doc["points"] if r["status"] == "ok")
    if not any(r["best_cuda"] is not None for r in doc["points"]):
        print(f"sweep: no point timed a CUDA path: {_rel(out_path)} and the report untouched "
              f"(this run's files: {', '.join(r['dir'] + '/' for r in doc['points'])})", flush=True)
        return doc
    outputs = _outputs(doc, out_path, report, plots_dir)
    files.write_all(outputs)
    print(f"sweep: {ok}/{n} points without a problem; wrote " + ", ".join(_rel(p) for p in outputs), flush=True)
    return doc


def _outputs(doc: dict, out_path: Path, report: Path | None, plots_dir: Path) -> dict:
    """{path: content} of sweep.json and, with `report`, SWEEP.md and its three plots."""
    outputs = {out_path: json.dumps(doc, indent=2) + "\n"}
    if report is not None:
        from analysis import render as renderer
        outputs |= renderer.render_sweep(doc, out_path, Path(report), plots_dir, TEMPLATES_DIR)
    return outputs


def _sweep_plot_files() -> list[str]:
    from analysis.render import SWEEP_PLOT_FILES
    return list(SWEEP_PLOT_FILES.values())


def stray_folders(results_dir: Path, points: list[dict]) -> list[str]:
    """The point folders (h<W>_b<B>, not .new or .failed) under results_dir/sweep/ that are not
    among `points`: collect() leaves them out and says so."""
    root = Path(results_dir) / SWEEP_DIR
    wanted = {p["label"] for p in points}
    if not root.is_dir():
        return []
    return sorted((d.name for d in root.iterdir() if d.is_dir() and _LABEL.match(d.name)
                   and d.name not in wanted),
                  key=lambda s: tuple(int(x) for x in _LABEL.match(s).groups()))


def collect(results_dir: Path = RESULTS_DIR, widths: Sequence[int] = WIDTHS,
            batches: Sequence[int] = BATCHES, pytorch: bool = True, write: bool = True,
            width_batch: int = WIDTH_SWEEP_BATCH, batch_hidden: int = BATCH_SWEEP_HIDDEN,
            extra_points: Sequence[Sequence[int]] = EXTRA_POINTS,
            report: Path | None = None) -> dict:
    """Rebuild sweep.json from the point folders already in results_dir/sweep/, running
    nothing: for a sweep run in parts (`--widths 64,128 --batches none --points none`, then the
    rest), or to re-collect after a change here. A point's point.json (written by sweep())
    supplies how it was run and what stopped it; a point without its folder is recorded as
    failed ("not run"); a folder that is none of the points is left out (folders_not_collected).
    With write, sweep.json is written (with `report`, SWEEP.md and its plots too, all together)."""
    results_dir = Path(results_dir)
    points = sweep_points(widths, batches, width_batch, batch_hidden, extra_points)
    roof = load_ceilings(results_dir)
    doc = _new_doc(widths, batches, width_batch, batch_hidden, extra_points, None, None, pytorch,
                   None, None, None,
                   "collected by harness/studies/sweep.py (--collect-only) from results/sweep/*/",
                   roofline=roof)
    config_seen = False
    for point in points:
        pdir = results_dir / SWEEP_DIR / point["label"]
        point = dict(point, dir=_rel(pdir))
        saved, _ = _read_json(pdir / POINT_JSON)
        saved = saved or {}
        cfg = saved.get("config") or {}
        variants = cfg.get("pytorch_variants")
        kw = {"variants": variants if isinstance(variants, list) else None,
              "parity": bool(saved.get("parity", cfg.get("parity", False))),
              "ceilings": roof["ceilings"]}
        if not pdir.is_dir():
            rec = collect_point(pdir, point, pytorch=pytorch, binary_error="not run", **kw)
        else:
            rec = collect_point(pdir, point, pytorch=saved.get("pytorch", pytorch),
                                binary_error=saved.get("binary_error", ""),
                                pytorch_error=saved.get("pytorch_error", ""), **kw)
        rec["command"] = saved.get("command")
        rec["pytorch_command"] = saved.get("pytorch_command")
        rec["exit_code"] = saved.get("exit_code")
        rec["commit"] = saved.get("commit")   # the binary's commit at this point (point.json)
        if cfg:
            if not config_seen:
                doc["config"].update({k: cfg.get(k) for k in POINT_CONFIG_KEYS})
                doc["config"]["paths_source"] = saved.get("paths_source")
                doc["commit"] = saved.get("commit", doc["commit"])
                doc["driver"] = saved.get("driver", doc["driver"])
                config_seen = True
            elif any(cfg.get(k) != doc["config"][k] for k in POINT_CONFIG_KEYS):
                rec["errors"].append("run with other settings than the first point: " + ", ".join(
                    f"{k}={cfg.get(k)!r}" for k in POINT_CONFIG_KEYS
                    if cfg.get(k) != doc["config"][k]))
                if rec["status"] == "ok":
                    rec["status"] = "partial"
        doc["points"].append(rec)
    if not config_seen:   # folders without point.json (hand-made, or an older sweep)
        doc["config"]["epochs"] = next((r["epochs"] for r in doc["points"] if r["epochs"]), None)
        doc["config"]["train_size"] = next((r["train_size"] for r in doc["points"]
                                            if r["train_size"]), None)
        doc["config"]["paths"] = sorted({p for r in doc["points"] for p in r["cuda"]}) or None
    doc.update(_summary(doc["points"]))
    doc["complete"] = all((results_dir / SWEEP_DIR / p["label"]).is_dir() for p in points)
    doc["folders_not_collected"] = stray_folders(results_dir, points)
    # Points re-run at a later commit than the sweep's: {commit: [labels]} of every commit but
    # doc["commit"] (empty when every point is of that commit).
    later: dict[str, list[str]] = {}
    for r in doc["points"]:
        if r.get("commit") and r["commit"] != doc["commit"]:
            later.setdefault(r["commit"], []).append(r["label"])
    doc["points_of_other_commits"] = later
    if write:
        out_path = results_dir / SWEEP_JSON
        plots_dir = results_dir / "plots"
        if report is not None:
            files.check_targets([out_path, Path(report)]
                                + [plots_dir / f for f in _sweep_plot_files()])
        files.write_all(_outputs(doc, out_path, report, plots_dir))
    return doc


def parse_ints(text: str | Sequence[int] | None, default: Sequence[int], flag: str = "--widths",
               hi: int = MAX_WIDTH) -> list[int]:
    """"64,128" -> [64, 128]; None -> default; "none" -> [] (that sweep left out); anything else
    (an item that is not a plain decimal integer in [1, hi], one given twice, an empty list)
    is an InputError naming `flag` (spec.validate.integers)."""
    if text is None:
        return list(default)
    if not isinstance(text, str):
        return [validate.count(str(x), flag, 1, hi) for x in text]
    if text.strip().lower() == "none":
        return []
    return validate.integers(text, flag, 1, hi)


def parse_extra_points(text: str | Sequence[Sequence[int]] | None,
                       default: Sequence[Sequence[int]] = EXTRA_POINTS) -> list[tuple[int, int]]:
    """--points: "4096x2048,8192x512" -> [(4096, 2048), (8192, 512)] (hidden x batch, each in
    the recipe's bounds, none twice); None -> default (EXTRA_POINTS); "none" -> []."""
    flag = "--points"
    if text is None:
        return [(int(h), int(b)) for h, b in default]
    if not isinstance(text, str):
        items = [f"{h}x{b}" for h, b in text]
    elif text.strip().lower() == "none":
        return []
    else:
        items = [x.strip() for x in text.split(",")]
    out = []
    for item in items:
        m = re.fullmatch(r"([0-9]+)[xX]([0-9]+)", item)
        if not m:
            raise InputError(f"error: {flag} {text!r}: expected comma-separated WIDTHxBATCH "
                             f"pairs (e.g. 4096x2048) or none")
        pair = (validate.count(m.group(1), f"{flag} width", 1, MAX_WIDTH),
                validate.count(m.group(2), f"{flag} batch", 1, MAX_BATCH))
        if pair in out:
            raise InputError(f"error: {flag} {text!r}: {item} given twice")
        out.append(pair)
    return out


def parse_points(widths, batches, extra_points=()) -> tuple[list[int], list[int]]:
    """(widths, batches) of --widths and --batches (parse_ints); no width, no batch and no
    `extra_points` (the CLI passes those --points named, not the default ones) is an InputError."""
    w = parse_ints(widths, WIDTHS, "--widths", MAX_WIDTH)
    b = parse_ints(batches, BATCHES, "--batches", MAX_BATCH)
    if not w and not b and not extra_points:
        raise InputError(f"error: --widths {widths!r} --batches {batches!r}: no sweep point to run")
    return w, b


def parse_epochs(text) -> int:
    """--epochs: a plain decimal integer in [2, 1000] (epoch 0 is a warm-up, so one epoch times
    nothing); None: DEFAULT_EPOCHS."""
    if text is None:
        return DEFAULT_EPOCHS
    return validate.count(str(text), "--epochs (epoch 0 is a warm-up, not timed)", MIN_EPOCHS, MAX_EPOCHS)


def data_for(full: bool) -> tuple[Path, int | None]:
    """(data folder, --train-size) of the shipped subset (data/) or the full split (data/full)."""
    if not full:
        return DATA_DIR, None
    full_dir = DATA_DIR / "full"
    if not (full_dir / "SHA256SUMS").is_file():
        raise InputError(f"error: {_rel(full_dir)}: not found: run `invoke data --full` first")
    return full_dir, FULL_TRAIN_SIZE


def main(argv: Sequence[str] | None = None) -> int:
    ap = validate.ArgParser(prog="python -m harness.studies.sweep",
                            description="Width and batch sweep: the best CUDA path against "
                                        "PyTorch's fastest variant")
    ap.add_argument("--widths", default=None,
                    help=f"hidden widths at batch {WIDTH_SWEEP_BATCH} "
                         f"(default {','.join(map(str, WIDTHS))}; none: no width sweep)")
    ap.add_argument("--batches", default=None,
                    help=f"batches at width {BATCH_SWEEP_HIDDEN} "
                         f"(default {','.join(map(str, BATCHES))}; none: no batch sweep)")
    ap.add_argument("--points", default=None,
                    help="extra WIDTHxBATCH points (default "
                         f"{','.join(f'{h}x{b}' for h, b in EXTRA_POINTS) or 'none'}; none: none)")
    ap.add_argument("--epochs", default=None, help=f"epochs per point, {MIN_EPOCHS}-{MAX_EPOCHS} (default {DEFAULT_EPOCHS})")
    ap.add_argument("--paths", default=None,
                    help="CUDA paths (default: those a plain run times, from build/mlp_host "
                         f"catalog; {','.join(FALLBACK_PATHS)} where it cannot be read)")
    ap.add_argument("--variants", default=None,
                    help=f"PyTorch variants (default: the registry's sweep variants, "
                         f"{','.join(registry.sweep_names())})")
    ap.add_argument("--precisions", default=None,
                    help=f"precisions of the sweep variants, comma-separated, fp32 among them "
                         f"(default {','.join(PRECISIONS)}; fp32: PyTorch's fp32 variants only, "
                         f"for a shorter call; not with --variants)")
    ap.add_argument("--no-parity", action="store_true",
                    help="do not pass --parity (the one-epoch float64 check) to the binary")
    ap.add_argument("--no-pytorch", action="store_true", help="CUDA paths only")
    ap.add_argument("--full", action="store_true",
                    help=f"train on data/full ({FULL_TRAIN_SIZE:,} images; `invoke data --full`)")
    ap.add_argument("--results", type=Path, default=RESULTS_DIR)
    ap.add_argument("--timeout", type=lambda t: validate.positive_seconds(t, "--timeout"), default=DEFAULT_TIMEOUT_S,
                    help="time limit of each subprocess of a point, seconds")
    ap.add_argument("--report", action="store_true",
                    help=f"also write {_rel(SWEEP_MD)} and its three plots (with sweep.json, together)")
    ap.add_argument("--collect-only", action="store_true",
                    help="rebuild sweep.json from results/sweep/*/ without running anything")
    args = ap.parse_args(argv)
    extra = parse_extra_points(args.points)
    if args.precisions is not None:
        parse_precisions(args.precisions)     # a bad value stops here, before anything runs
        if args.variants is not None:
            resolve_variants(args.variants, args.precisions)   # the one-line refusal of both
    # --widths none --batches none is no sweep unless --points names the points to run
    widths, batches = parse_points(args.widths, args.batches,
                                   extra if args.points is not None else ())
    report = SWEEP_MD if args.report else None
    if args.collect_only:
        doc = collect(args.results, widths, batches, pytorch=not args.no_pytorch,
                      extra_points=extra, report=report)
        found = sum(1 for r in doc["points"] if "mlp_train: not run" not in r["errors"])
        print(f"sweep: collected {len(doc['points'])} points ({found} with a folder) into "
              f"{_rel(Path(args.results) / SWEEP_JSON)}" + (f" and {_rel(report)}" if report else ""))
        if doc["folders_not_collected"]:
            print("sweep: left out, not among the points: "
                  + ", ".join(doc["folders_not_collected"]))
    else:
        data_dir, train_size = data_for(args.full)
        doc = sweep(widths, batches, args.epochs, args.paths, args.results,
                    pytorch=not args.no_pytorch, data_dir=data_dir, train_size=train_size,
                    timeout_s=args.timeout, extra_points=extra, variants=args.variants,
                    parity=not args.no_parity, report=report, precisions=args.precisions)
    return 0 if any(r["best_cuda"] is not None for r in doc["points"]) else 1


if __name__ == "__main__":
    files.run_main(main)
