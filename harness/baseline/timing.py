"""How the PyTorch baseline times and scores a variant (harness/baseline/pytorch_baseline.py):
CUDA events around each epoch's training steps behind the same GPU-side hold as our binary's, the
timed epochs' statistics, the test accuracy, and the fastest variant of each precision."""
from __future__ import annotations

import math
import time

import torch

from spec import stats
from spec.torch_variants import FP32, PRECISIONS

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
