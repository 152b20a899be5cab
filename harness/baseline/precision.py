"""The precision a PyTorch variant computes in (registry.Variant.precision; the names and their
words: spec/torch_variants.py).

- fp32: float32 throughout with TF32 off (allow_tf32 False for matmul and cuDNN, float32 matmul
  precision "highest"): the baseline's arithmetic and the CUDA paths'.
- tf32: the same float32 tensors, the matrix products in TF32: allow_tf32 True for matmul and
  cuDNN and float32 matmul precision "high", set by setting(TF32) for that variant alone (its
  set-up, so a CUDA-graph capture and an Inductor compile see it too, its epochs and its
  evaluation) and restored after it, so the float32 variants of the same run keep TF32 off.
  TF32 is a CUDA matmul mode: the registry marks the tf32 variants cuda_only (on a CPU,
  precision "high" would instead let oneDNN pick reduced-precision kernels where it has them).
- bf16: the forward and the loss under torch.autocast(device type, bfloat16) (autocast(): the
  matrix products and ReLU in bfloat16, the cross-entropy in float32 as autocast's lists say),
  the backward outside it as usual (each bfloat16 product's gradient comes back to float32
  through the cast's backward), float32 master weights, momentum buffers and update. The
  variant's evaluation runs under the same autocast. TF32 stays off. A CUDA-graph capture and an
  Inductor compile trace the autocast region, so the replayed or compiled step is bfloat16 too.

setting(precision) sets the matmul flags of every precision (TF32 off for fp32 and bf16), so a
variant never inherits another's, and returns them as read back (pytorch.json's "tf32").
"""
from __future__ import annotations

import contextlib

import torch

from spec.torch_variants import BF16, FP32, PRECISIONS, TF32

# (matmul allow_tf32, cuDNN allow_tf32, float32 matmul precision) of each precision
FLAGS = {FP32: (False, False, "highest"), TF32: (True, True, "high"), BF16: (False, False, "highest")}


def check(precision: str) -> str:
    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r}: expected one of {', '.join(PRECISIONS)}")
    return precision


def matmul_settings() -> dict:
    """The TF32 settings as PyTorch reads them back (pytorch.json's "tf32")."""
    return {"matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
            "float32_matmul_precision": torch.get_float32_matmul_precision()}


def apply(matmul_tf32: bool, cudnn_tf32: bool, matmul_precision: str) -> dict:
    """Set the three (the precision first: in this PyTorch it also sets the matmul flag, which is
    then set as asked) through the legacy API only (mixing it with the fp32_precision attributes
    makes PyTorch refuse to read the flags back); returns them as read back."""
    torch.set_float32_matmul_precision(matmul_precision)
    torch.backends.cuda.matmul.allow_tf32 = bool(matmul_tf32)
    torch.backends.cudnn.allow_tf32 = bool(cudnn_tf32)
    return matmul_settings()


@contextlib.contextmanager
def setting(precision: str):
    """The matmul flags of `precision` inside, as they were outside after; yields them as read
    back."""
    before = matmul_settings()
    try:
        yield apply(*FLAGS[check(precision)])
    finally:
        apply(before["matmul_allow_tf32"], before["cudnn_allow_tf32"],
              before["float32_matmul_precision"])


def autocast_device(device, precision: str) -> str | None:
    """The device type a bf16 variant autocasts on ("cuda", "cpu"); None for the other precisions."""
    return torch.device(device).type if check(precision) == BF16 else None


def autocast(device_type: str | None):
    """A fresh context for one forward: torch.autocast(device_type, bfloat16) with no cast cache
    (each weight is cast once a forward anyway, and PyTorch asks for the cache off around CUDA-
    graph captures), or a null context for device_type None (fp32, tf32)."""
    if device_type is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type, dtype=torch.bfloat16, cache_enabled=False)
