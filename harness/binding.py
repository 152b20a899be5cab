"""ctypes + numpy binding of the five entry points in build/libmlp.so (cuda/contract/submission.h).

Each call copies numpy arrays to the device, poisons the outputs with NaN (all bits set), calls
the entry point on the default stream, synchronises and copies the outputs back. A non-zero
status raises SubmissionStatus naming the entry point and the status.
"""
from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from spec import layout
from spec.files import BUILD_DIR


class MlpShape(ctypes.Structure):
    _fields_ = [("in_", ctypes.c_int), ("hidden", ctypes.c_int), ("out", ctypes.c_int)]


class SubmissionStatus(RuntimeError):
    def __init__(self, fn: str, status: int):
        name = layout.STATUS_NAMES[status] if 0 <= status < len(layout.STATUS_NAMES) else status
        super().__init__(f"{fn} returned {name}")
        self.status = status


class CudaFailure(RuntimeError):
    pass


class Submission:
    """The library's entry points, callable on numpy arrays."""

    def __init__(self, path: Path = BUILD_DIR / "libmlp.so"):
        if not Path(path).exists():
            raise FileNotFoundError(f"{path} missing: run `invoke build` first")
        self.lib = ctypes.CDLL(str(path))
        vp, sz, i32, f32 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_float
        sig = {
            "mlp_forward": [MlpShape, vp, vp, i32, vp, vp, vp],
            "mlp_loss": [MlpShape, vp, vp, i32, vp, vp, vp],
            "mlp_backward": [MlpShape, vp, vp, vp, vp, i32, vp, vp, vp, vp],
            "mlp_step": [vp, vp, vp, sz, f32, f32, vp],
            "mlp_train_epoch": [MlpShape, vp, vp, vp, vp, vp, i32, i32, f32, f32, vp, vp, vp],
            "mlpx_device_count": [ctypes.POINTER(i32)],
            "mlpx_malloc": [ctypes.POINTER(vp), sz],
            "mlpx_free": [vp],
            "mlpx_memset": [vp, i32, sz],
            "mlpx_h2d": [vp, vp, sz],
            "mlpx_d2h": [vp, vp, sz],
            "mlpx_sync": [],
        }
        for name, args in sig.items():
            fn = getattr(self.lib, name)
            fn.argtypes, fn.restype = args, i32
        self.lib.mlpx_error_string.argtypes, self.lib.mlpx_error_string.restype = [i32], ctypes.c_char_p
        self._live: list[int] = []

    # -- device memory ---------------------------------------------------------------------
    def _check(self, err: int, what: str) -> None:
        if err:
            raise CudaFailure(f"{what}: {self.lib.mlpx_error_string(err).decode()}")

    def _alloc(self, nbytes: int) -> int:
        p = ctypes.c_void_p()
        self._check(self.lib.mlpx_malloc(ctypes.byref(p), max(nbytes, 4)), "cudaMalloc")
        self._live.append(p.value)
        return p.value

    def to_device(self, a: np.ndarray) -> int:
        a = np.ascontiguousarray(a)
        p = self._alloc(a.nbytes)
        self._check(self.lib.mlpx_h2d(p, a.ctypes.data, a.nbytes), "cudaMemcpy H2D")
        return p

    def poisoned(self, n: int, dtype=np.float32) -> int:
        p = self._alloc(n * np.dtype(dtype).itemsize)
        self._check(self.lib.mlpx_memset(p, 0xFF, n * np.dtype(dtype).itemsize), "cudaMemset")
        return p

    def to_host(self, p: int, shape, dtype=np.float32) -> np.ndarray:
        out = np.empty(shape, dtype=dtype)
        self._check(self.lib.mlpx_d2h(out.ctypes.data, p, out.nbytes), "cudaMemcpy D2H")
        return out

    def free_all(self) -> None:
        for p in self._live:
            self.lib.mlpx_free(p)
        self._live.clear()

    def _call(self, name: str, *args) -> None:
        st = getattr(self.lib, name)(*args)
        if st:
            raise SubmissionStatus(name, st)
        self._check(self.lib.mlpx_sync(), f"{name} (synchronise)")

    # -- the five entry points -------------------------------------------------------------
    def forward(self, shape, params, X):
        B = X.shape[0]
        s = MlpShape(*shape)
        dp, dX = self.to_device(params.astype(np.float32)), self.to_device(X.astype(np.float32))
        dH, dZ = self.poisoned(B * shape[1]), self.poisoned(B * shape[2])
        try:
            self._call("mlp_forward", s, dp, dX, B, dH, dZ, None)
            return self.to_host(dH, (B, shape[1])), self.to_host(dZ, (B, shape[2]))
        finally:
            self.free_all()

    def loss(self, shape, Z, labels):
        B = Z.shape[0]
        dZd, dy = self.to_device(Z.astype(np.float32)), self.to_device(labels.astype(np.int32))
        dG, dL = self.poisoned(B * shape[2]), self.poisoned(1)
        try:
            self._call("mlp_loss", MlpShape(*shape), dZd, dy, B, dG, dL, None)
            return float(self.to_host(dL, (1,))[0]), self.to_host(dG, (B, shape[2]))
        finally:
            self.free_all()

    def backward(self, shape, params, X, H, dZ, want_dx=False):
        B = X.shape[0]
        n = layout.n_params(shape)
        args = [self.to_device(a.astype(np.float32)) for a in (params, X, H, dZ)]
        dg, dHs = self.poisoned(n), self.poisoned(B * shape[1])
        dX = self.poisoned(B * shape[0]) if want_dx else None
        try:
            self._call("mlp_backward", MlpShape(*shape), *args, B, dg, dHs, dX, None)
            grads = self.to_host(dg, (n,))
            return grads, (self.to_host(dX, (B, shape[0])) if want_dx else None)
        finally:
            self.free_all()

    def step(self, params, velocity, grads, lr, mu):
        n = params.size
        dp, dv, dg = (self.to_device(a.astype(np.float32)) for a in (params, velocity, grads))
        try:
            self._call("mlp_step", dp, dv, dg, n, lr, mu, None)
            return self.to_host(dp, (n,)), self.to_host(dv, (n,))
        finally:
            self.free_all()

    def train_epoch(self, shape, params, velocity, X_all, labels_all, order, batch, lr, mu):
        n = order.size
        steps = -(-n // batch)
        ws_floats = layout.workspace_floats(shape, batch)
        dp, dv = self.to_device(params.astype(np.float32)), self.to_device(velocity.astype(np.float32))
        dX, dy, do = (self.to_device(X_all.astype(np.float32)), self.to_device(labels_all.astype(np.int32)),
                      self.to_device(order.astype(np.int32)))
        dws, dl = self.poisoned(ws_floats), self.poisoned(steps)
        try:
            self._call("mlp_train_epoch", MlpShape(*shape), dp, dv, dX, dy, do, n, batch, lr, mu, dws, dl, None)
            return (self.to_host(dp, params.shape), self.to_host(dv, params.shape), self.to_host(dl, (steps,)))
        finally:
            self.free_all()
