"""Render RESULTS.md from results/run.json, results/pytorch.json, profile/*.csv,
predictions.toml and GAPS.toml, through templates/RESULTS.md.j2.

    python -m analysis.report [--results results] [--profile profile] [--out RESULTS.md]

Every number in RESULTS.md comes from an input file or is computed here from those numbers; the
template holds none. The output is deterministic: the only dates and commits in it are those in
run.json, and the plots (results/plots/*.png) carry no timestamp, so rendering the same inputs
again, here or on another machine with the same library versions, gives the same bytes.

A missing required input (run.json, predictions.toml, GAPS.toml, one of the three CSVs of a path
that has any) or a malformed JSON, TOML or CSV file raises SystemExit with one line naming the
file. pytorch.json is optional: without it the report says PyTorch was not run.
"""
from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path
from typing import Sequence

import jinja2

from analysis import derive, plots
from analysis.nsys_csv import kernel_base_name, read_api_sum, read_kern_sum, read_nvtx_sum
from harness.atomic import write_text
from harness.config import PROFILE_DIR, RESULTS_DIR, ROOT, TEMPLATES_DIR, load_toml

TEMPLATE_NAME = "RESULTS.md.j2"
PROFILE_REPORTS = (("kern", "cuda_gpu_kern_sum", read_kern_sum),
                   ("api", "cuda_api_sum", read_api_sum),
                   ("nvtx", "nvtx_sum", read_nvtx_sum))

# The fused path's tiers, a ladder: a tier counts only when every tier below it holds too.
HEADLINE_PATH = "fused"
BASELINE_PATH = "unfused"
EAGER_VARIANT = "eager"
SILVER_MAX_RATIO = 0.90   # fused median epoch / PyTorch eager median epoch
GOLD_MAX_RATIO = 0.60
GOLD_MAX_CV_PCT = 5.0     # epoch-time CV of the path, strictly below


# ----------------------------------------------------------------------------- formatting

def _missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


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


def md_code(text: str) -> str:
    """Inline code for a table cell (kernel names hold '*', '<', '|')."""
    text = str(text).replace("|", "\\|").replace("`", "'")
    return f"`{text}`"


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
        if isinstance(p.get("launches_per_step"), int) and p["launches_per_step"] < 0:
            p["launches_per_step"] = None  # the submission path declares none (-1)
    _need(run["recipe"], "steps_per_epoch", path, int)


def validate_pytorch(torch: dict, path) -> None:
    """Checks pytorch.json and gives each variant a `passed`: harness/pytorch_baseline.py writes
    none, but an "error" (with "skipped: ..." for a variant that could not run) when one failed."""
    variants = _need(torch, "variants", path, dict)
    for name, v in variants.items():
        if not isinstance(v, dict):
            raise _fail(path, f"variant {name!r} is not an object")
        if "passed" not in v:
            v["passed"] = not v.get("error")


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


def load_profiles(run: dict, profile_dir: Path) -> dict[str, dict]:
    """{path: {"kern", "api", "nvtx": DataFrame, "files": {kind: file name}}} for every path of
    run.json with profile CSVs; a path with some but not all three is an error."""
    profile_dir = Path(profile_dir)
    out = {}
    for name in run["paths"]:
        files = {kind: profile_dir / f"{name}_{report}.csv" for kind, report, _ in PROFILE_REPORTS}
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


def _kernel_rows(df) -> list[dict]:
    return [{"name": md_code(r["name"]), "base": kernel_base_name(r["name"]),
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
    return [{"name": md_code(r["raw_name"]), "style": r["style"] or "—",
             "time_pct": fmt_g(r["time_pct"]), "total": fmt_num(r["total_ns"]),
             "count": fmt_num(r["instances"]), "avg": fmt_num(r["avg_ns"]),
             "min": fmt_num(r["min_ns"]), "max": fmt_num(r["max_ns"])} for _, r in df.iterrows()]


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
        "range_name": md_code(d["range"]["raw_name"]) if d["range"] else None,
        "range_ms": fmt_ns_as_ms(d["range_ns"]),
        "kernel_share_of_range": fmt_pct(d["kernel_share_of_range"]),
        "widest": None if wk is None else {"name": md_code(wk["name"]), "base": wk["base"],
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
        "lps_declared": "—" if lps["declared"] is None else str(lps["declared"]),
        "lps_matches": {True: "yes", False: "NO", None: "no declaration"}[lps["matches"]],
        "kernel_instances": fmt_int(lps["kernel_instances"]),
        "steps": steps,
        "filler": d["filler"]["filler"],
    }


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
    if path not in profiles:
        return None, f"no profile CSVs for path {path!r}"
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
    if path not in profiles:
        return None, f"no profile CSVs for path {path!r}"
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


def evaluate_prediction(pred: dict, run: dict, profiles: dict) -> dict:
    measured, row = MEASURES[pred["measure"]](pred, run, profiles)
    if measured is None:
        verdict = "not measured"
    elif pred["measure"] == "widest_kernel":
        verdict = "match" if pred["predicted"] in measured or pred["predicted"] in \
            derive.widest_kernel(profiles[pred.get("path", HEADLINE_PATH)]["kern"])["name"] \
            else "mismatch"
    else:
        verdict = "match" if measured == pred["predicted"] else "mismatch"
    return {"id": pred["id"], "question": pred["question"], "predicted": pred["predicted"],
            "reason": " ".join(pred["reason"].split()), "measured": measured or "—",
            "verdict": verdict, "deciding_row": row}


# ----------------------------------------------------------------------------- analysis text

def _graph_evidence(name: str, profiles: dict, run: dict) -> str:
    """What the graph path's own capture measured, when there is one (else "")."""
    if name == "graph" or "graph" not in profiles:
        return ""
    g = profiles["graph"]
    launch = derive.launch_calls(g["api"])
    rng = derive.epoch_range_ns(g["nvtx"])
    calls = ", ".join(f"{api} {fmt_int(e['calls'])}" for api, e in launch["by_api"].items()) \
        or "no launch calls"
    passed = "passed" if run["paths"].get("graph", {}).get("passed") else "FAILED"
    return (f" The `graph` path (gate: {passed}) was captured too: launch calls {calls}; range "
            f"{fmt_ns_as_ms(rng)} ms; summed kernel time "
            f"{fmt_ns_as_ms(derive.summed_kernel_ns(g['kern']))} ms.")


def limit_analysis(name: str, prof: dict, run: dict, profiles: dict | None = None) -> dict:
    """One measured limit of a profiled path, in words built from its numbers, and the next
    change to try with the metric it should move and the direction."""
    profiles = profiles or {name: prof}
    steps = run["recipe"]["steps_per_epoch"]
    d = derive.path_profile(prof["kern"], prof["api"], prof["nvtx"], steps,
                            run["paths"][name].get("launches_per_step"))
    wk, fill, launch = d["widest_kernel"], d["filler"], d["launch"]
    range_ns = d["range_ns"]
    range_txt = (f"the {fmt_ns_as_ms(range_ns)} ms `{d['range']['raw_name']}` range of nvtx_sum"
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
        change += _graph_evidence(name, profiles, run)
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


# ----------------------------------------------------------------------------- render

def build_context(run: dict, torch: dict | None, profiles: dict, predictions: list,
                  gaps: list, plot_links: dict) -> dict:
    paths = run["paths"]
    variants = (torch or {}).get("variants", {})
    eager = variants.get(EAGER_VARIANT)
    eager_median = _passed_median(eager)
    timing = [timing_row(name, "CUDA path", rec, eager_median) for name, rec in paths.items()]
    timing += [timing_row(f"PyTorch {name}", "PyTorch", rec, eager_median)
               for name, rec in variants.items()]
    tiers = [tier_for(name, paths, eager) for name in paths if name != BASELINE_PATH]
    headline = next((t for t in tiers if t["path"] == HEADLINE_PATH), None)
    ref = run.get("reference_fp64") or {}
    ref_acc = ref.get("test_accuracy")
    acc_rows = []
    for label, rec in ([(f"CUDA {n}", r) for n, r in paths.items()]
                       + [("float64 reference", ref)]
                       + [(f"PyTorch {n}", r) for n, r in variants.items()]):
        a = rec.get("test_accuracy")
        diff = (None if _missing(a) or _missing(ref_acc) else 100.0 * (float(a) - float(ref_acc)))
        acc_rows.append({"label": label, "accuracy": fmt_pct(a, 2),
                         "status": status_text(rec | {"passed": rec.get("passed", True)}),
                         "vs_ref": "—" if diff is None else f"{diff:+.2f} pp"})
    cases = [{"id": c["id"], "name": c["name"], "value": fmt_g(c["value"]),
              "limit": fmt_g(c["limit"]), "detail": c.get("detail", ""),
              "verdict": {True: "pass", False: "FAIL"}.get(c["passed"], "not run")}
             for c in run["cases"]]
    sections = [profile_section(n, p, run) for n, p in profiles.items()]
    analysis_path = HEADLINE_PATH if HEADLINE_PATH in profiles else next(iter(profiles), None)
    gpu = run["gpu"]
    recipe = run["recipe"]
    shape = "-".join(str(recipe[k]) for k in ("input_dim", "hidden_dim", "output_dim")
                     if k in recipe) or "—"
    return {
        "run": run, "shape": shape,
        "gpu": {"name": gpu.get("name", "—"), "cc": gpu.get("compute_capability", "—"),
                "sm_count": gpu.get("sm_count", "—"),
                "cache_mib": "—" if _missing(gpu.get("l2_bytes")) else f"{gpu['l2_bytes'] / 2**20:g}",
                "driver": gpu.get("driver", "—"),
                "driver_cuda": cuda_version(gpu.get("driver_api_version")),
                "runtime": cuda_version(gpu.get("runtime_version")),
                "toolkit": cuda_version(gpu.get("toolkit_version", gpu.get("runtime_version")))},
        "submission": run.get("submission") or run.get("build", {}).get("submission", "—"),
        "gated_path": run.get("gated_path"),
        "build": run.get("build", {}),
        "run_command": run.get("run_command", "—"),
        "date": run.get("date_utc", "—"), "commit": run.get("commit", "—"),
        "recipe": [{"key": k, "value": v} for k, v in run["recipe"].items()],
        "reference_source": run.get("reference_source", "—"),
        "cases": cases,
        "cases_passed": sum(1 for c in run["cases"] if c["passed"] is True),
        "failed_paths": [n for n, r in paths.items() if not r.get("passed")],
        "torch": None if torch is None else {"version": torch.get("torch_version", "—"),
                                             "cuda": torch.get("cuda_version", "—"),
                                             "gpu": torch.get("gpu", "—")},
        "eager_median": fmt_ms(eager_median) if eager_median else None,
        "timing": timing,
        "tiers": tiers, "headline": headline,
        "tier_rules": {"silver": f"{SILVER_MAX_RATIO:.2f}", "gold": f"{GOLD_MAX_RATIO:.2f}",
                       "gold_cv": f"{GOLD_MAX_CV_PCT:g}"},
        "accuracy": acc_rows,
        "profiles": sections,
        "unprofiled": [n for n in paths if n not in profiles],
        "predictions": [evaluate_prediction(p, run, profiles) for p in predictions],
        "analysis": None if analysis_path is None else limit_analysis(
            analysis_path, profiles[analysis_path], run, profiles),
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
        kernel_rows = [(kernel_base_name(r["name"]), float(r["total_ns"]) / 1e3)
                       for _, r in kern.iterrows()]
    return loss, epoch_rows, kernel_rows


def render(results_dir, profile_dir, predictions_path, gaps_path, out_path,
           template_path: Path | None = None, plots_dir: Path | None = None) -> Path:
    """Render RESULTS.md (and results/plots/*.png); returns out_path."""
    results_dir, profile_dir, out_path = Path(results_dir), Path(profile_dir), Path(out_path)
    run_path = results_dir / "run.json"
    run = load_json(run_path, required=True)
    validate_run(run, run_path)
    torch_path = results_dir / "pytorch.json"
    torch = load_json(torch_path, required=False)
    if torch is not None:
        validate_pytorch(torch, torch_path)
    predictions = load_predictions(Path(predictions_path))
    gaps = load_gaps(Path(gaps_path))
    profiles = load_profiles(run, profile_dir)

    plots_dir = Path(plots_dir) if plots_dir is not None else results_dir / "plots"
    written = plots.write_plots(plots_dir, *_plot_inputs(run, torch, profiles),
                                kernel_title=f"Kernel time per row, one profiled "
                                             f"{HEADLINE_PATH} epoch")
    links = {k: Path(os.path.relpath(p, out_path.parent)).as_posix() for k, p in written.items()}

    template_path = Path(template_path) if template_path else TEMPLATES_DIR / TEMPLATE_NAME
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(template_path.parent)),
                             undefined=jinja2.StrictUndefined, autoescape=False,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    try:
        template = env.get_template(template_path.name)
    except jinja2.TemplateNotFound:
        raise _fail(template_path, "file not found") from None
    except jinja2.TemplateSyntaxError as exc:
        raise _fail(template_path, f"template syntax error at line {exc.lineno}: {exc.message}") \
            from None
    text = template.render(**build_context(run, torch, profiles, predictions, gaps, links))
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
    args = parser.parse_args(argv)
    out = render(args.results, args.profile, args.predictions, args.gaps, args.out,
                 plots_dir=args.plots)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
