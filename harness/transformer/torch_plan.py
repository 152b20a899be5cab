"""The order PyTorch's timing (harness/transformer/torch_time.py) runs its work in, free of torch so
that the CPU tests plan without it.

One unit of work is one variant of one family at one batch (spec/transformer.py TORCH_FAMILIES,
TORCH_VARIANTS). Every variant that compiles nothing (eager, CUDA graph) of every family runs before
any torch.compile, so that a deadline cuts compiles, never a precision's cheap variants; within each
of the two tiers, variant by variant in the order given, each variant across every family (the
compared precisions' families first, tf32 last) and every batch before the next. A compile's first
call costs seconds (the first in a process about 25 s on an H100, each later one about 2 to 5 s).
"""
from __future__ import annotations

from typing import NamedTuple

from spec.files import InputError
from spec.transformer import TORCH_FAMILIES, TORCH_VARIANTS, torch_key


class Work(NamedTuple):
    family: str
    variant: str
    batch: int

    @property
    def key(self) -> str:
        """The variant's key in torch_time.json's rows (spec/transformer.py torch_key)."""
        return torch_key(self.family, self.variant)


def compiles(variant: str) -> bool:
    """Whether the variant's first call at a batch compiles (torch.compile, dynamic=False)."""
    return variant.startswith("compiled-")


def families(precisions) -> list[str]:
    """The families timed for `precisions` (fp32, tf32, bf16: bf16 is autocast and the bf16 model),
    in TORCH_FAMILIES' order."""
    return [f for f, p in TORCH_FAMILIES.items() if p in precisions]


def check_variants(variants) -> list[str]:
    """`variants` as a list (InputError, one line, naming the unknown ones)."""
    variants = list(variants)
    bad = [v for v in variants if v not in TORCH_VARIANTS]
    if bad or not variants:
        raise InputError(f"error: --variants: unknown {', '.join(map(repr, bad)) or 'empty list'}; "
                             f"want a subset of {','.join(TORCH_VARIANTS)}")
    return variants


def plan(variants, precisions, batches) -> list[Work]:
    """Every (family, variant, batch) to run, in the order to run them: the variants that compile
    nothing first, then the compiles; within each, variant by variant, each across every family and
    batch."""
    fams = families(precisions)
    cheap = [v for v in variants if not compiles(v)]
    compiled = [v for v in variants if compiles(v)]
    return [Work(f, v, b) for tier in (cheap, compiled) for v in tier for f in fams for b in batches]


def cut_lines(cut: list[Work]) -> list[str]:
    """One line per variant the deadline cut: its key and the batches it was not run at."""
    by_key: dict[str, list[int]] = {}
    for w in cut:
        by_key.setdefault(w.key, []).append(w.batch)
    return [f"{key} at batch {', '.join(map(str, bs))}" for key, bs in by_key.items()]
