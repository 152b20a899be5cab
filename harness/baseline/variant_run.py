"""One PyTorch variant, end to end (harness/baseline/pytorch_baseline.py): built from the
registry under its precision, trained over the binary's order with each epoch timed, evaluated
after each epoch; the entry pytorch.json records of it."""
from __future__ import annotations

import math
import os
import time

import numpy as np
import torch

from harness.baseline import precision as prec
from harness.baseline import registry
from harness.baseline.fp64_accuracy import last_mean
from harness.baseline.inputs import workload_for
from harness.baseline.timing import EpochTimer, accuracy, timing_stats
from harness.baseline.variants import sync as _sync
from spec.files import shown_path
from spec.recipe import load_recipe
from spec.torch_variants import FP32


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
        return {"dir": shown_path(cache_dir()), "fx_graph_cache": bool(ic.fx_graph_cache)}
    except Exception as exc:  # noqa: BLE001 - informational only
        return {"dir": None, "fx_graph_cache": None, "error": f"{type(exc).__name__}: {exc}"}


def float32_only() -> dict:
    """No TF32 in matrix products or convolutions: the run's setting, every fp32 and bf16 variant
    computes its float32 products in float32 (the CUDA paths' arithmetic), TF32 being PyTorch's
    opt-in (the tf32 variants set it for themselves alone). Returns the settings as read back,
    for pytorch.json's "tf32"."""
    return prec.apply(*prec.FLAGS[FP32])
