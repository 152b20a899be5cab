"""Why a PyTorch variant takes the time it does, from its own torch.profiler trace of one epoch
(after a warm-up epoch): the epoch's wall time, the summed GPU kernel time, the GPU's share of the
wall, kernel and graph launches, and the CPU operators with the most self time.

    python -m harness.baseline.variant_traces [--variants a,b,...] [--device cuda]

--variants defaults to the registry's traced variants (harness/baseline/registry.py).

Writes results/experiments/variant_traces/variant_traces.json and README.md together (all or
none); the README's sentences are computed from the traces. Needs results/init_params.npy and
results/order.npy (written by build/mlp_train).
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np
import torch

from harness.baseline import precision as prec
from harness.baseline import registry
from harness.baseline.inputs import load_data, load_inputs, workload_for
from harness.baseline.variants import sync
from spec import provenance
from spec.files import RESULTS_DIR, write_all
from spec.recipe import load_recipe

OUT_DIR = RESULTS_DIR / "experiments" / "variant_traces"
TOP_OPS = 6


def trace_variant(name: str, init: np.ndarray, order: np.ndarray, data: dict, recipe: dict, device: str) -> dict:
    """One warm-up epoch, then one traced epoch of variant `name` at its registry precision (set
    around it, as the baseline does): the trace's summary numbers."""
    with prec.setting(registry.get(name).precision):
        return _trace(name, init, order, data, recipe, device)


def _trace(name, init, order, data, recipe, device) -> dict:
    w, init_flat, shape, losses = workload_for(init, order[:2], data, recipe, device)
    variant = registry.get(name).build(w, init_flat, shape, losses)
    variant.run_epoch(0)
    sync(w.device)
    acts = [torch.profiler.ProfilerActivity.CPU]
    if w.device.type == "cuda":
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts) as prof:
        t0 = time.perf_counter()
        variant.run_epoch(1)
        sync(w.device)
        wall_ms = (time.perf_counter() - t0) * 1e3
    kernel_us, kernels, launches, graph_launches = 0.0, 0, 0, 0
    for ev in prof.events():
        if ev.device_type == torch.autograd.DeviceType.CUDA:
            kernel_us += ev.device_time
            kernels += 1
        elif ev.name in ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx"):
            launches += 1
        elif ev.name in ("cudaGraphLaunch", "cuGraphLaunch"):
            graph_launches += 1
    ops = sorted((e for e in prof.key_averages() if e.self_cpu_time_total > 0),
                 key=lambda e: e.self_cpu_time_total, reverse=True)[:TOP_OPS]
    return {"steps": w.steps, "wall_ms": wall_ms, "kernel_ms": kernel_us / 1e3,
            "gpu_busy_fraction": (kernel_us / 1e3) / wall_ms if wall_ms > 0 else None,
            "kernels": kernels, "kernel_launches": launches, "graph_launches": graph_launches,
            "compiled": registry.get(name).compiled,
            "top_cpu_ops": [{"name": e.key, "self_cpu_ms": e.self_cpu_time_total / 1e3, "calls": e.count}
                            for e in ops]}


def readme(doc: dict) -> str:
    """Computed sentences, one a variant: where its epoch goes."""
    lines = ["# Where each PyTorch variant's epoch goes (one traced epoch after a warm-up)", "",
             f"Written by `python -m harness.baseline.variant_traces` at commit `{doc['commit']}` on {doc['gpu']}; "
             "numbers in variant_traces.json.", "",
             "| variant | wall ms | kernel ms | GPU busy | kernels | kernel launches | graph launches | top CPU op (self ms) |",
             "|---|---|---|---|---|---|---|---|"]
    for name, v in doc["variants"].items():
        top = v["top_cpu_ops"][0] if v["top_cpu_ops"] else {"name": "-", "self_cpu_ms": 0.0}
        busy = "-" if v["gpu_busy_fraction"] is None else f"{100 * v['gpu_busy_fraction']:.0f}%"
        lines.append(f"| {name} | {v['wall_ms']:.2f} | {v['kernel_ms']:.2f} | {busy} | {v['kernels']} | "
                     f"{v['kernel_launches']} | {v['graph_launches']} | {top['name']} ({top['self_cpu_ms']:.2f}) |")
    lines.append("")
    for name, v in doc["variants"].items():
        if v["gpu_busy_fraction"] is None:
            continue
        per_step = v["kernel_launches"] / v["steps"]
        bound = "host-bound" if v["gpu_busy_fraction"] < 0.5 else "GPU-bound"
        lines.append(f"- `{name}`: {bound}: the GPU computes {v['kernel_ms']:.2f} of the epoch's "
                     f"{v['wall_ms']:.2f} ms; the host issues {per_step:.1f} kernel launches and "
                     f"{v['graph_launches'] / v['steps']:.1f} graph launches a step; most CPU self time: "
                     + ", ".join(f"{o['name']} {o['self_cpu_ms']:.1f} ms" for o in v["top_cpu_ops"][:3]) + ".")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.baseline.variant_traces", description=__doc__.split("\n")[0])
    ap.add_argument("--variants", default=",".join(registry.traced_names()))
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args(argv)
    names = [v.strip() for v in args.variants.split(",") if v.strip()]
    try:
        registry.select(names)
    except ValueError as exc:
        ap.error(str(exc))
    init, order = load_inputs()
    data, recipe = load_data(), load_recipe()
    gpu = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "cpu"
    doc = {"schema": 1, **provenance.stamp(), "gpu": gpu, "torch_version": torch.__version__, "variants": {}}
    for name in names:
        print(f"[traces] {name} ...", flush=True)
        doc["variants"][name] = trace_variant(name, init, order, data, recipe, args.device)
    write_all({OUT_DIR / "variant_traces.json": json.dumps(doc, indent=1) + "\n", OUT_DIR / "README.md": readme(doc)})
    print(readme(doc), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
