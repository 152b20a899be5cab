#!/usr/bin/env bash
# dev/precision_device.sh — one device call for our TF32 and BF16 paths (issue 30) while they are
# developed: build; build/gemm_check at $GEMM_PRECISIONS; the GPU tests in $GPU_TESTS (pytest
# files); then at each point of $POINTS ("HIDDENxBATCH ...") `mlp_train --perf-only --parity` over
# $PATHS_RUN beside PyTorch's $TORCH_VARIANTS of the same weights and order. Everything lands in
# $OUT/precision.tgz (no .npy); the printout is each step's verdict and each point's medians.
set -u
cd "$(dirname "$0")/.."
R="$OUT/precision"
mkdir -p "$R"
POINTS="${POINTS-256x128 8192x128 4096x2048 256x2048}"
EPOCHS="${EPOCHS:-5}"
PATHS_RUN="${PATHS_RUN:-stationary,stationary-tf32,tiled,tiled-tf32,tiled-bf16}"
TORCH_VARIANTS="${TORCH_VARIANTS:-compiled-step,compiled-step-tf32,compiled-step-bf16,cuda-graph-tf32,cuda-graph-bf16}"
finish() { tar czf "$OUT/precision.tgz" --exclude='*.npy' --exclude='*.nsys-rep' --exclude='*.sqlite' -C "$OUT" precision; }
trap finish EXIT
mkdir -p build
if [ -x .devbuild/mlp_train ] && cp .devbuild/* build/ && build/mlp_train --help > /dev/null 2>&1; then
  echo "binaries from .devbuild (built on the CPU machine for sm_90)"
else
  make -j16 ARCH=sm_90 > "$R/build.log" 2>&1 || { tail -30 "$R/build.log"; exit 1; }
  echo "build ok"
fi
if [ -n "${GEMM_PRECISIONS-tf32,bf16}" ]; then
  timeout 300 build/gemm_check --precisions "${GEMM_PRECISIONS-tf32,bf16}" > "$R/gemm_check.log" 2>&1
  echo "gemm_check rc=$? $(grep -c ' ok ' "$R/gemm_check.log") ok"; grep -E "FAIL|error" "$R/gemm_check.log" | head -5; tail -1 "$R/gemm_check.log"
fi
for f in ${GPU_TESTS-tests/test_gpu_precision_paths.py}; do
  b=$(basename "$f" .py)
  timeout "${TEST_LIMIT:-400}" python -m pytest -q -x -ra "$f" > "$R/$b.log" 2>&1
  echo "$b rc=$?"; tail -4 "$R/$b.log"
done
for pt in $POINTS; do
  h=${pt%x*}; b=${pt#*x}; d="$R/h${h}_b${b}"
  timeout 240 build/mlp_train --perf-only --parity --paths "$PATHS_RUN" --hidden "$h" --batch "$b" \
    --epochs "$EPOCHS" --out "$d" > "$d.log" 2>&1
  echo "== $pt mlp_train rc=$?"; grep -E "median|vs fused|skipped|failed" "$d.log" | head -14
  timeout 300 python -m harness.baseline.pytorch_baseline --results "$d" --variants "$TORCH_VARIANTS" \
    --batch "$b" --epochs "$EPOCHS" > "$d.torch.log" 2>&1
  echo "   torch rc=$?"
  python - "$d/pytorch.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    for k, v in d["variants"].items():
        print(f"   torch {k:20s} median {v.get('median_ms')} ms  acc {v.get('test_accuracy')}  {v.get('error', '') or ''}")
except Exception as e:
    print("   torch: no pytorch.json:", e)
PY
done
