"""The report's three plots, drawn with matplotlib's Agg canvas into PNG bytes.

Deterministic: no pyplot state, fixed figure size and dpi, fixed style values, and no PNG
metadata (the "Software" tag, which carries matplotlib's version, is dropped), so the same inputs
give the same bytes on a machine with the same matplotlib and FreeType.

    loss_plot(series)            loss per epoch, one line per series
    epoch_time_plot(rows)        median epoch time with min-max whiskers, one row per path/variant
    kernel_breakdown_plot(rows)  total time per kernel row of one profiled epoch
    write_plots(plots_dir, ...)  draws all that have data and writes them (atomic writes)
"""
from __future__ import annotations

import io
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from harness.atomic import write_bytes

DPI = 100
LOG_SCALE_SPAN = 20.0  # epoch-time plot: log x axis when max / min of the rows exceeds this
PLOT_FILES = {"loss": "loss_per_epoch.png", "epoch_time": "epoch_time.png",
              "kernels": "fused_kernel_breakdown.png"}
_STYLE = {
    "font.family": "DejaVu Sans",  # shipped with matplotlib: the same font everywhere
    "font.size": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "svg.hashsalt": "mlp",
    "path.simplify": False,
}


def _png(fig: Figure) -> bytes:
    FigureCanvasAgg(fig)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    return buf.getvalue()


def _figure(width_in: float, height_in: float) -> Figure:
    return Figure(figsize=(width_in, height_in), dpi=DPI, layout="constrained")


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


def write_plots(plots_dir: Path, loss_series, epoch_rows, kernel_rows, kernel_title) -> dict:
    """Draw and write the plots that have data; returns {key: file path}. A plot of PLOT_FILES
    without data this time is removed, so no stale figure of an earlier render stays behind."""
    plots_dir = Path(plots_dir)
    drawn = {}
    if loss_series:
        drawn["loss"] = loss_plot(loss_series)
    if epoch_rows:
        drawn["epoch_time"] = epoch_time_plot(epoch_rows)
    if kernel_rows:
        drawn["kernels"] = kernel_breakdown_plot(kernel_rows, kernel_title)
    out = {}
    for key, name in PLOT_FILES.items():
        path = plots_dir / name
        if key in drawn:
            write_bytes(path, drawn[key])
            out[key] = path
        elif path.is_file():
            path.unlink()
    return out
