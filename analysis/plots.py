"""Every plot of the reports, drawn with matplotlib's Agg canvas into PNG bytes (the renderer
writes them, with the Markdown, all together).

Deterministic: no pyplot state, fixed figure size and dpi, fixed style values, and no PNG
metadata (the "Software" tag, which carries matplotlib's version, is dropped), so the same inputs
give the same bytes on a machine with the same matplotlib and FreeType.

    loss_plot(series)             loss per epoch, one line per series
    loss_deviation_plot(series)   |loss / float64 − 1| per epoch, log axis, one line per path
    epoch_time_plot(rows)         median epoch time with min-max whiskers, one row per run
    phase_plot(breakdowns, rows)  the persistent epoch's parts as stacked bars
    kernel_breakdown_plot(rows)   total time per kernel row of one profiled epoch
    speedup_plot, step_time_plot  the sweep's fp32 plots
    precision_speedup_plot(lines) the sweep's speed-up over PyTorch's fastest of the same precision
                                  against width, one line per precision
    precision_accuracy_plot(rows) RESULTS.md's test-accuracy deviation from float64 per precision,
                                  ours beside PyTorch's
"""
from __future__ import annotations

import functools
import io

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import (FixedLocator, FuncFormatter, LogLocator, MaxNLocator,
                               NullFormatter, NullLocator)

from analysis.fmt import finite
from analysis.sections.sweep import ACCEPTANCE_RATIO, GOAL_RATIO, inv

DPI = 100
LOG_SCALE_SPAN = 20.0  # epoch-time plot: log x axis when max / min of the rows exceeds this
_STYLE = {
    "font.family": "DejaVu Sans",  # shipped with matplotlib: the same font everywhere
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "svg.hashsalt": "mlp",
    "path.simplify": False,
}


_MEMO: dict[str, bytes] = {}
_MEMO_MAX = 256


def _memo(plot):
    """The plot's PNG bytes, drawn once per process for the same arguments (the plots are pure
    functions of their inputs; the test suite renders the same fixtures many times)."""
    @functools.wraps(plot)
    def cached(*args, **kwargs):
        key = f"{plot.__name__}:{args!r}:{sorted(kwargs.items())!r}"
        if key not in _MEMO:
            if len(_MEMO) >= _MEMO_MAX:
                _MEMO.clear()
            _MEMO[key] = plot(*args, **kwargs)
        return _MEMO[key]
    return cached


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _figure(width_in: float, height_in: float) -> Figure:
    return Figure(figsize=(width_in, height_in), dpi=DPI, layout="constrained")


@_memo
def loss_plot(series: list[tuple[str, list[float]]]) -> bytes:
    """series: (label, loss per epoch) pairs; epochs are numbered from 1."""
    with matplotlib.rc_context(_STYLE):
        fig = _figure(10.0, 4.5)
        ax = fig.add_subplot()
        # More series than tab10 has colours: tab20, so no two lines share a colour.
        cmap = matplotlib.colormaps["tab10" if len(series) <= 10 else "tab20"]
        for i, (label, losses) in enumerate(series):
            epochs = list(range(1, len(losses) + 1))
            style = "--" if label.startswith("float64") else ("-" if i < 10 else ":")
            ax.plot(epochs, losses, style, marker="o", markersize=2.5, linewidth=1.2, label=label,
                    color=cmap(i % cmap.N))
        ax.set_xlabel("epoch")
        ax.set_ylabel("mean training loss")
        ax.set_title("Training loss per epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        fig.legend(loc="outside right upper", fontsize=7)
        return _png(fig)


@_memo
def epoch_time_plot(rows: list[dict]) -> bytes:
    """rows: {"label", "median_ms", "min_ms", "max_ms", "failed"}; one horizontal row each."""
    with matplotlib.rc_context(_STYLE):
        fig = _figure(8.0, 0.9 + 0.35 * max(len(rows), 1))
        ax = fig.add_subplot()
        ys = list(range(len(rows)))[::-1]
        for y, row in zip(ys, rows):
            med, lo, hi = row["median_ms"], row["min_ms"], row["max_ms"]
            color = "tab:red" if row.get("failed") else "tab:blue"
            ax.errorbar([med], [y], xerr=[[med - lo], [hi - med]], fmt="o", color=color,
                        capsize=3, markersize=4)
        ax.set_yticks(ys, [r["label"] + (" (failed)" if r.get("failed") else "") for r in rows])
        lows = [r["min_ms"] for r in rows if r["min_ms"] > 0]
        if lows and max(r["max_ms"] for r in rows) / min(lows) > LOG_SCALE_SPAN:
            # Medians an order of magnitude or more apart: a log axis keeps the fast rows apart.
            ax.set_xscale("log")
            ax.set_xlabel("epoch time, ms, log scale (median, whiskers min-max)")
        else:
            ax.set_xlim(left=0.0)
            ax.set_xlabel("epoch time, ms (median, whiskers min-max)")
        ax.set_ylabel("path / variant")
        ax.set_title("Epoch time per path and PyTorch variant")
        return _png(fig)


@_memo
def loss_deviation_plot(series: list[dict]) -> bytes:
    """series: {"label", "epochs", "dev"}: |loss / float64 loss − 1| per epoch on a log axis;
    an exact zero cannot be drawn on it and is left out (the table shows it)."""
    with matplotlib.rc_context(_STYLE):
        fig = _figure(10.0, 4.5)
        ax = fig.add_subplot()
        cmap = matplotlib.colormaps["tab10" if len(series) <= 10 else "tab20"]
        drawn = False
        for i, s in enumerate(series):
            pts = [(e, d) for e, d in zip(s["epochs"], s["dev"]) if d > 0]
            if pts:
                ax.plot([e for e, _ in pts], [d for _, d in pts], "-" if i < 10 else ":",
                        marker="o", markersize=2.5, linewidth=1.2, label=s["label"],
                        color=cmap(i % cmap.N))
                drawn = True
        if drawn:
            ax.set_yscale("log")
            fig.legend(loc="outside right upper", fontsize=7)
        else:
            _empty(ax)
        ax.set_xlabel("epoch")
        ax.set_ylabel("|loss / float64 loss − 1| (log)")
        ax.set_title("Training loss: relative deviation from the float64 reference")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        return _png(fig)


PHASE_COLOURS = {"grid barriers": "tab:grey", "phase A": "tab:blue", "phase B": "tab:orange",
                 "phase C": "tab:green"}


@_memo
def phase_plot(breakdowns: list[dict], full_rows: list[dict]) -> bytes:
    """One stacked bar per kernel breakdown (barriers, then each phase's cost above them, µs a
    step), and one plain bar per measured full-epoch row beside them."""
    with matplotlib.rc_context(_STYLE):
        bars = [(f"{b['kernel']} ({b['staging']}): parts summed", b) for b in breakdowns]
        bars += [(f"{r['kernel']} ({r['staging']}): {r['label']}", r) for r in full_rows]
        fig = _figure(8.0, 1.2 + 0.4 * max(len(bars), 1))
        ax = fig.add_subplot()
        ys = list(range(len(bars)))[::-1]
        seen = set()
        for y, (_, item) in zip(ys, bars):
            if "parts" in item:
                left = 0.0
                for what, us in [("grid barriers", item["barriers"])] + \
                        [(f"phase {p['phase']}", p["us"]) for p in item["parts"]]:
                    ax.barh([y], [us], left=left, color=PHASE_COLOURS.get(what, "tab:purple"),
                            label=None if what in seen else what)
                    seen.add(what)
                    left += us
            else:
                ax.barh([y], [item["us_step"]], color="tab:red" if item["production"]
                        else "tab:pink", label=None if item["production"] in seen
                        else ("measured, shipped staging" if item["production"]
                              else "measured, other staging"))
                seen.add(item["production"])
        ax.set_yticks(ys, [label for label, _ in bars])
        ax.set_xlabel("µs a step (median epoch / steps)")
        ax.set_title("Where the persistent epoch's time goes")
        ax.legend(loc="lower right", fontsize=7)
        return _png(fig)


@_memo
def stationary_phase_plot(kernel: str, rows: list[dict], step_us: float) -> bytes:
    """One stacked bar of the stationary kernel's phases (slowest block, µs a step) beside one
    bar of the measured median step."""
    colours = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown",
               "tab:pink", "tab:olive", "tab:cyan", "tab:gray"]
    with matplotlib.rc_context(_STYLE):
        fig = _figure(8.0, 2.4)
        ax = fig.add_subplot()
        left = 0.0
        for i, r in enumerate(rows):
            ax.barh([1], [r["slowest"]], left=left, color=colours[i % len(colours)],
                    label=r["name"])
            left += r["slowest"]
        ax.barh([0], [step_us], color="black", label="measured step (median)")
        ax.set_yticks([1, 0], [f"{kernel}: phases, slowest block", "measured step"])
        ax.set_xlabel("µs a step")
        ax.set_title(f"Where the {kernel} epoch's time goes")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), ncol=4, fontsize=7)
        return _png(fig)


@_memo
def kernel_breakdown_plot(rows: list[tuple[str, float]], title: str) -> bytes:
    """rows: (kernel label, total µs) in the CSV's order; one horizontal bar per kernel row."""
    with matplotlib.rc_context(_STYLE):
        fig = _figure(8.0, 0.9 + 0.32 * max(len(rows), 1))
        ax = fig.add_subplot()
        ys = list(range(len(rows)))[::-1]
        ax.barh(ys, [us for _, us in rows], color="tab:green")
        ax.set_yticks(ys, [label for label, _ in rows])
        ax.set_xlabel("total kernel time in the profiled epoch, µs")
        ax.set_ylabel("kernel")
        ax.set_title(title)
        return _png(fig)


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


@_memo
def speedup_plot(width_points: list[dict], torch_names: list[str] = ()) -> bytes:
    """The best CUDA path's speed-up (PyTorch median / best median) against the hidden width:
    over PyTorch's fastest passed variant at each point (the headline, bold), and over each
    variant; the acceptance's and the goal's speed-ups as dotted lines."""
    with matplotlib.rc_context(_STYLE):
        fig = _figure(8.0, 4.5)
        ax = fig.add_subplot()
        drawn = []
        series = [("over PyTorch's fastest variant", lambda p: p.get("ratio_best_cuda_vs_fastest_pytorch"),
                   "o", 2.2, True)]
        series += [(f"over PyTorch {n}", (lambda p, n=n: (p.get("ratio_best_cuda_vs") or {}).get(n)),
                    "s^vDP"[i % 5], 1.0, False) for i, n in enumerate(torch_names)]
        for name, ratio_of, marker, width, annotate in series:
            xs, ys = [], []
            for p in width_points:
                s = inv(ratio_of(p))
                if s is not None:
                    xs.append(p["hidden"])
                    ys.append(s)
            if xs:
                ax.plot(xs, ys, "-" if annotate else "--", marker=marker, markersize=4,
                        linewidth=width, label=name)
                if annotate:
                    for x, y in zip(xs, ys):
                        ax.annotate(f"{y:.2g}×", (x, y), textcoords="offset points",
                                    xytext=(0, 5), ha="center", fontsize=7)
                drawn += xs
        if drawn:
            _speedup_references(ax, "tab:orange", "tab:green")
        return _finish(fig, ax, drawn, "×", "hidden width",
                       "speed-up: PyTorch median / best CUDA median (log)",
                       "Speed-up over PyTorch against hidden width")


def _speedup_references(ax, acceptance_colour: str, goal_colour: str) -> None:
    """The speed-up plots' horizontal lines: parity, the acceptance's and the goal's speed-ups."""
    ax.axhline(1.0, color="grey", linestyle="--", linewidth=1.0, label="parity")
    ax.axhline(1.0 / ACCEPTANCE_RATIO, color=acceptance_colour, linestyle=":", linewidth=1.0,
               label=f"acceptance (ratio ≤ {ACCEPTANCE_RATIO:g})")
    ax.axhline(1.0 / GOAL_RATIO, color=goal_colour, linestyle=":", linewidth=1.0,
               label=f"goal (ratio ≤ {GOAL_RATIO:g})")


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
    return _png(fig)


@_memo
def step_time_plot(batch_points: list[dict], cuda_names: list[str],
                   torch_names: list[str]) -> bytes:
    """µs per step against the batch size: every CUDA path and PyTorch variant."""
    with matplotlib.rc_context(_STYLE):
        fig = _figure(8.0, 4.5)
        ax = fig.add_subplot()
        drawn = []
        series = [(f"CUDA {n}", "cuda", n, "-") for n in cuda_names] + \
                 [(f"PyTorch {n}", "pytorch", n, "--") for n in torch_names]
        for i, (name, group, key, style) in enumerate(series):
            xs, ys = [], []
            for p in batch_points:
                m = p[group].get(key) or {}
                if m.get("passed") and finite(m.get("step_us")):
                    xs.append(p["batch"])
                    ys.append(m["step_us"])
            if xs:
                ax.plot(xs, ys, style, marker="o", markersize=4, linewidth=1.2, label=name,
                        color=matplotlib.colormaps["tab10"](i % 10))
                drawn += xs
        return _finish(fig, ax, drawn, "", "batch size",
                       "µs per training step: median epoch / steps (log)", "Step time against batch size")


PRECISION_COLOURS = {"fp32": "tab:blue", "tf32": "tab:orange", "bf16": "tab:green"}


@_memo
def precision_speedup_plot(lines: list[dict]) -> bytes:
    """lines: {"precision", "label", "points": [(hidden, speed-up)]}: per precision, PyTorch's
    fastest variant of that precision over our best path of it (median over median) against the
    hidden width; the acceptance's and the goal's speed-ups as dotted lines."""
    with matplotlib.rc_context(_STYLE):
        fig = _figure(8.0, 4.5)
        ax = fig.add_subplot()
        drawn = []
        for i, line in enumerate(lines):
            xs = [h for h, _ in line["points"]]
            ys = [x for _, x in line["points"]]
            ax.plot(xs, ys, "-", marker="os^"[i % 3], markersize=4, linewidth=1.5,
                    label=f"{line['label']}: over PyTorch's fastest {line['label']} variant",
                    color=PRECISION_COLOURS.get(line["precision"], "tab:purple"))
            drawn += xs
        if drawn:   # orange and green are precisions here
            _speedup_references(ax, "tab:red", "black")
        return _finish(fig, ax, drawn, "×", "hidden width",
                       "speed-up: PyTorch median / our best median (log)",
                       "Speed-up over PyTorch's fastest of the same precision against hidden width")


@_memo
def precision_accuracy_plot(rows: list[dict]) -> bytes:
    """rows: {"label" (a precision), "bars": [{"side" ("ours" / "PyTorch"), "name", "last5",
    "last"}]}: per precision a bar per side, its last-5-mean test accuracy less float64's (pp),
    with a marker at its last epoch's; a side not measured gets no bar and says so. The names
    of the path and the variant are in the precision's tick label."""
    sides = ("ours", "PyTorch")
    colours = {"ours": "tab:blue", "PyTorch": "tab:orange"}
    width = 0.38
    with matplotlib.rc_context(_STYLE):
        fig = _figure(8.0, 4.5)
        ax = fig.add_subplot()
        seen, values, ticks = set(), [0.0], []
        for i, row in enumerate(rows):
            names = []
            for j, side in enumerate(sides):
                bar = next((b for b in row["bars"] if b["side"] == side), None)
                x = i + (j - 0.5) * width
                if bar is None or not finite(bar.get("last5")):
                    ax.text(x, 0.5, "not measured", ha="center", va="center", fontsize=7,
                            color="grey", rotation=90, transform=ax.get_xaxis_transform())
                    names.append(f"{side}: —")
                    continue
                names.append(f"{side}: {bar['name']}")
                ax.bar([x], [bar["last5"]], width=width * 0.95, color=colours[side],
                       label=None if side in seen else f"{side}: mean of the last 5 epochs")
                seen.add(side)
                values.append(bar["last5"])
                if finite(bar.get("last")):
                    ax.plot([x], [bar["last"]], "kD", markersize=4,
                            label=None if "last" in seen else "last epoch")
                    seen.add("last")
                    values.append(bar["last"])
            ticks.append("\n".join([row["label"], *names]))
        lo, hi = min(values), max(values)
        pad = 0.15 * (hi - lo) or 0.5
        ax.set_ylim(lo - pad, hi + pad)
        ax.axhline(0.0, color="grey", linewidth=1.0)
        ax.set_xticks(list(range(len(rows))), ticks, fontsize=8)
        ax.set_xlim(-0.7, len(rows) - 0.3)
        ax.set_ylabel("test accuracy less float64's, percentage points")
        ax.set_title("Test accuracy against float64 per precision, at the recipe point")
        if seen:
            ax.legend(loc="best", fontsize=8)
        else:
            _empty(ax)
        return _png(fig)
