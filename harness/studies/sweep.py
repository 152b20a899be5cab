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
the old folder and leaves its own files in the git-ignored results/failed/sweep/<label>/ (a clean
checkout stays clean). At the end sweep.json
(and, with `report`, SWEEP.md and its three plots) are written together, all or none, and only when
some point timed a CUDA path: a sweep that timed nothing (no GPU) writes none of them. An
interrupted sweep leaves the points it finished in their folders (point.json each), from which
--collect-only rebuilds sweep.json. The format is in docs/formats.md.

This module is the command line; the sweep's parts, by role: sweep_plan.py (the points, their
defaults and every setting's check), sweep_run.py (running the points), sweep_point.py (a point's
record from its folder), sweep_collect.py (sweep.json as a whole, and --collect-only). Their
public names are re-exported here (__all__).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from harness.baseline import registry
from harness.studies.sweep_collect import collect, stray_folders
from harness.studies.sweep_plan import (BATCH_SWEEP_HIDDEN, BATCHES, CEILINGS_JSON, COST_IMAGES,
                                        DEFAULT_EPOCHS, DEFAULT_TIMEOUT_S, EXTRA_POINTS,
                                        FALLBACK_PATHS, FULL_TRAIN_SIZE, MAX_BATCH,
                                        MAX_EPOCHS, MAX_WIDTH, MIN_EPOCHS, POINT_CONFIG_KEYS,
                                        POINT_JSON, STAGING, SWEEP_DIR, SWEEP_JSON, SWEEP_MD,
                                        UNKNOWN, WIDTH_SWEEP_BATCH, WIDTHS, data_for, label,
                                        parse_epochs, parse_extra_points, parse_ints,
                                        parse_points, parse_precisions, rel, resolve_paths,
                                        resolve_variants, sweep_points)
from harness.studies.sweep_point import (collect_point, cuda_metrics, fastest, load_ceilings,
                                         metrics, precision_entry, unrecorded_variants)
from harness.studies.sweep_run import progress_line, sweep
from spec import files, validate
from spec.files import RESULTS_DIR
from spec.torch_variants import PRECISIONS

__all__ = ["BATCH_SWEEP_HIDDEN", "BATCHES", "CEILINGS_JSON", "COST_IMAGES", "DEFAULT_EPOCHS",
           "DEFAULT_TIMEOUT_S", "EXTRA_POINTS", "FALLBACK_PATHS", "FULL_TRAIN_SIZE",
           "MAX_BATCH", "MAX_EPOCHS", "MAX_WIDTH", "MIN_EPOCHS", "POINT_CONFIG_KEYS",
           "POINT_JSON", "STAGING", "SWEEP_DIR", "SWEEP_JSON", "SWEEP_MD", "UNKNOWN",
           "WIDTH_SWEEP_BATCH", "WIDTHS", "collect", "collect_point", "cuda_metrics", "data_for",
           "fastest", "label", "load_ceilings", "main", "metrics", "parse_epochs",
           "parse_extra_points", "parse_ints", "parse_points", "parse_precisions",
           "precision_entry", "progress_line", "rel", "resolve_paths", "resolve_variants",
           "stray_folders", "sweep", "sweep_points", "unrecorded_variants"]


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
                    help=f"also write {rel(SWEEP_MD)} and its three plots (with sweep.json, together)")
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
              f"{rel(Path(args.results) / SWEEP_JSON)}" + (f" and {rel(report)}" if report else ""))
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
