"""The sweep's plan (harness/studies/sweep.py): its points and their defaults, and the checks of
every setting a user gives (--widths, --batches, --points, --epochs, --precisions, --variants,
--paths, --full) before anything runs; each bad value is an InputError of one line naming its flag."""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Sequence

from harness.baseline import registry
from spec import catalog, validate
from spec.files import BUILD_DIR, DATA_DIR, ROOT, InputError
from spec.torch_variants import FP32, PRECISIONS

WIDTHS = (64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384)
BATCHES = (32, 64, 128, 256, 512, 1024, 2048)
EXTRA_POINTS = ((4096, 2048),)  # (hidden, batch) pairs outside the two sweeps: sweeps ["extra"]
WIDTH_SWEEP_BATCH = 128        # the batch of the width sweep
BATCH_SWEEP_HIDDEN = 256       # the hidden width of the batch sweep
FALLBACK_PATHS = ("persistent", "fused")   # when the binary's catalog cannot be read
SWEEP_DIR = "sweep"            # per-point folders: results/sweep/<label>/
SWEEP_JSON = "sweep.json"
POINT_JSON = "point.json"      # per point: its record's inputs (how it was run, what stopped it)
POINT_CONFIG_KEYS = ("epochs", "paths", "pytorch_variants", "data_dir", "train_size", "parity",
                     "precisions")
CEILINGS_JSON = "ceilings.json"   # the roofline's ceilings, beside sweep.json (invoke ceilings)
UNKNOWN = "unknown"            # a path's accumulator where run.json does not say it
FULL_TRAIN_SIZE = 60_000       # data/full (invoke data --full)
COST_IMAGES = 1000             # cost is GPU-seconds per this many training images
DEFAULT_TIMEOUT_S = 300        # per subprocess (the binary, the baseline) of one point
LOG_TAIL_LINES = 20
DEFAULT_EPOCHS = 20
MIN_EPOCHS, MAX_EPOCHS = 2, 1000   # epoch 0 is a warm-up, not timed; the recipe's bound
MAX_WIDTH, MAX_BATCH = 16384, 65536   # the recipe bounds of hidden_dim and batch (spec.recipe.BOUNDS)
STAGING = ".new"               # a point folder's suffix while it runs (a failed point's go to results/failed/)
SWEEP_MD = ROOT / "SWEEP.md"
LABEL_RE = re.compile(r"^h([0-9]+)_b([0-9]+)$")


def label(hidden: int, batch: int) -> str:
    """The point's name and folder: h256_b128."""
    return f"h{int(hidden)}_b{int(batch)}"


def sweep_points(widths: Sequence[int] = WIDTHS, batches: Sequence[int] = BATCHES,
                 width_batch: int = WIDTH_SWEEP_BATCH, batch_hidden: int = BATCH_SWEEP_HIDDEN,
                 extra_points: Sequence[Sequence[int]] = EXTRA_POINTS) -> list[dict]:
    """The points to run, in run order (the width sweep, then the batch sweep's new points, then
    the extra points' new ones); each {"label", "hidden", "batch", "sweeps": a list of "width",
    "batch", "extra"}. A point in two groups (256 x 128 by default) appears once."""
    points: dict[str, dict] = {}
    for sweep_name, shapes in (("width", [(int(w), int(width_batch)) for w in widths]),
                               ("batch", [(int(batch_hidden), int(b)) for b in batches]),
                               ("extra", [(int(h), int(b)) for h, b in extra_points])):
        for hidden, batch in shapes:
            if hidden < 1 or batch < 1:
                raise ValueError(f"widths and batches must be positive, got {hidden}x{batch}")
            key = label(hidden, batch)
            point = points.setdefault(key, {"label": key, "hidden": hidden, "batch": batch,
                                            "sweeps": []})
            if sweep_name not in point["sweeps"]:
                point["sweeps"].append(sweep_name)
    return list(points.values())


def rel(p: Path) -> str:
    """A path as the commands show it: relative to the repository root where that is short."""
    p = Path(p)
    try:
        return os.path.relpath(p.resolve(), ROOT)
    except ValueError:
        return str(p)


def resolve_paths(paths, build_dir: Path = BUILD_DIR) -> tuple[list[str], str]:
    """(the CUDA paths to time, where the list came from). `paths` (a comma-separated string or
    a list) is taken as given; None: every path of the binary's registry, those a plain run
    times and the opt-in ones (spec.catalog.path_names of build_dir's mlp_host), or, when that cannot be read,
    FALLBACK_PATHS with the reason (the sweep prints it and records it in config.paths_source)."""
    if paths is not None:
        items = paths.split(",") if isinstance(paths, str) else list(paths)
        path_list = [validate.safe_name(str(p).strip(), "--paths: path") for p in items
                     if str(p).strip()]
        if not path_list:
            raise InputError("error: --paths names no path")
        return path_list, "--paths"
    try:
        names = list(catalog.path_names(Path(build_dir)))
        if not names:
            raise ValueError("the catalog lists no path")
        return names, f"{rel(Path(build_dir) / 'mlp_host')} catalog (every path, opt-in ones included)"
    except (InputError, OSError, ValueError, KeyError, TypeError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return list(FALLBACK_PATHS), (f"fallback: the binary's catalog could not be read "
                                      f"({why.removeprefix('error: ')}); --paths names others")


def parse_precisions(text: str | Sequence[str] | None) -> list[str]:
    """--precisions: "fp32,tf32" -> ["fp32", "tf32"], in PRECISIONS' order; None -> every
    precision. Each must be one of spec.torch_variants.PRECISIONS, none twice, and fp32 among
    them (the sweep's headline, and the path every parity is taken against): anything else is an
    InputError naming --precisions."""
    if text is None:
        return list(PRECISIONS)
    items = text.split(",") if isinstance(text, str) else [str(x) for x in text]
    items = [x.strip() for x in items]
    shown = ",".join(items) if not isinstance(text, str) else text
    bad = [x for x in items if x not in PRECISIONS]
    if bad or not items:
        raise InputError(f"error: --precisions {shown!r}: expected comma-separated names of "
                         f"{', '.join(PRECISIONS)}" + (f" (not: {', '.join(map(repr, bad))})"
                                                        if bad else ""))
    twice = sorted({x for x in items if items.count(x) > 1})
    if twice:
        raise InputError(f"error: --precisions {shown!r}: {', '.join(twice)} given twice")
    if FP32 not in items:
        raise InputError(f"error: --precisions {shown!r}: must include {FP32} (the sweep's "
                         f"headline and every point's parity are fp32's)")
    return [p for p in PRECISIONS if p in items]


def resolve_variants(variants, precisions: Sequence[str] | None = None) -> list[str]:
    """The PyTorch variants of every point: the registry's sweep variants of `precisions`
    (default: every precision: cuda-graph and compiled-step also at tf32 and bf16,
    registry.SWEEP_AT_PRECISION), or those named (then `precisions` must be None: --variants
    and --precisions are two ways to say the same, and one is given)."""
    if variants is None:
        return registry.sweep_names(parse_precisions(precisions))
    if precisions is not None:
        raise InputError("error: --variants and --precisions: give one (--variants names every "
                         "variant to run; --precisions picks the sweep variants' precisions)")
    items = variants.split(",") if isinstance(variants, str) else list(variants)
    chosen = [str(v).strip() for v in items if str(v).strip()]
    try:
        registry.select(chosen)
    except ValueError as exc:
        raise InputError(f"error: --variants {','.join(chosen) or repr(variants)}: {exc}") from None
    return chosen


def parse_ints(text: str | Sequence[int] | None, default: Sequence[int], flag: str = "--widths",
               hi: int = MAX_WIDTH) -> list[int]:
    """"64,128" -> [64, 128]; None -> default; "none" -> [] (that sweep left out); anything else
    (an item that is not a plain decimal integer in [1, hi], one given twice, an empty list)
    is an InputError naming `flag` (spec.validate.integers)."""
    if text is None:
        return list(default)
    if not isinstance(text, str):
        return [validate.count(str(x), flag, 1, hi) for x in text]
    if text.strip().lower() == "none":
        return []
    return validate.integers(text, flag, 1, hi)


def parse_extra_points(text: str | Sequence[Sequence[int]] | None,
                       default: Sequence[Sequence[int]] = EXTRA_POINTS) -> list[tuple[int, int]]:
    """--points: "4096x2048,8192x512" -> [(4096, 2048), (8192, 512)] (hidden x batch, each in
    the recipe's bounds, none twice); None -> default (EXTRA_POINTS); "none" -> []."""
    flag = "--points"
    if text is None:
        return [(int(h), int(b)) for h, b in default]
    if not isinstance(text, str):
        items = [f"{h}x{b}" for h, b in text]
    elif text.strip().lower() == "none":
        return []
    else:
        items = [x.strip() for x in text.split(",")]
    out = []
    for item in items:
        m = re.fullmatch(r"([0-9]+)[xX]([0-9]+)", item)
        if not m:
            raise InputError(f"error: {flag} {text!r}: expected comma-separated WIDTHxBATCH "
                             f"pairs (e.g. 4096x2048) or none")
        pair = (validate.count(m.group(1), f"{flag} width", 1, MAX_WIDTH),
                validate.count(m.group(2), f"{flag} batch", 1, MAX_BATCH))
        if pair in out:
            raise InputError(f"error: {flag} {text!r}: {item} given twice")
        out.append(pair)
    return out


def parse_points(widths, batches, extra_points=()) -> tuple[list[int], list[int]]:
    """(widths, batches) of --widths and --batches (parse_ints); no width, no batch and no
    `extra_points` (the CLI passes those --points named, not the default ones) is an InputError."""
    w = parse_ints(widths, WIDTHS, "--widths", MAX_WIDTH)
    b = parse_ints(batches, BATCHES, "--batches", MAX_BATCH)
    if not w and not b and not extra_points:
        raise InputError(f"error: --widths {widths!r} --batches {batches!r}: no sweep point to run")
    return w, b


def parse_epochs(text) -> int:
    """--epochs: a plain decimal integer in [2, 1000] (epoch 0 is a warm-up, so one epoch times
    nothing); None: DEFAULT_EPOCHS."""
    if text is None:
        return DEFAULT_EPOCHS
    return validate.count(str(text), "--epochs (epoch 0 is a warm-up, not timed)", MIN_EPOCHS, MAX_EPOCHS)


def data_for(full: bool) -> tuple[Path, int | None]:
    """(data folder, --train-size) of the shipped subset (data/) or the full split (data/full)."""
    if not full:
        return DATA_DIR, None
    full_dir = DATA_DIR / "full"
    if not (full_dir / "SHA256SUMS").is_file():
        raise InputError(f"error: {rel(full_dir)}: not found: run `invoke data --full` first")
    return full_dir, FULL_TRAIN_SIZE
