"""The PyTorch baseline: the identical training workload, timed the same way as the CUDA paths.

Workload (recipe.toml): 784-256-10 MLP, H = ReLU(X·W1 + b1), Z = H·W2 + b2, batch-mean softmax
cross-entropy, SGD with momentum (lr 0.1, mu 0.9), batch 128, 20 epochs over 6000 images (47 steps
an epoch, the last of 112 images), evaluated on the 10000 test images after every epoch.

The initial parameters (results/init_params.npy) and every epoch's data order (results/order.npy)
are the ones the CUDA binary wrote: they are loaded, never re-drawn, so every variant starts from
the same point and sees the same batches as the CUDA paths and the float64 reference.

On the optimiser: cuda/submission.h updates  v = mu·v − lr·g ; w = w + v.  torch.optim.SGD (no
dampening, no Nesterov, no weight decay) updates  b = mu·b + g ; w = w − lr·b  (its first step sets
b = g, i.e. mu·0 + g). With v = −lr·b the two are the same recurrence for a constant lr and a zero
initial velocity, so torch.optim.SGD(momentum=0.9) is used as is and relied upon to match.

Variants (each reported separately in results/pytorch.json, see docs/formats.md):
  eager                                nn.Linear/ReLU, F.cross_entropy, torch.optim.SGD(momentum)
  eager-fused-sgd                      the same with SGD(fused=True)
  cuda-graph                           the whole step captured in a torch.cuda.CUDAGraph (one
                                       graph for the full batch, one for the short last batch)
  compiled-reduce-overhead             torch.compile(model + loss, mode="reduce-overhead")
  compiled-max-autotune-no-cudagraphs  torch.compile(model + loss, mode="max-autotune-no-cudagraphs")
  manual-ops                           harness.manual_ops.ManualMLP (hand-written backward passes)

Timing: a pair of CUDA events brackets each epoch's training steps only (not the evaluation);
epoch 0 is a warm-up and is excluded from the statistics. Per-step losses stay on the device
and are read once after each epoch.

CLI:
  python -m harness.pytorch_baseline [--results DIR] [--variants a,b] [--epochs N] [--device cuda]
                                     [--batch N] [--data DIR]
  python -m harness.pytorch_baseline --trace profile/pytorch_eager_trace.json
"""
from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from harness import config
from harness.atomic import write_json

# Every variant, in report order.
VARIANTS = (
    "eager",
    "eager-fused-sgd",
    "cuda-graph",
    "compiled-reduce-overhead",
    "compiled-max-autotune-no-cudagraphs",
    "manual-ops",
)
# The variants that need a CUDA device.
CUDA_ONLY = ("cuda-graph", "compiled-reduce-overhead", "compiled-max-autotune-no-cudagraphs")
COMPILE_MODES = {
    "compiled-reduce-overhead": "reduce-overhead",
    "compiled-max-autotune-no-cudagraphs": "max-autotune-no-cudagraphs",
}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------

def load_inputs(results_dir: Path = config.RESULTS_DIR):
    """(init_params float32 (n_params,), order int32 (epochs, train_size)) written by the binary."""
    results_dir = Path(results_dir)
    out = []
    for name, dtype in (("init_params.npy", np.float32), ("order.npy", np.int32)):
        path = results_dir / name
        if not path.exists():
            raise SystemExit(f"error: {path}: file not found (run build/mlp_train first)")
        arr = np.load(path)
        if arr.dtype != dtype:
            raise SystemExit(f"error: {path}: dtype {arr.dtype}, expected {np.dtype(dtype)}")
        out.append(arr)
    init_params, order = out
    if init_params.ndim != 1 or order.ndim != 2:
        raise SystemExit(f"error: {results_dir}: init_params must be 1-D and order 2-D, got "
                         f"{init_params.shape} and {order.shape}")
    return init_params, order


def load_data(data_dir=None):
    """The dataset dict of harness.dataset.load_dataset() (imported lazily).

    data_dir: the folder the binary read with --data; by default data/ (the shipped subset). A
    folder holding the official 60,000-image split instead (data/full/, `invoke data --full`) is
    read the same way the binary reads it: its own SHA256SUMS checked, then its four IDX files.
    """
    from harness import dataset as ds
    if data_dir is None:
        return ds.load_dataset()
    data_dir = Path(data_dir)
    if (data_dir / ds.TRAIN_IMAGES).exists() or not (data_dir / ds.FULL_TRAIN_IMAGES).exists():
        return ds.load_dataset(data_dir)
    ds.verify_sha256(data_dir)
    out = {}
    for split, img, lab in (("train", ds.FULL_TRAIN_IMAGES, ds.FULL_TRAIN_LABELS),
                            ("test", ds.TEST_IMAGES, ds.TEST_LABELS)):
        images = ds.read_idx(data_dir / img, ndim=3)
        labels = ds.read_idx(data_dir / lab, ndim=1)
        if images.shape[0] != labels.shape[0]:
            raise ds.DataError(f"{data_dir / lab}: {labels.shape[0]} labels for"
                               f" {images.shape[0]} images")
        out[f"{split}_images"] = ds.to_float(images)
        out[f"{split}_labels"] = labels.astype(np.int32)
    return out


def infer_shape(n_params: int, n_in: int, n_out: int):
    """(in, hidden, out) from the flat parameter count: n = in*h + h + h*out + out."""
    hidden, rem = divmod(n_params - n_out, n_in + 1 + n_out)
    if rem or hidden <= 0:
        raise ValueError(f"{n_params} parameters do not fit an MLP {n_in}-h-{n_out}")
    return (n_in, hidden, n_out)


def split_flat(flat: np.ndarray, shape):
    """(W1 [in×hidden], b1, W2 [hidden×out], b2) as numpy arrays from the flat buffer."""
    n_in, n_hidden, n_out = shape
    o1 = n_in * n_hidden
    o2 = o1 + n_hidden
    o3 = o2 + n_hidden * n_out
    if flat.shape != (o3 + n_out,):
        raise ValueError(f"flat buffer has shape {flat.shape}, expected ({o3 + n_out},)")
    return (flat[:o1].reshape(n_in, n_hidden), flat[o1:o2],
            flat[o2:o3].reshape(n_hidden, n_out), flat[o3:])


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
# Models
# --------------------------------------------------------------------------------------------

def make_linear_mlp(init_flat: np.ndarray, shape, device) -> nn.Sequential:
    """nn.Linear → ReLU → nn.Linear holding the flat init (nn.Linear.weight = W.T)."""
    n_in, n_hidden, n_out = shape
    model = nn.Sequential(nn.Linear(n_in, n_hidden), nn.ReLU(), nn.Linear(n_hidden, n_out))
    model.to(device=device, dtype=torch.float32)
    load_linear_mlp(model, init_flat, shape)
    return model


@torch.no_grad()
def load_linear_mlp(model: nn.Sequential, init_flat: np.ndarray, shape) -> None:
    """Copy the flat [W1 | b1 | W2 | b2] into the layers in place (addresses unchanged)."""
    W1, b1, W2, b2 = (torch.as_tensor(np.ascontiguousarray(a)) for a in split_flat(init_flat, shape))
    model[0].weight.copy_(W1.t())
    model[0].bias.copy_(b1)
    model[2].weight.copy_(W2.t())
    model[2].bias.copy_(b2)


def make_optimizer(params, w: Workload, fused: bool | None = None):
    # SGD's momentum form b = mu·b + g ; w −= lr·b equals v = mu·v − lr·g ; w += v for a constant
    # lr and zero initial velocity (see the module docstring).
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
# Variants: each sets itself up (warm-up, capture, compilation) and then runs epochs
# --------------------------------------------------------------------------------------------

class EagerVariant:
    """The plain training loop, as a user would write it (optionally fused SGD, manual ops)."""

    compile_seconds = None

    def __init__(self, w: Workload, init_flat, shape, step_losses, fused=None, manual=False):
        self.w, self.step_losses = w, step_losses
        if manual:
            from harness.manual_ops import ManualMLP
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
            loss = loss_fn(model(xb), yb)
            loss.backward()
            opt.step()
            losses[t] = loss.detach()

    def predict(self, X):
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
        sizes = sorted(set(w.sizes), reverse=True)
        self.compile_seconds = 0.0
        for b in sizes:
            idx = w.order[0, :b]
            xb, yb = w.X[idx], w.y[idx]
            _sync(w.device)
            t0 = time.perf_counter()
            self._step(xb, yb)               # the first call compiles (forward and backward)
            _sync(w.device)
            self.compile_seconds += time.perf_counter() - t0
            for _ in range(3):               # cudagraph trees record on a later call
                self._step(xb, yb)
        _sync(w.device)
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
    One graph serves the full batches and a second the short last batch.
    """

    compile_seconds = None

    def __init__(self, w: Workload, init_flat, shape, step_losses):
        if w.device.type != "cuda":
            raise RuntimeError("cuda-graph needs a CUDA device")
        self.w, self.step_losses = w, step_losses
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
        self.graphs = {}
        for b in sizes:
            self.opt.zero_grad(set_to_none=True)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                self._step(b)
            self.graphs[b] = (g, [p.grad for p in self.model.parameters()])
        torch.cuda.synchronize()
        reset_state(self.model, init_flat, shape, self.opt)
        self.schedule = [self.graphs[b][0] for b in w.sizes]

    def _step(self, b: int) -> None:
        w = self.w
        pos = self.counter * w.batch + self.aranges[b]
        idx = self.order_static.index_select(0, pos)
        xb, yb = w.X.index_select(0, idx), w.y.index_select(0, idx)
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
        return self.model(X)


def make_variant(name: str, w: Workload, init_flat, shape, step_losses):
    if name == "eager":
        return EagerVariant(w, init_flat, shape, step_losses)
    if name == "eager-fused-sgd":
        return EagerVariant(w, init_flat, shape, step_losses, fused=True)
    if name == "manual-ops":
        return EagerVariant(w, init_flat, shape, step_losses, manual=True)
    if name == "cuda-graph":
        return CudaGraphVariant(w, init_flat, shape, step_losses)
    if name in COMPILE_MODES:
        return CompiledVariant(w, init_flat, shape, step_losses, COMPILE_MODES[name])
    raise ValueError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")


# --------------------------------------------------------------------------------------------
# Timing and statistics
# --------------------------------------------------------------------------------------------

def _sync(device) -> None:
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()


class EpochTimer:
    """CUDA events on a CUDA device; perf_counter (after a sync-free CPU run) otherwise."""

    def __init__(self, device):
        self.cuda = torch.device(device).type == "cuda"
        if self.cuda:
            self.start = torch.cuda.Event(enable_timing=True)
            self.end = torch.cuda.Event(enable_timing=True)

    def record_start(self):
        if self.cuda:
            self.start.record()
        else:
            self.t0 = time.perf_counter()

    def record_end(self):
        if self.cuda:
            self.end.record()
        else:
            self.t1 = time.perf_counter()

    def elapsed_ms(self) -> float:
        if self.cuda:
            self.end.synchronize()
            return float(self.start.elapsed_time(self.end))
        return (self.t1 - self.t0) * 1e3


def timing_stats(epoch_ms) -> dict:
    """mean/median/min/max and the coefficient of variation (sample std / mean, in %)."""
    if not epoch_ms:
        return {"mean_ms": None, "median_ms": None, "min_ms": None, "max_ms": None,
                "cv_pct": None}
    mean = statistics.fmean(epoch_ms)
    std = statistics.stdev(epoch_ms) if len(epoch_ms) > 1 else 0.0
    return {"mean_ms": mean, "median_ms": statistics.median(epoch_ms), "min_ms": min(epoch_ms),
            "max_ms": max(epoch_ms), "cv_pct": std / mean * 100.0 if mean > 0 else None}


@torch.no_grad()
def accuracy(predict, X, y, chunk: int = 10000) -> float:
    correct = torch.zeros((), dtype=torch.int64, device=X.device)
    for s in range(0, X.shape[0], chunk):
        correct += (predict(X[s:s + chunk]).argmax(dim=1) == y[s:s + chunk]).sum()
    return int(correct.item()) / int(X.shape[0])


# --------------------------------------------------------------------------------------------
# One variant, end to end
# --------------------------------------------------------------------------------------------

def run_variant(name: str, init_params: np.ndarray, order: np.ndarray, data: dict,
                recipe: dict | None = None, epochs: int | None = None, device: str = "cuda",
                return_step_losses: bool = False) -> dict:
    """Train variant `name` from `init_params` over order[:epochs]; the pytorch.json entry.

    `recipe` gives batch, lr, momentum and output_dim (recipe.toml by default). With
    return_step_losses the entry also holds "step_losses": one list of per-step losses per epoch.
    """
    recipe = config.load_recipe() if recipe is None else recipe
    epochs = order.shape[0] if epochs is None else int(epochs)
    if not 1 <= epochs <= order.shape[0]:
        raise ValueError(f"epochs must be in 1..{order.shape[0]}, got {epochs}")
    init_flat = np.ascontiguousarray(init_params, dtype=np.float32)
    w = Workload(data, order[:epochs], recipe["batch"], recipe["lr"], recipe["momentum"], device,
                 n_out=recipe.get("output_dim", 10))
    shape = infer_shape(init_flat.shape[0], w.n_in, w.n_out)
    step_losses = torch.zeros(w.steps, dtype=torch.float32, device=w.device)
    variant = make_variant(name, w, init_flat, shape, step_losses)

    timer = EpochTimer(w.device)
    epoch_ms, acc_per_epoch, loss_per_epoch, all_steps = [], [], [], []
    for e in range(epochs):
        _sync(w.device)
        timer.record_start()
        variant.run_epoch(e)
        timer.record_end()
        # After the timed region: the epoch loss (on the device, then read) and the test accuracy.
        epoch_loss = (step_losses * w.sizes_t).sum() / w.n
        loss_per_epoch.append(float(epoch_loss.item()))
        if return_step_losses:
            all_steps.append(step_losses.tolist())
        acc_per_epoch.append(accuracy(variant.predict, w.Xt, w.yt))
        ms = timer.elapsed_ms()
        if e > 0:
            epoch_ms.append(ms)
    entry = {"epoch_ms": epoch_ms, **timing_stats(epoch_ms),
             "test_accuracy": acc_per_epoch[-1], "test_accuracy_per_epoch": acc_per_epoch,
             "loss_per_epoch": loss_per_epoch}
    if variant.compile_seconds is not None:
        entry["compile_seconds"] = variant.compile_seconds
    if return_step_losses:
        entry["step_losses"] = all_steps
    if not all(math.isfinite(x) for x in loss_per_epoch):
        entry["error"] = "non-finite training loss"
    return entry


def variant_available(name: str, device) -> str | None:
    """None if `name` can run on `device`, else the reason it cannot."""
    dev = torch.device(device)
    if name in CUDA_ONLY and dev.type != "cuda":
        return f"{name} needs a CUDA device"
    if name == "eager-fused-sgd":
        try:
            p = torch.zeros(1, device=dev, requires_grad=True)
            opt = torch.optim.SGD([p], lr=0.1, momentum=0.9, fused=True)
            p.grad = torch.ones_like(p)
            opt.step()
        except (RuntimeError, NotImplementedError) as exc:
            return f"fused SGD unsupported on {dev}: {exc}"
    return None


def run_all(results_dir: Path = config.RESULTS_DIR, variants=VARIANTS, epochs: int | None = None,
            device: str = "cuda", data: dict | None = None, batch: int | None = None,
            data_dir: Path | None = None) -> dict:
    """Run `variants` and write results_dir/pytorch.json; returns the written object.

    batch overrides the recipe's (the sweeps); data_dir is the folder the binary read (see
    load_data). The hidden width and train size come from init_params.npy and order.npy.
    On CUDA each variant's entry also holds max_memory_allocated_bytes: the peak of
    torch.cuda.max_memory_allocated over the variant (set-up, capture or compilation, training,
    evaluation), its peak statistics reset before it.
    """
    results_dir = Path(results_dir)
    recipe = config.load_recipe()
    if batch is not None:
        if int(batch) < 1:
            raise SystemExit(f"error: --batch must be a positive integer, got {batch}")
        recipe["batch"] = int(batch)
    init_params, order = load_inputs(results_dir)
    data = load_data(data_dir) if data is None else data
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("error: --device cuda but torch sees no CUDA device")
    out = {"schema": 1, "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
           "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
           "variants": {}}
    for name in variants:
        reason = variant_available(name, dev)
        if reason is not None:
            log(f"[pytorch] {name}: skipped: {reason}")
            out["variants"][name] = {"error": f"skipped: {reason}"}
            continue
        log(f"[pytorch] {name}: running {epochs or order.shape[0]} epochs on {dev} ...")
        t0 = time.perf_counter()
        if dev.type == "cuda":
            gc.collect()                     # the previous variant's tensors are gone ...
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats(dev)   # ... and do not count in this one's peak
        try:
            entry = run_variant(name, init_params, order, data, recipe, epochs, device)
            if dev.type == "cuda":
                entry["max_memory_allocated_bytes"] = int(torch.cuda.max_memory_allocated(dev))
        except Exception as exc:  # a failed compile (or capture) is recorded, and we go on
            msg = f"{type(exc).__name__}: {exc}"
            if len(msg) > 2000:
                msg = msg[:2000] + " ..."
            log(f"[pytorch] {name}: FAILED: {msg.splitlines()[0] if msg else ''}")
            out["variants"][name] = {"error": msg}
            if dev.type == "cuda":
                torch.cuda.synchronize()
                torch.cuda.empty_cache()
            continue
        out["variants"][name] = entry
        extra = (f", compile {entry['compile_seconds']:.1f} s"
                 if entry.get("compile_seconds") is not None else "")
        mean = entry["mean_ms"]
        log(f"[pytorch] {name}: mean {mean:.3f} ms/epoch" if mean is not None else
            f"[pytorch] {name}: (no timed epoch)")
        log(f"[pytorch] {name}: test accuracy {entry['test_accuracy']:.4f}, "
            f"final loss {entry['loss_per_epoch'][-1]:.4f}{extra}, "
            f"{time.perf_counter() - t0:.1f} s wall")
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    write_json(results_dir / "pytorch.json", out)
    log(f"[pytorch] wrote {results_dir / 'pytorch.json'}")
    return out


# --------------------------------------------------------------------------------------------
# Profiler trace of one eager epoch
# --------------------------------------------------------------------------------------------

def trace_eager_epoch(out_path, results_dir: Path = config.RESULTS_DIR, device: str = "cuda",
                      data: dict | None = None, init_params=None, order=None,
                      recipe: dict | None = None) -> Path:
    """Profile one eager epoch (after a warm-up epoch) and write a Chrome trace to out_path.

    The phases of every step are labelled with record_function: "forward", "loss", "backward"
    and "optimizer". The trace is exported to a temporary name and renamed into place.
    """
    from torch.profiler import ProfilerActivity, profile, record_function

    out_path = Path(out_path)
    recipe = config.load_recipe() if recipe is None else recipe
    if init_params is None or order is None:
        init_params, order = load_inputs(results_dir)
    data = load_data() if data is None else data
    order = order[:2] if order.shape[0] >= 2 else np.concatenate([order[:1], order[:1]])
    init_flat = np.ascontiguousarray(init_params, dtype=np.float32)
    w = Workload(data, order, recipe["batch"], recipe["lr"], recipe["momentum"], device,
                 n_out=recipe.get("output_dim", 10))
    shape = infer_shape(init_flat.shape[0], w.n_in, w.n_out)
    step_losses = torch.zeros(w.steps, dtype=torch.float32, device=w.device)
    variant = EagerVariant(w, init_flat, shape, step_losses)
    model, opt = variant.model, variant.opt

    variant.run_epoch(0)                      # warm-up epoch (not traced)
    _sync(w.device)
    activities = [ProfilerActivity.CPU]
    if w.device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(activities=activities) as prof:
        with record_function("epoch"):
            for t in range(w.steps):
                idx = w.batch_rows(1, t)
                xb, yb = w.X[idx], w.y[idx]
                opt.zero_grad(set_to_none=True)
                with record_function("forward"):
                    Z = model(xb)
                with record_function("loss"):
                    loss = F.cross_entropy(Z, yb)
                with record_function("backward"):
                    loss.backward()
                with record_function("optimizer"):
                    opt.step()
                step_losses[t] = loss.detach()
        _sync(w.device)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_path.with_name(f".{out_path.name}.{os.getpid()}.tmp")
    try:
        prof.export_chrome_trace(str(tmp))
        os.replace(tmp, out_path)
    finally:
        if tmp.exists():
            tmp.unlink()
    log(f"[pytorch] wrote {out_path}")
    return out_path


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.pytorch_baseline",
                                 description="PyTorch baseline of the MLP training workload")
    ap.add_argument("--results", type=Path, default=config.RESULTS_DIR,
                    help="folder holding init_params.npy and order.npy; pytorch.json goes there")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help=f"comma-separated subset of: {', '.join(VARIANTS)}")
    ap.add_argument("--epochs", type=int, default=None,
                    help="epochs to run (default: all rows of order.npy, i.e. the recipe's)")
    ap.add_argument("--device", default="cuda", help="torch device (default cuda)")
    ap.add_argument("--batch", type=int, default=None,
                    help="batch size (default: the recipe's); must match the binary's --batch")
    ap.add_argument("--data", type=Path, default=None, metavar="DIR",
                    help="the data folder the binary read (default data/; data/full for the full split)")
    ap.add_argument("--trace", type=Path, default=None, metavar="PATH",
                    help="instead of the variants, write a profiler trace of one eager epoch")
    args = ap.parse_args(argv)

    if args.trace is not None:
        trace_eager_epoch(args.trace, results_dir=args.results, device=args.device)
        return 0
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(VARIANTS)}")
    from harness.dataset import DataError
    try:
        run_all(args.results, variants, args.epochs, args.device, batch=args.batch,
                data_dir=args.data)
    except DataError as exc:
        raise SystemExit(f"error: {exc}") from None
    return 0


if __name__ == "__main__":
    sys.exit(main())
