#!/usr/bin/env python3
"""A stand-in for either side of harness/studies/gemm_bench.py (tests/test_gemm_bench.py): run under a
name starting "gemm_torch" (a symlink) it is the cuBLAS side (harness/studies/gemm_torch.py), under
any other name build/gemm_bench. It takes their arguments (--shapes, --precisions, --layout,
--repeats, --warmup, --seed, --out) and writes the side's file (spec/schema.py GEMM_SIDE) with
invented times: ours at FAKE_OURS_TFLOPS (default 100), cuBLAS at FAKE_CUBLAS_TFLOPS (default 500)
TFLOP/s; ours marks every nt row "unsupported", as the binary does. FAKE_GEMM (JSON) maps a side to
what it does instead: "nodevice" (one line, exit 3, nothing written), "checkfail" (every row of
precision bf16 fails its check: status "failed", exit 1), "garbage" (writes a file that is not
JSON, exit 0), "hang" (sleeps 60 s). FAKE_GEMM_LOG (a file) gets one JSON line per call: the side
and its arguments."""
import json
import os
import sys
import time
from pathlib import Path

side = "cublas" if Path(sys.argv[0]).name.startswith("gemm_torch") else "ours"
args = sys.argv[1:]
get = lambda f, d=None: args[args.index(f) + 1] if f in args else d  # noqa: E731
if os.environ.get("FAKE_GEMM_LOG"):
    with open(os.environ["FAKE_GEMM_LOG"], "a") as fh:
        fh.write(json.dumps({"side": side, "argv": args}) + "\n")
mode = json.loads(os.environ.get("FAKE_GEMM", "{}")).get(side, "ok")
if mode == "nodevice":
    print(f"{side}: error: no CUDA device", file=sys.stderr)
    sys.exit(3)
if mode == "hang":
    time.sleep(60)
out, layout = Path(get("--out")), get("--layout", "nn")
if mode == "garbage":
    out.write_text("{not json")
    sys.exit(0)
rate = float(os.environ.get("FAKE_OURS_TFLOPS" if side == "ours" else "FAKE_CUBLAS_TFLOPS",
                            "100" if side == "ours" else "500"))
repeats, warmup = int(get("--repeats", "30")), int(get("--warmup", "5"))
rows, failed = [], False
for item in get("--shapes").split(","):
    m, n, k = map(int, item.split("x"))
    for p in get("--precisions", "fp32,tf32,bf16").split(","):
        flop = 2 * m * n * k
        row = {"M": m, "N": n, "K": k, "layout": layout, "precision": p, "flop": flop}
        if side == "ours" and layout == "nt":
            rows.append({**row, "status": "unsupported", "why": "no nt kernel of ours (fake)"})
            continue
        bad = mode == "checkfail" and p == "bf16"
        failed |= bad
        ms = flop / (rate * 1e12) * 1e3
        rows.append({**row, "status": "failed" if bad else "ok", "median_ms": ms, "mean_ms": ms, "min_ms": ms * 0.99,
                     "max_ms": ms * 1.02, "cv_pct": 0.5, "tflops": rate, "repeats": repeats, "warmup": warmup,
                     "sets": 1, "plan": "fake plan" if side == "ours" else None,
                     "check": {"passed": not bad, "worst_ratio": 3.0 if bad else 0.01, "nonfinite": 0}})
doc = {"schema": 1, "side": side, "gpu": "FAKE GPU", "compute_capability": "9.0", "layout": layout,
       "repeats": repeats, "warmup": warmup, "passed": not failed, "rows": rows}
if side == "cublas":
    doc.update({"torch_version": "0.0-fake", "torch_cuda_version": "0.0"})
out.write_text(json.dumps(doc))
print(f"fake {side} {layout}: {len(rows)} rows -> {out}")
sys.exit(1 if failed else 0)
