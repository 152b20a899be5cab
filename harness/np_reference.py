"""A plain numpy float64 reference of the MLP training workload (cuda/submission.h's equations).

Deliberately independent of the rest of the harness and of torch: only numpy. Everything is
computed in float64 whatever the input dtype, so it can serve as the yardstick for the CUDA
kernels, the PyTorch baseline and a C++ float64 reference.

Model (shape = (in, hidden, out), parameters in ONE flat buffer [W1 | b1 | W2 | b2], W1 and W2
row-major so that W1[i, j] joins input i to hidden unit j):
    H = ReLU(X·W1 + b1)          Z = H·W2 + b2
    loss = mean_i( logsumexp(Z_i) - Z_i[label_i] )
    dZ = (softmax(Z) - onehot(labels)) / B
    dW2 = Hᵀ·dZ   db2 = colsum(dZ)   dH = (dZ·W2ᵀ) ⊙ (H > 0)   dW1 = Xᵀ·dH   db1 = colsum(dH)
SGD with momentum, elementwise over the flat buffer:
    v = mu·v - lr·g ;  w = w + v
"""
from __future__ import annotations

import numpy as np


def offsets(shape) -> dict:
    """Offsets (in elements) of w1, b1, w2, b2 in the flat buffer, and its total length."""
    n_in, n_hidden, n_out = (int(x) for x in shape)
    w1 = 0
    b1 = w1 + n_in * n_hidden
    w2 = b1 + n_hidden
    b2 = w2 + n_hidden * n_out
    total = b2 + n_out
    return {"w1": w1, "b1": b1, "w2": w2, "b2": b2, "total": total}


def unpack(params, shape):
    """Views (W1 [in×hidden], b1, W2 [hidden×out], b2) into the flat buffer `params`."""
    n_in, n_hidden, n_out = (int(x) for x in shape)
    o = offsets(shape)
    if params.shape != (o["total"],):
        raise ValueError(f"params has shape {params.shape}, expected ({o['total']},)")
    W1 = params[o["w1"]:o["b1"]].reshape(n_in, n_hidden)
    b1 = params[o["b1"]:o["w2"]]
    W2 = params[o["w2"]:o["b2"]].reshape(n_hidden, n_out)
    b2 = params[o["b2"]:o["total"]]
    return W1, b1, W2, b2


def forward(params, X, shape):
    """H = ReLU(X·W1 + b1), Z = H·W2 + b2, both float64."""
    params = np.asarray(params, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    W1, b1, W2, b2 = unpack(params, shape)
    H = np.maximum(X @ W1 + b1, 0.0)
    Z = H @ W2 + b2
    return H, Z


def loss_and_dz(Z, labels):
    """Mean softmax cross-entropy over the batch and dZ = (softmax(Z) - onehot) / B.

    Stable for large logits: each row's max is subtracted before exponentiating.
    """
    Z = np.asarray(Z, dtype=np.float64)
    labels = np.asarray(labels).astype(np.int64)
    B = Z.shape[0]
    shifted = Z - Z.max(axis=1, keepdims=True)
    log_sum = np.log(np.exp(shifted).sum(axis=1))
    rows = np.arange(B)
    losses = log_sum - shifted[rows, labels]          # logsumexp(Z_i) - Z_i[label_i]
    softmax = np.exp(shifted - log_sum[:, None])
    dZ = softmax.copy()
    dZ[rows, labels] -= 1.0
    dZ /= B
    return float(losses.mean()), dZ


def backward(params, X, H, dZ, shape):
    """Flat float64 gradients in the parameter layout (see the module docstring)."""
    params = np.asarray(params, dtype=np.float64)
    X = np.asarray(X, dtype=np.float64)
    H = np.asarray(H, dtype=np.float64)
    dZ = np.asarray(dZ, dtype=np.float64)
    _, _, W2, _ = unpack(params, shape)
    grads = np.zeros(offsets(shape)["total"], dtype=np.float64)
    dW1, db1, dW2, db2 = unpack(grads, shape)          # views into `grads`
    dW2[...] = H.T @ dZ
    db2[...] = dZ.sum(axis=0)
    dH = (dZ @ W2.T) * (H > 0)
    dW1[...] = X.T @ dH
    db1[...] = dH.sum(axis=0)
    return grads


def step(params, velocity, grads, lr, mu):
    """One SGD-with-momentum step, in place: v = mu*v - lr*g ; w = w + v."""
    velocity *= mu
    velocity -= lr * grads
    params += velocity
    return params, velocity


def shape_of(params, X, n_out: int = 10, n_hidden: int | None = None):
    """Infer (in, hidden, out) from the flat parameter count, the input width and out."""
    n_in = X.shape[1]
    if n_hidden is None:
        # total = in*h + h + h*out + out  ->  h = (total - out) / (in + 1 + out)
        n_hidden, rem = divmod(params.shape[0] - n_out, n_in + 1 + n_out)
        if rem:
            raise ValueError("cannot infer the hidden width from the parameter count")
    return (n_in, n_hidden, n_out)


def train_epoch(params, velocity, X, y, order_row, batch, lr, mu, shape=None):
    """One epoch in place over float64 `params`/`velocity`; returns the per-step batch-mean losses.

    Step t takes rows order_row[t*batch : (t+1)*batch] (the last batch may be short).
    """
    if shape is None:
        shape = shape_of(params, X)
    order_row = np.asarray(order_row)
    n = order_row.shape[0]
    losses = []
    for start in range(0, n, batch):
        idx = order_row[start:start + batch]
        Xb = np.asarray(X[idx], dtype=np.float64)
        yb = y[idx]
        H, Z = forward(params, Xb, shape)
        loss, dZ = loss_and_dz(Z, yb)
        grads = backward(params, Xb, H, dZ, shape)
        step(params, velocity, grads, lr, mu)
        losses.append(loss)
    return np.array(losses, dtype=np.float64)


def evaluate(params, X, y, shape=None, chunk: int = 4096):
    """(accuracy as a fraction, mean cross-entropy loss) over all rows of X."""
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
