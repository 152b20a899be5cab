"""The JSON schemas of results/*.json (run, pytorch, the phase files, sanitize, ceilings, sweep,
the three PyTorch profiling studies and our binary's two, gemm and its two sides' files, gate_bench)
and `validate`, which checks a parsed document against one without changing it.

    validate(doc, "run", "results/run.json")   # raises SchemaError or returns None

A SchemaError's text is one line naming the file and the field:
`results/run.json: paths.fused.'median_ms': expected a number or null, got the string 'fast'`;
a missing key: `results/run.json: missing key recipe.'steps_per_epoch'`.
Only the fields a reader uses are described; other keys pass unchecked (documents grow).
docs/formats.md describes each file; this module is what the report holds them to.
"""
from __future__ import annotations

import math
from typing import Callable

from spec.torch_variants import FP32, PRECISIONS, UNIT_ROUNDOFF, precision_of
from spec.validate import is_safe_name


class SchemaError(ValueError):
    """A document that does not fit its schema: one line, the file and the field."""


# ----------------------------------------------------------------------------- the types

class _Type:
    what = "a value"

    def check(self, value, where: str, fail: Callable) -> None:  # pragma: no cover
        raise NotImplementedError


class _Any(_Type):
    what = "any value"

    def check(self, value, where, fail):
        pass


class _Scalar(_Type):
    """A value of one of `kinds`; a number is finite, and inside [lo, hi] where they are given
    (positive: > 0): a time, a fraction or a count outside its physical range is refused."""

    def __init__(self, kinds, what, positive=False, lo=None, hi=None):
        self.kinds, self.what, self.positive, self.lo, self.hi = kinds, what, positive, lo, hi

    def check(self, value, where, fail):
        if isinstance(value, bool) and bool not in self.kinds:
            fail(where, self.what, value)
        if not isinstance(value, self.kinds):
            fail(where, self.what, value)
        if isinstance(value, float) and not math.isfinite(value):
            fail(where, self.what, value)
        if self.positive and not value > 0:
            fail(where, self.what, value)
        if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
            fail(where, self.what, value)


class Opt(_Type):
    """The inner type or null."""

    def __init__(self, inner: _Type):
        self.inner = inner
        self.what = f"{inner.what} or null"

    def check(self, value, where, fail):
        if value is not None:
            self.inner.check(value, where, lambda w, _what, v: fail(w, self.what, v)
                             if w == where else fail(w, _what, v))


class Const(_Type):
    def __init__(self, value):
        self.value = value
        self.what = repr(value)

    def check(self, value, where, fail):
        if type(value) is not type(self.value) or value != self.value:
            fail(where, self.what, value)


class OneOf(_Type):
    def __init__(self, *values):
        self.values = values
        self.what = "one of " + ", ".join(repr(v) for v in values)

    def check(self, value, where, fail):
        if not isinstance(value, str) or value not in self.values:
            fail(where, self.what, value)


class Arr(_Type):
    def __init__(self, item: _Type, nonempty: bool = False):
        self.item, self.nonempty = item, nonempty
        self.what = "a non-empty list" if nonempty else "a list"

    def check(self, value, where, fail):
        if not isinstance(value, list) or (self.nonempty and not value):
            fail(where, self.what, value)
        for i, v in enumerate(value):
            self.item.check(v, f"{where}[{i}]", fail)


class Map(_Type):
    """An object of any keys, each value of one type; names=True: each key a safe name
    (spec.validate.is_safe_name), since a reader makes file names of them (a path's profile CSVs
    and kernel plot, say)."""
    what = "an object"

    def __init__(self, value: _Type, names: bool = False):
        self.value, self.names = value, names

    def check(self, value, where, fail):
        if not isinstance(value, dict):
            fail(where, self.what, value)
        for k, v in value.items():
            if self.names and not is_safe_name(k):
                raise SchemaError(f"{where or 'the top level'}: key {k!r} is not a safe name (1-64 of "
                                  f"A-Z a-z 0-9 _ - ., starting with a letter or digit)")
            self.value.check(v, _join(where, k), fail)


class Obj(_Type):
    """An object with the given fields; `required` must be present, the rest may be absent.
    Keys not listed pass unchecked."""
    what = "an object"

    def __init__(self, fields: dict, required: tuple = ()):
        self.fields, self.required = fields, tuple(required)

    def check(self, value, where, fail):
        if not isinstance(value, dict):
            fail(where, self.what, value)
        for key in list(self.fields) + [k for k in self.required if k not in self.fields]:
            if key in value:
                self.fields[key].check(value[key], _join(where, key), fail)
            elif key in self.required:
                raise SchemaError(f"missing key {_shown(_join(where, key))}")


def _join(where: str, key) -> str:
    return f"{where}.{key}" if where else str(key)


def _shown(where: str) -> str:
    """A field as messages show it, its last key quoted: points[0].cuda.fused.'median_ms'."""
    head, dot, last = where.rpartition(".")
    if "[" in last or not last:
        return where or "the top level"
    return f"{head}{dot}{last!r}"


class _Name(_Type):
    """A string that a reader may make a file name of: a safe name (spec.validate)."""
    what = "a safe name (1-64 of A-Z a-z 0-9 _ - ., starting with a letter or digit)"

    def check(self, value, where, fail):
        if not isinstance(value, str) or not is_safe_name(value):
            fail(where, self.what, value)


ANY = _Any()
NUM = _Scalar((int, float), "a finite number")
POS = _Scalar((int, float), "a positive number", positive=True)
NONNEG = _Scalar((int, float), "a finite number >= 0", lo=0)          # times, bytes, counts, losses
FRAC = _Scalar((int, float), "a fraction in [0, 1]", lo=0, hi=1)      # accuracies
INT = _Scalar((int,), "an integer")
COUNT = _Scalar((int,), "an integer >= 0", lo=0)
STR = _Scalar((str,), "a string")
BOOL = _Scalar((bool,), "true or false")
NAME = _Name()
ONUM, OINT, OSTR, OBOOL = Opt(NUM), Opt(INT), Opt(STR), Opt(BOOL)
ONONNEG, OFRAC, ONAME = Opt(NONNEG), Opt(FRAC), Opt(NAME)


def _describe(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        text = value if len(value) <= 40 else value[:37] + "..."
        return f"the string {text!r}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# ----------------------------------------------------------------------------- the schemas

# One timed run of a CUDA path (run.json) or a PyTorch variant (pytorch.json).
_TIMING = {"error": OSTR, "epoch_ms": Arr(NONNEG), "warmup_epoch_ms": ONONNEG, "mean_ms": ONONNEG,
           "median_ms": ONONNEG, "min_ms": ONONNEG, "max_ms": ONONNEG, "cv_pct": ONONNEG,
           "test_accuracy": OFRAC, "test_accuracy_per_epoch": Arr(OFRAC),
           "test_accuracy_last5_mean": OFRAC, "loss_per_epoch": Arr(ONONNEG)}

_CASES = Arr(Obj({"id": INT, "name": STR, "passed": OBOOL, "value": ONUM, "limit": ONUM, "detail": STR},
                 required=("id", "name", "passed", "value", "limit")))
# harness/gate/supervisor.py's account of a supervised run (stages: one per child process).
_SUPERVISOR = Obj({"limit_s": ONUM, "seconds": ONUM, "ended": STR, "stderr_tail": STR, "staged": BOOL,
                   "stages": Arr(Obj({"name": STR, "cases": Arr(INT), "limit_s": ONUM, "limit_why": STR,
                                      "seconds": ONUM, "ended": STR, "exit_status": OINT, "gpu_wait_s": ONUM},
                                     required=("name", "ended"))),
                   "path_failures": Arr(STR), "stage_failures": Arr(STR)}, required=("ended",))

# The gate's verdict as its one owner writes it (cuda/gate/verdict.h; spec/verdict.py reads it back
# and refuses a document whose recorded verdict its evidence does not give).
_VERDICT = Obj({"passed": BOOL, "word": OneOf("PASS", "FAIL"), "first_hint": STR, "reasons": Arr(STR),
                "failed_cases": Arr(INT), "failed_paths": Arr(STR), "failed_stages": Arr(STR),
                "required_cases": Arr(INT), "hints": Arr(STR)}, required=("passed", "word", "reasons"))

# The recipe a run trained, as run.json and pytorch.json record it (spec.recipe.complete).
_RECIPE = Obj({"steps_per_epoch": INT, "input_dim": INT, "hidden_dim": INT, "output_dim": INT,
               "batch": INT, "epochs": INT, "train_size": INT, "test_size": INT, "n_params": INT,
               "lr": NUM, "momentum": NUM, "seed": INT}, required=("steps_per_epoch",))

RUN = Obj({
    "schema": INT, "date_utc": STR, "commit": STR, "run_id": STR,
    "submission": STR, "gated_path": OSTR, "run_command": STR, "reference_source": STR,
    # The precision the gate held cases 1-5 and 9 to (the submission's mlp_precision(), fp32 by
    # default) and its unit roundoff; absent in runs before it (then fp32).
    "gate_precision": OneOf(*PRECISIONS), "gate_unit_roundoff": POS, "gate_precision_declared": BOOL,
    "gpu": Obj({"name": STR, "compute_capability": STR, "sm_count": INT, "l2_bytes": ONUM,
                "driver": STR, "driver_api_version": OINT, "runtime_version": OINT,
                "toolkit_version": OINT}),
    "recipe": _RECIPE,
    "memory": Map(ONUM),
    "cases": _CASES,
    "hints": Arr(STR), "supervisor": _SUPERVISOR, "verdict": _VERDICT, "path_failures": Arr(STR),
    "paths": Map(Obj(_TIMING | {
        # the path's checks (cli/modes.h trained_path_failure): passed iff failure is ""
        "passed": BOOL, "failure": STR, "launches_per_step": ONUM, "parity_vs_fused": ONONNEG,
        "parity_limit": ONONNEG, "parity_vs_fp64": ONONNEG, "deterministic": OBOOL,
        # TF32/BF16 paths (cli/path_checks.h rounded_reference_drift): correct rounding's own drift
        "parity_reference_drift": ONONNEG,
        "accuracy_gap_pp": ONUM, "skipped": STR, "config": OSTR, "accumulator": STR,
        # spec.torch_variants.precision_of_path: absent in run.json written before b45c1cf (fp32)
        "precision": OneOf(*PRECISIONS),
        # case 9 on the path's own epoch at its precision (TF32 and BF16 paths of the gate's runs)
        "epoch_check": Opt(Obj({"passed": BOOL, "value": ONUM, "limit": ONUM, "detail": STR}))}), names=True),
    "device_limits": Obj({"smem_per_block_optin": INT, "sms": INT, "threads_per_sm": INT,
                          "capped": Map(NUM)}),
    "reference_fp64": Obj(_TIMING | {"passed": BOOL}),
    "build": Obj({"arch": STR, "accumulate": STR, "make_command": STR, "command": STR,
                  "submission": STR}),
}, required=("cases", "paths", "recipe", "gpu"))

# The supervisor's own run.json when the binary wrote none (a run that hung, died or faulted; or a
# staged run none of whose stages said its GPU and recipe): the short report's input.
RUN_SUPERVISED = Obj({
    "schema": INT, "run_id": STR, "mode": STR, "run_command": STR, "commit": STR,
    "supervisor": _SUPERVISOR, "cases": _CASES, "hints": Arr(STR), "paths": Map(ANY), "verdict": _VERDICT,
}, required=("cases", "supervisor"))

# The TF32 settings as the baseline read them back (pytorch.json's "tf32", run-wide and per variant).
_TF32 = Obj({"matmul_allow_tf32": BOOL, "cudnn_allow_tf32": BOOL, "float32_matmul_precision": STR},
            required=("matmul_allow_tf32", "cudnn_allow_tf32", "float32_matmul_precision"))

PYTORCH = Obj({
    "schema": INT, "torch_version": STR, "cuda_version": OSTR, "gpu": OSTR,
    "date_utc": STR, "commit": STR, "recipe": _RECIPE, "tf32": Opt(_TF32),
    "variants": Map(Obj(_TIMING | {"passed": BOOL, "max_memory_allocated_bytes": ONONNEG,
                                   "compile_seconds": ONONNEG, "capture_seconds": ONONNEG,
                                   "setup_seconds": ONONNEG, "cudagraph_skips": OINT,
                                   "accuracy_gap_pp_vs_fp64": ONUM, "accuracy_note": STR,
                                   "precision": OneOf(*PRECISIONS), "tf32": _TF32}),
                    names=True),
    "variants_run": Arr(NAME), "variants_left_out": Map(STR, names=True), "fastest_variant": ONAME,
    "fastest_median_ms": ONONNEG,
    "fastest_by_precision": Map(Opt(Obj({"variant": NAME, "median_ms": NONNEG},
                                        required=("variant", "median_ms")))),
    "fp64_source": STR, "fp64_test_accuracy_last5_mean": OFRAC,
}, required=("variants",))

PHASES = Obj({
    "schema": Const(2), "source": STR, "steps_per_epoch": INT,
    "date_utc": STR, "commit": STR,
    "variants": Arr(Obj({"kernel": STR, "phases": Arr(OneOf("A", "B", "C")), "staging": STR,
                         "production": BOOL, "label": STR, "median_ms": POS, "cv_pct": ONUM},
                        required=("kernel", "phases", "staging", "production", "label",
                                  "median_ms")), nonempty=True),
}, required=("schema", "variants"))

SANITIZE = Obj({
    "schema": INT, "clean": BOOL, "complete": BOOL, "planned_runs": OINT,
    "date_utc": STR, "commit": STR,
    "runs": Arr(Obj({"tool": STR, "target": STR, "errors": OINT, "exit_code": OINT,
                     "timed_out": BOOL, "seconds": ONUM},
                    required=("tool", "target", "errors", "exit_code"))),
}, required=("runs",))

_RATE = {"copy": "gb_per_s", "fp32_matmul": "tflops", "tf32_matmul": "tflops", "bf16_matmul": "tflops"}
_MATMUL = Obj({"tflops": POS, "n": ONUM, "timed": ONUM}, required=("tflops",))
CEILINGS = Obj({
    "schema": INT, "gpu": OSTR, "torch_version": OSTR, "date_utc": STR, "commit": STR,
    "copy": Obj({"gb_per_s": POS, "bytes": ONUM, "tensor_bytes": ONUM, "timed": ONUM},
                required=("gb_per_s",)),
    "fp32_matmul": _MATMUL, "tf32_matmul": _MATMUL, "bf16_matmul": _MATMUL,
}, required=("copy", "fp32_matmul"))

# GEMM rates (issue 38): one side's file (build/gemm_bench's, harness/studies/gemm_torch.py's) and
# results/gemm.json, which harness/studies/gemm_bench.py assembles from them.
_LAYOUT = OneOf("nn", "tn", "nt")
_SIDE_ROW = Obj({
    "M": INT, "N": INT, "K": INT, "layout": _LAYOUT, "precision": OneOf(*PRECISIONS),
    "status": OneOf("ok", "failed", "unsupported", "skipped"), "why": OSTR, "flop": NONNEG, "plan": OSTR,
    "median_ms": ONONNEG, "mean_ms": ONONNEG, "min_ms": ONONNEG, "max_ms": ONONNEG, "cv_pct": ONONNEG,
    "tflops": ONONNEG, "repeats": OINT, "warmup": OINT, "sets": OINT,
    "check": Opt(Obj({"passed": BOOL, "worst_ratio": ONONNEG, "nonfinite": OINT}, required=("passed",))),
}, required=("M", "N", "K", "layout", "precision", "status"))
GEMM_SIDE = Obj({"schema": Const(1), "side": OneOf("ours", "cublas"), "gpu": OSTR, "layout": _LAYOUT,
                 "repeats": INT, "warmup": INT, "rows": Arr(_SIDE_ROW)},
                required=("schema", "side", "layout", "rows"))
_GEMM_ENTRY = Opt(Obj({"status": STR, "tflops": ONONNEG, "median_ms": ONONNEG, "cv_pct": ONONNEG},
                      required=("status",)))
GEMM = Obj({
    "schema": Const(1), "commit": STR, "date_utc": STR, "gpu": OSTR, "passed": BOOL,
    "config": Obj({"precisions": Arr(OneOf(*PRECISIONS)), "layouts": Arr(_LAYOUT), "repeats": INT, "warmup": INT}),
    "ceilings": Opt(Obj({"fp32_tflops": Opt(POS), "tf32_tflops": Opt(POS), "bf16_tflops": Opt(POS), "gpu": OSTR})),
    "sides": Arr(Obj({"side": OneOf("ours", "cublas"), "layout": _LAYOUT, "exit_status": OINT, "seconds": ONONNEG,
                      "error": OSTR}, required=("side", "layout", "exit_status"))),
    "rows": Arr(Obj({
        "M": INT, "N": INT, "K": INT, "layout": _LAYOUT, "precision": OneOf(*PRECISIONS), "sources": Arr(STR),
        "ours": _GEMM_ENTRY, "cublas": _GEMM_ENTRY, "ours_tflops": ONONNEG, "cublas_tflops": ONONNEG,
        "pct_of_cublas": ONONNEG, "ceiling_tflops": Opt(POS), "ours_pct_of_ceiling": ONONNEG,
        "cublas_pct_of_ceiling": ONONNEG, "check_passed": OBOOL},
        required=("M", "N", "K", "layout", "precision", "ours", "cublas", "ours_tflops", "cublas_tflops",
                  "pct_of_cublas", "ours_pct_of_ceiling"))),
}, required=("schema", "commit", "date_utc", "passed", "config", "sides", "rows"))

_METRICS = Opt(Obj({"passed": OBOOL, "error": OSTR, "median_ms": ONONNEG, "cv_pct": ONONNEG,
                    "min_ms": ONONNEG, "max_ms": ONONNEG, "test_accuracy": OFRAC,
                    "images_per_s": ONONNEG, "step_us": ONONNEG, "gpu_s_per_1000_images": ONONNEG,
                    "launches_per_step": ONUM, "max_memory_allocated_bytes": ONONNEG,
                    "skipped": OSTR, "accumulator": OSTR, "parity_vs_fp64": ONONNEG,
                    "parity_limit": ONONNEG, "parity_ok": OBOOL, "epoch1_test_accuracy": OFRAC,
                    "parity_reference_drift": ONONNEG,
                    "parity_vs_fused": ONONNEG, "epoch1_loss": ONONNEG,
                    "precision": Opt(OneOf(*PRECISIONS))}))
# One precision at a point (harness/studies/sweep_point.py precision_entry): our best path of that
# precision against PyTorch's fastest variant of the same precision, the best path's parity with
# the fused fp32 path, and both sides' first epoch against the float64 epoch.
_AT_PRECISION = Obj({
    "paths": Arr(NAME), "variants": Arr(NAME), "no_path": BOOL,
    "best_cuda_path": ONAME, "best_cuda_median_ms": ONONNEG,
    "fastest_pytorch_variant": ONAME, "fastest_pytorch_median_ms": ONONNEG,
    "ratio_best_cuda_vs_fastest_pytorch": ONUM, "ratio_best_cuda_vs": Map(ONUM, names=True),
    "parity_vs_fused": ONONNEG, "parity_vs_fp64": ONONNEG, "parity_limit": ONONNEG,
    "parity_ok": OBOOL, "paths_over_parity_limit": Arr(NAME),
    "epoch1_test_accuracy": OFRAC, "epoch1_accuracy_gap_pp": ONUM, "epoch1_loss_rel_vs_fp64": ONUM,
    "pytorch_epoch1_test_accuracy": OFRAC, "pytorch_epoch1_accuracy_gap_pp": ONUM,
    "pytorch_epoch1_loss_rel_vs_fp64": ONUM,
}, required=("paths", "variants", "no_path", "best_cuda_path", "fastest_pytorch_variant",
             "ratio_best_cuda_vs_fastest_pytorch"))
# A point's roofline (analysis/roofline_sweep.py): the floor and the two medians against it.
_AGAINST = Opt(Obj({"ms": ONONNEG, "share_of_floor": ONONNEG, "achieved_tflops": ONONNEG,
                    "path": ONAME, "variant": ONAME}))
_ROOFLINE = Opt(Obj({"steps": INT, "last_batch": INT, "flops_per_epoch": NONNEG,
                     "bytes_per_epoch": NONNEG, "gflop_per_epoch": NONNEG, "mb_per_epoch": NONNEG,
                     "compute_ms": NONNEG, "memory_ms": NONNEG, "floor_ms": NONNEG,
                     "bound": OneOf("compute", "memory"), "fp32_tflops": POS, "dram_gb_per_s": POS,
                     "best": _AGAINST, "pytorch_fastest": _AGAINST},
                    required=("floor_ms", "bound")))
_LEDGER = Obj({"parameters_bytes": ONUM, "gradients_bytes": ONUM, "activations_bytes": ONUM,
               "data_bytes": ONUM, "order_bytes": ONUM, "total_sgd_momentum_bytes": ONUM,
               "optimizer_state_bytes": Map(ONUM)}, required=("optimizer_state_bytes",))
SWEEP = Obj({
    "schema": Const(1), "date_utc": OSTR, "commit": OSTR, "driver": OSTR,
    "torch_version": OSTR, "torch_cuda_version": OSTR, "complete": BOOL,
    "gpu": Opt(Obj({"name": OSTR, "compute_capability": OSTR})), "notes": Map(OSTR),
    "config": Obj({"widths": Arr(INT), "batches": Arr(INT), "width_sweep_batch": INT,
                   "batch_sweep_hidden": INT, "input_dim": INT, "output_dim": INT,
                   "cost_images": INT, "paths": Arr(STR), "pytorch_variants": Arr(STR),
                   "data_dir": OSTR, "lr": NUM, "momentum": NUM,
                   "extra_points": Arr(Arr(INT)), "paths_source": OSTR, "parity": OBOOL,
                   "precisions": Opt(Arr(OneOf(*PRECISIONS)))},
                  required=("widths", "batches", "width_sweep_batch", "batch_sweep_hidden",
                            "input_dim", "output_dim", "cost_images")),
    "points": Arr(Obj({
        "label": NAME, "hidden": INT, "batch": INT, "status": STR, "sweeps": Arr(STR),
        "errors": Arr(STR), "cuda": Map(_METRICS, names=True), "pytorch": Map(_METRICS, names=True),
        "best_cuda_path": ONAME, "best_cuda": _METRICS, "command": OSTR,
        "pytorch_command": OSTR,
        "ratio_best_cuda_vs_eager": ONUM, "ratio_best_cuda_vs_cuda_graph": ONUM,
        "fastest_pytorch_variant": ONAME, "fastest_pytorch_median_ms": ONONNEG,
        "ratio_best_cuda_vs_fastest_pytorch": ONUM, "ratio_best_cuda_vs": Map(ONUM, names=True),
        "skipped_paths": Map(STR, names=True), "fp64_epoch1_test_accuracy": OFRAC,
        "fp64_reference": Opt(Obj({"test_accuracy": OFRAC, "loss": ONONNEG, "seconds": ONONNEG,
                                   "epochs": OINT})),
        "roofline": _ROOFLINE,
        "precisions": Map(_AT_PRECISION),
        "steps_per_epoch": ONUM, "n_params": ONUM, "train_size": ONUM, "test_size": ONUM,
        "epochs": ONUM,
        "memory": Opt(Obj({"cuda_peak_used_bytes": ONUM,
                           "torch_max_memory_allocated_bytes": Opt(Map(ONUM)),
                           "ledger": Opt(_LEDGER)})),
    }, required=("label", "hidden", "batch", "status", "sweeps", "errors", "cuda",
                 "pytorch"))),
    "roofline": Opt(Obj({"source": OSTR, "absent": OSTR,
                         "ceilings": Opt(Obj({"fp32_tflops": POS, "dram_gb_per_s": POS, "gpu": OSTR,
                                              "commit": OSTR},
                                             required=("fp32_tflops", "dram_gb_per_s")))})),
    "folders_not_collected": Arr(NAME),
    # harness/studies/sweep_collect.py: points whose point.json names another commit than `commit`
    "points_of_other_commits": Opt(Map(Arr(NAME))),
}, required=("schema", "config", "points"))


_STUDY = {"schema": Const(1), "torch_version": STR, "cuda_version": OSTR, "gpu": OSTR,
          "device": STR, "shape": Arr(INT), "date_utc": STR, "commit": OSTR}
_GROUPS = ("parameters", "gradients", "optimizer_state", "activations", "inputs", "other")
TORCH_MEMORY = Obj(_STUDY | {
    "batch": INT, "plot": OSTR, "ledger": _LEDGER,
    "optimizers": Map(Obj({
        "label": STR, "timeline": STR, "html": OSTR, "peak_total_bytes": NONNEG,
        "peak_at_us": ONONNEG, "groups_peak": Obj({g: NONNEG for g in _GROUPS}, required=_GROUPS),
        "ledger_bytes": Map(NONNEG), "max_memory_allocated_bytes": ONONNEG},
        required=("label", "peak_total_bytes", "groups_peak", "ledger_bytes"))),
}, required=("schema", "batch", "optimizers"))

TORCH_BATCH_STEPS = Obj(_STUDY | {
    "optimizer": STR, "steps_traced": INT, "steps_timed": INT,
    "batches": Arr(Obj({
        "batch": INT, "untraced_us_per_step": NONNEG, "wall_us_per_step": NONNEG,
        "host_us_per_step": NONNEG, "kernel_us_per_step": NONNEG, "gpu_busy_us_per_step": ONONNEG,
        "gpu_busy_fraction": OFRAC, "kernels_per_step": NONNEG, "launches_per_step": NONNEG,
        "work_vs_first": NONNEG, "untraced_time_vs_first": NONNEG, "trace": STR},
        required=("batch", "untraced_us_per_step", "wall_us_per_step", "host_us_per_step",
                  "kernel_us_per_step", "gpu_busy_fraction", "work_vs_first",
                  "untraced_time_vs_first")), nonempty=True),
}, required=("schema", "batches"))

_KERNEL = Obj({"name": STR, "op": OSTR, "kind": STR, "instances_per_step": NONNEG,
               "mean_us": NONNEG, "us_per_step": NONNEG},
              required=("name", "instances_per_step", "mean_us", "us_per_step"))
_PHASE = Obj({"kernels": Arr(_KERNEL), "gpu_us_per_step": NONNEG},
             required=("kernels", "gpu_us_per_step"))
TORCH_LINEAR = Obj(_STUDY | {
    "optimizer": STR, "steps_traced": INT,
    "batches": Arr(Obj({"batch": INT, "trace": STR, "layers": Arr(Obj({
        "layer": STR, "in_out": Arr(INT), "forward": _PHASE, "backward": _PHASE},
        required=("layer", "forward", "backward")))}, required=("batch", "layers"))),
}, required=("schema", "batches"))

# harness/studies/ours_studies.py: our binary's side of the batch and Linear studies (nsys).
_OURS = {"schema": Const(1), "commit": OSTR, "date_utc": STR, "gpu": OSTR, "shape": Arr(INT)}
OURS_BATCH_STEPS = Obj(_OURS | {
    "epochs_timed": INT, "tried": Arr(STR),
    "batches": Arr(Obj({
        "batch": INT, "path": STR, "steps": INT, "untraced_us_per_step": POS,
        "candidates": Arr(Obj({"path": STR, "us_per_step": ONONNEG, "why": OSTR},
                              required=("path", "us_per_step"))),
        "wall_us_per_step": NONNEG, "host_us_per_step": NONNEG, "kernel_us_per_step": NONNEG,
        "gpu_busy_us_per_step": ONONNEG, "gpu_busy_fraction": OFRAC, "kernels_per_step": NONNEG,
        "launches_per_step": NONNEG, "work_vs_first": NONNEG, "untraced_time_vs_first": NONNEG,
        "profile": STR},
        required=("batch", "path", "untraced_us_per_step", "wall_us_per_step",
                  "host_us_per_step", "kernel_us_per_step", "gpu_busy_fraction",
                  "work_vs_first", "untraced_time_vs_first")), nonempty=True),
}, required=("schema", "batches"))
_OUR_KERNEL = Obj({"name": STR, "what": STR, "instances_per_step": NONNEG, "mean_us": NONNEG,
                   "us_per_step": NONNEG}, required=("name", "instances_per_step", "mean_us",
                                                  "us_per_step"))
_OUR_PHASE = Obj({"kernels": Arr(_OUR_KERNEL), "gpu_us_per_step": NONNEG},
                 required=("kernels", "gpu_us_per_step"))
OURS_LINEAR = Obj(_OURS | {
    "path": STR,
    "batches": Arr(Obj({"batch": INT, "steps": INT, "profile": STR, "other": _OUR_PHASE,
                        "layers": Arr(Obj({"layer": STR, "in_out": Arr(INT),
                                           "forward": _OUR_PHASE, "backward": _OUR_PHASE},
                                          required=("layer", "forward", "backward")))},
                       required=("batch", "layers")), nonempty=True),
}, required=("schema", "path", "batches"))

STATIONARY_PHASES = Obj({
    "schema": Const(1), "source": STR, "kernel": STR, "shape": STR, "commit": OSTR,
    "date_utc": STR, "step_us": POS,
    "phases": Arr(Obj({"name": STR, "slowest_us": NONNEG, "mean_us": NONNEG},
                      required=("name", "slowest_us", "mean_us")), nonempty=True),
    "wait_skew_us": ONONNEG,
    "variants": Arr(Obj({"name": STR, "us_per_step": POS, "cv_pct": ONONNEG, "shipped": BOOL},
                        required=("name", "us_per_step", "shipped"))),
}, required=("schema", "step_us", "phases"))

# The course benchmark (issue 40, harness/studies/gate_bench.py): a generated course gated and timed,
# each stage's seconds summarised over the course, one row per file against the generator's intent.
_VERDICT_WORD = OneOf("PASS", "FAIL")
GATE_BENCH = Obj({
    "schema": Const(1), "commit": STR, "date_utc": STR,
    "generator": Obj({"n": COUNT, "seed": COUNT, "correct_share": FRAC}, required=("n",)),
    "gpus": Arr(Obj({"index": INT, "name": STR, "uuid": STR}, required=("name",))),
    "jobs": COUNT, "sanitizer_slots": Map(COUNT),
    "build_s": NONNEG, "builds_ended_s": NONNEG, "gate_s": NONNEG, "wall_s": NONNEG, "submissions_per_minute": ONONNEG,
    "stages": Map(Obj({"n": COUNT, "median_s": NONNEG, "p90_s": NONNEG, "max_s": NONNEG, "total_s": NONNEG,
                       "wait_total_s": NONNEG},
                      required=("n", "median_s", "p90_s", "max_s", "total_s"))),
    "submissions": Arr(Obj({"file": STR, "base": STR, "defect": OSTR, "intent": _VERDICT_WORD,
                            "must_fail": Arr(INT), "verdict": _VERDICT_WORD, "failed_cases": Arr(INT),
                            "first_hint": STR, "as_intended": BOOL},
                           required=("file", "base", "defect", "intent", "verdict", "as_intended"))),
    "as_intended": COUNT, "all_as_intended": BOOL,
}, required=("schema", "commit", "date_utc", "generator", "gpus", "jobs", "sanitizer_slots", "build_s",
             "gate_s", "wall_s", "stages", "submissions", "as_intended", "all_as_intended"))


def _ordered_times(records: dict, where: str) -> str | None:
    """The first timing of `records` whose min_ms <= median_ms <= max_ms does not hold."""
    for name, rec in records.items():
        lo, med, hi = (rec.get(k) for k in ("min_ms", "median_ms", "max_ms"))
        if None not in (lo, med, hi) and not lo <= med <= hi:
            return f"{where}.{name}: min_ms {lo!r}, median_ms {med!r}, max_ms {hi!r}: expected min <= median <= max"
    return None


def _run_checks(doc) -> str | None:
    for name, rec in doc["paths"].items():
        if "passed" not in rec and "skipped" not in rec:
            return f"paths.{name}: missing key 'passed' (or 'skipped')"
    p, u = doc.get("gate_precision"), doc.get("gate_unit_roundoff")
    if p is not None and u is not None and u != UNIT_ROUNDOFF[p]:
        return f"gate_unit_roundoff: {u!r} is not {p}'s unit roundoff ({UNIT_ROUNDOFF[p]!r})"
    return _ordered_times(doc["paths"], "paths")


def _pytorch_checks(doc) -> str | None:
    variants = doc["variants"]
    top = doc.get("fastest_variant")
    if top is not None:
        if top not in variants:
            return f"fastest_variant: {top!r} is not among its variants"
        if precision_of(variants[top], doc) != FP32:
            return (f"fastest_variant: {top!r} is of precision {variants[top].get('precision')!r}: "
                    f"the fastest variant is the fastest {FP32} one")
    for p, best in (doc.get("fastest_by_precision") or {}).items():
        if p not in PRECISIONS:
            return f"fastest_by_precision: key {p!r} is no precision ({', '.join(PRECISIONS)})"
        if best is None:
            continue
        name = best["variant"]
        if name not in variants or variants[name].get("precision") != p:
            return f"fastest_by_precision.{p}: {name!r} is no variant of precision {p!r}"
    return _ordered_times(variants, "variants")


def _gemm_side_checks(doc) -> str | None:
    for i, r in enumerate(doc["rows"]):
        if r["layout"] != doc["layout"]:
            return f"rows[{i}].layout: {r['layout']!r} in a file of layout {doc['layout']!r}"
        if r["status"] in ("ok", "failed") and (r.get("median_ms") is None or r.get("tflops") is None):
            return f"rows[{i}]: status {r['status']!r} without median_ms and tflops"
        lo, med, hi = (r.get(k) for k in ("min_ms", "median_ms", "max_ms"))
        if None not in (lo, med, hi) and not lo <= med <= hi:
            return f"rows[{i}]: min_ms {lo!r}, median_ms {med!r}, max_ms {hi!r}: expected min <= median <= max"
    return None


def _gate_bench_checks(doc) -> str | None:
    """The counts agree with the rows: one row per generated file, `as_intended` their count of
    true, `all_as_intended` whether every row is; each stage's median <= 90th percentile <= max."""
    rows, n = doc["submissions"], doc["generator"]["n"]
    if len(rows) != n:
        return f"submissions: {len(rows)} rows for generator.n {n}"
    count = sum(1 for r in rows if r["as_intended"])
    if doc["as_intended"] != count:
        return f"as_intended: {doc['as_intended']!r}, but {count} rows are as intended"
    if doc["all_as_intended"] != (count == n):
        return f"all_as_intended: {doc['all_as_intended']!r}, but {count} of {n} rows are as intended"
    for name, st in doc["stages"].items():
        if not st["median_s"] <= st["p90_s"] <= st["max_s"]:
            return (f"stages.{name}: median_s {st['median_s']!r}, p90_s {st['p90_s']!r}, max_s {st['max_s']!r}: "
                    f"expected median <= p90 <= max")
    return None


def _sweep_checks(doc) -> str | None:
    for i, p in enumerate(doc["points"]):
        best = p.get("best_cuda_path")
        if best is not None and best not in p["cuda"]:
            return f"points[{i}].best_cuda_path: {best!r} is not among its CUDA paths"
        top = p.get("fastest_pytorch_variant")
        if top is not None and top not in p["pytorch"]:
            return f"points[{i}].fastest_pytorch_variant: {top!r} is not among its PyTorch variants"
        for prec, e in (p.get("precisions") or {}).items():
            where = f"points[{i}].precisions.{prec}"
            if prec not in PRECISIONS:
                return (f"points[{i}].precisions: key {prec!r} is no precision "
                        f"({', '.join(PRECISIONS)})")
            for key, group, names in (("best_cuda_path", "cuda", e["paths"]),
                                      ("fastest_pytorch_variant", "pytorch", e["variants"])):
                name = e.get(key)
                if name is not None and (name not in p[group] or name not in names):
                    return f"{where}.{key}: {name!r} is not among its {group} entries of {prec!r}"
            for key, group in (("paths", "cuda"), ("variants", "pytorch")):
                for name in e[key]:
                    got = (p[group].get(name) or {}).get("precision", prec)
                    if name not in p[group] or got != prec:
                        return f"{where}.{key}: {name!r} is no {group} entry of precision {prec!r}"
    return None


SCHEMAS: dict[str, tuple[_Type, Callable | None]] = {
    "run": (RUN, _run_checks), "run_supervised": (RUN_SUPERVISED, None), "pytorch": (PYTORCH, _pytorch_checks), "persistent_phases": (PHASES, None),
    "torch_memory": (TORCH_MEMORY, None), "torch_batch_steps": (TORCH_BATCH_STEPS, None),
    "torch_linear_kernels": (TORCH_LINEAR, None), "stationary_phases": (STATIONARY_PHASES, None),
    "ours_batch_steps": (OURS_BATCH_STEPS, None), "ours_linear_kernels": (OURS_LINEAR, None),
    "sanitize": (SANITIZE, None), "ceilings": (CEILINGS, None), "sweep": (SWEEP, _sweep_checks),
    "gemm_side": (GEMM_SIDE, _gemm_side_checks), "gemm": (GEMM, None),
    "gate_bench": (GATE_BENCH, _gate_bench_checks),
}


def validate(doc, name: str, path) -> None:
    """Check `doc` (parsed JSON) against the schema `name` (a key of SCHEMAS); raise SchemaError
    with one line naming `path` and the field. `doc` is never changed."""
    kind, extra = SCHEMAS[name]

    def fail(where, what, value):
        raise SchemaError(f"{_shown(where)}: expected {what}, got {_describe(value)}")

    try:
        if not isinstance(doc, dict):
            fail("", "an object", doc)
        kind.check(doc, "", fail)
        problem = extra(doc) if extra else None
        if problem:
            raise SchemaError(problem)
    except SchemaError as exc:
        raise SchemaError(f"{path}: {exc}") from None
