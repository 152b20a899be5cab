"""Render SWEEP.md and its three plots from results/sweep.json alone.

    python -m analysis.sweep_report [--sweep results/sweep.json] [--out SWEEP.md]
                                    [--plots results/plots]

SWEEP.md opens with the headline: at each point the best CUDA path (its accumulator) and its
median epoch against PyTorch's fastest passed variant (named), their ratio, and whether it meets
issue "FP32 at scale"'s acceptance and goal (fp32 paths against fp32 variants). Then each other
precision's (tf32, bf16; issue "Mixed precision with measured parity"): at each point our best
path of that precision against PyTorch's fastest variant of the same precision, the same marks,
the best path's parity with the fused fp32 path and both sides' first epoch against float64,
with a plot of each precision's speed-up against the width. Then the setup (TF32 off, the paths and where their
list came from), the one-epoch parity of each point's best path with float64 beside the two
epoch-1 accuracies, the roofline floor of each point (analysis/roofline_sweep.py), the width and
batch sweeps and the extra points (per point: the best CUDA path, its median epoch, CV, images
per second, µs per step; every PyTorch variant; the fastest; the ratios; the accuracies), every
path and variant side by side (skipped paths as skipped), the memory ledger beside the measured
peaks, and the cost in GPU-seconds per 1,000 images (analysis/sections/sweep.py; the words in
templates/SWEEP.md.j2).
A missing or malformed sweep.json is one line naming the file (exit 2), before anything is
written; SWEEP.md and the plots are written together.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from analysis import render as renderer
from analysis.loaders import load_json
from spec import files, validate
from spec.files import RESULTS_DIR, ROOT, TEMPLATES_DIR

TEMPLATE_NAME = renderer.SWEEP_TEMPLATE
SWEEP_FILE = "sweep.json"
DEFAULT_OUT = ROOT / "SWEEP.md"
PLOT_FILES = renderer.SWEEP_PLOT_FILES


def load_sweep(path, required: bool = True) -> dict | None:
    return load_json(path, "sweep", required=required)


def render(sweep_path, out_path, plots_dir=None, templates_dir=TEMPLATES_DIR) -> Path:
    """Render and write SWEEP.md and the plots; returns out_path. Raises InputError (a
    SystemExit, nothing written) on a bad sweep.json."""
    sweep_path, out_path = Path(sweep_path), Path(out_path)
    doc = load_sweep(sweep_path)
    plots_dir = Path(plots_dir) if plots_dir else sweep_path.parent / "plots"
    renderer.write(renderer.render_sweep(doc, sweep_path, out_path, plots_dir, templates_dir))
    return out_path


def main(argv: Sequence[str] | None = None) -> int:
    ap = validate.ArgParser(prog="python -m analysis.sweep_report",
                                 description="Render SWEEP.md from results/sweep.json.")
    ap.add_argument("--sweep", default=str(RESULTS_DIR / SWEEP_FILE))
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--plots", default=None, help="default: beside sweep.json, plots/")
    args = ap.parse_args(argv)
    try:
        out = render(args.sweep, args.out, plots_dir=args.plots)
    except files.InputError as exc:   # a bad input, or an output's place taken (write_all)
        print(exc, file=sys.stderr)
        return files.EXIT_BAD_INPUT
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    files.run_main(main)
