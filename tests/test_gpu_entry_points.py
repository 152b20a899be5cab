"""GPU: every entry point of build/libmlp.so against numpy float64 on random inputs, at batch sizes
1, 7, 112, 128, 129 and 300 and at several widths; tolerances are printed."""
from __future__ import annotations

import numpy as np
import pytest

from harness.data import np_reference as npref

pytestmark = pytest.mark.gpu

BATCHES = [1, 7, 112, 128, 129, 300]
SHAPES = [(784, 256, 10), (784, 64, 10), (100, 1000, 13)]
RTOL = 2e-5  # norm-wise, float32 against float64: ~sqrt(K)·u with margin


@pytest.fixture(scope="module")
def sub():
    from harness.binding import Submission
    return Submission()


def rel(got, ref):
    return float(np.linalg.norm(np.asarray(got, np.float64) - ref) / max(np.linalg.norm(ref), 1e-300))


def draw(shape, batch, seed):
    rng = np.random.default_rng(seed)
    o = npref.offsets(shape)
    params = (rng.standard_normal(o["total"]) * 0.05).astype(np.float32)
    X = rng.random((batch, shape[0]), dtype=np.float32)
    y = rng.integers(0, shape[2], size=batch).astype(np.int32)
    return params, X, y


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("batch", BATCHES)
def test_forward_loss_backward(sub, shape, batch):
    params, X, y = draw(shape, batch, batch * 7 + shape[1])
    H, Z = sub.forward(shape, params, X)
    Hr, Zr = npref.forward(params, X, shape)
    print(f"tolerance: relative norm error <= {RTOL}")
    assert np.isfinite(Z).all() and rel(Z, Zr) < RTOL and rel(H, Hr) < RTOL
    loss, dZ = sub.loss(shape, Z, y)
    lr_, dZr = npref.loss_and_dz(Z, y)
    assert abs(loss - lr_) <= 1e-5 * abs(lr_) and rel(dZ, dZr) < RTOL
    grads, dX = sub.backward(shape, params, X, H, dZ, want_dx=True)
    gr = npref.backward(params, X, H.astype(np.float64), dZ.astype(np.float64), shape)
    o = npref.offsets(shape)
    for name, a, b in (("W1", "w1", "b1"), ("b1", "b1", "w2"), ("W2", "w2", "b2"), ("b2", "b2", "total")):
        assert rel(grads[o[a]:o[b]], gr[o[a]:o[b]]) < RTOL, name
    W1, _, W2, _ = npref.unpack(params.astype(np.float64), shape)
    dH = (dZ.astype(np.float64) @ W2.T) * (H > 0)
    assert rel(dX, dH @ W1.T) < RTOL


def test_step_elementwise(sub):
    rng = np.random.default_rng(5)
    n = 203530
    p, v, g = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
    P, V = sub.step(p, v, g, 0.1, 0.9)
    vr = 0.9 * v.astype(np.float64) - np.float64(np.float32(0.1)) * g
    pr = p + vr
    print("tolerance: |got - ref| <= 1e-6 + 1e-5 |ref|")
    assert (np.abs(V - vr) <= 1e-6 + 1e-5 * np.abs(vr)).all()
    assert (np.abs(P - pr) <= 1e-6 + 1e-5 * np.abs(pr)).all()


@pytest.mark.parametrize("batch", [128, 129, 300])
def test_train_epoch_matches_numpy(sub, batch):
    shape = (784, 256, 10)
    from harness.data.dataset import load_dataset
    d = load_dataset()
    rng = np.random.default_rng(batch)
    order = rng.permutation(600).astype(np.int32)
    params = (rng.standard_normal(npref.offsets(shape)["total"]) * 0.03).astype(np.float32)
    vel = np.zeros_like(params)
    P, V, losses = sub.train_epoch(shape, params, vel, d["train_images"], d["train_labels"], order, batch, 0.1, 0.9)
    p64, v64 = params.astype(np.float64), vel.astype(np.float64)
    ref = npref.train_epoch(p64, v64, d["train_images"], d["train_labels"], order, batch, 0.1, 0.9, shape)
    print("tolerance: step losses relative 1e-4, parameters relative norm 1e-4")
    np.testing.assert_allclose(losses, ref, rtol=1e-4)
    assert rel(P, p64) < 1e-4 and rel(V, v64) < 1e-3


# General shapes (issue 8): no size is hard-coded in the kernels; tails are handled.
@pytest.mark.parametrize("shape, batch", [((784, 64, 10), 128), ((784, 1000, 10), 128), ((784, 4096, 10), 128),
                                          ((784, 256, 10), 1), ((784, 256, 10), 2048)])
def test_general_shapes(sub, shape, batch):
    test_forward_loss_backward(sub, shape, batch)
