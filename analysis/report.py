"""Render RESULTS.md from results/run.json, results/pytorch.json, profile/*.csv,
predictions.toml and GAPS.toml, through templates/RESULTS.md.j2.

    python -m analysis.report [--results results] [--profile profile] [--out RESULTS.md]

Every number in RESULTS.md comes from an input file or is computed here from those numbers; the
template holds none. The output is deterministic: the only dates and commits in it are those in
run.json, and the plots (results/plots/*.png) carry no timestamp, so rendering the same inputs
again, here or on another machine with the same library versions, gives the same bytes.

Required: run.json, predictions.toml, GAPS.toml. Optional, each shown only when present:
pytorch.json (without it the report says PyTorch was not run), persistent_phases.json,
sanitize.json, logs/nvidia-smi.csv, ceilings.json (the roofline section's ceilings: without it,
or without the fused path's kernel summary, that section says which is missing), sweep.json
and full60k/sweep.json (harness/sweep.py: the memory-and-cost section and the full-split
section, each at run.json's recipe point, checked as analysis/sweep_report.py checks them;
without one, its section says in one sentence that it was not run), and the
profile CSVs of any path (a path without them is
reported as having no profile of this run; logs/profile.log, when present, is named as the log
of the failed capture, and logs/sanitize.log likewise for the sanitizers).

A missing required input, a path with some but not all three profile CSVs, or a malformed JSON,
TOML or CSV file (a present but empty profile CSV included: that is a broken capture) raises
SystemExit with one line naming the file, before anything is written.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
from pathlib import Path
from typing import Sequence

import jinja2

from analysis import derive, plots, roofline
from analysis.nsys_csv import read_api_sum, read_kern_sum, read_nvtx_sum
from harness.atomic import write_text
from harness.config import PROFILE_DIR, RESULTS_DIR, ROOT, TEMPLATES_DIR, load_toml
from harness.sweep import FULL_TRAIN_SIZE, SWEEP_JSON, ledger, label as sweep_label

TEMPLATE_NAME = "RESULTS.md.j2"
PROFILE_REPORTS = (("kern", "cuda_gpu_kern_sum", read_kern_sum),
                   ("api", "cuda_api_sum", read_api_sum),
                   ("nvtx", "nvtx_sum", read_nvtx_sum))
# Which profile CSVs each prediction measure reads (kinds of PROFILE_REPORTS).
MEASURE_REPORTS = {"lower_epoch_time": (), "epoch_filler": ("kern", "api"),
                   "widest_kernel": ("kern",)}

# Optional inputs, relative to the results folder.
PHASES_FILE = "persistent_phases.json"
SANITIZE_FILE = "sanitize.json"
NVIDIA_SMI_FILE = "logs/nvidia-smi.csv"
PROFILE_LOG = "logs/profile.log"
SANITIZE_LOG = "logs/sanitize.log"
CEILINGS_FILE = "ceilings.json"
SWEEP_FILE = SWEEP_JSON                          # harness/sweep.py: the width and batch sweep
FULL_SPLIT_SWEEP_FILE = f"full60k/{SWEEP_JSON}"  # the same on the full train split, one point
# The commands that write them, named where one is absent.
SWEEP_COMMAND = "python -m harness.sweep"
FULL_SPLIT_COMMAND = ("python -m harness.sweep --full --widths 256 --batches none --epochs 5 "
                      "--results results/full60k")
SWEEP_MD_NAME = "SWEEP.md"  # analysis/sweep_report.py renders it; "Memory and cost" links it

# The roofline section: the headline path's profiled epoch, then these when profiled.
ROOFLINE_EXTRA_PATHS = ("persistent",)

# The fused path's tiers, a ladder: a tier counts only when every tier below it holds too.
# Tiers are computed only over paths whose `passed` is true.
HEADLINE_PATH = "fused"
BASELINE_PATH = "unfused"
EAGER_VARIANT = "eager"
TORCH_GRAPH_VARIANT = "cuda-graph"
SILVER_MAX_RATIO = 0.90   # fused median epoch / PyTorch eager median epoch
GOLD_MAX_RATIO = 0.60
GOLD_MAX_CV_PCT = 5.0     # epoch-time CV of the path, strictly below

# The goals of issue 6, each set against the measured value.
GOALS_SOURCE = "issue 6"
GOAL_FASTEST_MAX_MS = 0.5          # fastest passing path's median epoch, ms
GOAL_FASTEST_VS_EAGER = 0.01       # fastest median / PyTorch eager median
GOAL_FASTEST_VS_TORCH_GRAPH = 0.10  # fastest median / PyTorch cuda-graph median
GOAL_FUSED_VS_EAGER = 0.10         # fused median / PyTorch eager median (and below unfused)
GOAL_MAX_CV_PCT = 5.0              # epoch-time CV of every CUDA path, strictly below

# Loss-curve agreement with the float64 reference.
LOSS_CURVE_EPOCHS = 5     # the first N epochs
LOSS_CURVE_FLAG = 0.02    # |loss / float64 loss - 1| above this is flagged
LAST_N_ACCURACY = 5       # test accuracy averaged over the last N epochs (as case 7 does)


# ----------------------------------------------------------------------------- formatting

def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def fmt_ms(x, digits: int = 3) -> str:
    return "—" if _missing(x) else f"{float(x):.{digits}f}"


def fmt_ns_as_ms(x) -> str:
    return "—" if _missing(x) else f"{float(x) / 1e6:.3f}"


def fmt_ns_as_us(x) -> str:
    return "—" if _missing(x) else f"{float(x) / 1e3:.2f}"


def fmt_pct(x, digits: int = 1) -> str:
    """x is a fraction (0.25 -> '25.0%')."""
    return "—" if _missing(x) else f"{100.0 * float(x):.{digits}f}%"


def fmt_ratio(x) -> str:
    return "—" if _missing(x) else f"{float(x):.2f}×"


def fmt_ratio3(x) -> str:
    """Three significant digits, for ratios set against limits like 0.01×."""
    return "—" if _missing(x) else f"{float(x):.3g}×"


def fmt_g(x) -> str:
    return "—" if _missing(x) else f"{float(x):.3g}"


def fmt_num(x) -> str:
    """A CSV cell: integers as integers with thousands separators, else one decimal."""
    if _missing(x):
        return "—"
    x = float(x)
    return f"{int(x):,}" if x.is_integer() else f"{x:,.1f}"


def fmt_int(x) -> str:
    return "—" if _missing(x) else f"{int(round(float(x))):,}"


def fmt_rel_pct(rel) -> str:
    """A relative difference (fraction) as a signed percentage, small ones in e-notation."""
    if _missing(rel):
        return "—"
    pct = 100.0 * float(rel)
    if pct == 0:
        return "0%"
    return f"{pct:+.2f}%" if abs(pct) >= 0.01 else f"{pct:+.2g}%"


def fmt_launches(lps, steps: int) -> str:
    """launches_per_step of run.json in words; a fraction below 1 as launches per epoch
    (the persistent path's 1/47 -> '1 per epoch (1/47 per step)')."""
    if _missing(lps):
        return "—"
    lps = float(lps)
    if 0 < lps < 1 and steps:
        per_epoch = lps * steps
        k = round(per_epoch)
        if k >= 1 and abs(per_epoch - k) <= 1e-6 * k:
            return f"{k} per epoch ({k}/{steps} per step)"
        return f"{lps:.4g} per step"
    return f"{int(lps)} per step" if lps.is_integer() else f"{lps:.4g} per step"


def md_code(text: str) -> str:
    """Inline code for a table cell (kernel names hold '*', '<', '|')."""
    text = str(text).replace("|", "\\|").replace("`", "'")
    return f"`{text}`"


def md_cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def cuda_version(v) -> str:
    """13000 -> '13.0' (cudaRuntimeGetVersion / cudaDriverGetVersion encoding)."""
    if not isinstance(v, int):
        return "—" if v is None else str(v)
    return f"{v // 1000}.{(v % 1000) // 10}"


# ----------------------------------------------------------------------------- loading

def _fail(path, what: str) -> SystemExit:
    return SystemExit(f"error: {path}: {what}")


def load_json(path: Path, required: bool = True) -> dict | None:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        if required:
            raise _fail(path, "file not found") from None
        return None
    except UnicodeDecodeError as exc:
        raise _fail(path, f"malformed JSON: not UTF-8 ({exc.reason})") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _fail(path, f"malformed JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise _fail(path, "malformed JSON: the top level is not an object")
    return obj


def _need(obj: dict, key: str, path, kind=None):
    if not isinstance(obj, dict) or key not in obj:
        raise _fail(path, f"missing key {key!r}")
    value = obj[key]
    if kind is not None and not isinstance(value, kind):
        raise _fail(path, f"key {key!r} has the wrong type ({type(value).__name__})")
    return value


def validate_run(run: dict, path) -> None:
    for key, kind in (("cases", list), ("paths", dict), ("recipe", dict), ("gpu", dict)):
        _need(run, key, path, kind)
    for case in run["cases"]:
        for key in ("id", "name", "passed", "value", "limit"):
            _need(case, key, path)
    for name, p in run["paths"].items():
        if not isinstance(p, dict) or "passed" not in p:
            raise _fail(path, f"path {name!r} has no 'passed'")
        lps = p.get("launches_per_step")
        if lps is not None and not _is_number(lps):
            raise _fail(path, f"path {name!r}: launches_per_step is not a number")
        if _is_number(lps) and lps < 0:
            p["launches_per_step"] = None  # the submission path declares none (-1)
    _need(run["recipe"], "steps_per_epoch", path, int)
    memory = run.get("memory")  # the binary's cudaMemGetInfo watch; absent in older runs
    if memory is not None:
        if not isinstance(memory, dict):
            raise _fail(path, "key 'memory' is not an object")
        for key, value in memory.items():
            if value is not None and not _is_number(value):
                raise _fail(path, f"memory.{key} is not a number")


def validate_pytorch(torch: dict, path) -> None:
    """Checks pytorch.json and gives each variant a `passed`: harness/pytorch_baseline.py writes
    none, but an "error" (with "skipped: ..." for a variant that could not run) when one failed."""
    variants = _need(torch, "variants", path, dict)
    for name, v in variants.items():
        if not isinstance(v, dict):
            raise _fail(path, f"variant {name!r} is not an object")
        if "passed" not in v:
            v["passed"] = not v.get("error")
        peak = v.get("max_memory_allocated_bytes")
        if peak is not None and not _is_number(peak):
            raise _fail(path, f"variant {name!r}: max_memory_allocated_bytes is not a number")


def validate_phases(phases: dict, path) -> None:
    """persistent_phases.json: {"variants": [{"phases": str, "mask": int, "median_ms": number,
    "cv_pct": number (optional)}, ...]} with distinct masks."""
    variants = _need(phases, "variants", path, list)
    if not variants:
        raise _fail(path, "'variants' is empty")
    masks = set()
    for i, v in enumerate(variants):
        if not isinstance(v, dict):
            raise _fail(path, f"variant {i} is not an object")
        if not isinstance(v.get("phases"), str):
            raise _fail(path, f"variant {i}: missing string key 'phases'")
        mask = v.get("mask")
        if not isinstance(mask, int) or isinstance(mask, bool) or mask < 0:
            raise _fail(path, f"variant {i}: 'mask' is not a non-negative integer")
        if mask in masks:
            raise _fail(path, f"variant {i}: mask {mask} appears twice")
        masks.add(mask)
        if not _is_number(v.get("median_ms")) or not v["median_ms"] > 0:
            raise _fail(path, f"variant {i}: 'median_ms' is not a positive number")
        if "cv_pct" in v and v["cv_pct"] is not None and not _is_number(v["cv_pct"]):
            raise _fail(path, f"variant {i}: 'cv_pct' is not a number")


def validate_sanitize(san: dict, path) -> None:
    """sanitize.json (harness/sanitize.py): {"clean": bool, "runs": [{"tool", "target",
    "errors": int or null, "exit_code": int, "seconds": number}, ...]}."""
    runs = _need(san, "runs", path, list)
    for i, r in enumerate(runs):
        if not isinstance(r, dict):
            raise _fail(path, f"run {i} is not an object")
        for key in ("tool", "target"):
            if not isinstance(r.get(key), str):
                raise _fail(path, f"run {i}: missing string key {key!r}")
        if "errors" not in r or not (r["errors"] is None or isinstance(r["errors"], int)):
            raise _fail(path, f"run {i}: 'errors' is not an integer or null")
        if not (isinstance(r.get("exit_code"), int) or (r.get("exit_code") is None and r.get("timed_out"))):
            raise _fail(path, f"run {i}: 'exit_code' is not an integer")


def validate_ceilings(ceil: dict, path) -> None:
    """ceilings.json (harness/ceilings.py): {"copy": {"bytes", "median_ms", "gb_per_s"},
    "fp32_matmul": {"n", "median_ms", "tflops"}, "tf32_matmul" (optional, same keys)}, each
    rate a positive number."""
    for key, rate, required in (("copy", "gb_per_s", True), ("fp32_matmul", "tflops", True),
                                ("tf32_matmul", "tflops", False)):
        entry = ceil.get(key)
        if entry is None and not required:
            continue
        if not isinstance(entry, dict):
            raise _fail(path, f"missing object {key!r}")
        value = entry.get(rate)
        if not _is_number(value) or not value > 0 or math.isinf(value):
            raise _fail(path, f"{key}.{rate} is not a positive number")
    for key in ("gpu", "torch_version"):
        if key in ceil and ceil[key] is not None and not isinstance(ceil[key], str):
            raise _fail(path, f"key {key!r} is not a string")


def load_nvidia_smi(path: Path) -> dict | None:
    """The `nvidia-smi --query-gpu=... --format=csv` text: {"header": [...], "rows": [[...]]}."""
    path = Path(path)
    if not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise _fail(path, "malformed CSV: not UTF-8") from None
    try:
        table = [row for row in csv.reader(text.splitlines(), skipinitialspace=True) if row]
    except csv.Error as exc:
        raise _fail(path, f"malformed CSV: {exc}") from None
    if len(table) < 2:
        raise _fail(path, "malformed CSV: no header and data row")
    header, rows = [c.strip() for c in table[0]], table[1:]
    for row in rows:
        if len(row) != len(header):
            raise _fail(path, f"malformed CSV: a row has {len(row)} cells, the header {len(header)}")
    return {"header": header, "rows": [[c.strip() for c in row] for row in rows]}


def read_log(path: Path) -> str | None:
    path = Path(path)
    if not path.is_file():
        return None
    return path.read_text(encoding="utf-8", errors="replace")


def load_predictions(path: Path) -> list[dict]:
    data = load_toml(path)
    entries = data.get("prediction")
    if not isinstance(entries, list) or not entries:
        raise _fail(path, "no [[prediction]] entries")
    for e in entries:
        for key in ("id", "question", "measure", "predicted", "reason"):
            if not isinstance(e.get(key), str):
                raise _fail(path, f"prediction {e.get('id', '?')!r}: missing string key {key!r}")
        if e["measure"] not in MEASURES:
            raise _fail(path, f"prediction {e['id']!r}: unknown measure {e['measure']!r}")
    return entries


def load_gaps(path: Path) -> list[dict]:
    data = load_toml(path)
    entries = data.get("gap")
    if not isinstance(entries, list):
        raise _fail(path, "no [[gap]] entries")
    for e in entries:
        for key in ("id", "title", "status", "detail"):
            if not isinstance(e.get(key), str):
                raise _fail(path, f"gap {e.get('id', '?')!r}: missing string key {key!r}")
        if e["status"] not in ("open", "closed"):
            raise _fail(path, f"gap {e['id']!r}: status must be 'open' or 'closed'")
    return entries


def profile_files(name: str, profile_dir: Path) -> dict[str, Path]:
    """{kind: path} of the three CSVs of one path."""
    return {kind: Path(profile_dir) / f"{name}_{report}.csv" for kind, report, _ in PROFILE_REPORTS}


def load_profiles(run: dict, profile_dir: Path) -> dict[str, dict]:
    """{path: {"kern", "api", "nvtx": DataFrame, "files": {kind: file name}}} for every path of
    run.json with profile CSVs; a path with some but not all three is an error, and so is a
    present CSV without a table (an empty file included)."""
    out = {}
    for name in run["paths"]:
        files = profile_files(name, profile_dir)
        present = [f for f in files.values() if f.is_file()]
        if not present:
            continue
        entry = {"files": {k: f.name for k, f in files.items()}}
        for kind, _, reader in PROFILE_REPORTS:
            f = files[kind]
            if not f.is_file():
                raise _fail(f, f"file not found (the other CSVs of path {name!r} exist)")
            try:
                entry[kind] = reader(f)
            except ValueError as exc:
                raise SystemExit(f"error: {exc}") from None
        out[name] = entry
    return out


# ----------------------------------------------------------------------------- derived

def status_text(rec: dict) -> str:
    """'passed', or '**FAILED**' with the first line of the run's error (skipped variants too)."""
    error = str(rec.get("error") or "").strip()
    first = error.splitlines()[0] if error else ""
    if len(first) > 160:
        first = first[:157] + "..."
    first = first.replace("|", "\\|")
    if rec.get("passed"):
        return "passed"
    if first.startswith("skipped"):
        return first
    return "**FAILED**" + (f": {first}" if first else "")


def timing_row(label: str, kind: str, rec: dict, eager_median) -> dict:
    median = rec.get("median_ms")
    ratio = (median / eager_median) if (not _missing(median) and eager_median) else None
    return {"label": label, "kind": kind, "passed": bool(rec.get("passed")),
            "status": status_text(rec),
            "mean": fmt_ms(rec.get("mean_ms")), "median": fmt_ms(median),
            "min": fmt_ms(rec.get("min_ms")), "max": fmt_ms(rec.get("max_ms")),
            "cv": "—" if _missing(rec.get("cv_pct")) else f"{float(rec['cv_pct']):.2f}%",
            "ratio_eager": fmt_ratio(ratio), "epochs_timed": len(rec.get("epoch_ms") or []),
            "compile_seconds": rec.get("compile_seconds")}


def _passed_median(rec: dict | None):
    if not rec or not rec.get("passed"):
        return None
    m = rec.get("median_ms")
    return None if _missing(m) else float(m)


def tier_for(path_name: str, paths: dict, eager: dict | None) -> dict:
    """The tier ladder for one path: bronze (beats unfused), silver (≤ SILVER × eager median),
    gold (≤ GOLD × eager median with CV < GOLD_MAX_CV_PCT). Only paths that passed the gate."""
    rec = paths[path_name]
    if not rec.get("passed"):
        return {"path": path_name, "tier": "none", "excluded": "failed the gate", "criteria": []}
    median = _passed_median(rec)
    if median is None:
        return {"path": path_name, "tier": "none", "excluded": "no median epoch time",
                "criteria": []}
    base = _passed_median(paths.get(BASELINE_PATH))
    eager_median = _passed_median(eager)
    cv = rec.get("cv_pct")
    criteria = []
    if base is None:
        criteria.append(("bronze", f"median epoch below the {BASELINE_PATH} path's", None,
                         f"no passing {BASELINE_PATH} path to compare with"))
    else:
        criteria.append(("bronze", f"median epoch below the {BASELINE_PATH} path's",
                         median < base,
                         f"{fmt_ms(median)} ms vs {fmt_ms(base)} ms ({fmt_ratio(median / base)})"))
    if eager_median is None:
        for tier, limit in (("silver", SILVER_MAX_RATIO), ("gold", GOLD_MAX_RATIO)):
            criteria.append((tier, f"median epoch ≤ {limit:.2f}× PyTorch eager", None,
                             "no passing PyTorch eager run to compare with"))
    else:
        ratio = median / eager_median
        criteria.append(("silver", f"median epoch ≤ {SILVER_MAX_RATIO:.2f}× PyTorch eager",
                         ratio <= SILVER_MAX_RATIO,
                         f"{fmt_ms(median)} ms / {fmt_ms(eager_median)} ms = {fmt_ratio(ratio)}"))
        cv_ok = (not _missing(cv)) and float(cv) < GOLD_MAX_CV_PCT
        criteria.append(("gold", f"median epoch ≤ {GOLD_MAX_RATIO:.2f}× PyTorch eager and "
                                 f"epoch-time CV < {GOLD_MAX_CV_PCT:g}%",
                         ratio <= GOLD_MAX_RATIO and cv_ok,
                         f"{fmt_ratio(ratio)}, CV {fmt_g(cv)}%"))
    tier = "none"
    for name, _, met, _ in criteria:
        if met is not True:
            break
        tier = name
    return {"path": path_name, "tier": tier, "excluded": None,
            "criteria": [{"tier": t, "rule": r,
                          "met": "yes" if m is True else ("no" if m is False else "not evaluable"),
                          "evidence": e} for t, r, m, e in criteria]}


def _all(conds: list) -> bool | None:
    """False when any condition fails, else None when any is not evaluable, else True."""
    return False if False in conds else (None if None in conds else True)


def _verdict(met) -> str:
    return {True: "MET", False: "MISSED"}.get(met, "not evaluable")


def goals(paths: dict, variants: dict) -> list[dict]:
    """The goals of GOALS_SOURCE, each with its measured value and MET / MISSED / not
    evaluable. "Fastest" is the passing CUDA path with the lowest median epoch."""
    passed = {n: m for n, r in paths.items() if (m := _passed_median(r)) is not None}
    fastest = min(passed, key=lambda n: passed[n]) if passed else None
    eager = _passed_median(variants.get(EAGER_VARIANT))
    tgraph = _passed_median(variants.get(TORCH_GRAPH_VARIANT))
    rows = []

    def add(goal, measured, met):
        rows.append({"goal": goal, "measured": measured, "verdict": _verdict(met)})

    no_fastest = "no CUDA path passed the gate"
    f_txt = None if fastest is None else f"`{fastest}` {fmt_ms(passed[fastest])} ms"
    add(f"fastest path's median epoch ≤ {GOAL_FASTEST_MAX_MS:g} ms",
        f_txt or no_fastest,
        None if fastest is None else passed[fastest] <= GOAL_FASTEST_MAX_MS)
    for limit, median, label in ((GOAL_FASTEST_VS_EAGER, eager, f"PyTorch {EAGER_VARIANT}"),
                                 (GOAL_FASTEST_VS_TORCH_GRAPH, tgraph,
                                  f"PyTorch {TORCH_GRAPH_VARIANT}")):
        goal = f"fastest path ≤ {limit:g}× the {label} median epoch"
        if fastest is None:
            add(goal, no_fastest, None)
        elif median is None:
            add(goal, f"no passing {label} run", None)
        else:
            ratio = passed[fastest] / median
            add(goal, f"{f_txt} / {fmt_ms(median)} ms = {fmt_ratio3(ratio)}", ratio <= limit)
    goal = (f"`{HEADLINE_PATH}` ≤ {GOAL_FUSED_VS_EAGER:g}× the PyTorch {EAGER_VARIANT} median "
            f"epoch and below the `{BASELINE_PATH}` median")
    fused, base = _passed_median(paths.get(HEADLINE_PATH)), _passed_median(paths.get(BASELINE_PATH))
    if fused is None:
        add(goal, f"no passing `{HEADLINE_PATH}` path", None)
    else:
        parts, conds = [], []
        if eager is None:
            parts.append(f"no passing PyTorch {EAGER_VARIANT} run")
            conds.append(None)
        else:
            ratio = fused / eager
            parts.append(f"{fmt_ms(fused)} ms / {fmt_ms(eager)} ms = {fmt_ratio3(ratio)}")
            conds.append(ratio <= GOAL_FUSED_VS_EAGER)
        if base is None:
            parts.append(f"no passing `{BASELINE_PATH}` path")
            conds.append(None)
        else:
            parts.append(f"`{BASELINE_PATH}` {fmt_ms(base)} ms ({fmt_ratio(fused / base)})")
            conds.append(fused < base)
        add(goal, "; ".join(parts), _all(conds))
    goal = f"epoch-time CV < {GOAL_MAX_CV_PCT:g}% on every CUDA path"
    cvs = {n: r.get("cv_pct") for n, r in paths.items()}
    lacking = [n for n, cv in cvs.items() if _missing(cv)]
    have = {n: float(cv) for n, cv in cvs.items() if not _missing(cv)}
    if not have:
        add(goal, "no path has an epoch-time CV", None)
    else:
        worst = max(have, key=lambda n: have[n])
        measured = f"largest `{worst}` {have[worst]:.2f}% (of {len(have)} paths)"
        conds = [v < GOAL_MAX_CV_PCT for v in have.values()] + [None] * len(lacking)
        if lacking:
            measured += "; no CV: " + ", ".join(f"`{n}`" for n in lacking)
        add(goal, measured, _all(conds))
    return rows


def path_checks(run: dict) -> list[dict] | None:
    """One row per CUDA path of run.json's per-path checks; None when run.json has none of them."""
    keys = ("parity_vs_fused", "parity_limit", "parity_vs_fp64", "deterministic",
            "accuracy_gap_pp", "test_accuracy_last5_mean", "warmup_epoch_ms")
    paths = run["paths"]
    if not any(k in rec for rec in paths.values() for k in keys):
        return None
    steps = run["recipe"]["steps_per_epoch"]
    rows = []
    for name, rec in paths.items():
        parity, limit = rec.get("parity_vs_fused"), rec.get("parity_limit")
        if _missing(parity):
            parity_txt = "—"
        else:
            parity_txt = fmt_g(parity)
            if not _missing(limit):
                parity_txt += f" (limit {fmt_g(limit)})"
                if float(parity) > float(limit):
                    parity_txt += " **over the limit**"
        det = rec.get("deterministic")
        gap = rec.get("accuracy_gap_pp")
        rows.append({"path": name, "status": status_text(rec),
                     "launches": fmt_launches(rec.get("launches_per_step"), steps),
                     "parity_fused": parity_txt, "parity_ref": fmt_g(rec.get("parity_vs_fp64")),
                     "deterministic": {True: "yes", False: "**no**"}.get(det, "—"),
                     "last_mean": fmt_pct(rec.get("test_accuracy_last5_mean"), 2),
                     "gap": "—" if _missing(gap) else f"{float(gap):.2f} pp",
                     "warmup": fmt_ms(rec.get("warmup_epoch_ms"))})
    return rows


def _last_n_mean(rec: dict):
    v = rec.get("test_accuracy_last5_mean") if LAST_N_ACCURACY == 5 else None
    if not _missing(v):
        return float(v)
    per = rec.get("test_accuracy_per_epoch") or []
    if len(per) >= LAST_N_ACCURACY and all(_is_number(a) for a in per[-LAST_N_ACCURACY:]):
        return sum(per[-LAST_N_ACCURACY:]) / LAST_N_ACCURACY
    return None


def accuracy_rows(paths: dict, ref: dict, variants: dict) -> list[dict]:
    ref_acc, ref_last = ref.get("test_accuracy"), _last_n_mean(ref)
    rows = []
    for label, rec in ([(f"CUDA {n}", r) for n, r in paths.items()]
                       + [("float64 reference", ref)]
                       + [(f"PyTorch {n}", r) for n, r in variants.items()]):
        a, last = rec.get("test_accuracy"), _last_n_mean(rec)
        diff = None if _missing(a) or _missing(ref_acc) else 100.0 * (float(a) - float(ref_acc))
        ldiff = None if last is None or ref_last is None else 100.0 * (last - ref_last)
        rows.append({"label": label, "accuracy": fmt_pct(a, 2),
                     "status": status_text(rec | {"passed": rec.get("passed", True)}),
                     "vs_ref": "—" if diff is None else f"{diff:+.2f} pp",
                     "last": fmt_pct(last, 2),
                     "last_vs_ref": "—" if ldiff is None else f"{ldiff:+.2f} pp"})
    return rows


def loss_curve(paths: dict, ref: dict, variants: dict) -> dict | None:
    """Loss per epoch over the first LOSS_CURVE_EPOCHS epochs of each CUDA path and PyTorch eager
    against the float64 reference, with the relative difference; |diff| > LOSS_CURVE_FLAG is
    flagged. None without a float64 loss curve."""
    ref_loss = ref.get("loss_per_epoch") or []
    if not ref_loss:
        return None
    series = [(f"CUDA {n}", r.get("loss_per_epoch") or []) for n, r in paths.items()]
    eager = variants.get(EAGER_VARIANT)
    if eager is not None:
        series.append((f"PyTorch {EAGER_VARIANT}", eager.get("loss_per_epoch") or []))
    n = min(LOSS_CURVE_EPOCHS, len(ref_loss))
    rows, flagged = [], []
    for e in range(n):
        r = float(ref_loss[e])
        cells = []
        for label, losses in series:
            if e >= len(losses) or _missing(losses[e]):
                cells.append("—")
                continue
            x = float(losses[e])
            rel = (x - r) / r if r else math.nan
            cell = f"{x:.5f} ({fmt_rel_pct(rel)})"
            if not math.isnan(rel) and abs(rel) > LOSS_CURVE_FLAG:
                cell = f"**{cell}**"
                flagged.append((label, e + 1, rel))
            cells.append(cell)
        rows.append({"epoch": e + 1, "ref": f"{r:.5f}", "cells": cells})
    by_label: dict[str, list[str]] = {}
    for label, epoch, rel in flagged:
        by_label.setdefault(label, []).append(f"{epoch} ({fmt_rel_pct(rel)})")
    flag_text = "; ".join(f"{label}, epoch{'s' if len(v) > 1 else ''} {', '.join(v)}"
                          for label, v in by_label.items())
    return {"epochs": n, "labels": [label for label, _ in series], "rows": rows,
            "flag_pct": f"{100 * LOSS_CURVE_FLAG:g}%", "flagged": flag_text or None}


PERSISTENT2_MASK = 32  # cuda/main.cu run_phase_breakdown: the row times k_persistent2_epoch


def phase_breakdown(phases: dict, run: dict) -> dict:
    """The persistent epoch's phases: a row per variant (median ms, µs a step, CV, cost above the
    barrier-only variant) and one sentence: each single phase's cost above the barriers, their
    sum, and the sum against the variant that runs them all."""
    steps = run["recipe"]["steps_per_epoch"]
    variants = phases["variants"]
    us = {v["mask"]: float(v["median_ms"]) * 1000.0 / steps for v in variants}
    # Mask bit 32 marks persistent2 rows (mlp_train --persistent-phases): another kernel, with
    # two barriers a step, so no cost "above" the persistent kernel's barrier-only epoch.
    other = {m for m in us if m & PERSISTENT2_MASK}
    label = {v["mask"]: v["phases"] for v in variants}
    base = us.get(0)
    rows = [{"phases": v["phases"], "median": fmt_ms(v["median_ms"], 4),
             "us_step": f"{us[v['mask']]:.2f}",
             "cv": "—" if _missing(v.get("cv_pct")) else f"{float(v['cv_pct']):.1f}%",
             "above": "—" if base is None or v["mask"] in (0, *other) else f"{us[v['mask']] - base:+.2f}"}
            for v in variants]
    singles = [m for m in us if m > 0 and m & (m - 1) == 0 and m not in other]
    full_mask = 0
    for m in singles:
        full_mask |= m
    if base is None:
        sentence = ("No barrier-only variant (mask 0) was timed, so no phase's cost above the "
                    "barriers can be given.")
    elif not singles:
        sentence = "No single-phase variant was timed, so no phase's cost can be given."
    else:
        costs = [(label[m], us[m] - base) for m in sorted(singles)]
        total = sum(c for _, c in costs)
        sentence = (f"Above the barrier-only epoch ({base:.2f} µs a step), "
                    + ", ".join(f"{name} costs {c:.2f} µs a step" for name, c in costs)
                    + f"; the phases sum to {total:.2f} µs a step, and with the barriers to "
                      f"{base + total:.2f} µs a step.")
        if len(singles) > 1 and full_mask in us:
            full = us[full_mask]
            diff = full - (base + total)
            sentence += (f" The full epoch, {label[full_mask]}, measured "
                         f"{full:.2f} µs a step: {abs(diff):.2f} µs a step "
                         f"({fmt_pct(abs(diff) / (base + total))}) "
                         f"{'less' if diff < 0 else 'more'} than that sum.")
        else:
            sentence += " No variant runs all the single phases together, so no full-epoch comparison."
    persistent = run["paths"].get("persistent") or {}
    run_median = persistent.get("median_ms")
    if not _missing(run_median) and full_mask in us and len(singles) > 1:
        sentence += (f" (The training run's `persistent` path: median {fmt_ms(run_median)} ms an "
                     f"epoch, {float(run_median) * 1000.0 / steps:.2f} µs a step.)")
    training2 = PERSISTENT2_MASK | 7
    for m in sorted(other - {training2}) if training2 in us else []:
        d = us[training2] - us[m]
        sentence += (f" The `persistent2` rows time that kernel's whole two-barrier epoch: "
                     f"\"{label[training2]}\" {us[training2]:.2f} µs a step against \"{label[m]}\" "
                     f"{us[m]:.2f} µs in the same process, {abs(d):.2f} µs "
                     f"({fmt_pct(abs(d) / us[m])}) {'less' if d < 0 else 'more'}.")
    return {"rows": rows, "sentence": sentence, "steps": steps}


_SAN_START = re.compile(r"^sanitize:\s+(\S+)\s+(.*\S)\s*$")
_SAN_RESULT = re.compile(r"^\s*->\s*(\S+)\s+errors?,\s*exit\s+(-?\d+)")
# harness/sanitize.py runs several tools at once, so it prints each result on its own line:
# 'sanitize: TOOL TARGET -> N errors, exit E (S s)' (or '-> no result within S s').
_SAN_ONE_LINE = re.compile(r"^sanitize:\s+(\S+)\s+(.*?)\s+->\s*(?:(\S+)\s+errors?,\s*exit\s+(-?\d+)|(no result))")


def sanitize_log_runs(text: str) -> tuple[list[dict], dict | None]:
    """(finished runs, a run the log ends inside or None) from the lines harness/sanitize.py
    prints: 'sanitize: TOOL TARGET' when a run starts, then either 'sanitize: TOOL TARGET -> N
    errors, exit E' (current form; runs interleave) or an indented '-> N errors, exit E' (the
    serial form of earlier logs)."""
    done, started, last = [], {}, None  # started: (tool, target) -> run not yet finished
    for line in text.splitlines():
        if line.startswith("sanitize: zero") or line.startswith("sanitize: ERRORS"):
            continue
        if m := _SAN_ONE_LINE.match(line):
            run = started.pop((m.group(1), m.group(2)), None) or {"tool": m.group(1), "target": m.group(2)}
            timed_out = m.group(5) is not None
            done.append(run | {"errors": "none (timed out)" if timed_out else m.group(3),
                               "exit_code": "—" if timed_out else m.group(4)})
        elif m := _SAN_START.match(line):
            last = (m.group(1), m.group(2))
            started[last] = {"tool": m.group(1), "target": m.group(2)}
        elif (m := _SAN_RESULT.match(line)) and last in started:  # the serial form: the last run started
            done.append(started.pop(last) | {"errors": m.group(1), "exit_code": m.group(2)})
    return done, next(iter(started.values()), None)


def sanitize_section(san: dict | None, log_text: str | None, log_rel: str) -> dict:
    if san is not None:
        rows = [{"tool": r["tool"], "target": r["target"],
                 "errors": "— (no summary)" if r["errors"] is None else str(r["errors"]),
                 "exit": "timed out" if r.get("timed_out") else str(r["exit_code"]),
                 "seconds": "—" if _missing(r.get("seconds")) else f"{float(r['seconds']):.1f}"}
                for r in san["runs"]]
        total = sum(r["errors"] or 0 for r in san["runs"])
        unknown = sum(1 for r in san["runs"] if r["errors"] is None)
        nonzero_exit = sum(1 for r in san["runs"] if r["exit_code"] != 0)
        complete = san.get("complete", True)
        clean = total == 0 and unknown == 0 and nonzero_exit == 0 and complete
        planned = san.get("planned_runs")
        summary = (f"{len(rows)} runs"
                   + (f" of {planned} planned (the sanitizer run was cut short)" if not complete and planned else
                      " (the sanitizer run was cut short)" if not complete else "")
                   + f": {total} errors in all"
                   + (f", {unknown} without an error summary" if unknown else "")
                   + (f", {nonzero_exit} with a non-zero exit" if nonzero_exit else "")
                   + (": clean." if clean else ": **not clean**."))
        return {"present": True, "rows": rows, "summary": summary}
    out = {"present": False, "log": log_rel if log_text is not None else None,
           "log_rows": [], "unfinished": None}
    if log_text is not None:
        done, current = sanitize_log_runs(log_text)
        out["log_rows"] = [{"tool": r["tool"], "target": r["target"], "errors": r["errors"],
                            "exit": r["exit_code"]} for r in done]
        if current is not None:
            out["unfinished"] = f"{current['tool']} {current['target']}"
    return out


_PROFILE_ERROR = re.compile(r"^(error: .*?\(exit status -?\d+\))")


def profile_log_error(text: str | None) -> str | None:
    """The last 'error: ...' line of the profiling log, cut after '(exit status N)'."""
    if not text:
        return None
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("error:")]
    if not lines:
        return None
    m = _PROFILE_ERROR.match(lines[-1])
    line = m.group(1) if m else lines[-1]
    return line if len(line) <= 200 else line[:197] + "..."


def _kernel_rows(df) -> list[dict]:
    labels = derive.kernel_label_map(df)
    return [{"name": md_code(r["name"]), "base": md_code(labels[r["name"]]),
             "time_pct": fmt_g(r["time_pct"]), "total": fmt_num(r["total_ns"]),
             "count": fmt_num(r["instances"]), "avg": fmt_num(r["avg_ns"]),
             "med": fmt_num(r["med_ns"]), "min": fmt_num(r["min_ns"]),
             "max": fmt_num(r["max_ns"]), "stddev": fmt_num(r["stddev_ns"])}
            for _, r in df.iterrows()]


def _api_rows(df) -> list[dict]:
    return [{"name": md_code(r["name"]), "time_pct": fmt_g(r["time_pct"]),
             "total": fmt_num(r["total_ns"]), "count": fmt_num(r["num_calls"]),
             "avg": fmt_num(r["avg_ns"]), "med": fmt_num(r["med_ns"]),
             "min": fmt_num(r["min_ns"]), "max": fmt_num(r["max_ns"]),
             "stddev": fmt_num(r["stddev_ns"])} for _, r in df.iterrows()]


def _nvtx_rows(df) -> list[dict]:
    return [{"name": md_code(r["name"] or r["raw_name"]), "style": r["style"] or "—",
             "time_pct": fmt_g(r["time_pct"]), "total": fmt_num(r["total_ns"]),
             "count": fmt_num(r["instances"]), "avg": fmt_num(r["avg_ns"]),
             "min": fmt_num(r["min_ns"]), "max": fmt_num(r["max_ns"])} for _, r in df.iterrows()]


def _range_label(rng: dict | None) -> str | None:
    """The NVTX range as the binary named it (the domain prefix nsys adds, ':' included, dropped)."""
    return None if rng is None else (rng["name"] or rng["raw_name"])


def profile_section(name: str, prof: dict, run: dict) -> dict:
    steps = run["recipe"]["steps_per_epoch"]
    declared = run["paths"][name].get("launches_per_step")
    d = derive.path_profile(prof["kern"], prof["api"], prof["nvtx"], steps, declared)
    lps = d["launches"]
    wk, la = d["widest_kernel"], d["largest_api"]
    launch_rows = [{"api": api, "calls": fmt_int(e["calls"]), "total_ms": fmt_ns_as_ms(e["total_ns"]),
                    "rows": ", ".join(md_code(r) for r in e["rows"])}
                   for api, e in d["launch"]["by_api"].items()]
    return {
        "name": name, "files": prof["files"], "derived": d,
        "kernel_rows": _kernel_rows(prof["kern"]), "api_rows": _api_rows(prof["api"]),
        "nvtx_rows": _nvtx_rows(prof["nvtx"]),
        "kernel_ms": fmt_ns_as_ms(d["kernel_ns"]),
        "range_name": md_code(_range_label(d["range"])) if d["range"] else None,
        "range_ms": fmt_ns_as_ms(d["range_ns"]),
        "kernel_share_of_range": fmt_pct(d["kernel_share_of_range"]),
        "widest": None if wk is None else {"name": md_code(wk["name"]), "base": md_code(wk["base"]),
                                           "total_ms": fmt_ns_as_ms(wk["total_ns"]),
                                           "share": fmt_pct(wk["share"])},
        "largest_api": None if la is None else {"name": md_code(la["name"]),
                                                "total_ms": fmt_ns_as_ms(la["total_ns"]),
                                                "calls": fmt_int(la["num_calls"]),
                                                "share": fmt_pct(la["share"])},
        "launch_rows": launch_rows,
        "launch_calls": fmt_int(d["launch"]["calls"]),
        "launch_ms": fmt_ns_as_ms(d["launch"]["total_ns"]),
        "lps_measured": "—" if _missing(lps["launches_per_step_measured"])
        else f"{lps['launches_per_step_measured']:.2f}",
        "lps_declared": "—" if lps["declared"] is None else fmt_launches(lps["declared"], steps),
        "lps_matches": {True: "yes", False: "NO", None: "no declaration"}[lps["matches"]],
        "kernel_instances": fmt_int(lps["kernel_instances"]),
        "steps": steps,
        "filler": d["filler"]["filler"],
    }


# ----------------------------------------------------------------------------- roofline

def fmt_sig3(x) -> str:
    """Three significant digits without e-notation ('994', '35.6', '0.480'); '0' for zero."""
    if _missing(x):
        return "—"
    x = float(x)
    if x == 0:
        return "0"
    digits = min(6, max(0, 2 - math.floor(math.log10(abs(x)))))
    return f"{x:,.{digits}f}"


def fmt_frac3(x) -> str:
    """A fraction as a percentage of three significant digits (0.0199 -> '1.99%')."""
    return "—" if _missing(x) else f"{fmt_sig3(100.0 * float(x))}%"


def _ceilings_text(ceil: dict, rates: dict, file_name: str, run_gpu) -> str:
    """The ceilings of ceilings.json in one paragraph."""
    copy, fp32, tf32 = ceil["copy"], ceil["fp32_matmul"], ceil.get("tf32_matmul")
    who = f" with PyTorch {ceil['torch_version']}" if ceil.get("torch_version") else ""
    text = f"Ceilings from `{file_name}`, measured{who} on {ceil.get('gpu') or 'an unnamed GPU'}: "
    tensor = copy.get("tensor_bytes")
    if not _is_number(tensor) and _is_number(copy.get("bytes")):
        tensor = copy["bytes"] / 2
    copy_what = (f"a device-to-device copy of {fmt_g(tensor / 2**30)} GiB" if _is_number(tensor)
                 else "a device-to-device copy")
    copy_median = (f", the median of {fmt_int(copy['timed'])} copies"
                   if _is_number(copy.get("timed")) else "")
    text += (f"{copy_what} moves {fmt_sig3(rates['copy_gbps'])} GB/s (bytes read plus bytes "
             f"written{copy_median}); ")
    n = fp32.get("n")
    mm_what = (f"a float32 product of two {fmt_int(n)}×{fmt_int(n)} matrices" if _is_number(n)
               else "a float32 matrix product")
    mm_median = (f", the median of {fmt_int(fp32['timed'])}" if _is_number(fp32.get("timed"))
                 else "")
    text += (f"{mm_what} with TF32 off runs at {fmt_sig3(rates['fp32_gflops'] / 1000.0)} TFLOP/s "
             f"on the CUDA cores{mm_median}")
    if tf32 is not None:
        text += (f" ({fmt_sig3(tf32['tflops'])} TFLOP/s with TF32 on, for context only: our "
                 f"kernels run on the CUDA cores)")
    text += f". The ridge point is {fmt_sig3(rates['ridge'])} FLOP/byte."
    run_name = run_gpu.get("name") if isinstance(run_gpu, dict) else None
    if ceil.get("gpu") and run_name and ceil["gpu"] != run_name:
        text += (f" **The ceilings were measured on {ceil['gpu']} and the run on {run_name}: "
                 f"the fractions below set one device against the other.**")
    return text


def _roofline_table(name: str, kern, run: dict, ceil: dict, file_name: str,
                    heading: str | None) -> dict:
    rows = roofline.roofline_rows(kern, run["recipe"], ceil)
    out_rows = []
    for r in rows:
        verdict = r["verdict"] + (f" ({r['note']})" if r["note"] else "")
        out_rows.append({
            "kernel": md_code(r["label"]), "what": md_cell(r["what"]) if r["what"] else "—",
            "instances": fmt_int(r["instances"]), "time_us": fmt_ns_as_us(r["total_ns"]),
            "flops": fmt_int(r["flops"]), "bytes": fmt_int(r["bytes"]),
            "intensity": fmt_sig3(r["intensity"]),
            "vs_ridge": "—" if r["intensity_vs_ridge"] is None else f"{fmt_sig3(r['intensity_vs_ridge'])}×",
            "gflops": fmt_sig3(r["gflops"]), "compute": fmt_frac3(r["compute_fraction"]),
            "gbps": fmt_sig3(r["gbps"]), "memory": fmt_frac3(r["memory_fraction"]),
            "verdict": md_cell(verdict)})
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    order = (roofline.LATENCY_BOUND, roofline.MEMORY_BOUND, roofline.COMPUTE_BOUND,
             roofline.NOT_TIMED, roofline.NOT_MODELLED)
    parts = [f"{counts[v]} {v}" for v in order if counts.get(v)]
    summary = (f"Of the {len(rows)} kernel row{'' if len(rows) == 1 else 's'}: "
               f"{', '.join(parts) or 'none'}.")
    timed = [r for r in rows if r["compute_fraction"] is not None]
    if len(timed) > 1:
        top_c = max(timed, key=lambda r: r["compute_fraction"])
        top_m = max(timed, key=lambda r: r["memory_fraction"])
        summary += (f" The highest fraction of the compute ceiling is `{top_c['label']}`'s, "
                    f"{fmt_frac3(top_c['compute_fraction'])}; of the copy ceiling "
                    f"`{top_m['label']}`'s, {fmt_frac3(top_m['memory_fraction'])}.")
        flops = sum(r["flops"] for r in timed)
        nbytes = sum(r["bytes"] for r in timed)
        ns = sum(r["total_ns"] for r in timed)
        summary += (f" The modelled rows together: {fmt_int(flops)} FLOPs and {fmt_int(nbytes)} "
                    f"bytes in {fmt_ns_as_ms(ns)} ms of kernel time, {fmt_sig3(flops / ns)} "
                    f"GFLOP/s ({fmt_frac3(flops / ns / timed[0]['fp32_gflops'])} of the compute "
                    f"ceiling) and {fmt_sig3(nbytes / ns)} GB/s "
                    f"({fmt_frac3(nbytes / ns / timed[0]['copy_gbps'])} of the copy ceiling).")
    return {"path": name, "heading": heading,
            "source": f"Time from `{file_name}` (the `{name}` path's profiled epoch).",
            "rows": out_rows, "summary": summary}


def roofline_section(ceil: dict | None, profiles: dict, run: dict, rel, results_dir: Path,
                     profile_dir: Path) -> dict:
    """The roofline section: the ceilings (when ceilings.json exists) and, when the fused path's
    kernel summary exists too, a table per profiled path of ROOFLINE paths (analysis/roofline.py);
    otherwise one sentence per missing input."""
    ceil_name = rel(results_dir / CEILINGS_FILE)
    head_kern = rel(profile_files(HEADLINE_PATH, profile_dir)["kern"])
    absent = []
    if ceil is None:
        absent.append(f"The ceilings were not measured in this run (there is no `{ceil_name}`; "
                      f"`invoke ceilings` writes it on the GPU).")
    if HEADLINE_PATH not in profiles:
        absent.append(f"No profile of the `{HEADLINE_PATH}` path exists in this run "
                      f"(`{head_kern}` not found), so no kernel row is set against the ceilings.")
    out = {"absent": " ".join(absent) or None, "ceilings": None, "method": None, "tables": []}
    if ceil is None:
        return out
    rates = roofline.ceiling_rates(ceil)
    out["ceilings"] = _ceilings_text(ceil, rates, ceil_name, run.get("gpu"))
    if HEADLINE_PATH not in profiles:
        return out
    try:
        shape = roofline.shape_from_recipe(run["recipe"])
    except ValueError as exc:
        out["absent"] = f"No kernel row is modelled: run.json's {exc}."
        return out
    l2 = (run.get("gpu") or {}).get("l2_bytes")
    last = (f"{shape.S - 1} of {shape.B} rows and one of {shape.last_batch}"
            if shape.S > 1 else f"one of {shape.last_batch} rows")
    out["method"] = (
        f"Each kernel row's FLOPs and minimum bytes (every input read once and every output "
        f"written once, float32; FLOPs count additions and multiplications, a GEMM 2·M·N·K) "
        f"come from the model in `analysis/roofline.py` at the recipe's shape, "
        f"{shape.I}-{shape.Hd}-{shape.O}, summed over the epoch's {shape.S} steps ({last}); "
        f"the time is the row's total in the kernel summary. The compute ceiling is the FP32 "
        f"matrix product's rate, the copy ceiling the copy's. A row is latency-bound when it "
        f"reaches less than {fmt_pct(roofline.LATENCY_FRACTION, 0)} of both ceilings, else "
        f"memory- or compute-bound by the larger fraction; a kernel the model does not know is "
        f"not modelled. The minimum bytes can come from the L2 cache"
        f"{f' ({fmt_g(l2 / 2**20)} MiB)' if _is_number(l2) else ''} rather than device memory, "
        f"so a fraction of the copy ceiling can pass 100%.")
    if (run.get("build") or {}).get("accumulate") == "double":
        out["method"] += (" This build accumulates the stepwise GEMMs and column sums in float64 "
                          "(run.json build.accumulate): their multiply-adds are float64 FMAs, which "
                          "sm_90 issues at half the float32 rate (CUDA C++ Programming Guide, "
                          "arithmetic instruction throughput; not measured here), so against "
                          "their own ceiling those rows' compute fractions are twice the ones shown.")
    names = [HEADLINE_PATH] + [p for p in ROOFLINE_EXTRA_PATHS if p in profiles and p != HEADLINE_PATH]
    if "persistent" in names:
        out["method"] += (" The `persistent` kernel runs a whole epoch: its FLOPs are those of "
                          "every step's operations, its minimum bytes those of each step as one "
                          "kernel (the order, the batch's rows of X and labels, the parameters "
                          "and the velocity read once; the parameters, the velocity and the "
                          "step's loss written once).")
    for name in names:
        heading = None if name == HEADLINE_PATH else f"The {name} path's profiled epoch"
        out["tables"].append(_roofline_table(name, profiles[name]["kern"], run, ceil,
                                             rel(profile_files(name, profile_dir)["kern"]),
                                             heading))
    return out


# ----------------------------------------------------------------------------- predictions

def _measure_lower_epoch_time(pred, run, profiles):
    between = pred.get("between") or [HEADLINE_PATH, BASELINE_PATH]
    medians = {}
    for p in between:
        rec = run["paths"].get(p)
        if rec is None:
            return None, f"path {p!r} is not in run.json"
        m = _passed_median(rec)
        if m is None:
            return None, f"path {p!r} failed the gate or has no median epoch time"
        medians[p] = m
    winner = min(medians, key=lambda p: medians[p])
    row = ", ".join(f"run.json paths.{p}.median_ms = {fmt_ms(m)} ms" for p, m in medians.items())
    return winner, row


def _measure_epoch_filler(pred, run, profiles):
    path = pred.get("path", HEADLINE_PATH)
    prof = profiles[path]
    fill = derive.epoch_filler(prof["kern"], prof["api"])
    launch = derive.launch_calls(prof["api"])
    names = ", ".join(r for e in launch["by_api"].values() for r in e["rows"]) or "no launch API row"
    row = (f"{path}_cuda_api_sum rows {names}: {fmt_ns_as_ms(fill['launch_ns'])} ms over "
           f"{fmt_int(fill['launch_calls'])} calls, against the summed kernel time of "
           f"{path}_cuda_gpu_kern_sum: {fmt_ns_as_ms(fill['kernel_ns'])} ms")
    return fill["filler"], row


def _measure_widest_kernel(pred, run, profiles):
    path = pred.get("path", HEADLINE_PATH)
    kern = profiles[path]["kern"]
    wk = derive.widest_kernel(kern)
    if wk is None:
        return None, f"{path}_cuda_gpu_kern_sum has no kernel rows"
    row = (f"{path}_cuda_gpu_kern_sum row {md_code(wk['base'])}: {fmt_ns_as_ms(wk['total_ns'])} ms, "
           f"{fmt_pct(wk['share'])} of kernel time")
    predicted_row = derive.find_kernel_row(kern, pred["predicted"])
    if predicted_row is not None and predicted_row["name"] != wk["name"]:
        row += (f"; the predicted row {md_code(predicted_row['base'])}: "
                f"{fmt_ns_as_ms(predicted_row['total_ns'])} ms, {fmt_pct(predicted_row['share'])}")
    elif predicted_row is None:
        row += f"; no kernel row contains {pred['predicted']!r}"
    return wk["base"], row


MEASURES = {"lower_epoch_time": _measure_lower_epoch_time,
            "epoch_filler": _measure_epoch_filler,
            "widest_kernel": _measure_widest_kernel}


def evaluate_prediction(pred: dict, run: dict, profiles: dict,
                        missing_files: dict[str, list[str]] | None = None) -> dict:
    """The prediction against what the inputs hold. Where the profile CSVs that decide it are
    missing, the verdict is "not measured in this run" and the deciding row names the files.
    missing_files: {path: [display names of its missing CSVs, by kind order]}."""
    needs = MEASURE_REPORTS[pred["measure"]]
    path = pred.get("path", HEADLINE_PATH)
    base = {"id": pred["id"], "question": pred["question"], "predicted": pred["predicted"],
            "reason": " ".join(pred["reason"].split())}
    if needs and path not in profiles:
        kinds = [k for k, _, _ in PROFILE_REPORTS]
        names = (missing_files or {}).get(path) or [f"{path}_{r}.csv" for _, r, _ in
                                                     PROFILE_REPORTS]
        wanted = [names[kinds.index(k)] for k in needs]
        files = " and ".join(f"`{f}`" for f in wanted)
        return base | {"measured": "—", "verdict": "not measured in this run",
                       "deciding_row": f"no profile of this run: {files} "
                                       f"{'is' if len(wanted) == 1 else 'are'} missing"}
    measured, row = MEASURES[pred["measure"]](pred, run, profiles)
    if measured is None:
        verdict = "not measured in this run"
    elif pred["measure"] == "widest_kernel":
        verdict = "match" if pred["predicted"] in measured or pred["predicted"] in \
            derive.widest_kernel(profiles[path]["kern"])["name"] else "mismatch"
    else:
        verdict = "match" if measured == pred["predicted"] else "mismatch"
    return base | {"measured": measured or "—", "verdict": verdict, "deciding_row": row}


# ----------------------------------------------------------------------------- analysis text

def graph_evidence(profiles: dict, run: dict) -> str | None:
    """Launch calls of the fused capture against the graph capture's, whenever both exist."""
    if "graph" not in profiles or HEADLINE_PATH not in profiles:
        return None

    def launches(name):
        by_api = derive.launch_calls(profiles[name]["api"])["by_api"]
        return ", ".join(f"{api} {fmt_int(e['calls'])} call{'' if e['calls'] == 1 else 's'} "
                         f"({fmt_ns_as_ms(e['total_ns'])} ms)"
                         for api, e in by_api.items()) or "no launch calls"

    def gate(name):
        return "passed" if run["paths"].get(name, {}).get("passed") else "FAILED"

    f, g = profiles[HEADLINE_PATH], profiles["graph"]
    return (f"Graph evidence, from `{HEADLINE_PATH}_cuda_api_sum.csv` and `graph_cuda_api_sum.csv`: "
            f"in its captured epoch the `{HEADLINE_PATH}` path (gate: {gate(HEADLINE_PATH)}) made "
            f"{launches(HEADLINE_PATH)}; the `graph` path (gate: {gate('graph')}) made "
            f"{launches('graph')}. Captured range: {fmt_ns_as_ms(derive.epoch_range_ns(f['nvtx']))} ms "
            f"against {fmt_ns_as_ms(derive.epoch_range_ns(g['nvtx']))} ms; summed kernel time: "
            f"{fmt_ns_as_ms(derive.summed_kernel_ns(f['kern']))} ms against "
            f"{fmt_ns_as_ms(derive.summed_kernel_ns(g['kern']))} ms.")


def limit_analysis(name: str, prof: dict, run: dict, profiles: dict | None = None) -> dict:
    """One measured limit of a profiled path, in words built from its numbers, and the next
    change to try with the metric it should move and the direction."""
    steps = run["recipe"]["steps_per_epoch"]
    d = derive.path_profile(prof["kern"], prof["api"], prof["nvtx"], steps,
                            run["paths"][name].get("launches_per_step"))
    wk, fill, launch = d["widest_kernel"], d["filler"], d["launch"]
    range_ns = d["range_ns"]
    range_txt = (f"the {fmt_ns_as_ms(range_ns)} ms `{_range_label(d['range'])}` range of nvtx_sum"
                 if range_ns else "the captured epoch (nvtx_sum has no profile-epoch range)")
    of_range = (lambda ns: f", {fmt_pct(ns / range_ns)} of it,") if range_ns else (lambda ns: "")
    main_launch = max(launch["by_api"].items(), key=lambda kv: kv[1]["total_ns"], default=None)
    kern = prof["kern"]
    instances = d["launches"]["kernel_instances"]
    avg_kernel_ns = fill["kernel_ns"] / instances if instances else math.nan
    if fill["filler"] == "launch" and main_launch is not None:
        api_name, e = main_launch
        per_call = e["total_ns"] / e["calls"] if e["calls"] else math.nan
        longer = int((kern["avg_ns"] > per_call).sum())
        limit = (f"Launch work fills the `{name}` epoch: the cuda_api_sum row `{api_name}` totals "
                 f"{fmt_ns_as_ms(e['total_ns'])} ms over {fmt_int(e['calls'])} calls "
                 f"({fmt_ns_as_us(per_call)} µs a call) inside {range_txt}{of_range(e['total_ns'])} "
                 f"while the GPU spent {fmt_ns_as_ms(fill['kernel_ns'])} ms in kernels"
                 f"{of_range(fill['kernel_ns']).rstrip(',')}. A kernel averages "
                 f"{fmt_ns_as_us(avg_kernel_ns)} µs ({fmt_int(instances)} instances), against "
                 f"{fmt_ns_as_us(per_call)} µs of host time to launch one")
        if wk is not None:
            limit += (f"; {longer} of {len(kern)} kernel rows average longer than a launch, the "
                      f"widest, `{wk['base']}`, {fmt_ns_as_us(wk['avg_ns'])} µs over "
                      f"{fmt_int(wk['instances'])} instances ({fmt_ns_as_ms(wk['total_ns'])} ms)")
        limit += "."
        change = (f"Next change: replay the epoch as one CUDA graph (the `graph` path captures "
                  f"the fused epoch's kernels once and launches them with one cudaGraphLaunch), "
                  f"so the host stops issuing {fmt_int(e['calls'])} launches an epoch. Metric: "
                  f"`{api_name}` calls in the captured epoch, down from {fmt_int(e['calls'])} "
                  f"toward 0, and the `profile-epoch` range time, down from "
                  f"{fmt_ns_as_ms(range_ns)} ms toward the summed kernel time of "
                  f"{fmt_ns_as_ms(fill['kernel_ns'])} ms.")
    elif wk is not None:
        limit = (f"Kernel time fills the `{name}` epoch: the GPU spent "
                 f"{fmt_ns_as_ms(fill['kernel_ns'])} ms in kernels inside {range_txt}"
                 f"{of_range(fill['kernel_ns']).rstrip(',')}, against {fmt_ns_as_ms(fill['launch_ns'])} ms "
                 f"of launch calls ({fmt_int(fill['launch_calls'])} calls in cuda_api_sum). The "
                 f"widest kernel row, `{wk['base']}`, owns {fmt_ns_as_ms(wk['total_ns'])} ms "
                 f"({fmt_pct(wk['share'])} of kernel time, {fmt_int(wk['instances'])} instances, "
                 f"{fmt_ns_as_us(wk['avg_ns'])} µs each).")
        change = (f"Next change: make `{wk['base']}` faster (shared-memory tiling, or TF32 "
                  f"tensor-core MMA: gap `tf32`). Metric: that row's total time in "
                  f"cuda_gpu_kern_sum, down from {fmt_ns_as_ms(wk['total_ns'])} ms; the epoch "
                  f"range falls with it while kernel time stays above the "
                  f"{fmt_ns_as_ms(fill['launch_ns'])} ms of launch calls.")
    else:
        limit = f"The `{name}` profile holds no kernel rows: nothing to analyse."
        change = "Next change: re-run the capture (`python -m harness.profiling`)."
    return {"path": name, "limit": limit, "change": change}


# ----------------------------------------------------------------------------- the sweep's point

# The ledger's optimizer state (harness.sweep.ledger's optimizer_state_bytes keys), in words; its
# total counts the recipe's optimizer, SGD with momentum.
OPTIMIZERS = (("sgd", "plain SGD", "none"),
              ("sgd_momentum", "SGD with momentum", "one velocity per parameter"),
              ("adam", "Adam", "two moments per parameter"))
RECIPE_OPTIMIZER = "sgd_momentum"


def recipe_point(doc: dict, run: dict) -> tuple[str | None, dict | None]:
    """(label, point) of the sweep's point at run.json's recipe hidden width and batch; the point
    is None when the sweep has no such point, the label too when the recipe names no width or
    batch."""
    recipe = run["recipe"]
    hidden, batch = recipe.get("hidden_dim"), recipe.get("batch")
    if not (_is_number(hidden) and _is_number(batch)):
        return None, None
    name = sweep_label(hidden, batch)
    return name, next((p for p in doc["points"] if p["label"] == name), None)


def _no_point(file: str, name: str | None, doc: dict) -> str:
    if name is None:
        return f"run.json's recipe names no hidden_dim and batch, so no point of `{file}` is shown."
    held = ", ".join(f"`{p['label']}`" for p in doc["points"]) or "none"
    return f"`{file}` has no point `{name}`, run.json's recipe; the points it holds: {held}."


def _sweep_source(doc: dict, file: str) -> str:
    date, commit = doc.get("date_utc") or "—", doc.get("commit") or "—"
    return f"`{file}` (run of {date}, commit `{commit}`)"


def _point_problems(point: dict) -> str | None:
    from analysis.sweep_report import first_line  # lazily: sweep_report imports this module
    if not point["errors"]:
        return None
    return (f"Problems at `{point['label']}` (status {point['status']}): "
            + "; ".join(md_cell(first_line(e)) for e in point["errors"]) + ".")


def _names(names) -> str:
    return ", ".join(f"`{n}`" for n in names) or "none"


def _run_ledger(recipe: dict) -> dict | None:
    """harness.sweep.ledger of run.json's recipe; None when the recipe lacks a shape."""
    keys = ("n_params", "hidden_dim", "batch", "input_dim", "output_dim", "train_size",
            "test_size")
    if not all(isinstance(recipe.get(k), int) for k in keys):
        return None
    epochs = recipe.get("epochs")
    return ledger(recipe["n_params"], recipe["hidden_dim"], recipe["batch"],
                  recipe["input_dim"], recipe["output_dim"], recipe["train_size"],
                  recipe["test_size"], epochs if isinstance(epochs, int) else None)


def _peak_cell(peak, ledger_total) -> str:
    """A measured peak in MiB, with its multiple of the ledger's total."""
    from analysis.sweep_report import fmt_mib, fmt_speedup
    if not _is_number(peak):
        return "—"
    cell = f"{fmt_mib(peak)} MiB"
    if _is_number(ledger_total) and ledger_total > 0:
        cell += f" ({fmt_speedup(peak / ledger_total)} the ledger)"
    return cell


def memory_cost_section(doc: dict | None, run: dict, torch: dict | None, files: dict,
                        sweep_md: str) -> dict:
    """"Memory and cost" at the recipe's point of the sweep: the ledger of harness.sweep.ledger
    (from sweep.json) beside the measured peaks of that point and of the training run (run.json,
    pytorch.json), the optimizer state of plain SGD, SGD with momentum and Adam, and images per
    second and GPU-seconds per COST_IMAGES images of the best CUDA path and PyTorch eager and
    cuda-graph. files: the shown names of "sweep", "run" and "pytorch"; sweep_md: the link to
    SWEEP.md. Without sweep.json (or its point) one sentence in "absent"."""
    from analysis import sweep_report as sr  # lazily: sweep_report imports this module
    file = files["sweep"]
    out = {"file": file, "absent": None, "sweep_md": sweep_md}
    if doc is None:
        return out | {"absent": f"The width and batch sweep was not run: there is no `{file}` "
                                f"(`{SWEEP_COMMAND}` writes it), so no memory ledger, measured "
                                f"peak or cost is shown."}
    name, point = recipe_point(doc, run)
    if point is None:
        return out | {"absent": _no_point(file, name, doc)}
    recipe = run["recipe"]
    mem = point.get("memory") or {}
    led = mem.get("ledger") or {}
    opt = led.get("optimizer_state_bytes") or {}
    total = led.get("total_sgd_momentum_bytes")
    notes = doc.get("notes") or {}
    epochs, train = fmt_int(point.get("epochs")), fmt_int(point.get("train_size"))
    momentum = recipe.get("momentum")
    recipe_opt = "SGD with momentum" + (f" {momentum:g}" if _is_number(momentum) else "")

    def item(item_name, what, value):
        return {"item": item_name, "what": md_cell(what), "bytes": fmt_int(value),
                "mib": sr.fmt_mib(value)}

    gradients = "a flat buffer as large as the parameters"
    ledger_rows = [] if not led else [
        item("parameters", f"{fmt_int(point.get('n_params'))} float32 values: the weights and "
                           f"biases", led.get("parameters_bytes")),
        item("gradients", f"{gradients} ({notes['gradients']})" if notes.get("gradients")
             else gradients, led.get("gradients_bytes")),
        item("optimizer state", f"{recipe_opt}, the recipe's: one velocity per parameter",
             opt.get(RECIPE_OPTIMIZER)),
        item("activations", f"one step's X, H, dH, Z and dZ at batch {fmt_int(point['batch'])}",
             led.get("activations_bytes")),
        item("data", notes.get("data") or "the train and test images and the train labels",
             led.get("data_bytes")),
        item("orders", f"{epochs} epoch orders of {train} int32 indices, uploaded by the binary",
             led.get("order_bytes")),
        item("**total**", "the items above", total)]

    optimizer_rows = []
    for key, optimizer, keeps in OPTIMIZERS:
        state = opt.get(key)
        # The ledger's total with this optimizer's state in place of the recipe's.
        with_it = (total - opt[RECIPE_OPTIMIZER] + state
                   if all(_is_number(x) for x in (total, state, opt.get(RECIPE_OPTIMIZER)))
                   else None)
        if key == RECIPE_OPTIMIZER:
            optimizer += " (the recipe's)"
        optimizer_rows.append({"optimizer": optimizer, "keeps": keeps, "bytes": fmt_int(state),
                               "mib": sr.fmt_mib(state), "total": sr.fmt_mib(with_it)})

    run_led = _run_ledger(recipe)
    run_total = (run_led or {}).get("total_sgd_momentum_bytes")
    variants = (torch or {}).get("variants", {})
    point_torch = mem.get("torch_max_memory_allocated_bytes") or {}
    peaks = [{"what": "CUDA binary: device memory in use at its lowest free point "
                      "(`cudaMemGetInfo`)",
              "point": _peak_cell(mem.get("cuda_peak_used_bytes"), total),
              "run": _peak_cell((run.get("memory") or {}).get("peak_used_bytes"), run_total)}]
    for v in (EAGER_VARIANT, TORCH_GRAPH_VARIANT):
        peaks.append({"what": f"PyTorch {v}: `torch.cuda.max_memory_allocated`",
                      "point": _peak_cell(point_torch.get(v), total),
                      "run": _peak_cell((variants.get(v) or {}).get("max_memory_allocated_bytes"),
                                        run_total)})
    peaks_note = (f"The sweep point's binary ran the paths {_names(point['cuda'])}, the training "
                  f"run's (`{files['run']}`) the paths {_names(run['paths'])}, one after the "
                  f"other: a binary's peak is its largest path's state with the kernels' "
                  f"workspaces and the allocation granularity. The training run's PyTorch peaks "
                  f"are those of `{files['pytorch']}`"
                  + ("" if torch is not None else ", which does not exist")
                  + ". ")
    if run_led is None:
        peaks_note += ("run.json's recipe does not give every shape, so no ledger is set beside "
                       "the training run's peaks.")
    elif run_led == led:
        peaks_note += ("The training run's recipe has the point's shapes, epochs and train size: "
                       "the same ledger.")
    else:
        peaks_note += (f"The training run's recipe gives another ledger, "
                       f"{sr.fmt_mib(run_total)} MiB in all; its peaks are set against that.")

    best = point.get("best_cuda")
    best_name = point.get("best_cuda_path")
    cost_rows = [{"run": f"CUDA `{best_name}`, the best path" if best_name
                  else "best CUDA path: none passed",
                  "median": sr._cell(best), "ips": fmt_int((best or {}).get("images_per_s")),
                  "step_us": sr.fmt_us((best or {}).get("step_us")),
                  "cost": fmt_sig3((best or {}).get("gpu_s_per_1000_images")),
                  "vs_best": "—"}]
    for v, ratio_key in ((EAGER_VARIANT, "ratio_best_cuda_vs_eager"),
                         (TORCH_GRAPH_VARIANT, "ratio_best_cuda_vs_cuda_graph")):
        m = point["pytorch"].get(v) or {}
        cost_rows.append({"run": f"PyTorch {v}", "median": sr._cell(m),
                          "ips": fmt_int(m.get("images_per_s")),
                          "step_us": sr.fmt_us(m.get("step_us")),
                          "cost": fmt_sig3(m.get("gpu_s_per_1000_images")),
                          "vs_best": sr.fmt_speedup(sr._inv(point.get(ratio_key)))})
    cost_images = fmt_int(doc["config"]["cost_images"])
    return out | {
        "source": (f"From {_sweep_source(doc, file)}: its point `{name}`, run.json's recipe "
                   f"(hidden width {fmt_int(point['hidden'])}, batch {fmt_int(point['batch'])}), "
                   f"trained for {epochs} epochs of {train} images "
                   f"({fmt_int(point.get('steps_per_epoch'))} steps an epoch) by the CUDA paths "
                   f"{_names(point['cuda'])} and by PyTorch {_names(point['pytorch'])}."),
        "point_header": f"sweep point `{name}`",
        "problems": _point_problems(point),
        "ledger_rows": ledger_rows,
        "ledger_absent": None if led else f"`{file}` holds no ledger for `{name}`.",
        "peaks": peaks, "peaks_note": peaks_note,
        "optimizer_rows": optimizer_rows,
        "cost_images": cost_images,
        "cost_rows": cost_rows,
        "cost_note": (f"Images per second: the epoch's {train} training images over the median "
                      f"epoch; µs a step: the median epoch over its "
                      f"{fmt_int(point.get('steps_per_epoch'))} steps; cost: one GPU busy for "
                      f"the median epoch, scaled to {cost_images} images (evaluation not "
                      f"included); against the best path: the median epoch over the best CUDA "
                      f"path's."),
    }


def _split_column(doc: dict, point: dict) -> dict[str, str]:
    """One column of the full-split table, {measure: cell}: a sweep's point in SWEEP.md's terms
    (analysis.sweep_report.sweep_row) and the PyTorch variants' own numbers."""
    from analysis import sweep_report as sr  # lazily: sweep_report imports this module
    row = sr.sweep_row(point)
    best = point.get("best_cuda") or {}
    eager = point["pytorch"].get(EAGER_VARIANT)
    graph = point["pytorch"].get(TORCH_GRAPH_VARIANT)
    data_dir = doc["config"].get("data_dir")
    cost_images = fmt_int(doc["config"]["cost_images"])
    return {
        "data folder": f"`{data_dir}`" if data_dir else "—",
        "training images an epoch": fmt_int(point.get("train_size")),
        "epochs (the first a warm-up, not timed)": fmt_int(point.get("epochs")),
        "steps an epoch": row["steps"],
        "best CUDA path": row["best_path"],
        "its median epoch, ms (CV)": sr._cell(point.get("best_cuda")),
        "its images/s": row["images_per_s"],
        "its µs a step": row["step_us"],
        f"its GPU-seconds per {cost_images} images": fmt_sig3(best.get("gpu_s_per_1000_images")),
        f"PyTorch {EAGER_VARIANT} median epoch, ms (CV)": sr._cell(eager),
        f"PyTorch {TORCH_GRAPH_VARIANT} median epoch, ms (CV)": sr._cell(graph),
        f"best / {EAGER_VARIANT} median": row["ratio_eager"],
        f"best / {TORCH_GRAPH_VARIANT} median": row["ratio_graph"],
        f"PyTorch {EAGER_VARIANT} images/s": fmt_int((eager or {}).get("images_per_s")),
        f"PyTorch {TORCH_GRAPH_VARIANT} images/s": fmt_int((graph or {}).get("images_per_s")),
        "test accuracy, last epoch: best CUDA path": row["acc_best"],
        f"test accuracy, last epoch: PyTorch {EAGER_VARIANT}": row["acc_eager"],
        f"test accuracy, last epoch: PyTorch {TORCH_GRAPH_VARIANT}": row["acc_graph"],
    }


def full_split_section(doc: dict | None, subset_doc: dict | None, run: dict, file: str,
                       subset_file: str) -> dict:
    """"The full train split": the recipe's point of the full-split sweep (harness.sweep --full),
    beside the same point of the shipped subset's sweep when it has one. Without the full-split
    sweep.json (or its point) one sentence in "absent"."""
    out = {"heading": f"The full {fmt_int(FULL_TRAIN_SIZE)}-image train split", "file": file,
           "absent": None}
    if doc is None:
        return out | {"absent": f"The full train split was not run: there is no `{file}` "
                                f"(`{FULL_SPLIT_COMMAND}` writes it)."}
    name, point = recipe_point(doc, run)
    if point is None:
        return out | {"absent": _no_point(file, name, doc)}
    subset = recipe_point(subset_doc, run)[1] if subset_doc is not None else None
    columns = [_split_column(doc, point)]
    headers = [f"full split (`{file}`)"]
    if subset is not None:
        columns.append(_split_column(subset_doc, subset))
        headers.append(f"shipped subset (`{subset_file}`)")
    rows = [{"measure": measure, "cells": [c[measure] for c in columns]} for measure in columns[0]]
    data_dir = doc["config"].get("data_dir")
    source = (f"From {_sweep_source(doc, file)}: the point `{name}` (run.json's recipe) trained on "
              f"{f'`{data_dir}`' if data_dir else 'a data folder it does not name'}, "
              f"{fmt_int(point.get('train_size'))} training images an epoch, for "
              f"{fmt_int(point.get('epochs'))} epochs")
    if subset is not None:
        source += f"; beside it the same point of the shipped subset, from `{subset_file}`."
    elif subset_doc is not None:
        source += f"; `{subset_file}` has no point `{name}` to set beside it."
    else:
        source += f"; there is no `{subset_file}` to set beside it."
    problems = [t for t in (_point_problems(point), subset and _point_problems(subset)) if t]
    return out | {"source": source, "headers": headers, "rows": rows,
                  "problems": " ".join(problems) or None}


# ----------------------------------------------------------------------------- render

def build_context(run: dict, torch: dict | None, profiles: dict, predictions: list,
                  gaps: list, plot_links: dict, extras: dict | None = None) -> dict:
    """extras (all optional): phases, sanitize, ceilings, sweep, full_split_sweep, sanitize_log,
    nvidia_smi, profile_log (texts or parsed inputs), rel (a function: input path -> the name
    RESULTS.md shows), sweep_md (the link to SWEEP.md), results_dir, profile_dir."""
    extras = extras or {}
    rel = extras.get("rel") or (lambda p: Path(p).as_posix())
    results_dir = Path(extras.get("results_dir", RESULTS_DIR))
    profile_dir = Path(extras.get("profile_dir", PROFILE_DIR))
    paths = run["paths"]
    variants = (torch or {}).get("variants", {})
    eager = variants.get(EAGER_VARIANT)
    eager_median = _passed_median(eager)
    steps = run["recipe"]["steps_per_epoch"]
    timing = [timing_row(name, "CUDA path", rec, eager_median) for name, rec in paths.items()]
    timing += [timing_row(f"PyTorch {name}", "PyTorch", rec, eager_median)
               for name, rec in variants.items()]
    tiers = [tier_for(name, paths, eager) for name, rec in paths.items()
             if name != BASELINE_PATH and rec.get("passed")]
    headline = tier_for(HEADLINE_PATH, paths, eager) if HEADLINE_PATH in paths else None
    ref = run.get("reference_fp64") or {}
    cases = [{"id": c["id"], "name": c["name"], "value": fmt_g(c["value"]),
              "limit": fmt_g(c["limit"]), "detail": md_cell(c.get("detail", "")),
              "verdict": {True: "pass", False: "FAIL"}.get(c["passed"], "not run")}
             for c in run["cases"]]
    sections = [profile_section(n, p, run) for n, p in profiles.items()]
    missing_files = {n: [rel(f) for f in profile_files(n, profile_dir).values()]
                     for n in paths if n not in profiles}
    unprofiled = [{"name": n, "missing": ", ".join(f"`{f}`" for f in files)}
                  for n, files in missing_files.items()]
    profile_log = extras.get("profile_log")
    capture = None
    if unprofiled:
        capture = {"log": rel(results_dir / PROFILE_LOG) if profile_log is not None else None,
                   "error": profile_log_error(profile_log),
                   "expected": rel(results_dir / PROFILE_LOG)}
    analysis_path = HEADLINE_PATH if HEADLINE_PATH in profiles else next(iter(profiles), None)
    gpu = run["gpu"]
    recipe = run["recipe"]
    shape = "-".join(str(recipe[k]) for k in ("input_dim", "hidden_dim", "output_dim")
                     if k in recipe) or "—"
    smi = extras.get("nvidia_smi")
    phases = extras.get("phases")
    return {
        "run": run, "shape": shape,
        "gpu": {"name": gpu.get("name", "—"), "cc": gpu.get("compute_capability", "—"),
                "sm_count": gpu.get("sm_count", "—"),
                "cache_mib": "—" if _missing(gpu.get("l2_bytes")) else f"{gpu['l2_bytes'] / 2**20:g}",
                "driver": gpu.get("driver", "—"),
                "driver_cuda": cuda_version(gpu.get("driver_api_version")),
                "runtime": cuda_version(gpu.get("runtime_version")),
                "toolkit": cuda_version(gpu.get("toolkit_version", gpu.get("runtime_version")))},
        "nvidia_smi": None if smi is None else {
            "file": rel(results_dir / NVIDIA_SMI_FILE),
            "header": [md_cell(h) for h in smi["header"]],
            "rows": [[md_cell(c) for c in row] for row in smi["rows"]]},
        "submission": run.get("submission") or run.get("build", {}).get("submission", "—"),
        "gated_path": run.get("gated_path"),
        "build": run.get("build", {}),
        "run_command": run.get("run_command", "—"),
        "date": run.get("date_utc", "—"), "commit": run.get("commit", "—"),
        "recipe": [{"key": k, "value": v} for k, v in run["recipe"].items()],
        "reference_source": run.get("reference_source", "—"),
        "cases": cases,
        "cases_passed": sum(1 for c in run["cases"] if c["passed"] is True),
        # The binary's hints for failed cases (run.json "hints"; absent in older runs).
        "hints": [md_cell(h) for h in run.get("hints", []) if isinstance(h, str)],
        "failed_paths": [n for n, r in paths.items() if not r.get("passed")],
        "path_checks": path_checks(run),
        "torch": None if torch is None else {"version": torch.get("torch_version", "—"),
                                             "cuda": torch.get("cuda_version", "—"),
                                             "gpu": torch.get("gpu", "—")},
        "eager_median": fmt_ms(eager_median) if eager_median else None,
        "timing": timing,
        "tiers": tiers, "headline": headline,
        "tier_rules": {"silver": f"{SILVER_MAX_RATIO:.2f}", "gold": f"{GOLD_MAX_RATIO:.2f}",
                       "gold_cv": f"{GOLD_MAX_CV_PCT:g}"},
        "goals": goals(paths, variants), "goals_source": GOALS_SOURCE,
        "phases": None if phases is None else phase_breakdown(phases, run)
        | {"file": rel(results_dir / PHASES_FILE)},
        "accuracy": accuracy_rows(paths, ref, variants), "last_n": LAST_N_ACCURACY,
        "loss_curve": loss_curve(paths, ref, variants),
        "sanitize": sanitize_section(extras.get("sanitize"), extras.get("sanitize_log"),
                                     rel(results_dir / SANITIZE_LOG))
        | {"file": rel(results_dir / SANITIZE_FILE)},
        "profiles": sections,
        "unprofiled": unprofiled, "capture": capture,
        "predictions": [evaluate_prediction(p, run, profiles, missing_files) for p in predictions],
        "analysis": None if analysis_path is None else limit_analysis(
            analysis_path, profiles[analysis_path], run, profiles),
        "graph_evidence": graph_evidence(profiles, run),
        "roofline": roofline_section(extras.get("ceilings"), profiles, run, rel, results_dir,
                                     profile_dir),
        "memory_cost": memory_cost_section(
            extras.get("sweep"), run, torch,
            {"sweep": rel(results_dir / SWEEP_FILE), "run": rel(results_dir / "run.json"),
             "pytorch": rel(results_dir / "pytorch.json")},
            extras.get("sweep_md", SWEEP_MD_NAME)),
        "full_split": full_split_section(extras.get("full_split_sweep"), extras.get("sweep"), run,
                                         rel(results_dir / FULL_SPLIT_SWEEP_FILE),
                                         rel(results_dir / SWEEP_FILE)),
        "steps": steps,
        "plots": plot_links,
        "open_gaps": [g | {"detail": " ".join(g["detail"].split())}
                      for g in gaps if g["status"] == "open"],
        "closed_gaps": [g for g in gaps if g["status"] == "closed"],
    }


def _plot_inputs(run, torch, profiles):
    variants = (torch or {}).get("variants", {})
    loss = [(f"CUDA {n}", r["loss_per_epoch"]) for n, r in run["paths"].items()
            if r.get("loss_per_epoch")]
    ref = run.get("reference_fp64") or {}
    if ref.get("loss_per_epoch"):
        loss.append(("float64 reference", ref["loss_per_epoch"]))
    loss += [(f"PyTorch {n}", r["loss_per_epoch"]) for n, r in variants.items()
             if r.get("loss_per_epoch")]
    epoch_rows = []
    for label, rec in ([(f"CUDA {n}", r) for n, r in run["paths"].items()]
                       + [(f"PyTorch {n}", r) for n, r in variants.items()]):
        if all(not _missing(rec.get(k)) for k in ("median_ms", "min_ms", "max_ms")):
            epoch_rows.append({"label": label, "median_ms": float(rec["median_ms"]),
                               "min_ms": float(rec["min_ms"]), "max_ms": float(rec["max_ms"]),
                               "failed": not rec.get("passed")})
    kernel_rows = []
    if HEADLINE_PATH in profiles:
        kern = profiles[HEADLINE_PATH]["kern"]
        labels = derive.kernel_label_map(kern)
        kernel_rows = [(labels[r["name"]], float(r["total_ns"]) / 1e3) for _, r in kern.iterrows()]
    return loss, epoch_rows, kernel_rows


TORCH_TRACE_FILE = "pytorch_eager_trace.json"  # written by `invoke profile` (torch.profiler)
TORCH_TRACE_ROWS = 12


def torch_trace_section(path: Path, rel) -> dict | None:
    """PyTorch eager's kernel rows of one epoch from its torch.profiler trace, widest first, and
    its kernel-launch calls; None when there is no trace."""
    if not path.exists():
        return None
    from analysis.torch_trace import RUNTIME_CAT, read_trace, summarise
    trace = read_trace(path)
    kern, api = summarise(trace), summarise(trace, RUNTIME_CAT)
    launch = api[api["name"].str.startswith("cudaLaunchKernel")]
    return {"file": rel(path), "kernels": int(kern["instances"].sum()) if not kern.empty else 0,
            "kernel_ms": fmt_ms(kern["total_us"].sum() / 1000.0) if not kern.empty else "—",
            "launch_calls": int(launch["instances"].sum()) if not launch.empty else 0,
            "launch_ms": fmt_ms(launch["total_us"].sum() / 1000.0) if not launch.empty else "—",
            "rows": [{"name": md_cell(r.name[:90] + ("…" if len(r.name) > 90 else "")),
                      "instances": int(r.instances), "total_us": f"{r.total_us:.1f}",
                      "avg_us": f"{r.avg_us:.2f}", "share": fmt_pct(r.share)}
                     for r in kern.head(TORCH_TRACE_ROWS).itertuples()]}


NCU_DIR = "ncu"              # results/ncu/<name>_details.csv and <name>_raw.csv (harness/ncu_counters.sh)
NCU_FIRST = ("persistent", "fused")   # the order of the counter tables; other names follow, sorted
NCU_TOP_STALLS = 3
# What each warp-state sampling reason means (Nsight Compute's definitions, shortened).
STALL_MEANING = {
    "long_scoreboard": "waiting for a global or local memory (L1TEX) result",
    "barrier": "waiting at a block barrier (__syncthreads, or a grid barrier's block part)",
    "wait": "a fixed-latency dependency between instructions",
    "short_scoreboard": "waiting for a shared-memory or special-function result",
    "selected": "issuing (not a stall)",
    "not_selected": "ready, but another warp was picked",
    "math_pipe_throttle": "the math pipe was busy",
    "mio_throttle": "the shared-memory instruction queue was full",
    "lg_throttle": "the global-memory instruction queue was full",
    "imc_miss": "waiting for a constant-cache miss",
    "branch_resolving": "waiting for a branch target",
    "membar": "waiting at a memory barrier",
    "no_instructions": "the instruction cache had nothing to issue",
    "dispatch_stall": "the dispatcher stalled",
    "drain": "waiting for memory stores to drain at exit",
    "misc": "other",
    "sleeping": "sleeping (nanosleep)",
    "tex_throttle": "the texture queue was full",
}


def ncu_section(ncu_dir: Path, rel) -> dict | None:
    """Nsight Compute's counters of the kernels harness/ncu_counters.sh profiled: one row per
    kernel launch (details page) with its largest warp-stall shares (raw page); None when no
    details page exists."""
    from analysis.ncu_csv import NcuCsvError, read_counters
    details = sorted(Path(ncu_dir).glob("*_details.csv"))
    if not details:
        return None
    names = [d.name.removesuffix("_details.csv") for d in details]
    names = [n for n in NCU_FIRST if n in names] + sorted(n for n in names if n not in NCU_FIRST)
    rows, reasons, files = [], [], []
    for name in names:
        d, r = Path(ncu_dir) / f"{name}_details.csv", Path(ncu_dir) / f"{name}_raw.csv"
        try:
            kernels = read_counters(d, r)
        except NcuCsvError as exc:
            raise _fail(d, str(exc).removeprefix(f"{d}: ")) from None
        files += [rel(d)] + ([rel(r)] if r.exists() else [])
        for k in kernels:
            m = k["metrics"]
            top = k["stalls"][:NCU_TOP_STALLS]
            reasons += [reason for reason, _, _ in top if reason not in reasons]
            rows.append({
                "path": name, "kernel": k["kernel"],
                "launch": f"{m.get('grid', '—')} × {m.get('block', '—')}",
                **{key: m.get(label, "—") for key, label in (
                    ("duration", "duration"), ("sm", "SM throughput"), ("memory", "memory throughput"),
                    ("l_two", "L2 throughput"), ("l_two_hit", "L2 hit rate"), ("dram", "DRAM throughput"),
                    ("cpi", "cycles per issued instruction"), ("achieved", "achieved occupancy"),
                    ("theoretical", "theoretical occupancy"))},
                "registers": m.get("registers/thread", "—").split(" ")[0],
                "stalls": ", ".join(f"{reason} {fmt_pct(share)}" for reason, _, share in top) or "—",
            })
    return {"files": files, "rows": rows,
            "meanings": [{"reason": reason, "meaning": STALL_MEANING.get(reason, "see the Nsight Compute documentation")}
                         for reason in reasons]}


def load_template(template_path: Path) -> "jinja2.Template":
    """A jinja2 template with strict undefined names; a missing or broken one is one line."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template_path.parent)),
                             undefined=jinja2.StrictUndefined, autoescape=False,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    try:
        return env.get_template(template_path.name)
    except jinja2.TemplateNotFound:
        raise _fail(template_path, "file not found") from None
    except jinja2.TemplateSyntaxError as exc:
        raise _fail(template_path, f"template syntax error at line {exc.lineno}: {exc.message}") \
            from None


def render(results_dir, profile_dir, predictions_path, gaps_path, out_path,
           template_path: Path | None = None, plots_dir: Path | None = None,
           sweep_md: Path | None = None) -> Path:
    """Render RESULTS.md (and results/plots/*.png); returns out_path. Every input is read and
    checked before anything is written. sweep_md: where SWEEP.md is, for the link to it
    (default: where analysis/sweep_report.py writes it)."""
    from analysis import sweep_report  # lazily: sweep_report imports this module
    results_dir, profile_dir, out_path = Path(results_dir), Path(profile_dir), Path(out_path)
    run_path = results_dir / "run.json"
    run = load_json(run_path, required=True)
    validate_run(run, run_path)
    torch_path = results_dir / "pytorch.json"
    torch = load_json(torch_path, required=False)
    if torch is not None:
        validate_pytorch(torch, torch_path)
    phases_path = results_dir / PHASES_FILE
    phases = load_json(phases_path, required=False)
    if phases is not None:
        validate_phases(phases, phases_path)
    sanitize_path = results_dir / SANITIZE_FILE
    sanitize = load_json(sanitize_path, required=False)
    if sanitize is not None:
        validate_sanitize(sanitize, sanitize_path)
    ceilings_path = results_dir / CEILINGS_FILE
    ceilings = load_json(ceilings_path, required=False)
    if ceilings is not None:
        validate_ceilings(ceilings, ceilings_path)
    sweep_doc = sweep_report.load_sweep(results_dir / SWEEP_FILE, required=False)
    full_split_doc = sweep_report.load_sweep(results_dir / FULL_SPLIT_SWEEP_FILE, required=False)
    nvidia_smi = load_nvidia_smi(results_dir / NVIDIA_SMI_FILE)
    predictions = load_predictions(Path(predictions_path))
    gaps = load_gaps(Path(gaps_path))
    profiles = load_profiles(run, profile_dir)

    template_path = Path(template_path) if template_path else TEMPLATES_DIR / TEMPLATE_NAME
    template = load_template(template_path)

    def link(p) -> str:
        """A link from RESULTS.md: relative to its folder."""
        return Path(os.path.relpath(p, out_path.parent)).as_posix()

    def rel(p) -> str:
        """An input's name as RESULTS.md shows it: relative to the repository root when inside
        it (results/logs/profile.log), else relative to RESULTS.md's folder."""
        absolute = Path(os.path.abspath(p))
        try:
            return absolute.relative_to(Path(os.path.abspath(ROOT))).as_posix()
        except ValueError:
            return link(p)

    extras = {"phases": phases, "sanitize": sanitize, "ceilings": ceilings,
              "sweep": sweep_doc, "full_split_sweep": full_split_doc,
              "sweep_md": link(Path(sweep_md) if sweep_md is not None
                               else sweep_report.DEFAULT_OUT),
              "nvidia_smi": nvidia_smi,
              "sanitize_log": read_log(results_dir / SANITIZE_LOG),
              "profile_log": read_log(results_dir / PROFILE_LOG),
              "rel": rel, "results_dir": results_dir, "profile_dir": profile_dir}
    plots_dir = Path(plots_dir) if plots_dir is not None else results_dir / "plots"
    loss, epoch_rows, kernel_rows = _plot_inputs(run, torch, profiles)
    # The context is built (and any error in it raised) before a plot is written.
    context = build_context(run, torch, profiles, predictions, gaps, {}, extras)
    context["torch_trace"] = torch_trace_section(Path(profile_dir) / TORCH_TRACE_FILE, rel)
    context["ncu"] = ncu_section(results_dir / NCU_DIR, rel)
    written = plots.write_plots(plots_dir, loss, epoch_rows, kernel_rows,
                                kernel_title=f"Kernel time per row, one profiled "
                                             f"{HEADLINE_PATH} epoch")
    context["plots"] = {k: link(p) for k, p in written.items()}
    text = template.render(**context)
    write_text(out_path, text)
    return out_path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Render RESULTS.md from results/ and profile/.")
    parser.add_argument("--results", default=str(RESULTS_DIR))
    parser.add_argument("--profile", default=str(PROFILE_DIR))
    parser.add_argument("--predictions", default=str(ROOT / "predictions.toml"))
    parser.add_argument("--gaps", default=str(ROOT / "GAPS.toml"))
    parser.add_argument("--out", default=str(ROOT / "RESULTS.md"))
    parser.add_argument("--plots", default=None, help="plots folder (default: RESULTS/plots)")
    parser.add_argument("--sweep-md", default=None,
                        help="SWEEP.md, for the link to it (default: beside the repository's "
                             "RESULTS.md, where analysis.sweep_report writes it)")
    args = parser.parse_args(argv)
    out = render(args.results, args.profile, args.predictions, args.gaps, args.out,
                 plots_dir=args.plots, sweep_md=args.sweep_md)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
