"""The PyTorch profiling studies, from torch.profiler traces of the eager training step
(nn.Linear → ReLU → nn.Linear, F.cross_entropy, torch.optim), on the recipe's data and initial
parameters (results/init_params.npy, results/order.npy: run build/mlp_train first).

  memory   one training step at the recipe's width and batch for SGD, SGD with momentum 0.9 and
           Adam, profiled with profile_memory, record_shapes and with_stack after one untraced
           step (so the optimiser state exists, as in every later step): torch's memory timeline
           (profile/torch_memory_<opt>.html, and its [times, sizes] as .json), our stacked
           rendering of the three (profile/torch_memory.png), and results/torch_memory.json:
           the measured peaks by category beside spec.layout.memory_ledger's prediction.
  batch    step time against batch size (32, 128, 512, 2048) with SGD momentum: per batch, CUDA
           events over untraced steps, then a trace of `steps` steps (profile/torch_steps_b<B>
           .json.gz): wall time of a step, summed kernel time, GPU busy fraction, host time
           (results/torch_batch_steps.json).
  linear   the kernels each Linear layer's forward and backward runs at batch 32 and 1024, with
           their times (profile/torch_linear_b<B>.json.gz, results/torch_linear_kernels.json).

Each study writes its files together (spec.files.write_all: all or none). Field meanings:
docs/formats.md.

CLI:
  python -m harness.baseline.profiles [--only memory,batch,linear] [--device cuda] [--steps N]
                                   [--results DIR] [--profile DIR]
"""
from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from harness.baseline import trace_stats
from spec.files import ROOT
from spec.recipe import load_recipe
from harness.baseline.eager_trace import chrome_trace_bytes
from harness.baseline.inputs import load_data, load_inputs, log
from harness.baseline.variants import make_linear_mlp, sync
from spec import layout, provenance
from spec.files import PROFILE_DIR, RESULTS_DIR, write_all

STUDIES = ("memory", "batch", "linear")
OPTIMIZERS = {   # key (spec.layout.memory_ledger's optimizer_state_bytes) → label, factory
    "sgd": ("SGD", lambda ps, r: torch.optim.SGD(ps, lr=r["lr"])),
    "sgd_momentum": ("SGD, momentum 0.9", lambda ps, r: torch.optim.SGD(ps, lr=r["lr"],
                                                                        momentum=0.9)),
    "adam": ("Adam", lambda ps, r: torch.optim.Adam(ps, lr=1e-3)),
}
STEP_BATCHES = (32, 128, 512, 2048)
LINEAR_BATCHES = (32, 1024)
LAYERS = ("fc1", "fc2")


class Setup:
    """The recipe, data on the device, initial parameters and order row, for any batch size."""

    def __init__(self, device, results_dir=RESULTS_DIR, data=None, init_params=None, order=None,
                 recipe=None):
        self.recipe = load_recipe() if recipe is None else recipe
        if init_params is None or order is None:
            init_params, order = load_inputs(results_dir)
        data = load_data() if data is None else data
        self.device = torch.device(device)
        if self.device.type == "cuda" and not torch.cuda.is_available():
            raise SystemExit("error: --device cuda but torch sees no CUDA device")
        self.init = np.ascontiguousarray(init_params, dtype=np.float32)
        self.X = torch.as_tensor(np.ascontiguousarray(data["train_images"], dtype=np.float32),
                                 device=self.device)
        self.y = torch.as_tensor(np.asarray(data["train_labels"]).astype(np.int64),
                                 device=self.device)
        self.order = torch.as_tensor(np.asarray(order[0]).astype(np.int64), device=self.device)
        self.n_test = int(np.asarray(data["test_images"]).shape[0])
        self.shape = layout.infer_shape(self.init.shape[0], self.X.shape[1],
                                        self.recipe.get("output_dim", 10))

    def batches(self, b: int, count: int) -> list:
        """`count` index tensors of `b` rows, walking the order row cyclically (on the device)."""
        n = self.order.shape[0]
        pos = (torch.arange(count * b, device=self.device) % n).view(count, b)
        return list(self.order[pos].unbind(0))

    def model(self):
        return make_linear_mlp(self.init, self.shape, self.device)

    def meta(self) -> dict:
        dev = self.device
        return {"schema": 1, **provenance.stamp(), "torch_version": torch.__version__,
                "cuda_version": torch.version.cuda, "gpu": torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu",
                "device": str(dev), "shape": list(self.shape)}


def train_step(model, opt, x, y, annotate_layers: bool = False):
    """One eager step; with annotate_layers each Linear's forward is a record_function range
    "fc1.forward" / "fc2.forward" (its backward is found from the autograd sequence numbers)."""
    from torch.profiler import record_function
    opt.zero_grad(set_to_none=True)
    if annotate_layers:
        with record_function("fc1.forward"):
            a = model[0](x)
        h = model[1](a)
        with record_function("fc2.forward"):
            z = model[2](h)
    else:
        z = model(x)
    loss = F.cross_entropy(z, y)
    loss.backward()
    opt.step()
    return loss


def _activities(device):
    from torch.profiler import ProfilerActivity
    acts = [ProfilerActivity.CPU]
    if torch.device(device).type == "cuda":
        acts.append(ProfilerActivity.CUDA)
    return acts


def _gz(data: bytes) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as fh:
        fh.write(data)
    return buf.getvalue()


def _rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def torch_categories() -> tuple:
    """The memory timeline's column order, from torch (trace_stats.TORCH_CATEGORIES if absent)."""
    try:
        from torch.profiler._memory_profiler import _CATEGORY_TO_INDEX
    except ImportError:
        return trace_stats.TORCH_CATEGORIES
    order = sorted(_CATEGORY_TO_INDEX.items(), key=lambda kv: kv[1])
    return tuple("UNKNOWN" if c is None else c.name for c, _ in order)


# --------------------------------------------------------------------------------------------
# memory
# --------------------------------------------------------------------------------------------

def memory_study(s: Setup, profile_dir: Path, results_dir: Path, batch: int | None = None) -> dict:
    """Memory timelines of one step per optimiser; writes results/torch_memory.json, the HTML
    (CUDA only: torch's renderer reads CUDA peak statistics), the timelines' JSON and our plot."""
    import tempfile

    from torch.profiler import profile
    batch = int(batch or s.recipe["batch"])
    cats = list(torch_categories())
    dev_str = f"cuda:{s.device.index or 0}" if s.device.type == "cuda" else "cpu"
    ledger = layout.memory_ledger(s.shape, batch, s.X.shape[0], s.n_test)
    files, doc = {}, s.meta() | {"batch": batch, "categories": list(cats),
                                 "groups": {g: list(c) for g, c in trace_stats.GROUPS.items()},
                                 "ledger": ledger, "optimizers": {}}
    timelines = {}
    x_idx = s.batches(batch, 2)
    for key, (label, factory) in OPTIMIZERS.items():
        model = s.model()
        opt = factory(model.parameters(), s.recipe)
        train_step(model, opt, s.X[x_idx[0]], s.y[x_idx[0]])      # state exists, as later on
        sync(s.device)
        if s.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(s.device)
        with profile(activities=_activities(s.device), profile_memory=True, record_shapes=True,
                     with_stack=True) as prof:
            train_step(model, opt, s.X[x_idx[1]], s.y[x_idx[1]])
            sync(s.device)
        stem = f"torch_memory_{key}"
        with tempfile.TemporaryDirectory(prefix="mlp-mem-") as tmp:
            prof.export_memory_timeline(str(Path(tmp) / "t.json"), device=dev_str)
            raw = (Path(tmp) / "t.json").read_bytes()
            html = None
            if s.device.type == "cuda":
                prof.export_memory_timeline(str(Path(tmp) / "t.html"), device=dev_str)
                html = (Path(tmp) / "t.html").read_bytes()
        times, sizes = trace_stats.parse_timeline(json.loads(raw), cats)
        timelines[label] = (times, sizes)
        summary = trace_stats.memory_summary(times, sizes, cats)
        files[profile_dir / f"{stem}.json"] = raw
        entry = {"label": label, "timeline": _rel(profile_dir / f"{stem}.json"),
                 "html": None, **summary,
                 "ledger_bytes": {"parameters": ledger["parameters_bytes"],
                                  "gradients": ledger["gradients_bytes"],
                                  "optimizer_state": ledger["optimizer_state_bytes"][key],
                                  "activations": ledger["activations_bytes"]}}
        if html is not None:
            files[profile_dir / f"{stem}.html"] = html
            entry["html"] = _rel(profile_dir / f"{stem}.html")
        if s.device.type == "cuda":
            entry["max_memory_allocated_bytes"] = int(torch.cuda.max_memory_allocated(s.device))
        doc["optimizers"][key] = entry
        del model, opt, prof
    plot = profile_dir / "torch_memory.png"
    files[plot] = plot_timelines(timelines, cats, f"{tuple(s.shape)}, batch {batch}, {s.device}")
    doc["plot"] = _rel(plot)
    files[results_dir / "torch_memory.json"] = json.dumps(doc, indent=2) + "\n"
    write_all(files)
    log(f"[profiles] memory: wrote {results_dir / 'torch_memory.json'} and "
        f"{len(files) - 1} files under {profile_dir}")
    return doc


def plot_timelines(timelines: dict, cats, title: str) -> bytes:
    """PNG bytes: one panel per optimiser, torch's categories stacked over time (MiB vs ms).
    INPUT (the train set on the device, constant through the step) is left out of the stack
    and its peak named in each panel, so the rest can be seen."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colors = {"PARAMETER": "darkgreen", "OPTIMIZER_STATE": "goldenrod", "INPUT": "black",
              "TEMPORARY": "mediumpurple", "ACTIVATION": "red", "GRADIENT": "mediumblue",
              "AUTOGRAD_DETAIL": "royalblue", "UNKNOWN": "grey"}
    drawn = [j for j, c in enumerate(cats) if c != "INPUT"]
    fig, axes = plt.subplots(len(timelines), 1, figsize=(9, 2.4 * len(timelines) + 1.2),
                             sharey=True, squeeze=False)
    for ax, (label, (times, sizes)) in zip(axes[:, 0], timelines.items()):
        t = (np.asarray(times) - times[0]) / 1e3
        arr = np.asarray(sizes, dtype=np.float64)
        stacked = np.cumsum(arr[:, drawn], axis=1) / 2**20
        lower = np.zeros(len(t))
        for k, j in enumerate(drawn):
            ax.fill_between(t, lower, stacked[:, k], step="post", color=colors.get(cats[j], "grey"),
                            alpha=0.8, label=cats[j].lower().replace("_", " "), linewidth=0)
            lower = stacked[:, k]
        note = ""
        if "INPUT" in cats:
            note = f" (input, not drawn: peak {arr[:, cats.index('INPUT')].max() / 2**20:.1f} MiB)"
        ax.set_title(label + note, fontsize=9, loc="left")
        ax.set_ylabel("MiB")
    axes[-1, 0].set_xlabel("time in the step, ms")
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.suptitle(f"Memory by torch.profiler category over one training step: {title}",
                 fontsize=10, x=0.01, y=0.995, ha="left")
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.965), fontsize=8,
               ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


# --------------------------------------------------------------------------------------------
# batch
# --------------------------------------------------------------------------------------------

def _untraced_us(s: Setup, model, opt, idx_list) -> float:
    """Mean wall time of a step over idx_list with no profiler: CUDA events on CUDA."""
    sync(s.device)
    if s.device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for idx in idx_list:
            train_step(model, opt, s.X[idx], s.y[idx])
        end.record()
        end.synchronize()
        return start.elapsed_time(end) * 1e3 / len(idx_list)
    t0 = time.perf_counter()
    for idx in idx_list:
        train_step(model, opt, s.X[idx], s.y[idx])
    return (time.perf_counter() - t0) * 1e6 / len(idx_list)


def _trace_steps(s: Setup, model, opt, idx_list, annotate_layers=False, record_shapes=False):
    from torch.profiler import profile, record_function
    with profile(activities=_activities(s.device), record_shapes=record_shapes) as prof:
        for idx in idx_list:
            with record_function("step"):
                train_step(model, opt, s.X[idx], s.y[idx], annotate_layers)
        sync(s.device)
    return chrome_trace_bytes(prof)


def batch_study(s: Setup, profile_dir: Path, results_dir: Path, steps: int = 20,
                batches=STEP_BATCHES, warmup: int = 5, timed: int = 50) -> dict:
    """Step time against batch size (module docstring); writes results/torch_batch_steps.json."""
    files = {}
    doc = s.meta() | {"optimizer": OPTIMIZERS["sgd_momentum"][0], "steps_traced": steps,
                      "steps_timed": timed, "batches": []}
    for b in batches:
        model = s.model()
        opt = OPTIMIZERS["sgd_momentum"][1](model.parameters(), s.recipe)
        idx = s.batches(b, warmup + timed + steps)
        for i in idx[:warmup]:
            train_step(model, opt, s.X[i], s.y[i])
        untraced = _untraced_us(s, model, opt, idx[warmup:warmup + timed])
        trace = _trace_steps(s, model, opt, idx[warmup + timed:])
        st = trace_stats.step_stats(trace_stats.load_trace(trace))
        path = profile_dir / f"torch_steps_b{b}.json.gz"
        files[path] = _gz(trace)
        row = {"batch": b, "untraced_us_per_step": untraced, **st, "trace": _rel(path)}
        doc["batches"].append(row)
        busy = row["gpu_busy_fraction"]
        log(f"[profiles] batch {b}: {untraced:.1f} us/step untraced, {st['wall_us_per_step']:.1f}"
            f" traced, kernels {st['kernel_us_per_step']:.1f} us/step, GPU busy "
            f"{'-' if busy is None else f'{busy:.0%}'}")
    base = doc["batches"][0]
    for row in doc["batches"]:     # how time grows with the work (the first batch = 1)
        row["work_vs_first"] = row["batch"] / base["batch"]
        row["untraced_time_vs_first"] = row["untraced_us_per_step"] / base["untraced_us_per_step"]
    files[results_dir / "torch_batch_steps.json"] = json.dumps(doc, indent=2) + "\n"
    write_all(files)
    log(f"[profiles] batch: wrote {results_dir / 'torch_batch_steps.json'}")
    return doc


# --------------------------------------------------------------------------------------------
# linear
# --------------------------------------------------------------------------------------------

def linear_study(s: Setup, profile_dir: Path, results_dir: Path, steps: int = 5,
                 batches=LINEAR_BATCHES, warmup: int = 5) -> dict:
    """Kernels of each Linear's forward and backward; writes results/torch_linear_kernels.json."""
    files = {}
    dims = {"fc1": [int(s.shape.n_in), int(s.shape.hidden)],
            "fc2": [int(s.shape.hidden), int(s.shape.out)]}
    doc = s.meta() | {"optimizer": OPTIMIZERS["sgd_momentum"][0], "steps_traced": steps,
                      "batches": []}
    for b in batches:
        model = s.model()
        opt = OPTIMIZERS["sgd_momentum"][1](model.parameters(), s.recipe)
        idx = s.batches(b, warmup + steps)
        for i in idx[:warmup]:
            train_step(model, opt, s.X[i], s.y[i])
        trace = _trace_steps(s, model, opt, idx[warmup:], annotate_layers=True, record_shapes=True)
        evs = trace_stats.load_trace(trace)
        rows = trace_stats.group_rows(trace_stats.attribute(evs, trace_stats.layer_ranges(evs, LAYERS)),
                                      steps)
        layers = []
        for layer in LAYERS:
            entry = {"layer": layer, "in_out": dims[layer]}
            for phase in ("forward", "backward"):
                mine = [r for r in rows if r["layer"] == layer and r["phase"] == phase]
                gpu = [r for r in mine if r["kind"] != "op"]
                entry[phase] = {"kernels": gpu, "ops": [r for r in mine if r["kind"] == "op"],
                                "gpu_us_per_step": sum(r["us_per_step"] for r in gpu)}
            layers.append(entry)
        path = profile_dir / f"torch_linear_b{b}.json.gz"
        files[path] = _gz(trace)
        doc["batches"].append({"batch": b, "layers": layers, "trace": _rel(path)})
        log(f"[profiles] linear at batch {b}: " + "; ".join(
            f"{e['layer']} fwd {len(e['forward']['kernels'])} kernels "
            f"{e['forward']['gpu_us_per_step']:.1f} us, bwd {len(e['backward']['kernels'])} "
            f"kernels {e['backward']['gpu_us_per_step']:.1f} us" for e in layers))
    files[results_dir / "torch_linear_kernels.json"] = json.dumps(doc, indent=2) + "\n"
    write_all(files)
    log(f"[profiles] linear: wrote {results_dir / 'torch_linear_kernels.json'}")
    return doc


# --------------------------------------------------------------------------------------------
# CLI
# --------------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.baseline.profiles",
                                 description="torch.profiler studies of the PyTorch eager step")
    ap.add_argument("--only", default=",".join(STUDIES),
                    help=f"comma-separated subset of: {', '.join(STUDIES)} (default: all)")
    ap.add_argument("--device", default="cuda", help="torch device (default cuda)")
    ap.add_argument("--steps", type=int, default=20,
                    help="steps traced per batch size in the batch study (default 20)")
    ap.add_argument("--results", type=Path, default=RESULTS_DIR,
                    help="folder holding init_params.npy and order.npy; the JSON goes there")
    ap.add_argument("--profile", type=Path, default=PROFILE_DIR,
                    help="folder for the traces, timelines and plot (default profile/)")
    args = ap.parse_args(argv)
    only = [x.strip() for x in args.only.split(",") if x.strip()]
    bad = [x for x in only if x not in STUDIES]
    if bad or not only:
        ap.error(f"unknown study {', '.join(bad) or '(none named)'}; known: {', '.join(STUDIES)}")
    if args.steps < 1:
        ap.error(f"--steps must be at least 1, got {args.steps}")
    s = Setup(args.device, args.results)
    t0 = time.perf_counter()
    if "memory" in only:
        memory_study(s, args.profile, args.results)
    if "batch" in only:
        batch_study(s, args.profile, args.results, steps=args.steps)
    if "linear" in only:
        linear_study(s, args.profile, args.results)
    log(f"[profiles] done in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
