"""compiled-step: torch.compile of the whole training step, replayed from CUDA graphs.

What failed before, and what this does instead:
- torch.compile(model + loss) with the eager torch.optim.SGD after it (compiled-reduce-overhead)
  leaves the optimiser's host overhead in every step: it measures that, not the compiler.
- A compiled step that updated nn.Parameters and momentum tensors in place under
  mode="reduce-overhead" got "skipping cudagraphs due to mutated inputs": CUDA-graph trees take
  mutation only of static inputs (parameters, buffers, tensors marked with
  torch._dynamo.mark_static_address, outputs of an earlier graph), and the momentum tensors were
  none of those.
- loss.backward(); opt.step() inside the compiled function broke on reading a CUDA-graph output
  that a later replay had overwritten (the graph tree frees a step's outputs at the next step).

Here the step is one function of plain tensors, with no autograd state outside it:

    step(params, velocity, order, counter, arange_b, X, y, step_losses):
        idx = order[counter·batch + arange_b]            gather this step's rows on the device
        g, loss = grad_and_value(loss_of)(params, X[idx], y[idx])     forward, loss, backward
        velocity ← momentum·velocity − lr·g ;  params ← params + velocity   (submission.h's form)
        step_losses[counter] ← loss ;  counter ← counter + 1

params and velocity are ONE flat buffer each (spec.layout's W1 | b1 | W2 | b2), so the update is
one elementwise pass. Every tensor it writes is an input written in place and it returns nothing,
so no step holds an output of another.

Two drivers of the same step:
- "graphs" (compiled-step): torch.compile(step, fullgraph=True, dynamic=False) in Inductor's
  default mode (no CUDA graphs of its own); each batch size compiles once (the full batch and the
  short last one: two specialisations) and is warmed up on a side stream, then each is captured
  with torch.cuda.graph. An epoch is one copy of its order row, a counter reset and one replay
  per step, as in the hand-captured cuda-graph variant. On a CPU device the compiled step runs
  without graphs (for the CPU tests).
- "reduce-overhead" (compiled-step-reduce-overhead): torch.compile(step, mode="reduce-overhead"),
  every buffer it reads or writes marked static, called once per step from Python after
  torch.compiler.cudagraph_mark_step_begin(): what a user of Inductor's CUDA-graph trees gets,
  with their per-call host work (guards, the tree's checks) in every step.
At bf16 (harness/baseline/precision.py) loss_of's forward and loss run under
torch.autocast(bfloat16) inside the step, so Dynamo traces the autocast region and Inductor
compiles the bfloat16 products; the gradient (through the casts' backward), the velocity and the
update stay float32. At tf32 the step is the same; the baseline sets the TF32 flags around the
whole variant, its compile and capture included (Inductor's cache key holds the matmul precision).
compile_seconds is the first call of each batch size (Dynamo, AOTAutograd, Inductor, Triton);
capture_seconds the torch.cuda.graph captures. Neither is inside an epoch's time.
"""
from __future__ import annotations

import contextlib
import time

import numpy as np
import torch
import torch.nn.functional as F

from harness.baseline import precision as prec
from harness.baseline.variants import Workload, flat_views, sync
from spec.torch_variants import FP32

DRIVERS = ("graphs", "reduce-overhead")


def make_step(shape, batch: int, lr: float, momentum: float, amp: str | None = None):
    """The in-place whole training step (module docstring) for one shape and recipe; amp: the
    device type whose bfloat16 autocast the forward and loss run under (None: none)."""
    batch, lr, momentum = int(batch), float(lr), float(momentum)

    def plain_loss_of(params, x, y):
        W1, b1, W2, b2 = flat_views(params, shape)
        h = torch.relu(torch.addmm(b1, x, W1))
        return F.cross_entropy(torch.addmm(b2, h, W2), y)

    def autocast_loss_of(params, x, y):
        with prec.autocast(amp):        # Dynamo traces the autocast region
            return plain_loss_of(params, x, y)

    loss_of = plain_loss_of if amp is None else autocast_loss_of

    def step(params, velocity, order, counter, arange_b, X, y, step_losses):
        idx = order.index_select(0, counter * batch + arange_b)
        # the transform is built inside the compiled function, the form Dynamo documents
        g, loss = torch.func.grad_and_value(loss_of)(params, X.index_select(0, idx),
                                                     y.index_select(0, idx))
        velocity.copy_(momentum * velocity - lr * g)
        params.add_(velocity)
        step_losses.index_copy_(0, counter, loss.detach().view(1))
        counter.add_(1)

    return step


def forward(params, X, shape):
    """Logits of the flat parameters (the evaluation)."""
    W1, b1, W2, b2 = flat_views(params, shape)
    return torch.addmm(b2, torch.relu(torch.addmm(b1, X, W1)), W2)


class CompiledStepVariant:
    """The whole step compiled (module docstring); compile=False runs the same step uncompiled
    (the CPU tests of its equations)."""

    def __init__(self, w: Workload, init_flat, shape, step_losses, driver: str = "graphs",
                 compile: bool = True, precision: str = FP32):
        if driver not in DRIVERS:
            raise ValueError(f"driver {driver!r}: expected one of {', '.join(DRIVERS)}")
        if driver == "reduce-overhead" and w.device.type != "cuda":
            raise RuntimeError("compiled-step-reduce-overhead needs a CUDA device")
        self.w, self.shape, self.step_losses, self.driver = w, shape, step_losses, driver
        self.amp = prec.autocast_device(w.device, precision)   # None: no autocast
        dev = w.device
        self.init = torch.as_tensor(np.ascontiguousarray(init_flat, dtype=np.float32), device=dev)
        self.params = self.init.clone()
        self.velocity = torch.zeros_like(self.params)
        self.order_static = w.order[0].clone()
        self.counter = torch.zeros(1, dtype=torch.int64, device=dev)
        self.sizes = sorted(set(w.sizes), reverse=True)
        self.aranges = {b: torch.arange(b, dtype=torch.int64, device=dev) for b in self.sizes}
        self.args = {b: (self.params, self.velocity, self.order_static, self.counter,
                         self.aranges[b], w.X, w.y, step_losses) for b in self.sizes}
        step = make_step(shape, w.batch, w.lr, w.momentum, amp=self.amp)
        self.graphs = None
        self.compile_seconds = None
        self.capture_seconds = None
        if compile or driver == "reduce-overhead":
            torch._dynamo.reset()   # a fresh compile: its time is this variant's own
        if driver == "reduce-overhead":
            for t in {id(a): a for args in self.args.values() for a in args}.values():
                torch._dynamo.mark_static_address(t)
            self.fn = torch.compile(step, mode="reduce-overhead", fullgraph=True, dynamic=False)
        elif compile:
            self.fn = torch.compile(step, fullgraph=True, dynamic=False)
        else:
            self.fn = step
        if compile or driver == "reduce-overhead":
            self._warm_up()
        if driver == "graphs" and dev.type == "cuda":
            self._capture()

    @torch.no_grad()
    def reset(self) -> None:
        """The initial parameters, a zero velocity and step counter (addresses unchanged)."""
        self.params.copy_(self.init)
        self.velocity.zero_()
        self.counter.zero_()

    def _call(self, b: int) -> None:
        if self.driver == "reduce-overhead":
            torch.compiler.cudagraph_mark_step_begin()
        self.fn(*self.args[b])

    def _warm_up(self) -> None:
        """Compile each batch size (timed), run it twice more (graph trees record on a later
        call), then reset. On CUDA for the graphs driver: on a side stream, as capture needs."""
        cuda_side = self.driver == "graphs" and self.w.device.type == "cuda"
        stream = torch.cuda.Stream() if cuda_side else None
        if cuda_side:
            stream.wait_stream(torch.cuda.current_stream())
        self.compile_seconds = 0.0
        with torch.cuda.stream(stream) if cuda_side else contextlib.nullcontext():
            for b in self.sizes:
                self.counter.zero_()          # the gather stays inside the order row
                sync(self.w.device)
                t0 = time.perf_counter()
                self._call(b)                 # the first call compiles this specialisation
                sync(self.w.device)
                self.compile_seconds += time.perf_counter() - t0
                for _ in range(2):
                    self.counter.zero_()
                    self._call(b)
        if cuda_side:
            torch.cuda.current_stream().wait_stream(stream)
        sync(self.w.device)
        self.reset()

    def _capture(self) -> None:
        """One torch.cuda.CUDAGraph per batch size; the capture records, it does not run."""
        t0 = time.perf_counter()
        graphs = {}
        for b in self.sizes:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self.fn(*self.args[b])
            graphs[b] = g
        torch.cuda.synchronize()
        self.capture_seconds = time.perf_counter() - t0
        self.reset()
        self.graphs = [graphs[b] for b in self.w.sizes]   # one per step, the tail's last

    def run_epoch(self, e: int) -> None:
        self.order_static.copy_(self.w.order[e])
        self.counter.zero_()
        if self.graphs is not None:
            for g in self.graphs:
                g.replay()
        else:
            for b in self.w.sizes:
                self._call(b)

    def flat(self) -> torch.Tensor:
        return self.params.detach().clone()

    @torch.no_grad()
    def predict(self, X):
        with prec.autocast(self.amp):
            return forward(self.params, X, self.shape)

