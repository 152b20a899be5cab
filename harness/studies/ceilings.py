"""Measure the device's roofline ceilings with PyTorch and write results/ceilings.json.

    python -m harness.studies.ceilings [--out results/ceilings.json]

- copy: device-to-device bandwidth. `dst.copy_(src)` of a 2 GiB float32 tensor (far larger than
  the L2 cache), 3 warm-up copies, then 20 copies each timed with a pair of CUDA events; the
  median time. Bytes moved = 2 × the tensor's size (each byte read once and written once);
  GB/s = bytes / median seconds / 1e9.
- fp32_matmul: the arithmetic ceiling of the CUDA cores. `torch.matmul` of two 8192×8192
  float32 matrices of seeded standard-normal values (never zeros) with
  `torch.backends.cuda.matmul.allow_tf32 = False`, 3 warm-ups, then 10 products each timed with
  CUDA events; the median. FLOP = 2·n³; TFLOP/s = FLOP / median seconds / 1e12.
- tf32_matmul: the same product with TF32 allowed (tensor cores), for context only: our kernels
  are FP32 on the CUDA cores, so the roofline uses fp32_matmul.
- bf16_matmul: the same product of bfloat16 matrices (the float32 draws rounded; bfloat16 output),
  the tensor cores' BF16 rate: the ceiling harness/studies/gemm_bench.py holds bf16 GEMMs to, as
  tf32_matmul for tf32 and fp32_matmul for fp32 (issue 38). Not yet measured on a GPU: added on a
  CPU machine, its loop tested there (tests/test_roofline.py).

The TF32 setting is put back as it was. The file is written atomically (spec.files); its
format is in docs/formats.md. Without a CUDA device (or without PyTorch) it prints one line and
exits with status 1, writing nothing.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from spec import files, provenance, validate
from spec.files import RESULTS_DIR, write_json
from spec.stats import summary

SCHEMA = 1
COPY_TENSOR_BYTES = 2 * 2**30  # 2 GiB of float32
COPY_WARMUP, COPY_TIMED = 3, 20
MATMUL_N = 8192
MATMUL_WARMUP, MATMUL_TIMED = 3, 10
SEED = 20260829
DEFAULT_OUT = RESULTS_DIR / "ceilings.json"


def copy_summary(tensor_bytes: int, times_ms: list[float], warmup: int) -> dict:
    """The copy entry of ceilings.json from the timed copies (ms each)."""
    s = summary(times_ms)
    moved = 2 * tensor_bytes
    return {"bytes": moved, "tensor_bytes": tensor_bytes, "median_ms": s["median"],
            "gb_per_s": moved / (s["median"] / 1e3) / 1e9, "warmup": warmup,
            "timed": len(times_ms), "min_ms": s["min"], "max_ms": s["max"]}


def matmul_summary(n: int, times_ms: list[float], warmup: int, allow_tf32: bool, dtype: str = "float32") -> dict:
    """A matmul entry of ceilings.json from the timed products (ms each)."""
    s = summary(times_ms)
    flop = 2 * n ** 3
    return {"n": n, "flop": flop, "median_ms": s["median"], "tflops": flop / (s["median"] / 1e3) / 1e12,
            "allow_tf32": allow_tf32, "dtype": dtype, "warmup": warmup, "timed": len(times_ms),
            "min_ms": s["min"], "max_ms": s["max"]}


def _timed(torch, fn, warmup: int, timed: int) -> list[float]:
    """fn run `warmup` times, then `timed` times, each bracketed by CUDA events; ms each."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(timed):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(float(start.elapsed_time(end)))
    return times


def measure_copy(torch, tensor_bytes: int = COPY_TENSOR_BYTES, warmup: int = COPY_WARMUP,
                 timed: int = COPY_TIMED, device: str = "cuda") -> dict:
    n = tensor_bytes // 4
    gen = torch.Generator(device=device).manual_seed(SEED)
    src = torch.empty(n, dtype=torch.float32, device=device).uniform_(1.0, 2.0, generator=gen)
    dst = torch.empty_like(src)
    times = _timed(torch, lambda: dst.copy_(src), warmup, timed)
    if not torch.equal(dst, src):
        raise RuntimeError("the device copy did not reproduce its source")
    return copy_summary(n * 4, times, warmup)


def measure_matmul(torch, allow_tf32: bool, n: int = MATMUL_N, warmup: int = MATMUL_WARMUP,
                   timed: int = MATMUL_TIMED, device: str = "cuda", bf16: bool = False) -> dict:
    """fp32 (allow_tf32 False), tf32 (True) or, with bf16, the bfloat16 product (TF32 setting False)."""
    matmul = torch.backends.cuda.matmul
    before = matmul.allow_tf32
    matmul.allow_tf32 = allow_tf32
    dtype = torch.bfloat16 if bf16 else torch.float32
    try:
        gen = torch.Generator(device=device).manual_seed(SEED + int(allow_tf32) + 2 * int(bf16))
        a = torch.randn(n, n, dtype=torch.float32, device=device, generator=gen).to(dtype)
        b = torch.randn(n, n, dtype=torch.float32, device=device, generator=gen).to(dtype)
        c = torch.empty(n, n, dtype=dtype, device=device)
        times = _timed(torch, lambda: torch.matmul(a, b, out=c), warmup, timed)
        if not bool(torch.isfinite(c).all()):
            raise RuntimeError("the matrix product has non-finite values")
        out = matmul_summary(n, times, warmup, allow_tf32, str(dtype).removeprefix("torch."))
        out["allow_tf32_read_back"] = bool(matmul.allow_tf32)
        return out
    finally:
        matmul.allow_tf32 = before


def measure(torch) -> dict:
    """Every ceiling, as the ceilings.json object. Each measurement's tensors are freed (and the
    caching allocator emptied) before the next."""
    props = torch.cuda.get_device_properties(0)
    doc = {
        "schema": SCHEMA,
        **provenance.stamp(),
        "gpu": torch.cuda.get_device_name(0),
        "compute_capability": f"{props.major}.{props.minor}",
        "torch_version": torch.__version__,
        "torch_cuda_version": torch.version.cuda,
    }
    for key, fn in (("copy", lambda: measure_copy(torch)),
                    ("fp32_matmul", lambda: measure_matmul(torch, allow_tf32=False)),
                    ("tf32_matmul", lambda: measure_matmul(torch, allow_tf32=True)),
                    ("bf16_matmul", lambda: measure_matmul(torch, allow_tf32=False, bf16=True))):
        doc[key] = fn()
        torch.cuda.empty_cache()
    return doc


def main(argv: Sequence[str] | None = None) -> int:
    parser = validate.ArgParser(prog="python -m harness.studies.ceilings",
                                description="Measure copy bandwidth and FP32/TF32/BF16 matmul "
                                                 "rates on the CUDA device -> ceilings.json.")
    parser.add_argument("--out", default=str(DEFAULT_OUT), help="default: results/ceilings.json")
    args = parser.parse_args(argv)
    out = Path(args.out)
    files.check_targets([out])   # before a minute of measuring: a folder in the way is one line
    try:
        import torch
    except ImportError:
        print("error: ceilings: PyTorch is not installed (bring the CUDA build that fits the "
              "driver)", file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print(f"error: ceilings: no CUDA device (torch {torch.__version__} sees none); "
              "nothing written", file=sys.stderr)
        return 1
    doc = measure(torch)
    write_json(out, doc)
    print(f"ceilings: copy {doc['copy']['gb_per_s']:.1f} GB/s, FP32 matmul "
          f"{doc['fp32_matmul']['tflops']:.2f} TFLOP/s, TF32 matmul "
          f"{doc['tf32_matmul']['tflops']:.2f}, BF16 matmul {doc['bf16_matmul']['tflops']:.2f} TFLOP/s on "
          f"{doc['gpu']} -> {out}")
    return 0


if __name__ == "__main__":
    files.run_main(main)
