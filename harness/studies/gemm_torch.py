"""The cuBLAS side of issue 38's GEMM benchmark: the shapes build/gemm_bench times, through
torch.matmul, by the same method, in a process of its own (harness/studies/gemm_bench.py runs it
once per layout, after build/gemm_bench; this is the only place the benchmark calls cuBLAS).

    python -m harness.studies.gemm_torch --shapes MxNxK[,...] [--precisions fp32,tf32,bf16]
        [--layout nn|tn|nt] [--repeats 30] [--warmup 5] [--seed 20260829] --out FILE.json

C[M x N] = op(A)·op(B) as build/gemm_bench defines it: "n" an operand as used, "t" stored transposed
(A [K x M], B [N x K]) and handed to torch.matmul as a transposed view, which cuBLAS takes as its
transpose flag. Precisions: fp32 float32 operands with torch.backends.cuda.matmul.allow_tf32 False,
tf32 the same with it True, bf16 bfloat16 operands and output (cuBLAS's bf16 GEMM; ours reads float32
and rounds its products' inputs to bfloat16, so its operands are twice the bytes). The plain product:
no epilogue (ours runs the tiled path's: bias + ReLU at nn, the momentum update at tn).

Method, as gemm_bench's: operands uniform in [-1, 1) from a seeded torch.Generator (never a zero
matrix); when one set (A, B, C) is under twice the L2 cache, ceil(2·L2 / set bytes) sets (at most
MAX_SETS) rotated; the first product (on set 0, C filled with NaN) must leave every output finite,
and sampled outputs' error against a float64 product is recorded (not judged: cuBLAS's rounding is
its own); `warmup` untimed products, then `repeats` each between a pair of CUDA events; median and
CV (spec.stats); TFLOP/s = 2·M·N·K / median. Writes the side's file (spec/schema.py GEMM_SIDE,
docs/formats.md) atomically. Exit status: 0 written, 1 a product left a non-finite output (written
all the same), 2 bad input, 3 no PyTorch or no CUDA device (nothing written).
NOT YET RUN ON A GPU (written on a CPU machine for issue 38); tests/test_gemm_bench.py runs its
loops on the CPU through a host stand-in for torch.cuda.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from harness.studies.gemm_shapes import LAYOUTS, parse_shapes
from spec import files, validate
from spec.stats import summary
from spec.torch_variants import PRECISIONS

MAX_SETS = 64          # build/gemm_bench's kMaxSets
SAMPLES = 16           # outputs compared with a float64 product
DEFAULT_SEED = 20260829


def n_sets(set_bytes: int, l2_bytes: int, max_sets: int = MAX_SETS) -> int:
    """The operand sets rotated: ceil(2·L2 / set bytes) at most max_sets, 1 from twice the L2 on."""
    if set_bytes >= 2 * l2_bytes:
        return 1
    return max(1, min(max_sets, -(-2 * l2_bytes // max(1, set_bytes))))


def operands(torch, m: int, n: int, k: int, layout: str, dtype, gen, device: str):
    """(a, b, c): a and b views as the product uses them (transposed views of their storage where the
    layout says t), c the [m x n] output."""
    def draw(rows, cols):
        return torch.empty(rows, cols, dtype=torch.float32, device=device).uniform_(-1.0, 1.0, generator=gen).to(dtype)
    a = draw(k, m).t() if layout[0] == "t" else draw(m, k)
    b = draw(n, k).t() if layout[1] == "t" else draw(k, n)
    return a, b, torch.empty(m, n, dtype=dtype, device=device)


def sampled_error(torch, a, b, c, m: int, n: int, gen_seed: int) -> float:
    """max |c - a·b| / sum|a·b| over SAMPLES outputs (the four corners among them), in float64."""
    import random
    rng = random.Random(gen_seed)
    at = [(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)]
    at += [(rng.randrange(m), rng.randrange(n)) for _ in range(SAMPLES - len(at))]
    worst = 0.0
    for i, j in at:
        terms = a[i, :].double() * b[:, j].double()
        err = abs(float(c[i, j].double()) - float(terms.sum())) / max(float(terms.abs().sum()), 1e-300)
        worst = max(worst, err)
    return worst


def time_shape(torch, m: int, n: int, k: int, layout: str, precision: str, repeats: int, warmup: int,
               seed: int, l2_bytes: int, device: str = "cuda") -> dict:
    """One row of the side's file: the product at `precision`, timed as the module says."""
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    set_bytes = (m * k + k * n + m * n) * (2 if precision == "bf16" else 4)
    gen = torch.Generator(device=device).manual_seed(seed)
    sets = [operands(torch, m, n, k, layout, dtype, gen, device) for _ in range(n_sets(set_bytes, l2_bytes))]
    matmul = torch.backends.cuda.matmul
    before = matmul.allow_tf32
    matmul.allow_tf32 = precision == "tf32"
    try:
        a, b, c = sets[0]
        c.fill_(float("nan"))
        torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        nonfinite = int((~torch.isfinite(c)).sum())
        err = sampled_error(torch, a, b, c, m, n, seed)
        for i in range(warmup):
            a, b, c = sets[(1 + i) % len(sets)]
            torch.matmul(a, b, out=c)
        events = []
        for i in range(repeats):
            a, b, c = sets[(1 + warmup + i) % len(sets)]
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            torch.matmul(a, b, out=c)
            end.record()
            events.append((start, end))
        events[-1][1].synchronize()
        times = [float(s.elapsed_time(e)) for s, e in events]
        tf32_read_back = bool(matmul.allow_tf32)
    finally:
        matmul.allow_tf32 = before
    st = summary(times)
    flop = 2 * m * n * k
    return {"M": m, "N": n, "K": k, "layout": layout, "precision": precision,
            "status": "ok" if nonfinite == 0 else "failed", "flop": flop, "dtype": str(dtype).removeprefix("torch."),
            "allow_tf32": tf32_read_back, "median_ms": st["median"], "mean_ms": st["mean"], "min_ms": st["min"],
            "max_ms": st["max"], "cv_pct": st["cv_pct"], "tflops": flop / (st["median"] / 1e3) / 1e12,
            "repeats": repeats, "warmup": warmup, "sets": len(sets), "set_bytes": set_bytes,
            "check": {"passed": nonfinite == 0, "nonfinite": nonfinite, "sample_rel_err": err,
                      "samples": SAMPLES, "judged": False}}


def measure(torch, shapes: Sequence[dict], precisions: Sequence[str], layout: str, repeats: int, warmup: int,
            seed: int, device: str = "cuda", l2_bytes: int | None = None) -> dict:
    """The side's document; each shape's tensors freed before the next."""
    props = torch.cuda.get_device_properties(0) if device == "cuda" else None
    # the device's L2 (a torch without L2_cache_size: 50 MiB, the H100's, said in the file's l2_bytes)
    l2 = l2_bytes if l2_bytes is not None else int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
    rows = []
    for s in shapes:
        for p in precisions:
            rows.append(time_shape(torch, s["m"], s["n"], s["k"], layout, p, repeats, warmup, seed, l2, device))
            r = rows[-1]
            print(f"{layout} {p} {s['m']}x{s['n']}x{s['k']}: median {r['median_ms']:.4f} ms, CV {r['cv_pct']:.2f}%, "
                  f"{r['tflops']:.2f} TFLOP/s, {r['sets']} set(s), sampled error {r['check']['sample_rel_err']:.2e}"
                  f"{'' if r['check']['passed'] else ', NON-FINITE OUTPUT'}", flush=True)
        if device == "cuda":
            torch.cuda.empty_cache()
    return {"schema": 1, "side": "cublas", "tool": "torch.matmul",
            "gpu": torch.cuda.get_device_name(0) if device == "cuda" else device,
            "compute_capability": f"{props.major}.{props.minor}" if props else None,
            "torch_version": torch.__version__, "torch_cuda_version": torch.version.cuda,
            "allow_bf16_reduced_precision_reduction":
                bool(torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
            "l2_bytes": l2, "layout": layout, "repeats": repeats, "warmup": warmup, "seed": seed,
            "passed": all(r["check"]["passed"] for r in rows), "rows": rows}


def parser() -> validate.ArgParser:
    ap = validate.ArgParser(prog="python -m harness.studies.gemm_torch",
                            description="torch.matmul (cuBLAS) at build/gemm_bench's shapes, by its method.")
    ap.add_argument("--shapes", required=True, type=parse_shapes, help="MxNxK[,MxNxK...]")
    ap.add_argument("--precisions", default="fp32,tf32,bf16", help="of fp32, tf32, bf16")
    ap.add_argument("--layout", default="nn", choices=LAYOUTS)
    ap.add_argument("--repeats", default=30, type=lambda t: validate.count(t, "--repeats", 3, 10000))
    ap.add_argument("--warmup", default=5, type=lambda t: validate.count(t, "--warmup", 0, 1000))
    ap.add_argument("--seed", default=DEFAULT_SEED, type=lambda t: validate.count(t, "--seed", 0, 2 ** 53 - 1))
    ap.add_argument("--out", required=True)
    return ap


def precision_list(text: str) -> list[str]:
    items = [x.strip() for x in str(text).split(",")]
    for x in items:
        if x not in PRECISIONS:
            raise files.InputError(f"error: --precisions: {x!r} is not one of {', '.join(PRECISIONS)}")
    if len(set(items)) != len(items):
        raise files.InputError(f"error: --precisions {text!r}: a precision given twice")
    return items


def main(argv: Sequence[str] | None = None) -> int:
    a = parser().parse_args(argv)
    precisions = precision_list(a.precisions)
    out = Path(a.out)
    files.check_targets([out])
    try:
        import torch
    except ImportError:
        print("error: gemm_torch: PyTorch is not installed; nothing written", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print(f"error: gemm_torch: no CUDA device (torch {torch.__version__} sees none); nothing written",
              file=sys.stderr)
        return 3
    doc = measure(torch, a.shapes, precisions, a.layout, a.repeats, a.warmup, a.seed)
    files.write_json(out, doc)
    bad = sum(not r["check"]["passed"] for r in doc["rows"])
    print(f"gemm_torch: {len(doc['rows'])} rows -> {out}" + (f" ({bad} with non-finite outputs)" if bad else ""))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    files.run_main(main)
