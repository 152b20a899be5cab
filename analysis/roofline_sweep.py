"""The sweep's roofline floor: per point of the width and batch sweep, the least time an epoch
could take on the device's two measured ceilings (results/sweep.json "roofline", SWEEP.md's
roofline table). Pure arithmetic: harness/studies/sweep_point.py computes it when it collects a point,
SWEEP.md prints what sweep.json holds.

One training step of b rows at the shape I-H-O (I = input_dim, 784; H = hidden_dim; O =
output_dim, 10), P = I·H + H + H·O + O parameters, 4-byte float32 values and int32 labels:

- FLOPs (a multiply-add counts 2), the step's five matrix products only:
    forward   2·b·(I·H + H·O)          H = ReLU(X·W1 + b1), Z = H·W2 + b2
    backward  2·b·(2·H·O + I·H)        dW2 = Hᵀ·dZ, dH = dZ·W2ᵀ, dW1 = Xᵀ·dH (no dX: X is data)
  Bias, ReLU, softmax, the column sums and the momentum update are left out (the update's 4·P,
  the largest of them, is about 1/b of the products' FLOPs: 3% at batch 32, under 1% from batch
  128 on), so the compute floor is a lower bound.
- Minimum bytes, with nothing resident in L2 between steps, each item moved once:
    parameters   4·5·P     the forward reads every parameter once; the update reads and writes
                           the parameters and their velocities (the gradients never leave the
                           chip, as in a step that applies them where it makes them)
    batch        4·b·I + 4·b   the batch's X rows and labels read once
    activations  4·2·b·H   H written by the forward and read once by the backward (Z, dZ and dH
                           counted as staying on chip)
  The data order, the loss and the test evaluation are left out: also a lower bound.

An epoch of train_size images at batch B has S = ceil(train_size / B) steps: S − 1 of B rows and
a last one of train_size − (S − 1)·B rows (each step with its real batch). With the FP32 peak F
(results/ceilings.json "fp32_matmul"."tflops": a large float32 matrix product, TF32 off) and the
DRAM bandwidth W ("copy"."gb_per_s": a large device-to-device copy, bytes read plus written):

    floor = Σ_steps max(FLOPs_step / F, bytes_step / W)

bound: "compute" when Σ_steps FLOPs_step / F ≥ Σ_steps bytes_step / W over the epoch, else
"memory". A measured median epoch t gives share_of_floor = floor / t (1 at the floor) and
achieved TFLOP/s = FLOPs_epoch / t.
"""
from __future__ import annotations

import math

FLOAT_BYTES = 4
LABEL_BYTES = 4
PARAM_TRANSFERS = 5          # the forward's read, the update's read and write of params and velocity
ACTIVATION_TRANSFERS = 2     # H written once, read once
COMPUTE, MEMORY = "compute", "memory"

# The model in one line each, for SWEEP.md (the template holds no number).
FLOPS_FORMULA = "2·b·(I·H + H·O) forward + 2·b·(2·H·O + I·H) backward (dW2, dH, dW1; no dX)"
BYTES_FORMULA = ("4·(5·P + b·I + b + 2·b·H): every parameter read by the forward, the parameters "
                 "and velocities read and written by the update, the batch's X rows and labels "
                 "read, H written and read once")
FLOOR_FORMULA = "Σ over the epoch's steps of max(FLOPs / FP32 peak, bytes / DRAM bandwidth)"


def n_params(I: int, H: int, O: int) -> int:
    return I * H + H + H * O + O


def step_flops(I: int, H: int, O: int, b: int) -> int:
    """FLOPs of one step of b rows: the forward's two products and the backward's three."""
    return 2 * b * (I * H + H * O) + 2 * b * (2 * H * O + I * H)


def step_bytes(I: int, H: int, O: int, b: int) -> int:
    """Minimum bytes of one step of b rows (the module docstring's three items)."""
    return (PARAM_TRANSFERS * n_params(I, H, O) * FLOAT_BYTES
            + b * I * FLOAT_BYTES + b * LABEL_BYTES
            + ACTIVATION_TRANSFERS * b * H * FLOAT_BYTES)


def epoch_batches(train_size: int, batch: int) -> list[tuple[int, int]]:
    """[(rows, steps)] of an epoch: S − 1 steps of `batch` rows and a last, possibly short, one."""
    if train_size < 1 or batch < 1:
        raise ValueError(f"train_size {train_size} and batch {batch} must be positive")
    steps = -(-train_size // batch)
    last = train_size - (steps - 1) * batch
    if last == batch:
        return [(batch, steps)]
    return ([(batch, steps - 1)] if steps > 1 else []) + [(last, 1)]


def _ms(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) \
        and math.isfinite(x) and x > 0 else None


def epoch_floor(I: int, H: int, O: int, batch: int, train_size: int, fp32_tflops: float,
                dram_gb_per_s: float) -> dict:
    """The epoch's FLOPs, minimum bytes and floor (module docstring): {"steps", "last_batch",
    "flops_per_epoch", "bytes_per_epoch", "gflop_per_epoch", "mb_per_epoch", "compute_ms",
    "memory_ms", "floor_ms", "bound"} (MB = 10⁶ bytes; compute_ms and memory_ms are the two
    terms summed over the steps, each alone)."""
    if not (_ms(fp32_tflops) and _ms(dram_gb_per_s)):
        raise ValueError(f"ceilings must be positive numbers, got {fp32_tflops!r} TFLOP/s and "
                         f"{dram_gb_per_s!r} GB/s")
    flop_rate, byte_rate = fp32_tflops * 1e12, dram_gb_per_s * 1e9
    flops = nbytes = 0
    compute_s = memory_s = floor_s = 0.0
    batches = epoch_batches(train_size, batch)
    for rows, count in batches:
        f, m = step_flops(I, H, O, rows), step_bytes(I, H, O, rows)
        flops += count * f
        nbytes += count * m
        compute_s += count * f / flop_rate
        memory_s += count * m / byte_rate
        floor_s += count * max(f / flop_rate, m / byte_rate)
    return {"steps": sum(c for _, c in batches), "last_batch": batches[-1][0],
            "flops_per_epoch": flops, "bytes_per_epoch": nbytes,
            "gflop_per_epoch": flops / 1e9, "mb_per_epoch": nbytes / 1e6,
            "compute_ms": compute_s * 1e3, "memory_ms": memory_s * 1e3, "floor_ms": floor_s * 1e3,
            "bound": COMPUTE if compute_s >= memory_s else MEMORY}


def against(floor: dict, median_ms) -> dict:
    """A measured median epoch against the floor: {"ms", "share_of_floor", "achieved_tflops"}
    (None where the median is absent)."""
    t = _ms(median_ms)
    return {"ms": t,
            "share_of_floor": floor["floor_ms"] / t if t else None,
            "achieved_tflops": floor["flops_per_epoch"] / (t / 1e3) / 1e12 if t else None}


def point_roofline(I: int, H: int, O: int, batch: int, train_size: int, ceilings: dict,
                   best_ms=None, best_path=None, torch_ms=None, torch_variant=None) -> dict:
    """sweep.json's "roofline" of one point: epoch_floor() with the best CUDA path's and PyTorch's
    fastest variant's median epochs set against it ("best": against(), "pytorch_fastest": the
    same), and the ceilings used. ceilings: {"fp32_tflops", "dram_gb_per_s"}."""
    floor = epoch_floor(I, H, O, batch, train_size, ceilings["fp32_tflops"],
                        ceilings["dram_gb_per_s"])
    return floor | {
        "fp32_tflops": ceilings["fp32_tflops"], "dram_gb_per_s": ceilings["dram_gb_per_s"],
        "best": against(floor, best_ms) | {"path": best_path},
        "pytorch_fastest": against(floor, torch_ms) | {"variant": torch_variant}}


def ceilings_of(doc: dict) -> dict:
    """{"fp32_tflops", "dram_gb_per_s", "gpu", "commit", "date_utc"} of a parsed
    results/ceilings.json; ValueError (one line) when either ceiling is not a positive number."""
    try:
        fp32 = doc["fp32_matmul"]["tflops"]
        dram = doc["copy"]["gb_per_s"]
    except (KeyError, TypeError):
        raise ValueError("lacks fp32_matmul.tflops or copy.gb_per_s") from None
    if not (_ms(fp32) and _ms(dram)):
        raise ValueError(f"fp32_matmul.tflops {fp32!r} and copy.gb_per_s {dram!r} must be "
                         "positive numbers")
    return {"fp32_tflops": float(fp32), "dram_gb_per_s": float(dram), "gpu": doc.get("gpu"),
            "commit": doc.get("commit"), "date_utc": doc.get("date_utc")}
