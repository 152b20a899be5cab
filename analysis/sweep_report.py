"""Render SWEEP.md and its two plots from results/sweep.json alone (issue 8).

    python -m analysis.sweep_report [--sweep results/sweep.json] [--out SWEEP.md]
                                    [--plots results/plots]

SWEEP.md holds the width sweep and the batch sweep (per point: the best CUDA path, its median
epoch, CV, images per second, µs per step; PyTorch eager and cuda-graph medians; the ratios;
the test accuracies), every path and variant side by side, the memory ledger beside the
measured peaks, and the cost in GPU-seconds per 1,000 images. Plots, into the plots folder:
sweep_speedup_vs_width.png (the best CUDA path's speed-up over each PyTorch variant against the
hidden width) and sweep_step_time_vs_batch.png (µs per step against the batch size).

Every number comes from sweep.json or is computed here from its numbers; the template holds
none. Deterministic: the only date and commit shown are sweep.json's, the PNGs carry no
metadata, so the same sweep.json renders to the same bytes. A missing or malformed sweep.json
raises SystemExit with one line naming the file, before anything is written.
"""
from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Sequence

import matplotlib
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter, NullLocator

from analysis import plots
from analysis.report import load_template
from analysis.report import _fail, fmt_int, fmt_ms, fmt_pct, fmt_ratio3, load_json, md_cell
from harness.atomic import write_bytes, write_text
from harness.config import RESULTS_DIR, ROOT, TEMPLATES_DIR

TEMPLATE_NAME = "SWEEP.md.j2"
SWEEP_FILE = "sweep.json"
DEFAULT_OUT = ROOT / "SWEEP.md"   # RESULTS.md links it (analysis/report.py)
PLOT_FILES = {"speedup": "sweep_speedup_vs_width.png",
              "step_time": "sweep_step_time_vs_batch.png"}
EAGER, GRAPH = "eager", "cuda-graph"
MIB = 1 << 20


# ----------------------------------------------------------------------------- formatting

def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def fmt_cv(x) -> str:
    """cv_pct is already a percentage."""
    return f"{float(x):.1f}%" if _num(x) else "—"


def fmt_us(x) -> str:
    return f"{float(x):.2f}" if _num(x) else "—"


def fmt_mib(x) -> str:
    return f"{float(x) / MIB:,.2f}" if _num(x) else "—"


def fmt_cost(x) -> str:
    return f"{float(x):.3g}" if _num(x) else "—"


def fmt_speedup(x) -> str:
    return f"{float(x):.2f}×" if _num(x) else "—"


def _inv(x):
    return 1.0 / x if _num(x) and x > 0 else None


def first_line(text) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0] if lines else ""


# ----------------------------------------------------------------------------- loading

_POINT_KEYS = (("label", str), ("hidden", int), ("batch", int), ("status", str),
               ("sweeps", list), ("errors", list), ("cuda", dict), ("pytorch", dict))
_NUMERIC = ("median_ms", "cv_pct", "test_accuracy", "images_per_s", "step_us",
            "gpu_s_per_1000_images")


def _need(obj, key, path, kind, where=""):
    if not isinstance(obj, dict) or key not in obj:
        raise _fail(path, f"missing key {where}{key!r}")
    value = obj[key]
    if kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, kind)
    if not ok:
        raise _fail(path, f"key {where}{key!r} has the wrong type ({type(value).__name__})")
    return value


def _optional_number(obj, key, path, where):
    value = obj.get(key)
    if value is not None and not _num(value):
        raise _fail(path, f"key {where}{key!r} is not a number ({value!r})")


def validate(doc: dict, path) -> None:
    """Raise SystemExit (one line naming the file) unless doc has the shape docs/formats.md
    gives results/sweep.json."""
    if doc.get("schema") != 1:
        raise _fail(path, f"schema {doc.get('schema')!r}, expected 1")
    config = _need(doc, "config", path, dict)
    for key in ("widths", "batches"):
        _need(config, key, path, list, "config.")
    for key in ("width_sweep_batch", "batch_sweep_hidden", "input_dim", "output_dim",
                "cost_images"):
        _need(config, key, path, int, "config.")
    points = _need(doc, "points", path, list)
    for i, p in enumerate(points):
        where = f"points[{i}]."
        if not isinstance(p, dict):
            raise _fail(path, f"points[{i}] is not an object")
        for key, kind in _POINT_KEYS:
            _need(p, key, path, kind, where)
        for group in ("cuda", "pytorch"):
            for name, m in p[group].items():
                w = f"{where}{group}.{name}."
                if not isinstance(m, dict):
                    raise _fail(path, f"{w[:-1]} is not an object")
                for key in _NUMERIC:
                    _optional_number(m, key, path, w)
        best = p.get("best_cuda_path")
        if best is not None and best not in p["cuda"]:
            raise _fail(path, f"{where}best_cuda_path {best!r} is not among its CUDA paths")
        for key in ("ratio_best_cuda_vs_eager", "ratio_best_cuda_vs_cuda_graph",
                    "steps_per_epoch", "n_params", "train_size", "test_size", "epochs"):
            _optional_number(p, key, path, where)
        mem = p.get("memory")
        if mem is not None:
            if not isinstance(mem, dict):
                raise _fail(path, f"{where}memory is not an object")
            _optional_number(mem, "cuda_peak_used_bytes", path, f"{where}memory.")
            torch_mem = mem.get("torch_max_memory_allocated_bytes")
            if torch_mem is not None:
                if not isinstance(torch_mem, dict):
                    raise _fail(path, f"{where}memory.torch_max_memory_allocated_bytes is not "
                                      f"an object")
                for name in torch_mem:
                    _optional_number(torch_mem, name, path,
                                     f"{where}memory.torch_max_memory_allocated_bytes.")
            led = mem.get("ledger")
            if led is not None:
                if not isinstance(led, dict):
                    raise _fail(path, f"{where}memory.ledger is not an object")
                for key in ("parameters_bytes", "gradients_bytes", "activations_bytes",
                            "data_bytes", "order_bytes", "total_sgd_momentum_bytes"):
                    _optional_number(led, key, path, f"{where}memory.ledger.")
                opt = _need(led, "optimizer_state_bytes", path, dict, f"{where}memory.ledger.")
                for key in opt:
                    _optional_number(opt, key, path, f"{where}memory.ledger.optimizer_state_bytes.")


def load_sweep(path, required: bool = True) -> dict | None:
    """sweep.json, checked by validate(); None when it is absent and not required."""
    doc = load_json(Path(path), required=required)
    if doc is not None:
        validate(doc, path)
    return doc


# ----------------------------------------------------------------------------- rows

def _in(point: dict, sweep: str) -> bool:
    return sweep in point["sweeps"]


def sweep_row(p: dict) -> dict:
    """One row of the width or batch table."""
    best = p.get("best_cuda") or {}
    eager = p["pytorch"].get(EAGER) or {}
    graph = p["pytorch"].get(GRAPH) or {}
    ratio_e, ratio_g = p.get("ratio_best_cuda_vs_eager"), p.get("ratio_best_cuda_vs_cuda_graph")
    if p.get("best_cuda_path"):
        best_path = f"`{p['best_cuda_path']}`"
    else:
        best_path = "failed: " + md_cell(first_line(p["errors"][0] if p["errors"] else ""))
    return {
        "label": p["label"], "hidden": fmt_int(p["hidden"]), "batch": fmt_int(p["batch"]),
        "best_path": best_path,
        "median": fmt_ms(best.get("median_ms")), "cv": fmt_cv(best.get("cv_pct")),
        "images_per_s": fmt_int(best.get("images_per_s")),
        "step_us": fmt_us(best.get("step_us")),
        "eager": fmt_ms(eager.get("median_ms")), "graph": fmt_ms(graph.get("median_ms")),
        "ratio_eager": fmt_ratio3(ratio_e), "ratio_graph": fmt_ratio3(ratio_g),
        "speedup_eager": fmt_speedup(_inv(ratio_e)), "speedup_graph": fmt_speedup(_inv(ratio_g)),
        "acc_best": fmt_pct(best.get("test_accuracy"), 2),
        "acc_eager": fmt_pct(eager.get("test_accuracy"), 2),
        "acc_graph": fmt_pct(graph.get("test_accuracy"), 2),
        "steps": fmt_int(p.get("steps_per_epoch")),
    }


def _cell(m: dict | None) -> str:
    """median ms (CV) of one path or variant, or why it has none."""
    if not m:
        return "—"
    if m.get("passed") and _num(m.get("median_ms")):
        return f"{fmt_ms(m['median_ms'])} ({fmt_cv(m.get('cv_pct'))})"
    err = first_line(m.get("error")) or "failed"
    return "failed: " + md_cell(err)


def all_paths_rows(points: list[dict], cuda_names: list[str], torch_names: list[str]) -> list:
    rows = []
    for p in points:
        rows.append({"label": p["label"],
                     "cells": [_cell(p["cuda"].get(n)) for n in cuda_names]
                     + [_cell(p["pytorch"].get(n)) for n in torch_names]})
    return rows


def memory_row(p: dict) -> dict:
    mem = p.get("memory") or {}
    led = mem.get("ledger") or {}
    opt = led.get("optimizer_state_bytes") or {}
    peak = mem.get("cuda_peak_used_bytes")
    total = led.get("total_sgd_momentum_bytes")
    torch_mem = mem.get("torch_max_memory_allocated_bytes") or {}
    return {
        "label": p["label"],
        "params": fmt_mib(led.get("parameters_bytes")),
        "grads": fmt_mib(led.get("gradients_bytes")),
        "sgd": fmt_mib(opt.get("sgd")), "momentum": fmt_mib(opt.get("sgd_momentum")),
        "adam": fmt_mib(opt.get("adam")),
        "activations": fmt_mib(led.get("activations_bytes")),
        "data": fmt_mib(led.get("data_bytes")), "order": fmt_mib(led.get("order_bytes")),
        "total": fmt_mib(total), "peak": fmt_mib(peak),
        "peak_over_ledger": fmt_speedup(peak / total) if _num(peak) and _num(total) and total
        else "—",
        "torch_eager": fmt_mib(torch_mem.get(EAGER)),
        "torch_graph": fmt_mib(torch_mem.get(GRAPH)),
    }


def cost_row(p: dict, cuda_names: list[str], torch_names: list[str]) -> dict:
    best = p.get("best_cuda") or {}
    return {"label": p["label"],
            "best_path": f"`{p['best_cuda_path']}`" if p.get("best_cuda_path") else "—",
            "best": fmt_cost(best.get("gpu_s_per_1000_images")),
            "best_ips": fmt_int(best.get("images_per_s")),
            "cells": [fmt_cost((p["cuda"].get(n) or {}).get("gpu_s_per_1000_images"))
                      for n in cuda_names]
            + [fmt_cost((p["pytorch"].get(n) or {}).get("gpu_s_per_1000_images"))
               for n in torch_names],
            "ips": [fmt_int((p["pytorch"].get(n) or {}).get("images_per_s"))
                    for n in torch_names]}


def _names(points: list[dict], group: str, first: Sequence[str] = ()) -> list[str]:
    """Path / variant names in first-seen order, `first` (the configured order) leading."""
    names = [n for n in first if any(n in p[group] for p in points)]
    for p in points:
        for n in p[group]:
            if n not in names:
                names.append(n)
    return names


# ----------------------------------------------------------------------------- plots

def _log2_axis(axis, values) -> None:
    axis.set_major_locator(FixedLocator(sorted(set(values))))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{int(v):,}"))


def _log_y(ax, unit: str = "") -> None:
    """A log y axis labelled in plain numbers at 1, 2, 5 x 10^k."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(LogLocator(base=10.0, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}{unit}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _empty(ax) -> None:
    ax.text(0.5, 0.5, "no measured point", ha="center", va="center", transform=ax.transAxes)


def speedup_plot(width_points: list[dict]) -> bytes:
    """The best CUDA path's speed-up (PyTorch median / best median) against the hidden width."""
    with matplotlib.rc_context(plots._STYLE):
        fig = plots._figure(8.0, 4.5)
        ax = fig.add_subplot()
        drawn = []
        for key, name, marker in (("ratio_best_cuda_vs_eager", "over PyTorch eager", "o"),
                                  ("ratio_best_cuda_vs_cuda_graph", "over PyTorch cuda-graph",
                                   "s")):
            xs, ys = [], []
            for p in width_points:
                s = _inv(p.get(key))
                if s is not None:
                    xs.append(p["hidden"])
                    ys.append(s)
            if xs:
                ax.plot(xs, ys, "-", marker=marker, markersize=4, linewidth=1.2, label=name)
                for x, y in zip(xs, ys):
                    ax.annotate(f"{y:.2g}×", (x, y), textcoords="offset points", xytext=(0, 5),
                                ha="center", fontsize=7)
                drawn += xs
        if drawn:
            ax.axhline(1.0, color="grey", linestyle="--", linewidth=1.0, label="parity")
        return _finish(fig, ax, drawn, "×", "hidden width",
                       "speed-up: PyTorch median / best CUDA median (log)",
                       "Speed-up over PyTorch against hidden width")


def _finish(fig, ax, drawn: list, y_unit: str, xlabel: str, ylabel: str, title: str) -> bytes:
    """The axes both sweep plots share: log₂ x over the drawn points, log y, legend (or an
    empty-plot note), labels; returns the PNG bytes."""
    if drawn:
        ax.set_xscale("log", base=2)
        _log2_axis(ax.xaxis, drawn)
        _log_y(ax, y_unit)
        ax.legend(loc="best", fontsize=8)
    else:
        _empty(ax)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return plots._png(fig)


def step_time_plot(batch_points: list[dict], cuda_names: list[str],
                   torch_names: list[str]) -> bytes:
    """µs per step against the batch size: every CUDA path and PyTorch variant."""
    with matplotlib.rc_context(plots._STYLE):
        fig = plots._figure(8.0, 4.5)
        ax = fig.add_subplot()
        drawn = []
        series = [(f"CUDA {n}", "cuda", n, "-") for n in cuda_names] + \
                 [(f"PyTorch {n}", "pytorch", n, "--") for n in torch_names]
        for i, (name, group, key, style) in enumerate(series):
            xs, ys = [], []
            for p in batch_points:
                m = p[group].get(key) or {}
                if m.get("passed") and _num(m.get("step_us")):
                    xs.append(p["batch"])
                    ys.append(m["step_us"])
            if xs:
                ax.plot(xs, ys, style, marker="o", markersize=4, linewidth=1.2, label=name,
                        color=matplotlib.colormaps["tab10"](i % 10))
                drawn += xs
        return _finish(fig, ax, drawn, "", "batch size",
                       "µs per training step: median epoch / steps (log)", "Step time against batch size")


# ----------------------------------------------------------------------------- render

def build_context(doc: dict) -> tuple:
    """(template context, width points, batch points, CUDA path names, PyTorch variant names)."""
    cfg = doc["config"]
    points = doc["points"]
    width_points = sorted((p for p in points if _in(p, "width")), key=lambda p: p["hidden"])
    batch_points = sorted((p for p in points if _in(p, "batch")), key=lambda p: p["batch"])
    all_points = sorted(points, key=lambda p: (p["hidden"], p["batch"]))
    cuda_names = _names(points, "cuda", cfg.get("paths") or ())
    torch_names = _names(points, "pytorch", cfg.get("pytorch_variants") or ())
    gpu = doc.get("gpu") or {}
    train_sizes = sorted({p["train_size"] for p in points if _num(p.get("train_size"))})
    epochs = sorted({p["epochs"] for p in points if _num(p.get("epochs"))})
    return {
        "gpu_name": gpu.get("name") or "—",
        "gpu_cc": gpu.get("compute_capability") or "—",
        "driver": doc.get("driver") or "—",
        "date": doc.get("date_utc") or "—",
        "commit": doc.get("commit") or "—",
        "torch_version": doc.get("torch_version") or "not run",
        "torch_cuda": doc.get("torch_cuda_version") or "—",
        "complete": bool(doc.get("complete")),
        "shape_in": cfg["input_dim"], "shape_out": cfg["output_dim"],
        "width_batch": cfg["width_sweep_batch"], "batch_hidden": cfg["batch_sweep_hidden"],
        "epochs": ", ".join(fmt_int(e) for e in epochs) or "—",
        "timed_epochs": ", ".join(fmt_int(e - 1) for e in epochs) or "—",
        "train_size": ", ".join(fmt_int(n) for n in train_sizes) or "—",
        "data_dir": cfg.get("data_dir") or "—",
        "lr": cfg.get("lr", "—"), "momentum": cfg.get("momentum", "—"),
        "paths": ", ".join(f"`{n}`" for n in cuda_names) or "—",
        "variants": ", ".join(f"`{n}`" for n in torch_names) or "not run",
        "cost_images": fmt_int(cfg["cost_images"]),
        "float_bytes": cfg.get("float_bytes", "—"),
        "notes": doc.get("notes") or {},
        "width_rows": [sweep_row(p) for p in width_points],
        "batch_rows": [sweep_row(p) for p in batch_points],
        "all_headers": [f"CUDA `{n}`" for n in cuda_names] + [f"PyTorch `{n}`"
                                                             for n in torch_names],
        "all_rows": all_paths_rows(all_points, cuda_names, torch_names),
        "memory_rows": [memory_row(p) for p in all_points],
        "cost_headers": [f"CUDA `{n}`" for n in cuda_names] + [f"PyTorch `{n}`"
                                                              for n in torch_names],
        "ips_headers": [f"PyTorch `{n}` images/s" for n in torch_names],
        "cost_rows": [cost_row(p, cuda_names, torch_names) for p in all_points],
        "problems": [{"label": p["label"], "status": p["status"],
                      "errors": [md_cell(first_line(e)) for e in p["errors"]]}
                     for p in all_points if p["errors"]],
        "n_points": len(points),
        "n_ok": sum(1 for p in points if p["status"] == "ok"),
        "commands": [{"label": p["label"], "command": p.get("command"),
                      "pytorch_command": p.get("pytorch_command")}
                     for p in all_points if p.get("command")],
    }, width_points, batch_points, cuda_names, torch_names


def render(sweep_path, out_path, plots_dir=None, template_path=None) -> Path:
    """Render SWEEP.md and the two plots; returns out_path. sweep.json is read and checked
    before anything is written."""
    sweep_path, out_path = Path(sweep_path), Path(out_path)
    doc = load_sweep(sweep_path)
    template_path = Path(template_path) if template_path else TEMPLATES_DIR / TEMPLATE_NAME
    template = load_template(template_path)
    context, width_points, batch_points, cuda_names, torch_names = build_context(doc)
    plots_dir = Path(plots_dir) if plots_dir else sweep_path.parent / "plots"
    images = {"speedup": speedup_plot(width_points),
              "step_time": step_time_plot(batch_points, cuda_names, torch_names)}

    def link(p) -> str:
        return Path(os.path.relpath(os.path.abspath(p), os.path.abspath(out_path.parent))) \
            .as_posix()

    def shown(p) -> str:
        absolute = Path(os.path.abspath(p))
        try:
            return absolute.relative_to(Path(os.path.abspath(ROOT))).as_posix()
        except ValueError:
            return link(p)

    context["plots"] = {k: link(plots_dir / PLOT_FILES[k]) for k in PLOT_FILES}
    context["source"] = shown(sweep_path)
    text = template.render(**context)
    for key, data in images.items():
        write_bytes(plots_dir / PLOT_FILES[key], data)
    write_text(out_path, text)
    return out_path


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.sweep_report",
                                 description="Render SWEEP.md from results/sweep.json.")
    ap.add_argument("--sweep", default=str(RESULTS_DIR / SWEEP_FILE))
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--plots", default=None, help="plots folder (default: beside sweep.json, "
                                                  "plots/)")
    args = ap.parse_args(argv)
    out = render(args.sweep, args.out, plots_dir=args.plots)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
