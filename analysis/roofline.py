"""Roofline of one profiled epoch: each kernel row of an nsys kernel summary gets its FLOPs and
MINIMUM bytes from a model of the recipe's shape, its achieved rates from the row's total time,
and a verdict against two ceilings measured on the device (results/ceilings.json, written by
harness/studies/ceilings.py: a large device-to-device copy for bandwidth, a large FP32 matrix product on
the CUDA cores for arithmetic).

The model, per training step of b rows (I = input_dim, Hd = hidden_dim, O = output_dim,
P = I·Hd + Hd + Hd·O + O parameters); values are float32, labels and the order int32, 4 bytes
each. An epoch has S = steps_per_epoch steps: S − 1 of B = batch rows and a last one of
train_size − (S − 1)·B rows (112 for the recipe); every figure is summed over those S steps.

- FLOPs count additions, subtractions and multiplications (a fused multiply-add is 2), as Nsight
  Compute's roofline does; max, compare, select, exp, log and reciprocal count 0. A GEMM with an
  M×N output and inner dimension K is 2·M·N·K; a fused epilogue (bias, ReLU, mask) adds nothing.
- Minimum bytes: every input of the kernel read once and every output written once, nothing
  else (no split-K partials, no re-reads, no cache effects). A GEMM moves (M·K + K·N + M·N)·4
  bytes plus the bias (N·4) or mask (M·N·4) it reads in its epilogue.

| kernel | FLOPs per step | minimum bytes per step |
|---|---|---|
| k_gather_batch | 0 | (2·b·I + 3·b)·4: order, X rows, labels read; Xb, yb written |
| k_fwd_hidden_bias_relu | 2·b·Hd·I | (b·I + I·Hd + b·Hd + Hd)·4 |
| k_fwd_hidden_gemm | 2·b·Hd·I | (b·I + I·Hd + b·Hd)·4 |
| k_add_bias<hidden> | b·Hd | (2·b·Hd + Hd)·4 |
| k_relu | 0 | 2·b·Hd·4 |
| k_fwd_logits_bias | 2·b·O·Hd | (b·Hd + Hd·O + b·O + O)·4 |
| k_fwd_logits_gemm | 2·b·O·Hd | (b·Hd + Hd·O + b·O)·4 |
| k_add_bias<logits> | b·O | (2·b·O + O)·4 |
| k_softmax_xent | b·(6·O + 3) | (2·b·O + b + 1)·4: Z, labels read; dZ, loss written |
| k_dW2 | 2·Hd·O·b | (Hd·b + b·O + Hd·O)·4 |
| k_colsum<db2> | b·O | (b·O + O)·4 |
| k_dH_relu_mask | 2·b·Hd·O | (b·O + O·Hd + b·Hd + b·Hd)·4 (the mask is H) |
| k_dH_gemm | 2·b·Hd·O | (b·O + O·Hd + b·Hd)·4 |
| k_relu_mask | 0 | 3·b·Hd·4: dH, H read; dH written |
| k_dW1 | 2·I·Hd·b | (I·b + b·Hd + I·Hd)·4 |
| k_colsum<db1> | b·Hd | (b·Hd + Hd)·4 |
| k_momentum_flat | 4·P | 5·P·4: p, v, g read; v, p written |
| k_momentum_tensor<T> | 4·n_T | 5·n_T·4, n_T the elements of W1, b1, W2 or b2 |
| k_persistent_epoch | the sum of the fused step's FLOPs above | (b·I + 2·b + 4·P + 1)·4 |

Softmax: per row O subtractions and O additions for the sum, 3 for the row's loss and its
accumulation, 4 per class for dZ = (exp(z − m)·(1/sum) − onehot)·(1/b). The momentum update
v = μ·v − lr·g; p += v is 4 FLOPs per element. The persistent kernel runs the whole step in one
launch an epoch: its FLOPs are those of every operation of the step (the fused path's rows,
summed); its minimum bytes are the step's as one kernel: the order, the b gathered rows of X and
their labels, the parameters and the velocity read once, the parameters, the velocity and the
step's loss written once (H, Z, dZ, dH and the gradients need not leave the chip, so they are
not counted). A row whose instances are k times the model's launches per epoch (a capture of k
epochs) is scaled by k; any other count is not modelled.

Verdict of a row: its achieved GFLOP/s over the FP32 ceiling and its GB/s over the copy
ceiling; "latency-bound" when both fractions are below LATENCY_FRACTION, else "memory-bound" or
"compute-bound" by the larger fraction. A kernel name the model does not know gets "not
modelled" and no FLOPs or bytes: nothing is guessed. The ridge point is the FP32 ceiling over
the copy ceiling, in FLOP per byte.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import pandas as pd

from analysis.labels import enum_argument, kernel_base_name, kernel_labels
from spec.kernels import ENUMS

FLOAT_BYTES = 4   # float32 values
INT_BYTES = 4     # int32 labels and order

# Both fractions of the ceilings below this: the kernel is bound by latency (launch, barriers,
# too little parallel work), not by either ceiling.
LATENCY_FRACTION = 0.10

LATENCY_BOUND = "latency-bound"
MEMORY_BOUND = "memory-bound"
COMPUTE_BOUND = "compute-bound"
NOT_MODELLED = "not modelled"
NOT_TIMED = "not timed"

# What each modelled kernel computes (cuda/paths/stepwise_path.cu, cuda/paths/persistent_path.cu), for the report.
WHAT = {
    "k_gather_batch": "Xb, yb = X_all[order], labels_all[order]",
    "k_fwd_hidden_bias_relu": "H = ReLU(Xb·W1 + b1)",
    "k_fwd_hidden_gemm": "A1 = Xb·W1",
    "k_add_bias<hidden>": "A1 += b1",
    "k_relu": "H = max(A1, 0)",
    "k_fwd_logits_bias": "Z = H·W2 + b2",
    "k_fwd_logits_gemm": "Z = H·W2",
    "k_add_bias<logits>": "Z += b2",
    "k_softmax_xent": "loss, dZ = (softmax(Z) − onehot)/b",
    "k_dW2": "dW2 = Hᵀ·dZ",
    "k_colsum<db2>": "db2 = colsum(dZ)",
    "k_dH_relu_mask": "dH = (dZ·W2ᵀ) ⊙ (H > 0)",
    "k_dH_gemm": "dH = dZ·W2ᵀ",
    "k_relu_mask": "dH ⊙= (H > 0)",
    "k_dW1": "dW1 = Xbᵀ·dH",
    "k_colsum<db1>": "db1 = colsum(dH)",
    "k_momentum_flat": "v = μv − lr·g; p += v (flat buffer)",
    "k_momentum_tensor<W1>": "v = μv − lr·g; p += v (W1)",
    "k_momentum_tensor<b1>": "v = μv − lr·g; p += v (b1)",
    "k_momentum_tensor<W2>": "v = μv − lr·g; p += v (W2)",
    "k_momentum_tensor<b2>": "v = μv − lr·g; p += v (b2)",
    "k_persistent_epoch": "every step of the epoch in one launch",
}

# The fused path's step, whose FLOPs the persistent kernel's step sums.
FUSED_STEP = ("k_gather_batch", "k_fwd_hidden_bias_relu", "k_fwd_logits_bias", "k_softmax_xent",
              "k_dW2", "k_colsum<db2>", "k_dH_relu_mask", "k_dW1", "k_colsum<db1>",
              "k_momentum_flat")
PER_EPOCH = ("k_persistent_epoch",)  # launched once an epoch; every other kernel once a step


@dataclass(frozen=True)
class Shape:
    """The recipe's shape: I, Hd, O, batch B, steps S, train_size."""
    I: int
    Hd: int
    O: int
    B: int
    S: int
    train_size: int

    @property
    def last_batch(self) -> int:
        return self.train_size - (self.S - 1) * self.B

    @property
    def batches(self) -> list[int]:
        """Rows of each step of an epoch."""
        return [self.B] * (self.S - 1) + [self.last_batch]

    @property
    def n_params(self) -> int:
        return self.I * self.Hd + self.Hd + self.Hd * self.O + self.O

    def tensor_sizes(self) -> dict[str, int]:
        return {"W1": self.I * self.Hd, "b1": self.Hd, "W2": self.Hd * self.O, "b2": self.O}


def shape_from_recipe(recipe: dict) -> Shape:
    """The Shape of run.json's "recipe"; ValueError (one line) when a key is missing or the
    step count does not fit train_size and batch."""
    keys = ("input_dim", "hidden_dim", "output_dim", "batch", "steps_per_epoch", "train_size")
    missing = [k for k in keys if not isinstance(recipe.get(k), int) or isinstance(recipe.get(k), bool)]
    if missing:
        raise ValueError(f"recipe lacks integer {', '.join(missing)}")
    s = Shape(I=recipe["input_dim"], Hd=recipe["hidden_dim"], O=recipe["output_dim"],
              B=recipe["batch"], S=recipe["steps_per_epoch"], train_size=recipe["train_size"])
    if min(s.I, s.Hd, s.O, s.B, s.S) <= 0 or not 0 < s.last_batch <= s.B:
        raise ValueError(f"recipe: {s.S} steps of batch {s.B} do not cover train_size "
                         f"{s.train_size} with a last batch of 1..{s.B} rows")
    return s


def gemm_cost(M: int, N: int, K: int, extra_floats: int = 0) -> tuple[int, int]:
    """(FLOPs, minimum bytes) of C[M×N] = A[M×K]·B[K×N] reading `extra_floats` more (bias, mask)."""
    return 2 * M * N * K, (M * K + K * N + M * N + extra_floats) * FLOAT_BYTES


def step_costs(s: Shape, b: int) -> dict[str, tuple[int, int]]:
    """{model key: (FLOPs, minimum bytes)} of one step of b rows, every kernel of every path."""
    I, Hd, O, P = s.I, s.Hd, s.O, s.n_params
    F = FLOAT_BYTES
    out = {
        "k_gather_batch": (0, 2 * b * I * F + 3 * b * INT_BYTES),
        "k_fwd_hidden_bias_relu": gemm_cost(b, Hd, I, Hd),
        "k_fwd_hidden_gemm": gemm_cost(b, Hd, I),
        "k_add_bias<hidden>": (b * Hd, (2 * b * Hd + Hd) * F),
        "k_relu": (0, 2 * b * Hd * F),
        "k_fwd_logits_bias": gemm_cost(b, O, Hd, O),
        "k_fwd_logits_gemm": gemm_cost(b, O, Hd),
        "k_add_bias<logits>": (b * O, (2 * b * O + O) * F),
        "k_softmax_xent": (b * (6 * O + 3), (2 * b * O + 1) * F + b * INT_BYTES),
        "k_dW2": gemm_cost(Hd, O, b),
        "k_colsum<db2>": (b * O, (b * O + O) * F),
        "k_dH_relu_mask": gemm_cost(b, Hd, O, b * Hd),
        "k_dH_gemm": gemm_cost(b, Hd, O),
        "k_relu_mask": (0, 3 * b * Hd * F),
        "k_dW1": gemm_cost(I, Hd, b),
        "k_colsum<db1>": (b * Hd, (b * Hd + Hd) * F),
        "k_momentum_flat": (4 * P, 5 * P * F),
    }
    for t, n in s.tensor_sizes().items():
        out[f"k_momentum_tensor<{t}>"] = (4 * n, 5 * n * F)
    out["k_persistent_epoch"] = (sum(out[k][0] for k in FUSED_STEP),
                                 (b * I + 4 * P + 1) * F + 2 * b * INT_BYTES)
    return out


def epoch_model(s: Shape) -> dict[str, dict]:
    """{model key: {"flops", "bytes", "launches", "what"}} of one epoch: every step's costs
    summed with the true batch sizes; launches is the kernel's instances an epoch."""
    totals: dict[str, list[int]] = {}
    for b in s.batches:
        for key, (f, m) in step_costs(s, b).items():
            acc = totals.setdefault(key, [0, 0])
            acc[0] += f
            acc[1] += m
    return {key: {"flops": f, "bytes": m, "launches": 1 if key in PER_EPOCH else s.S,
                  "what": WHAT[key]} for key, (f, m) in totals.items()}


_BASE_RE = re.compile(r"^(?P<func>[A-Za-z_]\w*)(?:<(?P<arg>.*)>)?$")


def model_key(name: str) -> str | None:
    """The model key of an nsys kernel row ("void mlp::k_colsum<(mlp::Col)1>(int, ...)" ->
    "k_colsum<db2>"), matched on the base name only (namespace, return type and parameter list
    dropped, so an added parameter changes nothing); None for a kernel the model does not know."""
    m = _BASE_RE.match(kernel_base_name(name).replace(" ", ""))
    if not m:
        return None
    func, arg = m.group("func"), m.group("arg")
    if func in ENUMS:
        value = enum_argument(func, arg)
        return None if value is None else f"{func}<{value}>"
    if arg is not None or func not in WHAT:
        return None
    return func


def ceiling_rates(ceilings: dict) -> dict:
    """{"fp32_gflops", "copy_gbps", "ridge" (FLOP/byte)} of a ceilings.json object."""
    fp32 = float(ceilings["fp32_matmul"]["tflops"]) * 1000.0
    copy = float(ceilings["copy"]["gb_per_s"])
    return {"fp32_gflops": fp32, "copy_gbps": copy, "ridge": fp32 / copy}


def verdict(compute_fraction: float, memory_fraction: float) -> str:
    """latency-bound when both fractions are below LATENCY_FRACTION, else the larger decides
    (a tie is memory-bound)."""
    if compute_fraction < LATENCY_FRACTION and memory_fraction < LATENCY_FRACTION:
        return LATENCY_BOUND
    return COMPUTE_BOUND if compute_fraction > memory_fraction else MEMORY_BOUND


def _number(x) -> float | None:
    if x is None:
        return None
    x = float(x)
    return None if math.isnan(x) else x


def roofline_rows(kern: pd.DataFrame, recipe: dict, ceilings: dict) -> list[dict]:
    """One dict per row of a cuda_gpu_kern_sum frame (analysis.nsys_csv.read_kern_sum), in its
    order: name, label (the row's unique short label), key (model key or None), what,
    instances, total_ns, flops and bytes over the row's instances (None when not modelled),
    intensity (FLOP/byte), gflops and gbps achieved, the ceilings fp32_gflops and copy_gbps,
    compute_fraction and memory_fraction of them, ridge and intensity_vs_ridge, verdict, note."""
    shape = shape_from_recipe(recipe)
    model = epoch_model(shape)
    rates = ceiling_rates(ceilings)
    names = kern["name"].tolist()
    labels = kernel_labels(names)
    rows = []
    for (_, r), label in zip(kern.iterrows(), labels):
        key = model_key(r["name"])
        instances, total_ns = _number(r["instances"]), _number(r["total_ns"])
        row = {"name": r["name"], "label": label, "key": key,
               "what": WHAT.get(key, "") if key else "", "instances": instances,
               "total_ns": total_ns, "flops": None, "bytes": None, "intensity": None,
               "gflops": None, "gbps": None, "fp32_gflops": rates["fp32_gflops"],
               "copy_gbps": rates["copy_gbps"], "compute_fraction": None,
               "memory_fraction": None, "ridge": rates["ridge"], "intensity_vs_ridge": None,
               "verdict": NOT_MODELLED, "note": ""}
        rows.append(row)
        if key is None:
            continue
        per_epoch = model[key]["launches"]
        epochs = None if instances is None else instances / per_epoch
        if epochs is None or epochs < 1 or not float(epochs).is_integer():
            row["key"] = None
            row["note"] = (f"{instances:g} instances are not a whole number of epochs of "
                           f"{per_epoch}" if instances is not None else "no instance count")
            continue
        row["flops"] = model[key]["flops"] * int(epochs)
        row["bytes"] = model[key]["bytes"] * int(epochs)
        row["intensity"] = row["flops"] / row["bytes"]
        row["intensity_vs_ridge"] = row["intensity"] / rates["ridge"]
        if not total_ns or total_ns <= 0:
            row["verdict"] = NOT_TIMED
            row["note"] = "no positive total time"
            continue
        row["gflops"] = row["flops"] / total_ns  # FLOP per ns = GFLOP/s
        row["gbps"] = row["bytes"] / total_ns    # byte per ns = GB/s
        row["compute_fraction"] = row["gflops"] / rates["fp32_gflops"]
        row["memory_fraction"] = row["gbps"] / rates["copy_gbps"]
        row["verdict"] = verdict(row["compute_fraction"], row["memory_fraction"])
    return rows


def roofline_frame(kern: pd.DataFrame, recipe: dict, ceilings: dict) -> pd.DataFrame:
    """roofline_rows as a DataFrame (one row per kernel row)."""
    return pd.DataFrame(roofline_rows(kern, recipe, ceilings))
