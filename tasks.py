"""invoke tasks: the orchestration only; the logic lives in harness/ and analysis/.

    invoke build run profile report     the whole benchmark on a CUDA machine
    invoke test                         the test suite (GPU tests skip without a GPU)
    invoke gpu.session --commit C       a lent GPU machine's evidence, stage by stage
    invoke --list                       every task, grouped

Tasks that shell out echo their commands; a failure ends with one line and a non-zero status.
"""
from __future__ import annotations

import shlex
import subprocess
import sys

from invoke import Collection, Exit, Task, task
from invoke.parser import Argument

from spec import validate
from spec.files import EXIT_BAD_INPUT



def _names(text, flag: str) -> list[str]:
    """A comma-separated list of names (kernel paths, tools), each a safe name (spec.validate):
    they become file names (profile/<path>.nsys-rep) and arguments."""
    names = [x.strip() for x in str(text).split(",")]
    return [validate.safe_name(x, f"{flag}: name") for x in names]


def _file(text, flag: str) -> str | None:
    """A file or folder named on the command line (spec.validate.file_arg: a leading '-' is
    refused, it would reach a program as an option); None stays None."""
    return None if text is None else validate.file_arg(text, flag)


def _epochs(text, flag: str) -> int:
    """An epoch count inside the recipe's bound (spec.recipe.BOUNDS)."""
    from spec.recipe import BOUNDS
    return validate.count(text, flag, int(BOUNDS["epochs"].lo), int(BOUNDS["epochs"].hi))


def _exit_on(rc: int, message: str) -> None:
    """Exit with rc when it is not 0: with `message`, save after a bad input (rc 2), whose one
    line the entry point has printed already."""
    if rc == EXIT_BAD_INPUT:
        raise Exit(code=rc)
    if rc:
        raise Exit(message, code=rc)


# ----------------------------------------------------------------------------- the benchmark

@task(help={"full": "also rebuild data/full/ (the 60,000-image train split, not committed)",
            "deb": "use this dataset-fashion-mnist .deb instead of downloading it"})
def data(c, full=False, deb=None):
    """Rebuild data/ from Debian's dataset-fashion-mnist package and check it against the committed hashes."""
    from harness.data.dataset import DataError, build_data
    from spec.files import DATA_DIR
    deb = _file(deb, "--deb")
    try:
        build_data(DATA_DIR, deb=deb, full=full)
    except DataError as exc:
        raise Exit(f"error: {exc}", code=2) from None


@task(help={"arch": "target architecture, e.g. sm_90 (default: the GPU present, else sm_90)",
            "submission": "a learner's .cu implementing cuda/contract/submission.h (default: ours)",
            "accumulate": "accumulator of the stepwise paths' matrix products: double (default) or float"})
def build(c, arch=None, submission=None, accumulate="double"):
    """Compile build/mlp_train, build/libmlp.so and build/mlp_host with make (prints the nvcc command)."""
    from harness.build import build as do_build
    do_build(arch=arch, submission=_file(submission, "--submission"), accumulate=accumulate)


@task(help={"paths": "comma-separated kernel paths to time (default: all)",
            "pytorch": "also run the PyTorch baseline (default: on)",
            "epochs": "override the recipe's epoch count (1-1000)",
            "full": "also run the slow-compiling PyTorch variant (max-autotune, ~3 minutes of compile)",
            "strict": "also cases 11-12: compute-sanitizer memcheck and racecheck on a short run of the gated path",
            "limit": "each stage's time limit in seconds, finite and > 0 (default: derived from our last run, printed)",
            "one-process": "the whole gate in one child process under one limit, not in stages"})
def run(c, paths=None, pytorch=True, epochs=None, full=False, strict=False, limit=None, one_process=False):
    """Gate the build (cases 1-10; --strict adds 11-12) under the supervisor, write results/run.json, then the PyTorch baseline.

    The binary runs under harness/gate/supervisor.py in stages (entry, epoch-check, overfit, train,
    guard-bands; each `mlp_train --stage NAME` a fresh process under its own printed time limit):
    a hang or a fault fails its stage, the later ones still run, and run.json is still written
    (the logs and each stage's part in results/logs/run_supervised/). The baseline's default
    variant set leaves out compiled-max-autotune-no-cudagraphs (its compile alone is ~3 minutes
    on the H200); --full runs it too. pytorch.json lists what ran."""
    from harness.run import RunFailed, run_gate
    epochs = None if epochs is None else _epochs(epochs, "--epochs")
    limit = None if limit is None else validate.positive_seconds(limit, "--limit")
    extra = []
    if paths:
        extra += ["--paths", ",".join(_names(paths, "--paths"))]
    if epochs:
        extra += ["--epochs", str(epochs)]
    try:
        rc = run_gate(extra_args=extra, strict=strict, limit=limit, staged=not one_process)
    except RunFailed as exc:
        raise Exit(str(exc), code=exc.code) from None
    if pytorch:
        from harness.baseline import pytorch_baseline
        args = (["--epochs", str(epochs)] if epochs else []) + (["--full"] if full else [])
        _exit_on(pytorch_baseline.main(args) or 0,
                 "pytorch: the baseline failed (its message is above)")
    _exit_on(rc, "gate: a case failed (table above); results/run.json records it")


@task(help={"paths": "comma-separated kernel paths to profile (default: every path of the build)",
            "pytorch": "also record a torch.profiler trace of one eager epoch (default: on)"})
def profile(c, paths=None, pytorch=True):
    """Nsight Systems on one epoch of each path: profile/<path>.nsys-rep and three stats CSVs each."""
    from harness.profiling import profile_all
    profile_all(_names(paths, "--paths") if paths else None, pytorch=pytorch)


@task
def report(c):
    """Render RESULTS.md from results/, profile/, predictions.toml and GAPS.toml, and the gate leaderboard from its folders (works without a GPU).

    The leaderboard's "our fastest" and "x ours" are results/run.json's, read when it is rendered
    (harness/gate/course.py leaderboard, its folders' run.json files as they are): rendered again
    here, they stay the run of record's, one owner, after a new `invoke run`."""
    from analysis.report import main as render_main
    _exit_on(render_main([]) or 0, "report: rendering failed (its message is above)")
    from harness.gate.course import OUT_DIR, folders_of, leaderboard
    if (OUT_DIR / "leaderboard.md").is_file():
        folders, skipped = folders_of([OUT_DIR])
        if folders:
            leaderboard(folders, OUT_DIR, reports=False, skipped=skipped)


@task(help={"slurm": "install Debian's Slurm and munge for tests/test_slurm.py when missing (default: on; "
                     "--no-slurm leaves it out)",
            "full-data": "build data/full/ for the data tests, as `invoke data --full` (default: on)",
            "deb": "use this dataset-fashion-mnist .deb instead of downloading it"})
def setup(c, slurm=True, full_data=True, deb=None):
    """What the CPU tests need beyond `pip install -r requirements-test.txt`: Debian's Slurm and munge, data/full/ (README's set-up; CI runs it)."""
    from harness import devenv
    from harness.data.dataset import DataError
    try:
        if slurm:
            print(devenv.install_slurm(), flush=True)
        if full_data:
            print(devenv.full_data(_file(deb, "--deb")), flush=True)
    except devenv.SetupError as exc:
        raise Exit(str(exc), code=1) from None
    except DataError as exc:
        raise Exit(f"error: {exc}", code=2) from None


def pytest_command(gpu: bool = False, k: str | None = None, files=(), fast: bool = False, jobs="auto") -> str:
    """The pytest command line `invoke test` runs, quoted for the shell (shlex.join). With pytest-xdist
    (requirements-test.txt) the tests run in `jobs` processes, a test file's tests in one of them
    (--dist loadfile: its module fixtures built once); auto is one a core, and one where there is a GPU
    (tests/conftest.py: GPU tests never share the GPU). --gpu runs in one process."""
    import importlib.util
    args = [sys.executable, "-m", "pytest", "-q", "-ra"]
    if not gpu and str(jobs) != "1" and importlib.util.find_spec("xdist") is not None:
        args += ["-n", str(jobs), "--dist", "loadfile"]
    if gpu or fast:
        args += ["-m", " and ".join((["gpu"] if gpu else []) + (["not slow"] if fast else []))]
    if k:
        args += ["-k", k]
    return shlex.join([*args, *files])


@task(iterable=["file"],
      help={"gpu": "run only the GPU tests (on a CUDA machine)", "k": "pytest -k expression",
            "file": "a test file or node id (repeatable; default: all of tests/)",
            "fast": "leave out the tests marked slow (over ~20 s each): the edit loop; CI runs everything",
            "jobs": "test processes (pytest-xdist): auto (default: one a core; one where there is a GPU) or 1-256"})
def test(c, gpu=False, k=None, file=None, fast=False, jobs="auto"):
    """Run the test suite with pytest (GPU tests skip, with a reason, where there is no CUDA device)."""
    files = [_file(f, "--file") for f in file or ()]
    jobs = "auto" if str(jobs) == "auto" else validate.count(jobs, "--jobs", 1, 256)
    # Python may cache bytecode for the run even where the environment says not to
    # (PYTHONDONTWRITEBYTECODE, set on our CI image): otherwise each test process and each of the
    # hundreds of Python children it starts compiles every module it imports, and pytest re-rewrites
    # every test module's asserts, each run. The caches are __pycache__/ folders, git-ignored.
    c.run(pytest_command(gpu, k, files, fast, jobs), pty=False, echo=True, env={"PYTHONDONTWRITEBYTECODE": ""})


@task(pre=[build, run, profile, report])
def all(c):  # noqa: A001 - the task's name on the command line
    """build, run, profile and report in one go."""


@task(help={"paths": "comma-separated kernel paths (default: all four)",
            "tools": "comma-separated compute-sanitizer tools (default: memcheck,racecheck,initcheck,synccheck)"})
def sanitize(c, paths=None, tools=None):
    """compute-sanitizer on a short run of every kernel path and on the entry points; results/sanitize.json."""
    from harness.studies.sanitize import TOOLS, sanitize as run_sanitize
    tools = tuple(_names(tools, "--tools")) if tools else TOOLS
    if set(tools) - set(TOOLS):
        raise Exit(f"error: --tools {','.join(tools)!r}: expected some of {', '.join(TOOLS)}", code=EXIT_BAD_INPUT)
    rc = run_sanitize(_names(paths, "--paths") if paths else None, tools)
    _exit_on(rc, "sanitize: errors found (results/sanitize.json)")


class _DirUnlessAggregate(Argument):
    """gate's positional DIR, which --aggregate makes optional: invoke requires every positional
    whose value is None, so once --aggregate has a value an absent DIR reads as "" (a bare word
    is still taken as DIR while --aggregate has none)."""
    aggregate: Argument | None = None

    @property
    def value(self):
        got = Argument.value.fget(self)
        return "" if got is None and self.aggregate is not None and self.aggregate.value is not None else got

    @value.setter
    def value(self, arg):
        Argument.value.fset(self, arg)


class _GateTask(Task):
    def get_arguments(self, ignore_unknown_help=None):
        args = super().get_arguments(ignore_unknown_help)
        by = {a.name: a for a in args}
        by["dir"].__class__ = _DirUnlessAggregate
        by["dir"].aggregate = by["aggregate"]
        return args


@task(klass=_GateTask, positional=["dir"],
      help={"dir": "a folder of submissions (*.cu): each built, gated in isolation, ranked (not with --aggregate)",
            "aggregate": "comma-separated gate folders: only rebuild the leaderboard from their run.json files "
                         "(no DIR then)",
            "out": "where the submissions' folders and the leaderboard go (default: results/gate)",
            "gpus": "'all' (default) or comma-separated GPU indices: the node's GPUs side by side",
            "jobs": "submissions gated at once on each GPU (default 1); their timed stages still run alone",
            "limit": "each run's time limit in seconds (default: derived from our fastest path)",
            "strict-determinism": "a submission's one-epoch rerun must be bitwise identical (default: within the "
                                  "parity limit, with a note)"})
def gate(c, dir=None, aggregate=None, out=None, gpus=None, jobs=None, limit=None,  # noqa: A002
         strict_determinism=False):
    """Gate every submission in DIR (every case of `mlp_host catalog`, sanitizers included) or aggregate existing folders: results/gate/leaderboard.{csv,md}.

    `invoke gate DIR` gates; `invoke gate --aggregate a,b` (no DIR) only rebuilds the leaderboard
    and the reports from existing folders, as the Slurm array's last job does."""
    if dir in ("-h", "--help"):  # invoke hands the positional DIR the flag: show this task's help
        raise SystemExit(subprocess.call([sys.executable, "-m", "invoke", "--help", "gate"]))
    if dir:
        validate.file_arg(dir, "DIR")
    out = _file(out, "--out")
    if aggregate is not None:
        folders = aggregate.split(",")
        gating = [flag for flag, given in (("DIR", dir), ("--gpus", gpus), ("--jobs", jobs), ("--limit", limit),
                                           ("--strict-determinism", strict_determinism)) if given]
        if gating:
            raise Exit(f"error: --aggregate takes no {', '.join(gating)} (those gate a folder of submissions; "
                       f"--aggregate only rebuilds the leaderboard)", code=2)
        if any(not f.strip() for f in folders):
            raise Exit(f"error: --aggregate: an empty folder name in {aggregate!r} (comma-separated folders)", code=2)
        folders = [validate.file_arg(f, "--aggregate") for f in folders]
        args = ["--aggregate", *folders]
    elif dir:
        args = [dir]
        for flag, value in (("--gpus", gpus), ("--jobs", jobs), ("--limit", limit)):
            if value is not None:
                args += [flag, str(value)]
        if strict_determinism:
            args += ["--strict-determinism"]
    else:
        raise Exit("error: give DIR (a folder of submissions) or --aggregate FOLDER[,FOLDER...]", code=2)
    if out:
        args += ["--out", out]
    from harness.gate.course import main as gate_main
    _exit_on(gate_main(args), "gate: no leaderboard (the message is above)")


@task
def reference(c):
    """Regenerate data/reference/ (the float64 result for the recipe) and say whether it changed."""
    from harness.data.reference import main as reference_main
    _exit_on(reference_main([]), "reference: regeneration failed")


@task(help={"widths": "comma-separated hidden widths at batch 128 (default 64,...,16384; none: skip)",
            "batches": "comma-separated batches at width 256 (default 32,64,...,2048; none: skip)",
            "epochs": "epochs per point, at least 2 (epoch 0 is a warm-up, not timed; default 20)",
            "pytorch": "also run PyTorch eager, cuda-graph and compiled-step at every point (default: on)",
            "full": "train on data/full, the 60,000-image split (`invoke data --full` first)",
            "precisions": "precisions of PyTorch's sweep variants, fp32 among them (default "
                          "fp32,tf32,bf16; fp32: without the tf32 and bf16 variants)"})
def sweep(c, widths=None, batches=None, epochs=None, pytorch=True, full=False, precisions=None):
    """Width and batch sweep of the best CUDA path against PyTorch's fastest: results/sweep.json, SWEEP.md.

    Each point (harness/studies/sweep_plan.py's defaults: widths 64..16,384 at batch 128, batches
    32..2,048 at width 256, and width 4,096 at batch 2,048) runs build/mlp_train --perf-only
    --parity over every path of the binary (opt-in ones included) into a staging folder, then
    PyTorch eager, cuda-graph and compiled-step (TF32 off) on that point's weights and order; the
    ratio is taken against the fastest PyTorch variant that passed. cuda-graph and compiled-step
    also run at tf32 and bf16 (--precisions fp32 leaves them out), and each precision's best path
    of ours is set against PyTorch's fastest of the same precision. In parts that fit a device
    call: `python -m harness.studies.sweep --widths ... --batches none --points none`, then the
    rest, then `--collect-only --report`. A point that produced a CUDA timing replaces
    results/sweep/<point>/, and sweep.json, SWEEP.md and its three plots are written together. A
    sweep in which no point produced one writes nothing of the committed results."""
    from harness.studies.sweep import (SWEEP_MD, data_for, parse_epochs, parse_points,
                                       parse_precisions, sweep as run_sweep)
    widths, batches = parse_points(widths, batches)
    epochs = parse_epochs(epochs)
    parse_precisions(precisions)          # a bad name stops here, before anything runs
    data_dir, train_size = data_for(full)
    doc = run_sweep(widths=widths, batches=batches, epochs=epochs, pytorch=pytorch, data_dir=data_dir,
                    train_size=train_size, report=SWEEP_MD, precisions=precisions)
    if not any(p["best_cuda"] is not None for p in doc["points"]):
        raise Exit("sweep: no point produced a CUDA timing; the committed results are untouched "
                   "(results/failed/sweep/<point>/, git-ignored, hold this run's logs)", code=1)


@task(help={"out": "where to write the ceilings (default: results/ceilings.json)"})
def ceilings(c, out=None):
    """Measure the GPU's roofline ceilings with PyTorch: copy bandwidth and FP32 (TF32, BF16) matmul rate.

    A 2 GiB device-to-device copy gives GB/s; an 8192³ float32 matrix product with TF32 off gives
    the FP32 TFLOP/s of the CUDA cores (with TF32 on, and in bfloat16, the tensor cores' rates,
    which invoke gpu.gemm reads). Writes results/ceilings.json, which the report's roofline section
    sets each profiled kernel against."""
    from harness.studies.ceilings import main as ceilings_main
    _exit_on(ceilings_main([] if out is None else ["--out", _file(out, "--out")]), "ceilings: not measured (see above)")


# ----------------------------------------------------------------------------- gpu: lent machines

@task(help={"stages": "comma-separated, run in the fixed order build,ceilings,run,phases,profile,"
                      "pytest,sanitize,sweep,ncu,accum,gemm (default: build..sanitize)",
            "commit": "the commit run.json names (MLP_COMMIT; the machine's .git can be stale)",
            "run-paths": "the kernel paths the run stage times (default: all)",
            "out": "pack the evidence into OUT/evidence.tgz (default: $OUT when set)"})
def session(c, stages=None, commit=None, run_paths=None, out=None):
    """A GPU session's evidence, stage by stage, each under its own time limit.

    Logs go to results/logs/<stage>.log, exit statuses to results/logs/stages.txt; with OUT the
    session packs results/, profile/ and SWEEP.md (no .npy, no .sqlite) into OUT/evidence.tgz."""
    from harness import gpu_session
    try:
        names = gpu_session.parse_stages(stages)
    except ValueError as exc:
        raise Exit(f"error: {exc}", code=2) from None
    _exit_on(gpu_session.session(names, commit=commit, run_paths=run_paths, out=_file(out, "--out")),
             "gpu.session: a stage did not exit 0 (results/logs/stages.txt)")


@task
def phases(c):
    """The persistent kernel's phase breakdown: make and run build/persistent_phases -> results/persistent_phases.json."""
    from harness.studies.phases import phases as run_phases
    _exit_on(run_phases(), "gpu.phases: build/persistent_phases failed (its message is above)")


@task
def ncu(c):
    """Nsight Compute counters (--clock-control none) of the persistent and stationary kernels and the fused path's two widest rows -> results/ncu/."""
    from harness.studies.ncu_counters import main as ncu_main
    _exit_on(ncu_main(), "gpu.ncu: a profile failed (its log: results/failed/ncu/<name>.log)")


@task(help={"out": "the runs' folder (default: results/experiments/accumulate)"})
def accumulate_ab(c, out=None):
    """float64 vs float32 accumulation: builds build/f32acc, alternates both builds' stepwise paths on one GPU.

    Summarise with `python -m analysis.accumulate_ab` (results/experiments/accumulate/README.md)."""
    from harness.studies import accumulate_ab as ab
    _exit_on(ab.main(**({"out_dir": _file(out, "--out")} if out else {})), "gpu.accumulate-ab: the float build failed")


@task(help={"only": "comma-separated studies: memory,batch,linear (default: all three)"})
def torch_profiles(c, only=None):
    """PyTorch's memory timelines (SGD, momentum, Adam), step time against batch and Linear kernels -> results/torch_*.json, profile/torch_*."""
    from harness.baseline.profiles import main as profiles_main
    _exit_on(profiles_main(["--only", only] if only else []) or 0, "gpu.torch-profiles: a study failed (above)")


@task(help={"classes": "comma-separated, of t4,l4 (default: both)",
            "no-report": "do not render each class's RESULTS.md"})
def portability(c, classes=None, no_report=False):
    """The main job under T4 and L4 limits on this GPU (MLP_CAP_* caps) -> results/portability/<class>/.

    Each class: run.json, run.log and RESULTS.md; every path runs in the configuration that fits
    or is skipped with its reason (harness/studies/portability.py)."""
    from harness.studies.portability import main as portability_main
    _exit_on(portability_main((["--classes", classes] if classes else []) + (["--no-report"] if no_report else [])),
             "gpu.portability: a class's run failed (its log: results/failed/portability/<class>/run.log)")


@task(help={"precisions": "comma-separated, of fp32,tf32,bf16 (default: all three)",
            "layouts": "comma-separated, of nn,tn,nt (default: all three)",
            "shapes": "MxNxK:LAYOUT,... instead of harness/studies/gemm_shapes.py's list",
            "repeats": "timed launches per shape and precision (default 30)",
            "no-cublas": "ours alone (no torch.matmul side)"})
def gemm(c, precisions=None, layouts=None, shapes=None, repeats=None, no_cublas=False):
    """Our tiled GEMMs (build/gemm_bench) against cuBLAS (torch.matmul) at the sweep's and transformer's shapes -> results/gemm.json.

    harness/studies/gemm_bench.py does the work (issue 38); `invoke build` makes build/gemm_bench and
    `invoke ceilings` the ceilings its percentages use."""
    from harness.studies.gemm_bench import main as gemm_main
    argv = [*(["--precisions", precisions] if precisions else []), *(["--layouts", layouts] if layouts else []),
            *(["--shapes", shapes] if shapes else []), *(["--repeats", str(repeats)] if repeats else []),
            *(["--no-cublas"] if no_cublas else [])]
    _exit_on(gemm_main(argv), "gpu.gemm: a side failed or a check did not pass (results/gemm.json, results/gemm/)")


@task(name="gate-bench", help={"n": "submissions in the generated course (issue 40's acceptance: 50)",
                               "seed": "the generator's seed (default 40)",
                               "jobs": "submissions gated at once on each GPU (default 4)",
                               "gpus": "'all' (default) or comma-separated GPU indices",
                               "racecheck-slots": "racecheck runs at once on each GPU (default 1)"})
def gate_bench(c, n=50, seed=40, jobs=4, gpus=None, racecheck_slots=1):
    """Gate a generated course of N learner-style submissions and time it -> results/gate_bench.json.

    harness/studies/gate_bench.py does the work: harness/gate/course_gen.py's course, gated as `invoke
    gate` gates one (sanitizers included), every verdict held against the generator's intent."""
    from harness.studies.gate_bench import main as bench_main
    argv = ["--n", str(n), "--seed", str(seed), "--jobs", str(jobs), "--racecheck-slots", str(racecheck_slots),
            *(["--gpus", gpus] if gpus else [])]
    _exit_on(bench_main(argv), "gpu.gate-bench: a verdict was not the one intended (results/gate_bench.json)")


@task(help={"only": "comma-separated studies: batch,linear (default: both)"})
def ours_studies(c, only=None):
    """Our binary's step time against batch (fastest path per batch) and the fused path's kernels by layer, from nsys -> results/ours_*.json, profile/ours/."""
    from harness.studies.ours_studies import main as ours_main
    _exit_on(ours_main(["--only", only] if only else []) or 0, "gpu.ours-studies: a study failed (above)")


# ----------------------------------------------------------------------------- transformer: issue 31

@task(name="train", help={"device": "cuda (default where there is one) or cpu",
                          "epochs": "override transformer.toml's epochs",
                          "train-size": "override its train_size (the first N training images)",
                          "eval-size": "test images evaluated after each epoch (default: test_size)"})
def transformer_train(c, device=None, epochs=None, train_size=None, eval_size=None):
    """Train transformer.toml's vision transformer briefly with PyTorch -> results/transformer/weights/ (params.npy, manifest.json with SHA-256s)."""
    from harness.transformer.train import main as train_main
    args = [f"--{k}={v}" for k, v in (("device", device), ("epochs", epochs), ("train-size", train_size),
                                      ("eval-size", eval_size)) if v is not None]
    _exit_on(train_main(args), "transformer.train: failed (above)")


@task(name="check", help={"layer-batch": "test images for layer one's checks (default 32)",
                          "logits-batch": "test images for the logits' checks (default 256)"})
def transformer_check(c, layer_batch=32, logits_batch=256):
    """Our CUDA forward against float64 on each GEMM engine (fp32 FFMA, tf32x3 tensor cores, bf16 bfloat16 operands) at its precision, trained and seeded random weights: each check's value, limit, verdict -> results/transformer/check_*.json."""
    from harness.transformer import run as vit
    _exit_on(vit.check(layer_batch=int(layer_batch), logits_batch=int(logits_batch)),
             "transformer.check: a check failed or the binary stopped (above)")


@task(name="time", help={"batches": "comma-separated batch sizes (default 128,1024,10000)",
                         "repeats": "timed forwards per batch and variant (default 30)",
                         "pytorch": "also time PyTorch's variants and record its test-set logits (default: on)"})
def transformer_time(c, batches="128,1024,10000", repeats=30, pytorch=True):
    """Our forward (each engine, stream and CUDA graph, tiles tuned) and PyTorch's variants (eager, CUDA graph, torch.compile) at fp32, tf32 and bf16, at each batch -> results/transformer/time_ours*.json, torch_time.json."""
    from harness.transformer import run as vit
    rc = vit.time_ours(batches=batches, repeats=int(repeats))
    if pytorch:
        from harness.transformer.torch_time import main as torch_main
        rc = max(rc, torch_main(["--weights", str(vit.WEIGHTS), "--batches", batches, "--repeats", str(repeats)]))
    _exit_on(rc, "transformer.time: a timing run failed (above)")


@task(name="accuracy")
def transformer_accuracy(c):
    """Test-set accuracy of our forward against PyTorch's with the same weights, per precision; differing predictions explained -> results/transformer/accuracy.json, accuracy_bf16.json."""
    from harness.transformer import run as vit
    _exit_on(vit.accuracy(), "transformer.accuracy: the accuracies differ beyond rounding, or a run failed (above)")


@task(name="profile", help={"batch": "the profiled forward's batch (default 1024)"})
def transformer_profile(c, batch=1024):
    """Nsight Systems on one forward of the fp32 headline engine -> profile/transformer.nsys-rep and its three stats CSVs, results/transformer/profile.json."""
    from harness.transformer import run as vit
    _exit_on(vit.profile(batch=int(batch)), "transformer.profile: failed (above)")


@task(name="report")
def transformer_report(c):
    """Assemble results/transformer.json from results/transformer/ and re-render RESULTS.md (its transformer section)."""
    from harness.transformer.results import main as results_main
    from analysis.report import main as render_main
    _exit_on(results_main(["--summary"]) or render_main([]) or 0, "transformer.report: failed (above)")


@task(name="all", pre=[transformer_train, transformer_check, transformer_time, transformer_accuracy,
                       transformer_profile, transformer_report])
def transformer_all(c):
    """train, check, time, accuracy, profile and report in one go (stops at the first failure; dev/transformer_device.sh runs every step)."""


transformer = Collection("transformer", transformer_train, transformer_check, transformer_time,
                         transformer_accuracy, transformer_profile, transformer_report)
transformer.add_task(transformer_all, default=True)
transformer.__doc__ = "The vision transformer's forward pass (issue 31): train, check, time, profile, report."


gpu = Collection("gpu", session, phases, ncu, accumulate_ab, torch_profiles, portability, ours_studies, gemm,
                 gate_bench)
gpu.__doc__ = "Lent GPU machines: the evidence session and the experiments it runs."
ns = Collection(data, setup, build, run, profile, report, test, all, sanitize, gate, reference, sweep, ceilings, gpu,
               transformer)


def _bad_input_exits_2(body):
    """A task body whose InputError (a bad file or value, one line) exits with EXIT_BAD_INPUT."""
    import functools

    from spec.files import EXIT_BAD_INPUT, InputError

    @functools.wraps(body)
    def checked(*args, **kwargs):
        try:
            return body(*args, **kwargs)
        except InputError as exc:
            raise Exit(str(exc), code=EXIT_BAD_INPUT) from None
    return checked


for _t in [*ns.tasks.values(), *gpu.tasks.values(), *transformer.tasks.values()]:
    _t.body = _bad_input_exits_2(_t.body)
