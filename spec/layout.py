"""The flat parameter layout of the MLP, the Python side's one owner (C++: cuda/contract/model.h and
cuda/contract/submission.h's mlp_offsets / mlp_workspace_floats).

Parameters, gradients and the momentum velocity are ONE flat float32 buffer, in this order:

    W1 [in × hidden] | b1 [hidden] | W2 [hidden × out] | b2 [out]

row-major, so W1[i, j] joins input i to hidden unit j. Every other Python module asks this one.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

FLOAT_BYTES = 4   # float32 parameters, gradients, state, activations, images
LABEL_BYTES = 4   # int32 labels and epoch orders, as the binary holds them


class Shape(NamedTuple):
    n_in: int
    hidden: int
    out: int


RECIPE_SHAPE = Shape(784, 256, 10)


class Offsets(NamedTuple):
    """Offsets in floats of each tensor in the flat buffer, and the buffer's length."""
    w1: int
    b1: int
    w2: int
    b2: int
    total: int


# MlpStatus of cuda/contract/submission.h, index = value.
STATUS_NAMES = ("ok", "not implemented", "invalid argument", "unsupported shape", "CUDA error")


def as_shape(shape) -> Shape:
    """A Shape from any (in, hidden, out) triple of positive integers."""
    try:
        s = Shape(*(int(x) for x in shape))
    except (TypeError, ValueError):
        raise ValueError(f"shape {shape!r}: expected three integers (in, hidden, out)") from None
    if min(s) < 1:
        raise ValueError(f"shape {tuple(s)}: every width must be at least 1")
    return s


def offsets(shape) -> Offsets:
    s = as_shape(shape)
    b1 = s.n_in * s.hidden
    w2 = b1 + s.hidden
    b2 = w2 + s.hidden * s.out
    return Offsets(0, b1, w2, b2, b2 + s.out)


def n_params(shape) -> int:
    return offsets(shape).total


def infer_shape(total: int, n_in: int, out: int) -> Shape:
    """The shape whose buffer holds `total` floats, given in and out; ValueError if none does."""
    per_unit = n_params((n_in, 1, out)) - out          # in + 1 + out floats per hidden unit
    hidden, rem = divmod(int(total) - int(out), per_unit)
    if rem or hidden < 1:
        raise ValueError(f"{total} parameters do not fit an MLP {n_in}-h-{out}")
    return Shape(int(n_in), hidden, int(out))


def split(flat, shape) -> dict:
    """Views {"W1": [in × hidden], "b1", "W2": [hidden × out], "b2"} into the flat buffer."""
    s, o = as_shape(shape), offsets(shape)
    flat = np.asarray(flat)
    if flat.shape != (o.total,):
        raise ValueError(f"parameters have shape {flat.shape}, expected ({o.total},) for {tuple(s)}")
    return {"W1": flat[o.w1:o.b1].reshape(s.n_in, s.hidden), "b1": flat[o.b1:o.w2],
            "W2": flat[o.w2:o.b2].reshape(s.hidden, s.out), "b2": flat[o.b2:o.total]}


def shape_of(W1, b1, W2, b2) -> Shape:
    """The shape four tensors describe; a mismatch raises ValueError naming it."""
    W1, b1, W2, b2 = (np.asarray(a) for a in (W1, b1, W2, b2))
    if W1.ndim != 2 or W2.ndim != 2:
        raise ValueError(f"W1 and W2 must be matrices, got {W1.shape} and {W2.shape}")
    s = Shape(W1.shape[0], W1.shape[1], W2.shape[1])
    if b1.shape != (s.hidden,) or W2.shape[0] != s.hidden or b2.shape != (s.out,):
        raise ValueError(f"tensors W1 {W1.shape}, b1 {b1.shape}, W2 {W2.shape}, b2 {b2.shape} "
                         "do not form W1 [in×hidden] | b1 [hidden] | W2 [hidden×out] | b2 [out]")
    return s


def join(W1, b1, W2, b2, dtype=np.float32) -> np.ndarray:
    """The flat buffer (float32 unless `dtype` says otherwise) of the four tensors."""
    shape_of(W1, b1, W2, b2)
    return np.concatenate([np.asarray(a, dtype=dtype).ravel() for a in (W1, b1, W2, b2)])


def workspace_floats(shape, batch: int) -> int:
    """Floats of scratch mlp_train_epoch may use (cuda/contract/submission.h mlp_workspace_floats): the
    gathered X [batch × in], its labels [batch], H and dH [batch × hidden], Z and dZ
    [batch × out], the gradients [total]."""
    s, b = as_shape(shape), int(batch)
    return b * s.n_in + b + 2 * b * s.hidden + 2 * b * s.out + n_params(s)


GRADIENT_NOTE = ("the fused and graph paths and PyTorch keep one; the persistent path keeps "
                 "none: each gradient element goes straight into its momentum update")
DATA_NOTE = ("the train and test images as float32 and the train labels as int32, as the binary "
             "holds them (its test labels stay on the host; PyTorch keeps both label sets on the "
             "device as int64)")


def memory_ledger(shape, batch: int, n_train: int, n_test: int, epochs: int | None = None) -> dict:
    """Device memory the shapes call for, in bytes (float32 values, int32 labels and order).

    parameters, gradients (a flat buffer; the persistent path holds none, GRADIENT_NOTE),
    optimizer state for plain SGD (none), SGD with momentum (one velocity per parameter: the
    recipe's) and Adam (two moments), activations of one step (X, H, dH, Z, dZ: batch x
    (in + 2 hidden + 2 out)), the data on the device (DATA_NOTE), and, when `epochs` is given,
    the epoch orders the binary uploads (epochs x n_train int32). total_sgd_momentum_bytes
    adds the recipe's items: parameters, gradients, momentum state, activations, data, order.
    """
    s = as_shape(shape)
    p = n_params(s) * FLOAT_BYTES
    act = int(batch) * (s.n_in + 2 * s.hidden + 2 * s.out) * FLOAT_BYTES
    images = (int(n_train) + int(n_test)) * s.n_in * FLOAT_BYTES
    labels = int(n_train) * LABEL_BYTES
    order = int(epochs) * int(n_train) * LABEL_BYTES if epochs is not None else 0
    out = {
        "parameters_bytes": p,
        "gradients_bytes": p,
        "optimizer_state_bytes": {"sgd": 0, "sgd_momentum": p, "adam": 2 * p},
        "activations_bytes": act,
        "data_images_bytes": images,
        "data_labels_bytes": labels,
        "data_bytes": images + labels,
        "order_bytes": order,
    }
    out["total_sgd_momentum_bytes"] = p + p + p + act + images + labels + order
    return out
