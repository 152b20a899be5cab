"""harness.data.np_reference: its backward against central finite differences, and its step formula."""
from __future__ import annotations

import numpy as np
import pytest

from harness.data import np_reference as ref

SHAPE = (12, 9, 5)   # small in, hidden, out


def _problem(seed=0, batch=7):
    rng = np.random.default_rng(seed)
    n = ref.offsets(SHAPE)["total"]
    params = rng.normal(0.0, 0.5, n)
    X = rng.uniform(0.0, 1.0, (batch, SHAPE[0]))
    y = rng.integers(0, SHAPE[2], batch)
    return rng, params, X, y


def _loss(params, X, y):
    _, Z = ref.forward(params, X, SHAPE)
    return ref.loss_and_dz(Z, y)[0]


def test_offsets_layout():
    o = ref.offsets((784, 256, 10))
    assert (o["w1"], o["b1"], o["w2"], o["b2"], o["total"]) == (0, 200704, 200960, 203520, 203530)


def test_forward_matches_definition():
    _, params, X, y = _problem()
    W1, b1, W2, b2 = ref.unpack(params, SHAPE)
    H, Z = ref.forward(params, X, SHAPE)
    # loop-level definition of H = ReLU(X·W1 + b1), W1[i, j] joining input i to hidden j
    for r in range(X.shape[0]):
        for j in range(SHAPE[1]):
            a = b1[j] + sum(X[r, i] * params[i * SHAPE[1] + j] for i in range(SHAPE[0]))
            assert H[r, j] == pytest.approx(max(a, 0.0), rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(Z, H @ W2 + b2, rtol=1e-12)


def test_loss_and_dz():
    Z = np.array([[1.0, 2.0, 3.0], [60.0, -60.0, 0.0], [-60.0, 60.0, 59.0]])
    y = np.array([2, 1, 1])
    loss, dZ = ref.loss_and_dz(Z, y)
    naive = [np.log(np.exp(z - z.max()).sum()) + z.max() - z[k] for z, k in zip(Z, y)]
    assert loss == pytest.approx(np.mean(naive), rel=1e-12)
    assert np.all(np.isfinite(dZ))
    np.testing.assert_allclose(dZ.sum(axis=1), 0.0, atol=1e-15)
    sm = np.exp(Z - Z.max(1, keepdims=True))
    sm /= sm.sum(1, keepdims=True)
    onehot = np.eye(3)[y]
    np.testing.assert_allclose(dZ, (sm - onehot) / 3, rtol=1e-12, atol=1e-300)


def test_backward_against_finite_differences():
    rng, params, X, y = _problem(seed=1)
    H, Z = ref.forward(params, X, SHAPE)
    _, dZ = ref.loss_and_dz(Z, y)
    grads = ref.backward(params, X, H, dZ, SHAPE)
    assert grads.shape == params.shape and grads.dtype == np.float64
    o = ref.offsets(SHAPE)
    # ~50 random coordinates, including some of every tensor
    coords = set(rng.choice(o["total"], 42, replace=False).tolist())
    for lo, hi in ((o["w1"], o["b1"]), (o["b1"], o["w2"]), (o["w2"], o["b2"]), (o["b2"], o["total"])):
        coords.update(rng.integers(lo, hi, 2).tolist())
    assert len(coords) >= 45
    h = 1e-6
    checked = 0
    for k in sorted(coords):
        p_plus, p_minus = params.copy(), params.copy()
        p_plus[k] += h
        p_minus[k] -= h
        # a kink of the ReLU inside [p-h, p+h] would spoil the difference: skip it
        Hp, _ = ref.forward(p_plus, X, SHAPE)
        Hm, _ = ref.forward(p_minus, X, SHAPE)
        if not np.array_equal(Hp > 0, H > 0) or not np.array_equal(Hm > 0, H > 0):
            continue
        fd = (_loss(p_plus, X, y) - _loss(p_minus, X, y)) / (2 * h)
        assert grads[k] == pytest.approx(fd, rel=1e-5, abs=1e-8), f"coordinate {k}"
        checked += 1
    assert checked >= 40


def test_step_formula():
    rng = np.random.default_rng(2)
    params = rng.normal(size=20)
    velocity = rng.normal(size=20)
    grads = rng.normal(size=20)
    p0, v0 = params.copy(), velocity.copy()
    p_out, v_out = ref.step(params, velocity, grads, 0.1, 0.9)
    v_expected = 0.9 * v0 - 0.1 * grads
    np.testing.assert_allclose(velocity, v_expected, rtol=1e-15)
    np.testing.assert_allclose(params, p0 + v_expected, rtol=1e-15)
    assert p_out is params and v_out is velocity      # in place


def test_train_epoch_steps_and_short_last_batch():
    rng, _, _, _ = _problem()
    n = 23
    X = rng.uniform(0, 1, (n, SHAPE[0]))
    y = rng.integers(0, SHAPE[2], n)
    params = rng.normal(0, 0.3, ref.offsets(SHAPE)["total"])
    velocity = np.zeros_like(params)
    order = rng.permutation(n)
    p_copy, v_copy = params.copy(), velocity.copy()
    losses = ref.train_epoch(params, velocity, X, y, order, 8, 0.1, 0.9, shape=SHAPE)
    assert losses.shape == (3,)                       # 8 + 8 + 7
    # the same by hand
    for t, start in enumerate(range(0, n, 8)):
        idx = order[start:start + 8]
        H, Z = ref.forward(p_copy, X[idx], SHAPE)
        loss, dZ = ref.loss_and_dz(Z, y[idx])
        assert losses[t] == pytest.approx(loss, rel=1e-12)
        ref.step(p_copy, v_copy, ref.backward(p_copy, X[idx], H, dZ, SHAPE), 0.1, 0.9)
    np.testing.assert_allclose(params, p_copy, rtol=1e-12)
    assert ref.epoch_loss(losses, n, 8) == pytest.approx((8 * losses[0] + 8 * losses[1] + 7 * losses[2]) / n)
    acc, mean_loss = ref.evaluate(params, X, y, shape=SHAPE)
    assert 0.0 <= acc <= 1.0 and np.isfinite(mean_loss)
