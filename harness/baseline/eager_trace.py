"""A torch.profiler trace of one eager epoch (`python -m harness.baseline.pytorch_baseline
--trace`, invoke profile): each step's phases labelled, written as a Chrome trace."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch.nn.functional as F

from harness.baseline.inputs import load_data, load_inputs, log, workload_for
from harness.baseline.variants import EagerVariant
from harness.baseline.variants import sync as _sync
from spec.files import RESULTS_DIR, write_bytes
from spec.recipe import load_recipe


def chrome_trace_bytes(prof) -> bytes:
    """The profiler's Chrome trace as bytes (exported to a private temporary folder, whose path the
    trace's traceName then names no longer: it says trace.json)."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="mlp-trace-") as tmp:
        path = Path(tmp) / "trace.json"
        prof.export_chrome_trace(str(path))
        return path.read_bytes().replace(json.dumps(str(path)).encode(), b'"trace.json"')


def trace_eager_epoch(out_path, results_dir: Path = RESULTS_DIR, device: str = "cuda",
                      data: dict | None = None, init_params=None, order=None,
                      recipe: dict | None = None) -> Path:
    """Profile one eager epoch (after a warm-up epoch) and write a Chrome trace to out_path.

    The phases of every step are labelled with record_function: "forward", "loss", "backward"
    and "optimizer". The trace is written to a temporary file and renamed into place.
    """
    from torch.profiler import ProfilerActivity, profile, record_function

    out_path = Path(out_path)
    recipe = load_recipe() if recipe is None else recipe
    if init_params is None or order is None:
        init_params, order = load_inputs(results_dir)
    data = load_data() if data is None else data
    order = order[:2] if order.shape[0] >= 2 else np.concatenate([order[:1], order[:1]])
    w, init_flat, shape, step_losses = workload_for(init_params, order, data, recipe, device)
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
    write_bytes(out_path, chrome_trace_bytes(prof))
    log(f"[pytorch] wrote {out_path}")
    return out_path
