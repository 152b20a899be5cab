"""The one numpy trainer of the MLP workload (cuda/contract/submission.h's equations); only numpy and spec.

By default everything is float64 whatever the input dtype: the yardstick for the CUDA kernels,
the PyTorch baseline and the C++ float64 reference. `dtype` and `accumulate` select the other
precisions the loss-band study compares (harness/studies/loss_band_study.py): values stored in `dtype`,
every matrix product and column sum accumulated in `accumulate` (default: `dtype`) and rounded
once to `dtype`, the bias added before that rounding (what cuda/kernels/stepwise.cuh's stepwise GEMMs do).

Model (parameters in ONE flat buffer, spec/layout.py):
    H = ReLU(X·W1 + b1)          Z = H·W2 + b2
    loss = mean_i( logsumexp(Z_i) - Z_i[label_i] )
    dZ = (softmax(Z) - onehot(labels)) / B
    dW2 = Hᵀ·dZ   db2 = colsum(dZ)   dH = (dZ·W2ᵀ) ⊙ (H > 0)   dW1 = Xᵀ·dH   db1 = colsum(dH)
SGD with momentum, elementwise over the flat buffer:
    v = mu·v - lr·g ;  w = w + v
"""
from __future__ import annotations

import numpy as np

from spec import layout


def offsets(shape) -> dict:
    """spec.layout.offsets as a dict {"w1", "b1", "w2", "b2", "total"}."""
    return layout.offsets(shape)._asdict()


def unpack(params, shape):
    """Views (W1 [in×hidden], b1, W2 [hidden×out], b2) into the flat buffer `params`."""
    t = layout.split(params, shape)
    return t["W1"], t["b1"], t["W2"], t["b2"]


def _mm(a, b, bias, dtype, acc):
    """a·b (+ bias) accumulated in `acc`, rounded once to `dtype`."""
    if acc is dtype:
        return a @ b if bias is None else a @ b + bias
    r = a.astype(acc) @ b.astype(acc)
    return (r if bias is None else r + bias.astype(acc)).astype(dtype)


def _colsum(a, dtype, acc):
    return a.sum(axis=0) if acc is dtype else a.astype(acc).sum(axis=0).astype(dtype)


def forward(params, X, shape, dtype=np.float64, accumulate=None):
    """H = ReLU(X·W1 + b1), Z = H·W2 + b2, both in `dtype`."""
    acc = accumulate or dtype
    params, X = np.asarray(params, dtype=dtype), np.asarray(X, dtype=dtype)
    W1, b1, W2, b2 = unpack(params, shape)
    H = np.maximum(_mm(X, W1, b1, dtype, acc), 0)
    return H, _mm(H, W2, b2, dtype, acc)


def loss_and_dz(Z, labels, dtype=np.float64):
    """Mean softmax cross-entropy over the batch (summed in float64) and dZ = (softmax(Z) -
    onehot) / B in `dtype`. Stable for large logits: each row's max is subtracted first."""
    Z = np.asarray(Z, dtype=dtype)
    labels = np.asarray(labels).astype(np.int64)
    B = Z.shape[0]
    rows = np.arange(B)
    shifted = Z - Z.max(axis=1, keepdims=True)
    E = np.exp(shifted)
    S = E.sum(axis=1, keepdims=True)
    loss = float(np.sum(np.log(S[:, 0]) - shifted[rows, labels], dtype=np.float64)) / B
    dZ = E / S
    dZ[rows, labels] -= 1
    dZ /= dtype(B)
    return loss, dZ


def backward(params, X, H, dZ, shape, dtype=np.float64, accumulate=None):
    """Flat gradients in the parameter layout (see the module docstring), in `dtype`."""
    acc = accumulate or dtype
    params, X, H, dZ = (np.asarray(a, dtype=dtype) for a in (params, X, H, dZ))
    _, _, W2, _ = unpack(params, shape)
    dH = _mm(dZ, W2.T, None, dtype, acc) * (H > 0)
    return layout.join(_mm(X.T, dH, None, dtype, acc), _colsum(dH, dtype, acc),
                       _mm(H.T, dZ, None, dtype, acc), _colsum(dZ, dtype, acc), dtype=dtype)


def step(params, velocity, grads, lr, mu):
    """One SGD-with-momentum step, in place: v = mu*v - lr*g ; w = w + v (lr, mu in the
    parameters' dtype)."""
    lr, mu = params.dtype.type(lr), params.dtype.type(mu)
    velocity *= mu
    velocity -= lr * grads
    params += velocity
    return params, velocity


def shape_of(params, X, n_out: int = 10, n_hidden: int | None = None):
    """Infer (in, hidden, out) from the flat parameter count, the input width and out."""
    if n_hidden is None:
        return layout.infer_shape(params.shape[0], X.shape[1], n_out)
    return layout.Shape(X.shape[1], n_hidden, n_out)


def train_epoch(params, velocity, X, y, order_row, batch, lr, mu, shape=None, accumulate=None):
    """One epoch in place over `params`/`velocity` (both of one dtype: the storage precision);
    returns the per-step batch-mean losses (float64).

    Step t takes rows order_row[t*batch : (t+1)*batch] (the last batch may be short)."""
    if shape is None:
        shape = shape_of(params, X)
    dtype = params.dtype.type
    if velocity.dtype != params.dtype:
        raise ValueError(f"velocity is {velocity.dtype}, parameters {params.dtype}")
    order_row = np.asarray(order_row)
    losses = []
    for start in range(0, order_row.shape[0], batch):
        idx = order_row[start:start + batch]
        Xb = np.asarray(X[idx], dtype=dtype)
        H, Z = forward(params, Xb, shape, dtype, accumulate)
        loss, dZ = loss_and_dz(Z, y[idx], dtype)
        step(params, velocity, backward(params, Xb, H, dZ, shape, dtype, accumulate), lr, mu)
        losses.append(loss)
    return np.array(losses, dtype=np.float64)


def evaluate(params, X, y, shape=None, chunk: int = 4096):
    """(accuracy as a fraction, mean cross-entropy loss) over all rows of X, in float64."""
    if shape is None:
        shape = shape_of(np.asarray(params), X)
    correct = 0
    loss_sum = 0.0
    n = X.shape[0]
    for start in range(0, n, chunk):
        Xc, yc = X[start:start + chunk], np.asarray(y[start:start + chunk]).astype(np.int64)
        _, Z = forward(params, Xc, shape)
        loss, _ = loss_and_dz(Z, yc)
        loss_sum += loss * Xc.shape[0]
        correct += int((Z.argmax(axis=1) == yc).sum())
    return correct / n, loss_sum / n


def epoch_loss(step_losses, n_samples, batch):
    """Mean loss per sample over an epoch: each step's batch-mean weighted by its batch size."""
    sizes = [min(batch, n_samples - s) for s in range(0, n_samples, batch)]
    return float(np.dot(np.asarray(step_losses, dtype=np.float64), sizes) / n_samples)


def train_losses(init_params, orders, X, y, batch, lr, mu, shape=None, dtype=np.float64,
                 accumulate=None) -> list[float]:
    """The mean training loss per sample of each epoch of `orders` from `init_params`, stored in
    `dtype`, accumulated in `accumulate` (default `dtype`); no evaluation."""
    params = np.asarray(init_params).astype(dtype)          # a copy
    velocity = np.zeros_like(params)
    X = np.asarray(X).astype(dtype)
    return [epoch_loss(train_epoch(params, velocity, X, y, order, batch, lr, mu, shape, accumulate),
                       len(order), batch) for order in orders]


def train(init_params, order, data, batch, lr, mu, epochs=None, shape=None):
    """Full float64 run from `init_params` over `order` rows; per-epoch accuracy and loss."""
    params = np.asarray(init_params, dtype=np.float64).copy()
    velocity = np.zeros_like(params)
    X, y = data["train_images"], data["train_labels"]
    Xt, yt = data["test_images"], data["test_labels"]
    if shape is None:
        shape = shape_of(params, X)
    epochs = order.shape[0] if epochs is None else epochs
    acc, loss = [], []
    for e in range(epochs):
        step_losses = train_epoch(params, velocity, X, y, order[e], batch, lr, mu, shape)
        loss.append(epoch_loss(step_losses, order.shape[1], batch))
        acc.append(evaluate(params, Xt, yt, shape)[0])
    return {"params": params, "test_accuracy": acc[-1], "test_accuracy_per_epoch": acc,
            "loss_per_epoch": loss}
