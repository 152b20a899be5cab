"""The schema of results/transformer.json (harness/transformer/results.py writes it; docs/formats.md
describes it; analysis/loaders.py holds the report to it), in spec/schema.py's types. Only the
fields the report reads are described; other keys pass unchecked. A file from before the bf16 engine
(no "precision" anywhere, no accuracy_bf16) fits: a missing precision is fp32."""
from __future__ import annotations

from spec.schema import (BOOL, INT, NUM, OBOOL, ONUM, OSTR, STR, Arr, Const, Map, Obj, OneOf, Opt, SchemaError,
                         _describe, _shown)
from spec.transformer import PRECISIONS, TORCH_PRECISIONS, precision_name

_PRECISION = Opt(OneOf(*PRECISIONS))

_ROW = Obj({"name": STR, "measure": STR, "value": ONUM, "limit": ONUM, "depth": ONUM, "passed": BOOL,
            "detail": STR}, required=("name", "measure", "value", "limit", "passed"))
_CHECKS = Opt(Obj({"weights": OSTR, "passed": OBOOL, "checks": Arr(_ROW), "precision": _PRECISION,
                   "u_operands": ONUM, "layer_batch": Opt(INT),
                   "logits_batch": Opt(INT), "argmax_agree": Opt(INT), "argmax_n": Opt(INT)},
                  required=("passed", "checks")))
_STATS = Opt(Obj({"median_ms": ONUM, "cv_pct": ONUM, "error": OSTR}))
_OURS = Opt(Obj({"variants": Map(_STATS), "best": STR, "engine": STR, "median_ms": NUM, "images_per_s": ONUM,
                 "tflops": ONUM, "fp32_share": ONUM, "engine_passed": OBOOL}, required=("variants", "best", "median_ms")))
_FASTEST = Opt(Obj({"name": STR, "median_ms": NUM}, required=("name", "median_ms")))
_TROW = Obj({"precision": Opt(OneOf(*TORCH_PRECISIONS)), "batch": INT, "ours": _OURS, "torch": Map(_STATS), "fastest_torch": _FASTEST, "ratio": ONUM,
             "goal_met": OBOOL, "acceptance_met": OBOOL, "tiles": OSTR, "tile_mismatches": Opt(INT)},
            required=("batch", "ours", "torch", "fastest_torch", "ratio"))
_TIMING = Opt(Obj({"goal": NUM, "acceptance": NUM, "fp32_tflops": ONUM, "rows": Arr(_TROW)},
                  required=("goal", "acceptance", "rows")))
_KERNEL = Obj({"name": STR, "op": OSTR, "instances": INT, "total_ns": NUM, "avg_ns": NUM, "share": ONUM,
               "tflops": ONUM, "gb_per_s": ONUM}, required=("name", "instances", "total_ns", "avg_ns"))
_PROFILE = Opt(Obj({"batch": INT, "report": STR, "kernels": Arr(_KERNEL), "gpu_ns": NUM},
                   required=("batch", "kernels")))
_CASE = Obj({"index": INT, "label": INT, "ours": INT, "torch": INT, "margin_ours": NUM, "margin_torch": NUM,
             "ref_margin": ONUM, "bound": ONUM, "within_bound": OBOOL}, required=("index", "ours", "torch"))
_ACCURACY = Opt(Obj({"precision": _PRECISION, "engine": OSTR, "n": INT, "ours": NUM, "torch": NUM, "correct_ours": INT, "correct_torch": INT,
                     "differ": INT, "explained_shown": INT, "explained_within_bound": INT,
                     "max_logit_gap": NUM, "cases": Arr(_CASE)},
                    required=("n", "ours", "torch", "differ", "cases")))
TRANSFORMER = Obj({
    "schema": Const(1), "commit": STR, "date_utc": STR, "gpu": OSTR,
    "model": Obj({"tokens": INT, "patch_dim": INT, "d_model": INT, "heads": INT, "head_dim": INT,
                  "mlp_dim": INT, "layers": INT, "classes": INT, "n_params": INT, "flop_per_image": NUM},
                 required=("tokens", "d_model", "heads", "layers", "n_params", "flop_per_image")),
    "checks": Opt(Map(Obj({"trained": _CHECKS, "random": _CHECKS}))), "checks_passed": OBOOL,
    **{precision_name("accuracy", p): _ACCURACY for p in PRECISIONS}, "timing": _TIMING, "profile": _PROFILE,
    "ceilings": Opt(Obj({"fp32_tflops": ONUM, "copy_gb_per_s": ONUM})),
}, required=("schema", "commit", "date_utc", "model", "checks", "accuracy", "timing", "profile"))


def validate_transformer(doc, path) -> None:
    """SchemaError with one line naming `path` and the field when `doc` does not fit."""
    def fail(where, what, value):
        raise SchemaError(f"{_shown(where)}: expected {what}, got {_describe(value)}")

    try:
        if not isinstance(doc, dict):
            fail("", "an object", doc)
        TRANSFORMER.check(doc, "", fail)
    except SchemaError as exc:
        raise SchemaError(f"{path}: {exc}") from None
