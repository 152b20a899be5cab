"""Every variant of the PyTorch baseline, in report order: its name, what it is in one line, how
to build it, and what decides when it runs. Adding a variant is one entry in VARIANTS.

Everything else reads them here: the baseline's --variants and --full and its default set, the
devices a variant runs on, pytorch.json's variants_run and variants_left_out
(harness/baseline/pytorch_baseline.py), the variants every sweep point runs
(harness/studies/sweep.py) and the variants the trace study traces unless told which
(harness/baseline/variant_traces.py).

`precision` is what a variant computes in (spec/torch_variants.py's names; harness/baseline/
precision.py sets it): "fp32" (float32, TF32 off) for every variant but six, eager, cuda-graph and
compiled-step again at "tf32" and at "bf16" (PRECISION_VARIANTS: each the fp32 entry's builder
given the precision, its flags, and cuda_only at tf32, TF32 being a CUDA matmul mode). They run
in a default run (the two compiled ones compile again: compiled-step's compile_seconds was 7.1 s
on the H200 in the run of d5d2767, so about 20 s more for the six in all), and not in the trace
study unless named. The sweep runs four of them, cuda-graph and compiled-step at tf32 and at bf16
(SWEEP_AT_PRECISION says why not eager), so that each sweep point sets our paths of a precision
against PyTorch's fastest of the same precision.
pytorch.json records each variant's precision, and its fastest_variant stays the fastest fp32 one.

`numerics` says what is known to make a variant's arithmetic differ from the recipe's (a batch
dropped, padded or reweighted, another loss reduction, another precision): pytorch.json's
accuracy_note for a variant over case 7's 1 pp line quotes it. It is the precision's for the
tf32 and bf16 variants (NUMERICS) and empty for every other, as nothing of the kind is known:
each trains every batch of each epoch, the short last one
included (eager and manual-ops loop over them; cuda-graph and the compiled steps hold one graph
or specialisation per batch size and replay the short one last), with the batch-mean
cross-entropy (F.cross_entropy's default reduction; manual_ops' mean) and SGD with momentum in
float32, TF32 off. What still differs between them is the order of float32 roundings (fused
kernels, the compiled steps' update in submission.h's form): it makes the trajectories part, as
they part from float64's, but is no mechanism that shifts accuracy one way.

The factories import the variant classes when called, so reading the names and flags imports no
torch (the sweep driver reads them and runs the baseline in a subprocess). spec/torch_variants.py
names the two variants that the report and the sweep read by role; their entries are keyed by
those names.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable, Sequence

from spec.torch_variants import BF16, CUDA_GRAPH, EAGER, FP32, PRECISIONS, TF32


@dataclass(frozen=True)
class Variant:
    what: str                          # what it is, in one line
    build: Callable                    # build(w, init_flat, shape, step_losses): an object with
                                       # run_epoch(e) (the timed part) and predict(X)
    compiled: bool = False             # built on torch.compile: its entry records cudagraph_skips
    cuda_only: bool = False            # needs a CUDA device
    full_only: str | None = None       # why a default run leaves it out (--full runs it)
    sweep: bool = False                # every sweep point runs it
    traced: bool = False               # the trace study traces it unless told which variants
    unsupported: Callable | None = None  # unsupported(torch.device): why it cannot run there, or None
    numerics: str = ""                 # what makes its arithmetic differ from the recipe's, where
                                       # known (module docstring); accuracy_note quotes it
    precision: str = FP32              # fp32, tf32 or bf16 (spec/torch_variants.py); the baseline
                                       # sets it around the variant (harness/baseline/precision.py)


# Each builder takes precision=... (its fp32 default is the variant as it always was);
# _at_precision gives it the precision of a tf32 or bf16 entry.

def _eager(**options) -> Callable:
    def build(w, init_flat, shape, step_losses, precision=FP32):
        from harness.baseline.variants import EagerVariant
        return EagerVariant(w, init_flat, shape, step_losses, precision=precision, **options)
    return build


def _cuda_graph(w, init_flat, shape, step_losses, precision=FP32):
    from harness.baseline.variants import CudaGraphVariant
    return CudaGraphVariant(w, init_flat, shape, step_losses, precision=precision)


def _compiled(mode: str) -> Callable:
    def build(w, init_flat, shape, step_losses):
        from harness.baseline.variants import CompiledVariant
        return CompiledVariant(w, init_flat, shape, step_losses, mode)
    return build


def _compiled_step(driver: str) -> Callable:
    def build(w, init_flat, shape, step_losses, precision=FP32):
        from harness.baseline.compiled_step import CompiledStepVariant
        return CompiledStepVariant(w, init_flat, shape, step_losses, driver=driver,
                                   precision=precision)
    return build


def _fused_sgd_unsupported(device) -> str | None:
    from harness.baseline.variants import fused_sgd_unsupported
    return fused_sgd_unsupported(device)


VARIANTS: dict[str, Variant] = {
    EAGER: Variant(
        "nn.Linear/ReLU, F.cross_entropy, torch.optim.SGD(momentum): the loop as a user writes it",
        _eager(), sweep=True, traced=True),
    "eager-fused-sgd": Variant(
        "the same with SGD(fused=True)",
        _eager(fused=True), unsupported=_fused_sgd_unsupported),
    CUDA_GRAPH: Variant(
        "the eager step captured whole in a torch.cuda.CUDAGraph (one graph for the full batch, "
        "one for the short last batch)",
        _cuda_graph, cuda_only=True, sweep=True, traced=True),
    "compiled-reduce-overhead": Variant(
        'torch.compile(model + loss, mode="reduce-overhead"); eager SGD',
        _compiled("reduce-overhead"), compiled=True, cuda_only=True, traced=True),
    "compiled-step": Variant(
        "torch.compile (Inductor, default mode) of the whole step (gather, forward, loss, "
        "backward, momentum update), replayed from one torch.cuda.CUDAGraph a batch size "
        "(on a CPU: without graphs)",
        _compiled_step("graphs"), compiled=True, sweep=True, traced=True),
    "compiled-step-reduce-overhead": Variant(
        'the same step compiled with mode="reduce-overhead" (Inductor\'s CUDA-graph trees), '
        "every mutated buffer marked static",
        _compiled_step("reduce-overhead"), compiled=True, cuda_only=True, traced=True),
    "compiled-max-autotune-no-cudagraphs": Variant(
        'torch.compile(model + loss, mode="max-autotune-no-cudagraphs"); eager SGD',
        _compiled("max-autotune-no-cudagraphs"), compiled=True, cuda_only=True,
        full_only="its compile takes about 3 to 4 minutes on the H200 (174 s in the run of "
                  "d73d5a2); runs only with --full"),
    "manual-ops": Variant(
        "harness.baseline.manual_ops.ManualMLP (hand-written backward passes), "
        "torch.optim.SGD(momentum)",
        _eager(manual=True)),
}


# The tf32 and bf16 variants: (fp32 variant, precision) by name, in report order after the fp32 ones.
PRECISION_VARIANTS: dict[str, tuple[str, str]] = {
    f"{base}-{p}": (base, p) for p in (TF32, BF16) for base in (EAGER, CUDA_GRAPH, "compiled-step")}

# What each precision's variants declare of their arithmetic (accuracy_note quotes it).
NUMERICS = {
    TF32: "TF32 matrix products (a 10-bit mantissa for the products' inputs, float32 sums)",
    BF16: "bfloat16 autocast of the forward and loss (bfloat16 products and activations, an 8-bit "
          "mantissa; float32 cross-entropy, weights, momentum and update)",
}


# The fp32 variants whose tf32 and bf16 entries every sweep point runs too. Not eager: it is never
# PyTorch's fastest (at fp32 its median epoch was 1.7x to 29x compiled-step's at every one of the
# sixteen points of the sweep of cd41cc6, results/sweep/*/pytorch.json), so its tf32 and bf16
# entries could not be the variant a precision's ratio is taken against, and leaving them out
# keeps a device call of the sweep short. compiled-step was the fastest at every point; cuda-graph
# is the fastest without a compiler (RESULTS.md's graph tier).
SWEEP_AT_PRECISION = (CUDA_GRAPH, "compiled-step")

# The tf32 and bf16 variants run in a default run (the main job's): the run of ffabfba on the H200
# had all six pass, about 20 s together (results/experiments/precision/). None: not full-only.
PRECISION_OPT_IN = None


def _at_precision(base: str, precision: str) -> Variant:
    """The entry of fp32 variant `base` at `precision`: its builder given the precision, its
    flags (not traced; in the sweep when `base` is in SWEEP_AT_PRECISION), cuda_only also at
    tf32, and full_only PRECISION_OPT_IN."""
    v = VARIANTS[base]
    return Variant(f"{base} at {precision}: {PRECISIONS[precision]}",
                   functools.partial(v.build, precision=precision), compiled=v.compiled,
                   cuda_only=v.cuda_only or precision == TF32, unsupported=v.unsupported,
                   numerics=NUMERICS[precision], precision=precision, full_only=PRECISION_OPT_IN,
                   sweep=base in SWEEP_AT_PRECISION)


VARIANTS.update({name: _at_precision(base, p) for name, (base, p) in PRECISION_VARIANTS.items()})


def names() -> list[str]:
    """Every variant, in report order."""
    return list(VARIANTS)


def get(name: str) -> Variant:
    """The entry of `name`; ValueError naming the known variants when there is none."""
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}") from None


def full_only() -> dict[str, str]:
    """{variant: why a default run leaves it out} of the variants only --full runs."""
    return {n: v.full_only for n, v in VARIANTS.items() if v.full_only}


def sweep_names(precisions: Sequence[str] | None = None) -> list[str]:
    """The variants every sweep point runs, in report order (the fp32 ones first); `precisions`:
    only those of these precisions (default: every precision)."""
    return [n for n, v in VARIANTS.items() if v.sweep
            and (precisions is None or v.precision in precisions)]


def traced_names() -> list[str]:
    """The variants the trace study traces unless told which."""
    return [n for n, v in VARIANTS.items() if v.traced]


def precision_names(precision: str) -> list[str]:
    """The variants of `precision`, in report order."""
    return [n for n, v in VARIANTS.items() if v.precision == precision]


def listing() -> str:
    """One line a variant, in report order: its name, what it is, and where it runs only."""
    width = max(map(len, VARIANTS))
    lines = []
    for n, v in VARIANTS.items():
        only = [w for w, on in (("CUDA only", v.cuda_only), ("--full only", v.full_only)) if on]
        lines.append(f"  {n:<{width}}  {v.what}" + (f" [{', '.join(only)}]" if only else ""))
    return "\n".join(lines)


def select(variants: Sequence[str] | None = None, full: bool = False) -> tuple[list[str], dict[str, str]]:
    """(the variants to run, {left-out variant: why}): pytorch.json's variants_run and
    variants_left_out. Named variants run as named (ValueError when none is named or one is
    unknown); otherwise every variant but the full_only ones, and those too with full."""
    if variants is None:
        chosen = [n for n, v in VARIANTS.items() if full or not v.full_only]
    else:
        chosen = list(variants)
        unknown = [v for v in chosen if v not in VARIANTS]
        if unknown or not chosen:
            raise ValueError(f"unknown variant(s) {', '.join(unknown) or '(none named)'}; "
                             f"known: {', '.join(VARIANTS)}")
    left_out = {n: v.full_only if variants is None else "not in --variants"
                for n, v in VARIANTS.items() if n not in chosen}
    return chosen, left_out


def unavailable(name: str, device) -> str | None:
    """None if variant `name` can run on `device` (a torch device or its name), else why not."""
    import torch
    dev = torch.device(device)
    v = get(name)
    if v.cuda_only and dev.type != "cuda":
        return f"{name} needs a CUDA device"
    return v.unsupported(dev) if v.unsupported else None
