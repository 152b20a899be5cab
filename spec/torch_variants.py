"""The two PyTorch variants that the report and the sweep read by name, each for its role, and the
precisions a variant or a CUDA path computes in (the Python owner of their names; the C++ side's
owner is cuda/common/precision.h's precision_name, and tests/test_spec.py holds the two equal).

harness/baseline/registry.py registers every variant (these two among them, under these names):
how to build it, when it runs and its precision. pytorch.json records which variants ran, which
were left out and why, and each one's precision, so the report needs no other fact about them.
"""
from __future__ import annotations

EAGER = "eager"            # the plain training loop: the tiers and every "vs eager" ratio
CUDA_GRAPH = "cuda-graph"  # the eager step captured whole: RESULTS.md's graph tier, and a sweep variant

# A variant's precision (registry.Variant.precision, pytorch.json's variants.*.precision), and
# what it means in words (RESULTS.md says them). harness/baseline/precision.py sets them.
FP32 = "fp32"
TF32 = "tf32"
BF16 = "bf16"
PRECISIONS: dict[str, str] = {
    FP32: "float32 throughout with TF32 off, the CUDA paths' arithmetic",
    TF32: "float32 tensors, the matrix products in TF32 (matmul and cuDNN allow_tf32, float32 "
          "matmul precision \"high\", for that variant only)",
    BF16: "the forward and the loss under torch.autocast(bfloat16): matrix products in bfloat16; "
          "float32 weights, momentum and update",
}

# Each precision's unit roundoff (round to nearest: half an ulp of 1 in its significand), as the
# binary's cuda/common/precision.h gives it (run.json "gate_unit_roundoff"; spec/schema.py checks
# the two agree).
UNIT_ROUNDOFF: dict[str, float] = {FP32: 2.0 ** -24, TF32: 2.0 ** -11, BF16: 2.0 ** -8}


def precision_of(rec: dict, doc: dict | None = None) -> str | None:
    """The precision of a pytorch.json variant entry `rec` of the file `doc`: its "precision"; for
    a file written before the field (no "fastest_by_precision") FP32, as the baseline then ran
    every variant in float32 (unless its "tf32" record says TF32 was on); None where unknown."""
    p = rec.get("precision") if isinstance(rec, dict) else None
    if p is not None:
        return p if p in PRECISIONS else None
    doc = doc or {}
    if "fastest_by_precision" in doc:
        return None                        # a file of the field whose entry lacks it
    tf32 = doc.get("tf32")
    if isinstance(tf32, dict) and tf32.get("matmul_allow_tf32") is True:
        return None
    return FP32


def precision_of_path(rec: dict) -> str | None:
    """The precision of a run.json path entry `rec`: its "precision" (cuda/cli/run_json.cpp writes
    it beside "accumulator"); FP32 for an entry without it, as every run.json written before the
    field (b45c1cf) is of float32 paths only (the binary had no other precision then); None for a
    name that is none of PRECISIONS."""
    p = rec.get("precision") if isinstance(rec, dict) else None
    if p is None:
        return FP32
    return p if p in PRECISIONS else None
