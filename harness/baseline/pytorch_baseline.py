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

CLI:
  python -m harness.baseline.pytorch_baseline [--results DIR] [--variants a,b | --full] [--epochs N]
                                     [--device cuda] [--batch N] [--data DIR]
  python -m harness.baseline.pytorch_baseline --trace profile/pytorch_eager_trace.json
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from analysis.sections.common import LAST_N_ACCURACY
from spec.recipe import BOUNDS, complete, load_recipe
from harness.baseline import precision as prec
from harness.baseline import registry
from harness.baseline.variants import EagerVariant, Workload
from harness.baseline.variants import sync as _sync
from harness.data.reference import REFERENCE_DIR
from spec import layout, provenance, stats
from spec.files import DATA_DIR, ROOT, RESULTS_DIR, write_bytes, write_json
from spec.torch_variants import FP32, PRECISIONS


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------

def load_inputs(results_dir: Path = RESULTS_DIR):
    """(init_params float32 (n_params,), order int32 (epochs, train_size)) written by the binary."""
    results_dir = Path(results_dir)
    out = []
    for name, dtype in (("init_params.npy", np.float32), ("order.npy", np.int32)):
        path = results_dir / name
        if not path.exists():
            raise SystemExit(f"error: {path}: file not found (run build/mlp_train first)")
        arr = np.load(path)
        if arr.dtype != dtype:
            raise SystemExit(f"error: {path}: dtype {arr.dtype}, expected {np.dtype(dtype)}")
        out.append(arr)
    init_params, order = out
    if init_params.ndim != 1 or order.ndim != 2:
        raise SystemExit(f"error: {results_dir}: init_params must be 1-D and order 2-D, got "
                         f"{init_params.shape} and {order.shape}")
    return init_params, order


def load_data(data_dir=None):
    """The dataset dict of harness.data.dataset.load_dataset() (imported lazily).

    data_dir: the folder the binary read with --data; by default data/ (the shipped subset). A
    folder holding the official 60,000-image split instead (data/full/, `invoke data --full`) is
    read the same way the binary reads it: its own SHA256SUMS checked, then its four IDX files.
    """
    from harness.data import dataset as ds
    if data_dir is None:
        return ds.load_dataset()
    data_dir = Path(data_dir)
    if (data_dir / ds.TRAIN_IMAGES).exists() or not (data_dir / ds.FULL_TRAIN_IMAGES).exists():
        return ds.load_dataset(data_dir)
    ds.verify_sha256(data_dir)
    out = {}
    for split, img, lab in (("train", ds.FULL_TRAIN_IMAGES, ds.FULL_TRAIN_LABELS),
                            ("test", ds.TEST_IMAGES, ds.TEST_LABELS)):
        images = ds.read_idx(data_dir / img, ndim=3)
        labels = ds.read_idx(data_dir / lab, ndim=1)
        if images.shape[0] != labels.shape[0]:
            raise ds.DataError(f"{data_dir / lab}: {labels.shape[0]} labels for"
                               f" {images.shape[0]} images")
        out[f"{split}_images"] = ds.to_float(images)
        out[f"{split}_labels"] = labels.astype(np.int32)
    return out


# --------------------------------------------------------------------------------------------
# Timing and statistics
# --------------------------------------------------------------------------------------------

# Clock cycles of the GPU-side spin queued before each timed epoch's start event (about 100 us),
# the same as our binary's kHoldCycles (cuda/paths/kernel_path.h): the host has queued the epoch's first
# launches by the time the GPU reaches the start event, so its submission latency of the first
# launch is outside the timed range for every variant and every kernel path alike.
HOLD_CYCLES = 200_000


class EpochTimer:
    """CUDA events on a CUDA device (each start behind a HOLD_CYCLES spin); perf_counter (after a
    sync-free CPU run) otherwise."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"
        if self.cuda:
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)

    def record_start(self):
        if self.cuda:
            torch.cuda._sleep(HOLD_CYCLES)
            self.start.record()
        else:
            self.t0 = time.perf_counter()

    def record_end(self):
        if self.cuda:
            self.end.record()
        else:
            self.t1 = time.perf_counter()

    def elapsed_ms(self) -> float:
        if self.cuda:
            self.end.synchronize()
            return float(self.start.elapsed_time(self.end))
        return (self.t1 - self.t0) * 1e3


def timing_stats(epoch_ms) -> dict:
    """spec.stats.summary of the timed epochs as mean_ms/median_ms/min_ms/max_ms/cv_pct (CV: sample
    standard deviation / mean, in %); every value None when no epoch was timed."""
    if not epoch_ms:
        return {"mean_ms": None, "median_ms": None, "min_ms": None, "max_ms": None,
                "cv_pct": None}
    s = stats.summary(epoch_ms)
    return {"mean_ms": s["mean"], "median_ms": s["median"], "min_ms": s["min"],
            "max_ms": s["max"], "cv_pct": s["cv_pct"]}


@torch.no_grad()
def accuracy(predict, X, y, chunk: int = 10000) -> float:
    correct = torch.zeros((), dtype=torch.int64, device=X.device)
    for s in range(0, X.shape[0], chunk):
        correct += (predict(X[s:s + chunk]).argmax(dim=1) == y[s:s + chunk]).sum()
    return int(correct.item()) / int(X.shape[0])


def fastest_variant(variants: dict, precision: str = FP32) -> str | None:
    """The variant of `precision` (an entry without "precision" is fp32) with the smallest median
    epoch among those that ran without error; None if none did. Ties go to the earlier variant in
    `variants`' order. pytorch.json's fastest_variant is the fp32 one."""
    best = None
    for name, v in variants.items():
        med = v.get("median_ms")
        if v.get("precision", FP32) != precision:
            continue
        if v.get("error") or not isinstance(med, (int, float)) or not math.isfinite(med):
            continue
        if best is None or med < variants[best]["median_ms"]:
            best = name
    return best


def fastest_by_precision(variants: dict) -> dict:
    """pytorch.json's fastest_by_precision: for each precision, {"variant", "median_ms"} of its
    fastest variant that passed (fastest_variant), or None when none of it did."""
    out = {}
    for p in PRECISIONS:
        best = fastest_variant(variants, p)
        out[p] = {"variant": best, "median_ms": variants[best]["median_ms"]} if best else None
    return out


# --------------------------------------------------------------------------------------------
# Accuracy against float64, on case 7's terms
# --------------------------------------------------------------------------------------------

# Case 7's line (cuda/gate/cases.cu, case_train: limit 1 pp): a path whose last-5 mean is further
# than this from float64's fails the gate; a variant further off gets an accuracy_note.
ACCURACY_LINE_PP = 1.0
FP64_FROM_RUN = "run.json reference_fp64"
FP64_SHIPPED = "data/reference (shipped)"
# The recipe keys fp64_reference.json must state (cuda/gate/shipped_reference.cpp's recipe_json).
SHIPPED_RECIPE_KEYS = ("input_dim", "hidden_dim", "output_dim", "batch", "lr", "momentum",
                       "epochs", "seed", "train_size")


def last_mean(per_epoch) -> float | None:
    """test_accuracy_last5_mean: the mean of the last min(LAST_N_ACCURACY, epochs) values, as
    the binary's last5_mean (cuda/common/run_stats.cpp) computes it for run.json; None for none."""
    values = list(per_epoch or [])
    return stats.last_n_mean(values, min(LAST_N_ACCURACY, len(values))) if values else None


def gap_pp(last: float | None, fp64_last: float | None) -> float | None:
    """accuracy_gap_pp_vs_fp64: 100 × (variant's last-N mean − float64's), percentage points,
    signed (run.json's accuracy_gap_pp is case 7's |…|); None when either is unknown."""
    return None if last is None or fp64_last is None else 100.0 * (last - fp64_last)


def first_difference(per_epoch, fp64_per_epoch, test_size: int) -> int | None:
    """The first epoch (from 1) whose count of correct test images differs from float64's;
    None when every epoch both have agrees."""
    for e, (a, r) in enumerate(zip(per_epoch, fp64_per_epoch)):
        if round(a * test_size) != round(r * test_size):
            return e + 1
    return None


def accuracy_note(per_epoch, fp64_per_epoch, test_size: int, numerics: str = "") -> str | None:
    """The note of a variant whose |gap| is over ACCURACY_LINE_PP (None otherwise): its last-N
    mean against float64's, the gap, the first epoch it leaves float64's accuracies, and what its
    registry entry declares of its arithmetic (Variant.numerics), or that it declares nothing."""
    last, ref = last_mean(per_epoch), last_mean(fp64_per_epoch)
    gap = gap_pp(last, ref)
    if gap is None or abs(gap) <= ACCURACY_LINE_PP:
        return None
    n = min(LAST_N_ACCURACY, len(per_epoch))
    note = (f"last-{n} mean {100 * last:.2f}% against float64's {100 * ref:.2f}% "
            f"(gap {gap:+.2f} pp, over the {ACCURACY_LINE_PP:g} pp line)")
    first = first_difference(per_epoch, fp64_per_epoch, test_size)
    if first is not None:
        note += (f"; its test accuracy first differs from float64's at epoch {first} of "
                 f"{len(per_epoch)}")
    if numerics:
        note += f"; known difference in its arithmetic: {numerics}"
    else:
        note += "; no known mechanism (harness/baseline/registry.py declares no numerics for it)"
    return note


def accuracy_fields(entry: dict, fp64_per_epoch, test_size: int, numerics: str = "") -> dict:
    """accuracy_gap_pp_vs_fp64 (None without float64) and, over the line, accuracy_note, of a
    variant entry that trained (one with test_accuracy_per_epoch)."""
    per = entry["test_accuracy_per_epoch"]
    out = {"accuracy_gap_pp_vs_fp64": gap_pp(last_mean(per), last_mean(fp64_per_epoch))}
    note = accuracy_note(per, fp64_per_epoch, test_size, numerics) if fp64_per_epoch else None
    if note is not None:
        out["accuracy_note"] = note
    return out


def _shown(path) -> str:
    """A path as pytorch.json's fp64_source prints it: from the repository root when inside it."""
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except (ValueError, OSError):
        return str(path)


def _accuracies(values, where: str) -> list[float]:
    """values as test accuracies (fractions in [0, 1]); ValueError naming `where` otherwise."""
    if not isinstance(values, list) or not all(isinstance(a, (int, float))
                                               and not isinstance(a, bool) and 0 <= a <= 1
                                               for a in values):
        raise ValueError(f"{where} is not a list of accuracies")
    return [float(a) for a in values]


def _from_run_json(path: Path, recipe: dict) -> tuple[list[float] | None, str]:
    """(float64's accuracies over recipe's epochs from run.json's reference_fp64, "") or (None,
    why not). The same run: the recipe it records must be this run's but for epochs, and its
    reference must cover this run's epochs (a shorter baseline run takes the first ones)."""
    shown = _shown(path)
    if not path.is_file():
        return None, f"no {shown}"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"{shown} unreadable ({type(exc).__name__})"
    ref = doc.get("reference_fp64") if isinstance(doc, dict) else None
    if not isinstance(ref, dict) or "test_accuracy_per_epoch" not in ref:
        return None, f"{shown} has no reference_fp64 with its test_accuracy_per_epoch"
    theirs = doc.get("recipe")
    if not isinstance(theirs, dict):
        return None, f"{shown} records no recipe to match this run's"
    differ = [f"{k} {theirs[k]}, this run's {v}" for k, v in recipe.items()
              if k not in ("epochs", "steps_per_epoch") and k in theirs and theirs[k] != v]
    if differ:
        return None, f"{shown} is of another recipe ({'; '.join(differ)})"
    try:
        per = _accuracies(ref["test_accuracy_per_epoch"],
                          f"{shown} reference_fp64.test_accuracy_per_epoch")
    except ValueError as exc:
        return None, str(exc)
    if len(per) < recipe["epochs"]:
        return None, (f"{shown}'s reference_fp64 has {len(per)} epochs, this run trains "
                      f"{recipe['epochs']}")
    return per[:recipe["epochs"]], ""


def _from_shipped(reference_dir: Path, recipe: dict, init_params: np.ndarray, order: np.ndarray,
                  data_dir) -> tuple[list[float] | None, str]:
    """(the shipped float64 accuracies, "") when this run is exactly data/reference's: the data
    folder data/, every recipe key fp64_reference.json states equal to this run's (epochs
    included), its SHA256SUMS holding and its init_params.npy and order.npy this run's; else
    (None, why not)."""
    from harness.data.dataset import DataError, verify_sha256
    shown = _shown(reference_dir)
    if data_dir is not None and Path(data_dir).resolve() != DATA_DIR.resolve():
        return None, f"{shown} was trained on {_shown(DATA_DIR)}/, this run read {_shown(data_dir)}"
    meta_path = reference_dir / "fp64_reference.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"{_shown(meta_path)} unreadable ({type(exc).__name__})"
    theirs = meta.get("recipe") if isinstance(meta, dict) else None
    if not isinstance(theirs, dict) or any(k not in theirs for k in SHIPPED_RECIPE_KEYS):
        return None, (f"{_shown(meta_path)} does not state its recipe "
                      f"({', '.join(SHIPPED_RECIPE_KEYS)})")
    differ = [f"{k} {v}, this run's {recipe.get(k)}" for k, v in theirs.items()
              if recipe.get(k) != v]
    if differ:
        return None, f"{shown} is of another recipe ({'; '.join(differ)})"
    try:
        verify_sha256(reference_dir, read=())
        init_ref = np.load(reference_dir / "init_params.npy")
        order_ref = np.load(reference_dir / "order.npy")
        per = np.load(reference_dir / "fp64_test_accuracy_per_epoch.npy")
    except (DataError, OSError, ValueError) as exc:
        return None, f"{shown}: {exc}"
    for name, ours, ref in (("init_params.npy", init_params, init_ref),
                            ("order.npy", order[:recipe["epochs"]], order_ref)):
        if ours.shape != ref.shape or not np.array_equal(ours, ref):
            return None, f"this run's {name} is not {shown}'s"
    try:
        per = _accuracies(per.tolist(), f"{shown}/fp64_test_accuracy_per_epoch.npy")
    except ValueError as exc:
        return None, str(exc)
    if len(per) != recipe["epochs"]:
        return None, (f"{shown}/fp64_test_accuracy_per_epoch.npy has {len(per)} epochs, not "
                      f"{recipe['epochs']}")
    return per, ""


def fp64_reference(results_dir: Path, recipe: dict, init_params: np.ndarray, order: np.ndarray,
                   data_dir=None,
                   reference_dir: Path = REFERENCE_DIR) -> tuple[list[float] | None, str]:
    """(float64's test accuracy per epoch over the epochs this run trains, pytorch.json's
    fp64_source): results_dir/run.json's reference_fp64 (FP64_FROM_RUN: the same run, its
    recipe this run's); else data/reference's (FP64_SHIPPED) when this run is exactly its recipe
    on its init and order; else (None, "none: " and why neither)."""
    per, why_run = _from_run_json(Path(results_dir) / "run.json", recipe)
    if per is not None:
        return per, FP64_FROM_RUN
    per, why_shipped = _from_shipped(Path(reference_dir), recipe, init_params, order, data_dir)
    if per is not None:
        return per, FP64_SHIPPED
    return None, f"none: {why_run}; {why_shipped}"


# --------------------------------------------------------------------------------------------
# One variant, end to end
# --------------------------------------------------------------------------------------------

def workload_for(init_params: np.ndarray, order: np.ndarray, data: dict, recipe: dict, device: str):
    """What every variant trains on: (the Workload over `order`'s epochs, the float32 initial
    parameters, the shape they imply, a device buffer of one loss per step)."""
    init_flat = np.ascontiguousarray(init_params, dtype=np.float32)
    w = Workload(data, order, recipe["batch"], recipe["lr"], recipe["momentum"], device,
                 n_out=recipe.get("output_dim", 10))
    shape = layout.infer_shape(init_flat.shape[0], w.n_in, w.n_out)
    step_losses = torch.zeros(w.steps, dtype=torch.float32, device=w.device)
    return w, init_flat, shape, step_losses


def recipe_ran(recipe: dict, init_params: np.ndarray, order: np.ndarray, data: dict,
               epochs: int | None = None) -> dict:
    """The recipe a run of `epochs` epochs (default: every row of `order`) trains, in the shape
    run.json records it: `recipe`'s batch, lr, momentum, output_dim and seed, with the sizes the
    inputs fix (input_dim and test_size from the data, hidden_dim from init_params, train_size
    from order). The seed is the recipe's: the baseline draws nothing, it trains from the
    binary's init_params and order. Out-of-range epochs, parameters that fit no MLP or a value no
    recipe allows: SystemExit with one line."""
    rows, n = order.shape
    epochs = rows if epochs is None else int(epochs)
    if not 1 <= epochs <= rows:
        raise SystemExit(f"error: --epochs must be in 1..{rows} (the rows of order.npy), got {epochs}")
    n_in = int(np.asarray(data["train_images"]).shape[1])
    try:
        hidden = layout.infer_shape(init_params.shape[0], n_in, recipe["output_dim"]).hidden
    except ValueError as exc:
        raise SystemExit(f"error: init_params.npy: {exc}") from None
    ran = {k: recipe[k] for k in BOUNDS} | {
        "input_dim": n_in, "hidden_dim": hidden, "epochs": epochs, "train_size": int(n),
        "test_size": int(np.asarray(data["test_images"]).shape[0])}
    return complete(ran, "the baseline's recipe")


# Nsight Systems beside our binary (analysis/side_by_side.py): with MLP_TORCH_PROFILE_EPOCH=K set,
# epoch K (1 <= K < epochs; epoch 0 is the warm-up) of each variant runs inside the NVTX range
# that `mlp_train --profile` opens, so `nsys profile --capture-range=nvtx
# --nvtx-capture=profile-epoch` captures one epoch of each side (run one variant per process:
# nsys captures the first range only). CUDA devices only; ignored on a CPU.
PROFILE_RANGE = "profile-epoch"
PROFILE_EPOCH_ENV = "MLP_TORCH_PROFILE_EPOCH"


def profile_epoch(epochs: int, device, environ=None) -> int | None:
    """The epoch to mark from $MLP_TORCH_PROFILE_EPOCH, or None (unset, or not a CUDA device).
    A value that is not an integer in 1..epochs-1 is a ValueError naming the variable."""
    raw = (os.environ if environ is None else environ).get(PROFILE_EPOCH_ENV)
    if raw is None or torch.device(device).type != "cuda":
        return None
    if not raw.strip().isdigit() or not 1 <= int(raw) < epochs:
        raise ValueError(f"{PROFILE_EPOCH_ENV}={raw!r}: expected an integer in 1..{epochs - 1} "
                         "(epoch 0 is the warm-up)")
    return int(raw)


def run_variant(name: str, init_params: np.ndarray, order: np.ndarray, data: dict,
                recipe: dict | None = None, epochs: int | None = None, device: str = "cuda",
                return_step_losses: bool = False, variant_factory=None) -> dict:
    """Train variant `name` from `init_params` over order[:epochs]; the pytorch.json entry.

    `recipe` gives batch, lr, momentum and output_dim (recipe.toml by default). With
    return_step_losses the entry also holds "step_losses": one list of per-step losses per epoch.
    variant_factory(w, init_flat, shape, step_losses) builds the variant instead of the
    registry's factory (the tests' uncompiled compiled-step). The variant's registry precision
    is set around all of it (harness/baseline/precision.py): the entry records it ("precision")
    and the TF32 settings read back inside ("tf32").
    """
    precision = registry.get(name).precision
    with prec.setting(precision) as tf32:
        entry = _train(name, init_params, order, data, recipe, epochs, device,
                       return_step_losses, variant_factory)
    return {"precision": precision, "tf32": tf32, **entry}


def _train(name, init_params, order, data, recipe, epochs, device, return_step_losses,
           variant_factory) -> dict:
    """run_variant's training, under the precision it set."""
    recipe = load_recipe() if recipe is None else recipe
    epochs = order.shape[0] if epochs is None else int(epochs)
    if not 1 <= epochs <= order.shape[0]:
        raise ValueError(f"epochs must be in 1..{order.shape[0]}, got {epochs}")
    w, init_flat, shape, step_losses = workload_for(init_params, order[:epochs], data, recipe, device)
    skips0 = cudagraph_skips()
    _sync(w.device)
    t0 = time.perf_counter()
    if variant_factory is not None:
        variant = variant_factory(w, init_flat, shape, step_losses)
    else:
        variant = registry.get(name).build(w, init_flat, shape, step_losses)
    _sync(w.device)
    setup_seconds = time.perf_counter() - t0

    timer = EpochTimer(w.device)
    epoch_ms, acc_per_epoch, loss_per_epoch, all_steps = [], [], [], []
    profiled = profile_epoch(epochs, w.device)
    for e in range(epochs):
        _sync(w.device)
        if e == profiled:
            torch.cuda.nvtx.range_push(PROFILE_RANGE)
        timer.record_start()
        variant.run_epoch(e)
        timer.record_end()
        if e == profiled:
            _sync(w.device)
            torch.cuda.nvtx.range_pop()
        # After the timed region: the epoch loss (on the device, then read) and the test accuracy.
        epoch_loss = (step_losses * w.sizes_t).sum() / w.n
        loss_per_epoch.append(float(epoch_loss.item()))
        if return_step_losses:
            all_steps.append(step_losses.tolist())
        acc_per_epoch.append(accuracy(variant.predict, w.Xt, w.yt))
        ms = timer.elapsed_ms()
        if e > 0:
            epoch_ms.append(ms)
    entry = {"epoch_ms": epoch_ms, **timing_stats(epoch_ms),
             "test_accuracy": acc_per_epoch[-1], "test_accuracy_per_epoch": acc_per_epoch,
             "test_accuracy_last5_mean": last_mean(acc_per_epoch),
             "loss_per_epoch": loss_per_epoch, "setup_seconds": setup_seconds}
    for key in ("compile_seconds", "capture_seconds"):
        value = getattr(variant, key, None)
        if value is not None:
            entry[key] = value
    if registry.get(name).compiled:
        entry["cudagraph_skips"] = cudagraph_skips() - skips0
    if return_step_losses:
        entry["step_losses"] = all_steps
    if not all(math.isfinite(x) for x in loss_per_epoch):
        entry["error"] = "non-finite training loss"
    return entry


def cudagraph_skips() -> int:
    """How many times Inductor has declined CUDA graphs in this process ("skipping cudagraphs
    due to ...": torch._dynamo.utils.counters["inductor"]["cudagraph_skips"])."""
    from torch._dynamo.utils import counters
    return int(counters["inductor"]["cudagraph_skips"])


def inductor_cache() -> dict:
    """Where Inductor keeps its compiled artefacts between runs, and whether its FX graph cache
    is on (a warm cache shortens a later run's compile_seconds)."""
    try:
        from torch._inductor import config as ic
        from torch._inductor.runtime.cache_dir_utils import cache_dir
        return {"dir": cache_dir(), "fx_graph_cache": bool(ic.fx_graph_cache)}
    except Exception as exc:  # noqa: BLE001 - informational only
        return {"dir": None, "fx_graph_cache": None, "error": f"{type(exc).__name__}: {exc}"}


def float32_only() -> dict:
    """No TF32 in matrix products or convolutions: the run's setting, every fp32 and bf16 variant
    computes its float32 products in float32 (the CUDA paths' arithmetic), TF32 being PyTorch's
    opt-in (the tf32 variants set it for themselves alone). Returns the settings as read back,
    for pytorch.json's "tf32"."""
    return prec.apply(*prec.FLAGS[FP32])


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
# Profiler trace of one eager epoch
# --------------------------------------------------------------------------------------------

def chrome_trace_bytes(prof) -> bytes:
    """The profiler's Chrome trace as bytes (exported to a private temporary folder)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="mlp-trace-") as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        return path.read_bytes()


def trace_eager_epoch(out_path, results_dir: Path = RESULTS_DIR, device: str = "cuda",
                      data: dict | None = None, init_params=None, order=None,
                      recipe: dict | None = None) -> Path:
    """Profile one eager epoch (after a warm-up epoch) and write a Chrome trace to out_path.

    The phases of every step are labelled with record_function: "forward", "loss", "backward"
    and "optimizer". The trace is written to a temporary file and renamed into place.
    """
    from torch.profiler import ProfilerActivity, profile, record_function

    out_path = Path(out_path)
    recipe = load_recipe() if recipe is None else recipe
    if init_params is None or order is None:
        init_params, order = load_inputs(results_dir)
    data = load_data() if data is None else data
    order = order[:2] if order.shape[0] >= 2 else np.concatenate([order[:1], order[:1]])
    w, init_flat, shape, step_losses = workload_for(init_params, order, data, recipe, device)
    variant = EagerVariant(w, init_flat, shape, step_losses)
    model, opt = variant.model, variant.opt

    variant.run_epoch(0)                      # warm-up epoch (not traced)
    _sync(w.device)
    activities = [ProfilerActivity.CPU]
    if w.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        with record_function("epoch"):
            for t in range(w.steps):
                idx = w.batch_rows(1, t)
                xb, yb = w.X[idx], w.y[idx]
                opt.zero_grad(set_to_none=True)
                with record_function("forward"):
                    Z = model(xb)
                with record_function("loss"):
                    loss = F.cross_entropy(Z, yb)
                with record_function("backward"):
                    loss.backward()
                with record_function("optimizer"):
                    opt.step()
                step_losses[t] = loss.detach()
        _sync(w.device)
    write_bytes(out_path, chrome_trace_bytes(prof))
    log(f"[pytorch] wrote {out_path}")
    return out_path


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
