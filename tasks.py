"""invoke tasks: the orchestration only; the logic lives in harness/ and analysis/.

    invoke build run profile report     the whole benchmark on a CUDA machine
    invoke test                         the test suite (GPU tests skip without a GPU)
"""
from __future__ import annotations

import sys

from invoke import task


@task(help={"full": "also rebuild data/full/ (the 60,000-image train split, not committed)",
            "deb": "use this dataset-fashion-mnist .deb instead of downloading it"})
def data(c, full=False, deb=None):
    """Rebuild data/ from Debian's dataset-fashion-mnist package and check it against the committed hashes."""
    from harness.dataset import DataError, build_data
    from harness.config import DATA_DIR
    try:
        build_data(DATA_DIR, deb=deb, full=full)
    except DataError as exc:
        sys.exit(f"error: {exc}")


@task(help={"arch": "target architecture, e.g. sm_90 (default: the GPU present, else sm_90)",
            "submission": "a learner's .cu implementing cuda/submission.h (default: ours)",
            "accumulate": "accumulator of the stepwise paths' matrix products: double (default) or float"})
def build(c, arch=None, submission=None, accumulate="double"):
    """Compile build/mlp_train, build/libmlp.so and build/mlp_host with make (prints the nvcc command)."""
    from harness.build import build as do_build
    do_build(arch=arch, submission=submission, accumulate=accumulate)


@task(help={"paths": "comma-separated kernel paths to time (default: all)",
            "pytorch": "also run the PyTorch baseline (default: on)",
            "epochs": "override the recipe's epoch count"})
def run(c, paths=None, pytorch=True, epochs=None):
    """Gate the build (cases 1-8), write results/run.json, then run the PyTorch baseline."""
    from harness.run import run_gate
    extra = []
    if paths:
        extra += ["--paths", paths]
    if epochs:
        extra += ["--epochs", str(epochs)]
    rc = run_gate(extra_args=extra)
    if pytorch:
        from harness import pytorch_baseline
        pytorch_baseline.main([] if not epochs else ["--epochs", str(epochs)])
    if rc != 0:
        sys.exit("gate: a case 1-7 failed (table above); results/run.json records it")


@task(help={"paths": "comma-separated kernel paths to profile (default: every path of the build)",
            "pytorch": "also record a torch.profiler trace of one eager epoch (default: on)"})
def profile(c, paths=None, pytorch=True):
    """Nsight Systems on one epoch of each path: profile/<path>.nsys-rep and three stats CSVs each."""
    from harness.profiling import profile_all
    profile_all(paths.split(",") if paths else None, pytorch=pytorch)


@task
def report(c):
    """Render RESULTS.md from results/, profile/, predictions.toml and GAPS.toml (works without a GPU)."""
    from analysis.report import main as render_main
    render_main([])


@task(help={"gpu": "run only the GPU tests (on a CUDA machine)", "k": "pytest -k expression"})
def test(c, gpu=False, k=None):
    """Run the test suite with pytest (GPU tests skip, with a reason, where there is no CUDA device)."""
    args = [sys.executable, "-m", "pytest", "-q", "-ra"]
    if gpu:
        args += ["-m", "gpu"]
    if k:
        args += ["-k", k]
    c.run(" ".join(args), pty=False)


@task(pre=[build, run, profile, report])
def all(c):  # noqa: A001 - the task's name on the command line
    """build, run, profile and report in one go."""


@task(help={"paths": "comma-separated kernel paths (default: all four)",
            "tools": "comma-separated compute-sanitizer tools (default: memcheck,racecheck,initcheck,synccheck)"})
def sanitize(c, paths=None, tools=None):
    """compute-sanitizer on a short run of every kernel path and on the entry points; results/sanitize.json."""
    from harness.sanitize import TOOLS, sanitize as run_sanitize
    rc = run_sanitize(paths.split(",") if paths else None, tuple(tools.split(",")) if tools else TOOLS)
    if rc:
        sys.exit("sanitize: errors found (results/sanitize.json)")


@task
def reference(c):
    """Regenerate data/reference/ (the float64 result for the recipe) and say whether it changed."""
    from harness.reference import main as reference_main
    reference_main()


@task(help={"widths": "comma-separated hidden widths at batch 128 (default 64,...,8192; none: skip)",
            "batches": "comma-separated batches at width 256 (default 32,128,512,2048; none: skip)",
            "epochs": "epochs per point (epoch 0 is a warm-up, not timed)",
            "pytorch": "also run PyTorch eager and cuda-graph at every point (default: on)",
            "full": "train on data/full, the 60,000-image split (`invoke data --full` first)"})
def sweep(c, widths=None, batches=None, epochs=20, pytorch=True, full=False):
    """Width and batch sweep of the best CUDA path against PyTorch: results/sweep.json, SWEEP.md.

    Each point runs build/mlp_train --perf-only into results/sweep/<point>/, then PyTorch eager
    and cuda-graph on that point's weights and order; SWEEP.md and its two plots follow."""
    from harness.sweep import BATCHES, WIDTHS, data_for, parse_ints, sweep as run_sweep
    from analysis.sweep_report import main as render_sweep
    data_dir, train_size = data_for(full)
    doc = run_sweep(widths=parse_ints(widths, WIDTHS), batches=parse_ints(batches, BATCHES),
                    epochs=int(epochs), pytorch=pytorch, data_dir=data_dir, train_size=train_size)
    render_sweep([])
    if not any(p["best_cuda"] is not None for p in doc["points"]):
        sys.exit("sweep: no point produced a CUDA timing (results/sweep.json lists the errors)")


@task(help={"out": "where to write the ceilings (default: results/ceilings.json)"})
def ceilings(c, out=None):
    """Measure the GPU's roofline ceilings with PyTorch: copy bandwidth and FP32 (and TF32) matmul rate.

    A 2 GiB device-to-device copy gives GB/s; an 8192³ float32 matrix product with TF32 off gives
    the FP32 TFLOP/s of the CUDA cores (with TF32 on, for context). Writes results/ceilings.json,
    which the report's roofline section sets each profiled kernel against."""
    from harness.ceilings import main as ceilings_main
    rc = ceilings_main([] if out is None else ["--out", out])
    if rc:
        sys.exit(rc)
