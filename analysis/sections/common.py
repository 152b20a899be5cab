"""Names and rules the sections share, and small helpers over run.json and pytorch.json records."""
from __future__ import annotations

from analysis.fmt import is_number, missing
from spec import torch_variants

HEADLINE_PATH = "fused"      # our submission; its tier is the headline tier
BASELINE_PATH = "unfused"
EAGER_VARIANT = torch_variants.EAGER
TORCH_GRAPH_VARIANT = torch_variants.CUDA_GRAPH
GRAPH_PATHS = ("graph",)     # paths that replay the epoch as a CUDA graph
PERSISTENT_KERNELS = ("persistent", "persistent2", "persistent2-tf32", "persistent2-bf16")  # one launch an epoch

# The tiers, a ladder over passing paths: bronze beats unfused, silver ≤ SILVER × eager median,
# gold ≤ GOLD × eager median with CV < GOLD_MAX_CV_PCT.
SILVER_MAX_RATIO = 0.90
GOLD_MAX_RATIO = 0.60
GOLD_MAX_CV_PCT = 5.0

# The goals of issue 6, each set against the measured value.
GOALS_SOURCE = "issue 6"
GOAL_FASTEST_MAX_MS = 0.5
GOAL_FASTEST_VS_EAGER = 0.01
GOAL_FASTEST_VS_TORCH_GRAPH = 0.10
GOAL_FUSED_VS_EAGER = 0.10
GOAL_MAX_CV_PCT = 5.0

# Each precision's name as the reports write it (spec.torch_variants.PRECISIONS owns the keys).
PRECISION_LABELS = {torch_variants.FP32: "FP32", torch_variants.TF32: "TF32",
                    torch_variants.BF16: "BF16"}
assert set(PRECISION_LABELS) == set(torch_variants.PRECISIONS)

LOSS_CURVE_EPOCHS = 5     # the loss table's first N epochs
LOSS_CURVE_FLAG = 0.02    # |loss / float64 loss - 1| above this is flagged
LAST_N_ACCURACY = 5       # test accuracy averaged over the last N epochs (as case 7 does)


def passed(rec: dict | None) -> bool:
    """A run.json path passes by its `passed`; a pytorch.json variant has none and passes when
    it has no error (that is read here, pytorch.json is not changed)."""
    if not rec or is_skipped(rec):
        return False
    if "passed" in rec:
        return rec["passed"] is True
    return not rec.get("error")


def passed_median(rec: dict | None) -> float | None:
    if not passed(rec):
        return None
    m = rec.get("median_ms")
    return None if missing(m) else float(m)


def declared_launches(rec: dict):
    """launches_per_step, None where the path declares none (the submission writes -1)."""
    lps = rec.get("launches_per_step")
    return lps if is_number(lps) and lps >= 0 else None


def fastest(records: dict, precision: str = torch_variants.FP32) -> str | None:
    """The passing record of `precision` with the lowest median, by name; None when none passed.
    A record that names no "precision" is float32 (every run.json path; pytorch.json's variants
    before the field), so by default the tf32 and bf16 variants are no candidates: every ratio
    against PyTorch's fastest compares float32 with float32."""
    medians = {n: m for n, r in records.items()
               if (r or {}).get("precision", torch_variants.FP32) == precision
               and (m := passed_median(r)) is not None}
    return min(medians, key=lambda n: medians[n]) if medians else None


def is_skipped(rec: dict | None) -> bool:
    """A run.json path the device could not run ({"skipped": "<reason>"}): not a failure."""
    return bool(rec) and isinstance(rec.get("skipped"), str)


def error_line(rec: dict) -> str:
    if is_skipped(rec):
        return f"skipped: {rec['skipped'].strip()}"
    error = str(rec.get("error") or "").strip()
    return error.splitlines()[0] if error else ""


def status(rec: dict, default_pass: bool = False) -> dict:
    """{"passed", "skipped", "error"}: the gate verdict of a path or variant, and the first line
    of its error (a variant that could not run says 'skipped: ...')."""
    ok = passed(rec) or (default_pass and "passed" not in rec and not rec.get("error"))
    line = error_line(rec)
    return {"passed": ok, "skipped": line.startswith("skipped"), "error": line}
