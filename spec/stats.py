"""The small statistics every reader of a run uses, with the binary's definitions
(summarise_epochs in cuda/common/run_stats.cpp, which `build/mlp_host stats MS...` prints).

The caller drops what is not timed: epoch 0 (module load, first launches, graph capture) is
excluded BY THE CALLER, e.g. summary(epoch_ms[1:]).
"""
from __future__ import annotations

import math
from typing import Sequence


def summary(times_ms: Sequence[float]) -> dict:
    """{"median", "mean", "min", "max", "cv_pct"} of the timed values.

    median: the middle value, or the mean of the two middle ones; CV = sample standard
    deviation (n − 1) / mean · 100, 0 for a single value. An empty input raises ValueError."""
    t = [float(x) for x in times_ms]
    n = len(t)
    if n == 0:
        raise ValueError("summary of no values")
    s = sorted(t)
    median = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    mean = sum(t) / n
    var = sum((x - mean) ** 2 for x in t)
    cv = 100.0 * math.sqrt(var / (n - 1)) / mean if n > 1 else 0.0
    return {"median": median, "mean": mean, "min": s[0], "max": s[-1], "cv_pct": cv}


def last_n_mean(values: Sequence[float], n: int = 5) -> float:
    """The mean of the last n values (case 7's test accuracy: the last five epochs); fewer than n
    values raise ValueError."""
    v = [float(x) for x in values]
    if n < 1 or len(v) < n:
        raise ValueError(f"the mean of the last {n} needs at least {n} values, got {len(v)}")
    return sum(v[-n:]) / n
