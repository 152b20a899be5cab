"""The PyTorch baseline: the identical training workload, timed the same way as the CUDA paths.

Workload (recipe.toml): 784-256-10 MLP, H = ReLU(X·W1 + b1), Z = H·W2 + b2, batch-mean softmax
cross-entropy, SGD with momentum (lr 0.1, mu 0.9), batch 128, 20 epochs over 6000 images (47 steps
an epoch, the last of 112 images), evaluated on the 10000 test images after every epoch.

The initial parameters (results/init_params.npy) and every epoch's data order (results/order.npy)
are the ones the CUDA binary wrote: they are loaded, never re-drawn, so every variant starts from
the same point and sees the same batches as the CUDA paths and the float64 reference.

The variants (harness/baseline/registry.py: what each is, how it is built, when it runs) are each
reported separately in results/pytorch.json (docs/formats.md). A default run leaves out the
registry's full_only variants (a compile of minutes); --full runs them too.

Arithmetic: each variant's registry precision (harness/baseline/precision.py), set around the
whole variant (set-up, epochs, evaluation) and restored after it. fp32, every variant but six:
float32 with TF32 off (allow_tf32 False for matmul and cuDNN, float32 matmul precision "highest"),
the run's setting (float32_only(), pytorch.json's top-level "tf32"); tf32 (eager-tf32,
cuda-graph-tf32, compiled-step-tf32, CUDA only): TF32 on for that variant alone; bf16
(eager-bf16, cuda-graph-bf16, compiled-step-bf16): the forward and loss under bfloat16 autocast.
Each entry records its "precision" and the TF32 settings it ran under ("tf32"). fastest_variant
is the fastest fp32 variant, so the ratios against it compare float32 with float32;
fastest_by_precision names the fastest of each precision.

Accuracy, on case 7's terms: every variant that trained records test_accuracy_last5_mean, the
mean of its last min(5, epochs) test accuracies (LAST_N_ACCURACY; for the recipe, epochs 16 to
20 of 20), the number run.json records for our paths. Against float64 (fp64_reference: the same
run's run.json reference_fp64, else the shipped data/reference when this run is exactly its
recipe, else none, and fp64_source says why) it also records accuracy_gap_pp_vs_fp64 (signed, in
percentage points) and, past case 7's 1 pp line (ACCURACY_LINE_PP), an accuracy_note saying what
is known (accuracy_note(): the numbers, the first epoch off float64's, the registry's numerics).

Timing: a pair of CUDA events brackets each epoch's training steps only (not the evaluation);
epoch 0 is a warm-up and is excluded from the statistics. Per-step losses stay on the device
and are read once after each epoch. Set-up (compilation, capture) is timed apart.

Its parts, by role: inputs.py (init_params, order, the data, the workload and the recipe ran),
timing.py (the epoch timer, statistics, test accuracy, fastest variants), fp64_accuracy.py (the
accuracy against float64), variant_run.py (one variant end to end), eager_trace.py (the profiler
trace); this module runs the variants, writes pytorch.json and is the command line, and
re-exports their public names (__all__).

CLI:
  python -m harness.baseline.pytorch_baseline [--results DIR] [--variants a,b | --full] [--epochs N]
                                     [--device cuda] [--batch N] [--data DIR]
  python -m harness.baseline.pytorch_baseline --trace profile/pytorch_eager_trace.json
"""
from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

import torch

from analysis.sections.common import LAST_N_ACCURACY
from harness.baseline import registry
from harness.baseline.eager_trace import chrome_trace_bytes, trace_eager_epoch
from harness.baseline.fp64_accuracy import (ACCURACY_LINE_PP, FP64_FROM_RUN, FP64_SHIPPED,
                                            SHIPPED_RECIPE_KEYS, accuracy_fields, accuracy_note,
                                            first_difference, fp64_reference, gap_pp, last_mean)
from harness.baseline.inputs import load_data, load_inputs, log, recipe_ran, workload_for
from harness.baseline.timing import (HOLD_CYCLES, EpochTimer, accuracy, fastest_by_precision,
                                     fastest_variant, timing_stats)
from harness.baseline.variant_run import (PROFILE_EPOCH_ENV, PROFILE_RANGE, cudagraph_skips,
                                          float32_only, inductor_cache, profile_epoch,
                                          run_variant)
from spec import provenance
from spec.files import RESULTS_DIR, write_json
from spec.recipe import load_recipe

__all__ = ["ACCURACY_LINE_PP", "FP64_FROM_RUN", "FP64_SHIPPED", "HOLD_CYCLES", "LAST_N_ACCURACY",
           "PROFILE_EPOCH_ENV", "PROFILE_RANGE", "SHIPPED_RECIPE_KEYS", "EpochTimer", "accuracy",
           "accuracy_fields", "accuracy_note", "chrome_trace_bytes", "cudagraph_skips",
           "fastest_by_precision", "fastest_variant", "first_difference", "float32_only",
           "fp64_reference", "gap_pp", "inductor_cache", "last_mean", "load_data", "load_inputs",
           "load_recipe", "log", "main", "profile_epoch", "recipe_ran", "run_all", "run_variant",
           "timing_stats", "trace_eager_epoch", "workload_for"]


def run_all(results_dir: Path = RESULTS_DIR, variants=None, epochs: int | None = None,
            device: str = "cuda", data: dict | None = None, batch: int | None = None,
            data_dir: Path | None = None, full: bool = False) -> dict:
    """Run `variants` and write results_dir/pytorch.json; returns the written object.

    variants None: the registry's default set (with full: every variant). batch overrides the
    recipe's (the sweeps); data_dir is the folder the binary read (see load_data). The hidden
    width and train size come from init_params.npy and order.npy; pytorch.json's "recipe" is the
    one every variant ran (recipe_ran).
    On CUDA each variant's entry also holds max_memory_allocated_bytes: the peak of
    torch.cuda.max_memory_allocated over the variant (set-up, capture or compilation, training,
    evaluation), its peak statistics reset before it.
    """
    results_dir = Path(results_dir)
    chosen, left_out = registry.select(variants, full)
    recipe = load_recipe()
    if batch is not None:
        if int(batch) < 1:
            raise SystemExit(f"error: --batch must be a positive integer, got {batch}")
        recipe["batch"] = int(batch)
    init_params, order = load_inputs(results_dir)
    data = load_data(data_dir) if data is None else data
    recipe = recipe_ran(recipe, init_params, order, data, epochs)
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("error: --device cuda but torch sees no CUDA device")
    tf32 = float32_only()
    out = {"schema": 1, **provenance.stamp(), "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
           "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu", "tf32": tf32,
           "recipe": recipe, "full": bool(full), "variants_run": chosen, "variants_left_out": left_out,
           "inductor_cache": inductor_cache(), "variants": {}}
    t_all = time.perf_counter()
    for name in chosen:
        precision = registry.get(name).precision
        reason = registry.unavailable(name, dev)
        if reason is not None:
            log(f"[pytorch] {name}: skipped: {reason}")
            out["variants"][name] = {"error": f"skipped: {reason}", "precision": precision}
            continue
        log(f"[pytorch] {name}: running {recipe['epochs']} epochs on {dev} at {precision} ...")
        t0 = time.perf_counter()
        if dev.type == "cuda":
            gc.collect()                     # the previous variant's tensors are gone ...
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(dev)   # ... and do not count in this one's peak
        try:
            entry = run_variant(name, init_params, order, data, recipe, recipe["epochs"], device)
            if dev.type == "cuda":
                entry["max_memory_allocated_bytes"] = int(torch.cuda.max_memory_allocated(dev))
        except Exception as exc:  # a failed compile (or capture) is recorded, and we go on
            msg = f"{type(exc).__name__}: {exc}"
            if len(msg) > 2000:
                msg = msg[:2000] + " ..."
            log(f"[pytorch] {name}: FAILED: {msg.splitlines()[0] if msg else ''}")
            out["variants"][name] = {"error": msg, "precision": precision,
                                     "wall_seconds": time.perf_counter() - t0}
            if dev.type == "cuda":
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            continue
        entry["wall_seconds"] = time.perf_counter() - t0
        out["variants"][name] = entry
        extra = "".join(f", {k.split('_')[0]} {entry[k]:.1f} s"
                        for k in ("compile_seconds", "capture_seconds") if k in entry)
        mean = entry["mean_ms"]
        log(f"[pytorch] {name}: mean {mean:.3f} ms/epoch" if mean is not None else
            f"[pytorch] {name}: (no timed epoch)")
        log(f"[pytorch] {name}: test accuracy {entry['test_accuracy']:.4f}, "
            f"final loss {entry['loss_per_epoch'][-1]:.4f}{extra}, "
            f"{entry['wall_seconds']:.1f} s wall")
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    out["wall_seconds"] = time.perf_counter() - t_all
    best = fastest_variant(out["variants"])           # fp32: the ratios' denominator
    out["fastest_variant"] = best
    out["fastest_median_ms"] = out["variants"][best]["median_ms"] if best else None
    out["fastest_by_precision"] = fastest_by_precision(out["variants"])
    fp64, out["fp64_source"] = fp64_reference(results_dir, recipe, init_params, order, data_dir)
    out["fp64_test_accuracy_last5_mean"] = last_mean(fp64)
    log(f"[pytorch] float64 reference: {out['fp64_source']}")
    for name, entry in out["variants"].items():
        if "test_accuracy_per_epoch" not in entry:
            continue                       # skipped or failed: it trained nothing
        entry.update(accuracy_fields(entry, fp64, recipe["test_size"], registry.get(name).numerics))
        gap = entry["accuracy_gap_pp_vs_fp64"]
        log(f"[pytorch] {name}: last-{min(LAST_N_ACCURACY, recipe['epochs'])} mean test accuracy "
            f"{entry['test_accuracy_last5_mean']:.4f}"
            + ("" if gap is None else f", {gap:+.2f} pp against float64's"))
        if "accuracy_note" in entry:
            log(f"[pytorch] {name}: {entry['accuracy_note']}")
    for name, why in left_out.items():
        log(f"[pytorch] {name}: left out: {why}")
    for p, top in out["fastest_by_precision"].items():
        if top:
            log(f"[pytorch] fastest {p}: {top['variant']} ({top['median_ms']:.3f} ms median epoch)")
    write_json(results_dir / "pytorch.json", out)
    log(f"[pytorch] wrote {results_dir / 'pytorch.json'}")
    return out


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.baseline.pytorch_baseline",
                                 description="PyTorch baseline of the MLP training workload",
                                 epilog="variants (harness/baseline/registry.py):\n" + registry.listing(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", type=Path, default=RESULTS_DIR,
                    help="folder holding init_params.npy and order.npy; pytorch.json goes there")
    ap.add_argument("--variants", default=None,
                    help="comma-separated subset of the variants below (default: all but the "
                         "--full only ones)")
    ap.add_argument("--full", action="store_true",
                    help=f"also run the variants slow to compile "
                         f"({', '.join(registry.full_only()) or 'none now'}); ignored with --variants")
    ap.add_argument("--epochs", type=int, default=None,
                    help="epochs to run (default: all rows of order.npy, i.e. the recipe's)")
    ap.add_argument("--device", default="cuda", help="torch device (default cuda)")
    ap.add_argument("--batch", type=int, default=None,
                    help="batch size (default: the recipe's); must match the binary's --batch")
    ap.add_argument("--data", type=Path, default=None, metavar="DIR",
                    help="the data folder the binary read (default data/; data/full for the full split)")
    ap.add_argument("--trace", type=Path, default=None, metavar="PATH",
                    help="instead of the variants, write a profiler trace of one eager epoch")
    args = ap.parse_args(argv)

    if args.trace is not None:
        trace_eager_epoch(args.trace, results_dir=args.results, device=args.device)
        return 0
    variants = None
    if args.variants is not None:
        variants = [v.strip() for v in args.variants.split(",") if v.strip()]
        try:
            registry.select(variants)
        except ValueError as exc:
            ap.error(str(exc))
    from harness.data.dataset import DataError
    try:
        run_all(args.results, variants, args.epochs, args.device, batch=args.batch,
                data_dir=args.data, full=args.full)
    except DataError as exc:
        raise SystemExit(f"error: {exc}") from None
    return 0


if __name__ == "__main__":
    sys.exit(main())
