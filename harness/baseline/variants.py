"""The PyTorch baseline's variants: the workload on the device and one class per way of training it.

Every variant trains the recipe's MLP (H = ReLU(X·W1 + b1), Z = H·W2 + b2, batch-mean softmax
cross-entropy, SGD with momentum) from the binary's initial parameters over the binary's epoch
orders, and exposes run_epoch(e) (the timed part) and predict(X) (the evaluation).

On the optimiser: cuda/contract/submission.h updates  v = mu·v − lr·g ; w = w + v.  torch.optim.SGD (no
dampening, no Nesterov, no weight decay) updates  b = mu·b + g ; w = w − lr·b  (its first step sets
b = g, i.e. mu·0 + g). With v = −lr·b the two are the same recurrence for a constant lr and a zero
initial velocity, so the variants built on torch.optim.SGD use it as is; the compiled-step
variants write the update in submission.h's form.

precision (harness/baseline/precision.py): EagerVariant and CudaGraphVariant take the variant's
precision; for bf16 each step's forward and loss (and the evaluation) run under its autocast, the
backward and the optimiser step outside it. TF32 is no argument: it is the matmul flags, which
the baseline sets around the whole variant.

Which variant each class builds, with what each is and when it runs: harness/baseline/registry.py.
"""
from __future__ import annotations

import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from harness.baseline import precision as prec
from spec import layout
from spec.torch_variants import FP32


def sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


# --------------------------------------------------------------------------------------------
# The workload
# --------------------------------------------------------------------------------------------

class Workload:
    """The data, order and hyper-parameters, preloaded on the device."""

    def __init__(self, data, order, batch, lr, momentum, device, n_out=10):
        self.device = torch.device(device)
        self.X = torch.as_tensor(np.ascontiguousarray(data["train_images"], dtype=np.float32),
                                 device=self.device)
        self.y = torch.as_tensor(np.asarray(data["train_labels"]).astype(np.int64),
                                 device=self.device)
        self.Xt = torch.as_tensor(np.ascontiguousarray(data["test_images"], dtype=np.float32),
                                  device=self.device)
        self.yt = torch.as_tensor(np.asarray(data["test_labels"]).astype(np.int64),
                                  device=self.device)
        self.order = torch.as_tensor(np.asarray(order).astype(np.int64), device=self.device)
        self.n = int(order.shape[1])          # samples per epoch
        self.batch = int(batch)
        self.lr = float(lr)
        self.momentum = float(momentum)
        self.steps = (self.n + self.batch - 1) // self.batch
        self.sizes = [min(self.batch, self.n - s) for s in range(0, self.n, self.batch)]
        self.sizes_t = torch.tensor(self.sizes, dtype=torch.float32, device=self.device)
        self.n_in = int(self.X.shape[1])
        self.n_out = int(n_out)

    def batch_rows(self, epoch: int, t: int):
        """The order slice of step t of `epoch` (a view on the device, no copy)."""
        s = t * self.batch
        return self.order[epoch, s:s + self.batch]


# --------------------------------------------------------------------------------------------
# Models and optimisers
# --------------------------------------------------------------------------------------------

def flat_views(flat: torch.Tensor, shape):
    """(W1 [in×hidden], b1, W2 [hidden×out], b2): views into a flat torch buffer at
    spec.layout's offsets."""
    s, o = layout.as_shape(shape), layout.offsets(shape)
    if tuple(flat.shape) != (o.total,):
        raise ValueError(f"parameters have shape {tuple(flat.shape)}, expected ({o.total},)")
    return (flat[o.w1:o.b1].view(s.n_in, s.hidden), flat[o.b1:o.w2],
            flat[o.w2:o.b2].view(s.hidden, s.out), flat[o.b2:o.total])


def make_linear_mlp(init_flat: np.ndarray, shape, device) -> nn.Sequential:
    """nn.Linear → ReLU → nn.Linear holding the flat init (nn.Linear.weight = W.T)."""
    s = layout.as_shape(shape)
    model = nn.Sequential(nn.Linear(s.n_in, s.hidden), nn.ReLU(), nn.Linear(s.hidden, s.out))
    model.to(device=device, dtype=torch.float32)
    load_linear_mlp(model, init_flat, s)
    return model


@torch.no_grad()
def load_linear_mlp(model: nn.Sequential, init_flat: np.ndarray, shape) -> None:
    """Copy the flat [W1 | b1 | W2 | b2] into the layers in place (addresses unchanged)."""
    t = layout.split(np.asarray(init_flat, dtype=np.float32), shape)
    W1, b1, W2, b2 = (torch.as_tensor(np.ascontiguousarray(t[k])) for k in ("W1", "b1", "W2", "b2"))
    model[0].weight.copy_(W1.t())
    model[0].bias.copy_(b1)
    model[2].weight.copy_(W2.t())
    model[2].bias.copy_(b2)


def make_optimizer(params, w: Workload, fused: bool | None = None):
    # SGD's momentum form equals submission.h's for a constant lr and zero initial velocity
    # (module docstring).
    return torch.optim.SGD(params, lr=w.lr, momentum=w.momentum, fused=fused)


@torch.no_grad()
def reset_state(model, init_flat, shape, optimizer) -> None:
    """Back to the initial parameters and a zero velocity, in place (CUDA graphs keep addresses)."""
    if isinstance(model, nn.Sequential):
        load_linear_mlp(model, init_flat, shape)
    else:
        model.load_flat(init_flat)
    for state in optimizer.state.values():
        buf = state.get("momentum_buffer")
        if buf is not None:
            buf.zero_()   # b = mu·0 + g on the next step: the same as a fresh optimiser
    for p in model.parameters():
        p.grad = None


# --------------------------------------------------------------------------------------------
# Variants on nn.Module and torch.optim: each sets itself up, then runs epochs
# --------------------------------------------------------------------------------------------

class EagerVariant:
    """The plain training loop, as a user would write it (optionally fused SGD, manual ops; at
    bf16 the forward and loss under autocast)."""

    compile_seconds = None
    capture_seconds = None

    def __init__(self, w: Workload, init_flat, shape, step_losses, fused=None, manual=False,
                 precision: str = FP32):
        self.w, self.step_losses = w, step_losses
        self.amp = prec.autocast_device(w.device, precision)   # None: no autocast
        if manual:
            from harness.baseline.manual_ops import ManualMLP
            self.model = ManualMLP(*shape, device=w.device).load_flat(init_flat)
            self.loss_fn = self.model.loss
        else:
            self.model = make_linear_mlp(init_flat, shape, w.device)
            self.loss_fn = F.cross_entropy
        self.opt = make_optimizer(self.model.parameters(), w, fused=fused)

    def run_epoch(self, e: int) -> None:
        w, model, opt, loss_fn, losses = self.w, self.model, self.opt, self.loss_fn, self.step_losses
        for t in range(w.steps):
            idx = w.batch_rows(e, t)
            xb, yb = w.X[idx], w.y[idx]
            opt.zero_grad(set_to_none=True)
            with prec.autocast(self.amp):
                loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            losses[t] = loss.detach()

    def predict(self, X):
        with prec.autocast(self.amp):
            return self.model(X)


class CompiledVariant(EagerVariant):
    """torch.compile of model + loss (forward and, through AOTAutograd, backward); eager SGD."""

    def __init__(self, w, init_flat, shape, step_losses, mode):
        super().__init__(w, init_flat, shape, step_losses)
        self.mode = mode
        self.mark_step = mode == "reduce-overhead"
        model = self.model

        def model_loss(x, y):
            return F.cross_entropy(model(x), y)

        # dynamic=False: one static specialisation for the full batch and one for the last.
        self.compiled = torch.compile(model_loss, mode=mode, dynamic=False)
        self._warm_up(init_flat, shape)

    def _step(self, xb, yb):
        if self.mark_step:
            torch.compiler.cudagraph_mark_step_begin()
        self.opt.zero_grad(set_to_none=True)
        loss = self.compiled(xb, yb)
        loss.backward()
        self.opt.step()
        return loss

    def _warm_up(self, init_flat, shape):
        """Compile (timed) and warm up every batch size, then reset to the initial state."""
        w = self.w
        self.compile_seconds = 0.0
        for b in sorted(set(w.sizes), reverse=True):
            idx = w.order[0, :b]
            xb, yb = w.X[idx], w.y[idx]
            sync(w.device)
            t0 = time.perf_counter()
            self._step(xb, yb)               # the first call compiles (forward and backward)
            sync(w.device)
            self.compile_seconds += time.perf_counter() - t0
            for _ in range(3):               # cudagraph trees record on a later call
                self._step(xb, yb)
        sync(w.device)
        reset_state(self.model, init_flat, shape, self.opt)

    def run_epoch(self, e: int) -> None:
        w, losses = self.w, self.step_losses
        for t in range(w.steps):
            idx = w.batch_rows(e, t)
            loss = self._step(w.X[idx], w.y[idx])
            losses[t] = loss.detach()


class CudaGraphVariant:
    """The whole step captured with torch.cuda.graph, as in PyTorch's CUDA-graphs documentation.

    Static buffers: the epoch's order row and a device step counter. Inside the graph the step
    gathers its own rows (order[counter*batch + arange(b)]), runs forward, loss, backward and
    the optimiser step, writes its loss to step_losses[counter] and increments the counter, so an
    epoch is one order copy, one counter reset and `steps` replays with no host synchronisation.
    One graph serves the full batches and a second the short last batch. At bf16 the forward
    and loss are under autocast when captured, so the graphs replay the bfloat16 step.
    """

    compile_seconds = None

    def __init__(self, w: Workload, init_flat, shape, step_losses, precision: str = FP32):
        if w.device.type != "cuda":
            raise RuntimeError("cuda-graph needs a CUDA device")
        self.w, self.step_losses = w, step_losses
        self.amp = prec.autocast_device(w.device, precision)   # None: no autocast
        self.model = make_linear_mlp(init_flat, shape, w.device)
        self.opt = make_optimizer(self.model.parameters(), w)
        self.order_static = w.order[0].clone()
        self.counter = torch.zeros(1, dtype=torch.int64, device=w.device)
        sizes = sorted(set(w.sizes), reverse=True)
        self.aranges = {b: torch.arange(b, dtype=torch.int64, device=w.device) for b in sizes}

        # Warm-up on a side stream (builds the momentum buffers and the cuBLAS workspaces).
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for b in sizes:
                for _ in range(3):
                    self.counter.zero_()
                    self.opt.zero_grad(set_to_none=True)
                    self._step(b)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        reset_state(self.model, init_flat, shape, self.opt)

        # Capture. Gradients are None before each capture, so the backward inside the graph
        # writes fresh gradients (from the graph's private pool) on every replay; the lists
        # below keep each graph's gradient tensors alive.
        t0 = time.perf_counter()
        self.graphs = {}
        for b in sizes:
            self.opt.zero_grad(set_to_none=True)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self._step(b)
            self.graphs[b] = (g, [p.grad for p in self.model.parameters()])
        torch.cuda.synchronize()
        self.capture_seconds = time.perf_counter() - t0
        reset_state(self.model, init_flat, shape, self.opt)
        self.schedule = [self.graphs[b][0] for b in w.sizes]

    def _step(self, b: int) -> None:
        w = self.w
        pos = self.counter * w.batch + self.aranges[b]
        idx = self.order_static.index_select(0, pos)
        xb, yb = w.X.index_select(0, idx), w.y.index_select(0, idx)
        with prec.autocast(self.amp):
            loss = F.cross_entropy(self.model(xb), yb)
        loss.backward()
        self.opt.step()
        self.step_losses.index_copy_(0, self.counter, loss.detach().view(1))
        self.counter.add_(1)

    def run_epoch(self, e: int) -> None:
        self.order_static.copy_(self.w.order[e])
        self.counter.zero_()
        for g in self.schedule:
            g.replay()

    def predict(self, X):
        with prec.autocast(self.amp):
            return self.model(X)


def fused_sgd_unsupported(device) -> str | None:
    """None if one fused SGD step runs on `device`, else why not (eager-fused-sgd's check)."""
    dev = torch.device(device)
    try:
        p = torch.zeros(1, device=dev, requires_grad=True)
        opt = torch.optim.SGD([p], lr=0.1, momentum=0.9, fused=True)
        p.grad = torch.ones_like(p)
        opt.step()
    except (RuntimeError, NotImplementedError) as exc:
        return f"fused SGD unsupported on {dev}: {exc}"
    return None
