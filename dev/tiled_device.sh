#!/usr/bin/env bash
# dev/tiled_device.sh — one device call for the tiled path while it is developed: build, the GEMMs
# against float64 (build/gemm_check), the GPU tests of tests/test_gpu_tiled.py, then at each point
# of $POINTS ("HIDDENxBATCH ...") `mlp_train --perf-only --parity` over $PATHS_RUN beside PyTorch's
# cuda-graph and compiled-step of the same weights and order. Everything lands in $OUT/$NAME.tgz
# (NAME: tiled); the printout is each point's medians. Not the sweep: that is `invoke sweep`
# (harness/studies/sweep.py). Knobs: DEVBUILD=1 runs the binaries carried in .devbuild/ instead of
# `make` (.devbuild/build.tar.xz, dev/pack_devbuild.sh: build/ with its objects and gemm_check;
# else loose binaries, no gemm_check: give GEMM_CHECK=0); GEMM_ARGS (build/gemm_check's arguments);
# GPU_TESTS=1 (tests/test_gpu_tiled.py), 0, or pytest files; TORCH=0, TORCH_VARIANTS; PROFILE and
# BESIDE (below). dev/precision_device.sh is this with the TF32/BF16 paths' defaults.
set -u
cd "$(dirname "$0")/.."
NAME="${NAME:-tiled}"
R="$OUT/$NAME"
mkdir -p "$R"
POINTS="${POINTS-256x128 8192x128 4096x128 256x2048 1024x128}"  # empty: no points
EPOCHS="${EPOCHS:-6}"
PATHS_RUN="${PATHS_RUN:-tiled,persistent,fused}"
finish() { tar czf "$OUT/$NAME.tgz" --exclude='*.npy' --exclude='*.nsys-rep' --exclude='*.sqlite' -C "$OUT" "$NAME"; }
trap finish EXIT
if [ "${DEVBUILD:-0}" = 1 ]; then
  source dev/devbuild.sh && unpack_devbuild || exit 1
else
  make -j16 ARCH=sm_90 > "$R/build.log" 2>&1 || { tail -30 "$R/build.log"; exit 1; }
fi
if [ "${GEMM_CHECK:-1}" = 1 ]; then
  timeout 300 build/gemm_check ${GEMM_ARGS:-} > "$R/gemm_check.log" 2>&1
  echo "gemm_check rc=$?"; grep -c " ok " "$R/gemm_check.log"; grep -E "FAIL|error" "$R/gemm_check.log" | head; tail -1 "$R/gemm_check.log"
fi
tests="${GPU_TESTS:-1}"
[ "$tests" = 1 ] && tests=tests/test_gpu_tiled.py
[ "$tests" = 0 ] && tests=
for f in $tests; do
  b=$(basename "$f" .py)
  timeout "${TEST_LIMIT:-400}" python -m pytest -q -ra "$f" > "$R/pytest_$b.log" 2>&1
  echo "$b rc=$?"; tail -3 "$R/pytest_$b.log"
done
for pt in $POINTS; do
  h=${pt%x*}; b=${pt#*x}; d="$R/h${h}_b${b}"
  timeout 240 build/mlp_train --perf-only --parity --paths "$PATHS_RUN" --hidden "$h" --batch "$b" \
    --epochs "$EPOCHS" --out "$d" > "$d.log" 2>&1
  echo "== $pt mlp_train rc=$?"; grep -E "median|vs float64|skipped|failed" "$d.log" | head -12
  if [ "${TORCH:-1}" = 1 ]; then
    timeout 240 python -m harness.baseline.pytorch_baseline --results "$d" --variants "${TORCH_VARIANTS:-cuda-graph,compiled-step}" \
      --batch "$b" --epochs "$EPOCHS" > "$d.torch.log" 2>&1
    echo "   torch rc=$?"
    python - "$d/pytorch.json" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    for k, v in d["variants"].items():
        print(f"   torch {k:14s} median {v.get('median_ms')} ms  acc {v.get('test_accuracy')}  {v.get('error', '')}")
except Exception as e:
    print("   torch: no pytorch.json:", e)
PY
  fi
done
# $PROFILE ("HIDDENxBATCH ..."): one epoch of each path of $PROFILE_PATHS (default: tiled) under
# Nsight Systems, each graph node traced, and its kernel summary ($R/prof_hH_bB/PATH_*.csv).
for pt in ${PROFILE:-}; do
 for pp in ${PROFILE_PATHS:-tiled}; do
  h=${pt%x*}; b=${pt#*x}; d="$R/prof_h${h}_b${b}"; mkdir -p "$d"
  NSYS_NVTX_PROFILER_REGISTER_ONLY=0 timeout 200 nsys profile --trace cuda,nvtx --capture-range=nvtx \
    --nvtx-capture=profile-epoch --cuda-graph-trace=node --force-overwrite true -o "$d/$pp" \
    build/mlp_train --profile "$pp" --hidden "$h" --batch "$b" --out "$d/$pp" > "$d/nsys_$pp.log" 2>&1
  timeout 200 nsys stats --force-export=true --report cuda_gpu_kern_sum --format csv --output "$d/$pp" \
    "$d/$pp.nsys-rep" >> "$d/nsys_$pp.log" 2>&1
  echo "== profile $pt $pp"
  python - "$d/${pp}_cuda_gpu_kern_sum.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
for r in rows[:8]:
    print(f"   {float(r['Time (%)']):5.1f}%  {int(r['Instances']):5d} x {float(r['Avg (ns)'])/1000:8.2f} us  {r['Name'][:110]}")
PY
 done
done
# $BESIDE ("HIDDENxBATCH ..."): one epoch of our path $BESIDE_PATH (default tiled) and one of
# PyTorch's $BESIDE_VARIANT (default compiled-step) at the point, each under Nsight Systems (the
# NVTX range profile-epoch: mlp_train --profile, and the baseline's MLP_TORCH_PROFILE_EPOCH), their
# kernel summaries side by side per step (analysis/side_by_side.py) in $R/side_by_side_hH_bB.md
# ($R/side_by_side_hH_bB_PATH.md when BESIDE_PATH is given).
ours="${BESIDE_PATH:-tiled}"; theirs="${BESIDE_VARIANT:-compiled-step}"
tag="${BESIDE_PATH:+_$BESIDE_PATH}"
for pt in ${BESIDE:-}; do
  h=${pt%x*}; b=${pt#*x}; d="$R/beside_h${h}_b${b}$tag"; mkdir -p "$d"
  steps=$(( (6000 + b - 1) / b ))
  build/mlp_train --perf-only --paths "$ours" --hidden "$h" --batch "$b" --epochs 3 --out "$d" > "$d/init.log" 2>&1
  NSYS_NVTX_PROFILER_REGISTER_ONLY=0 timeout 200 nsys profile --trace cuda,nvtx --capture-range=nvtx \
    --nvtx-capture=profile-epoch --cuda-graph-trace=node --force-overwrite true -o "$d/ours" \
    build/mlp_train --profile "$ours" --hidden "$h" --batch "$b" --out "$d/ours" > "$d/nsys_ours.log" 2>&1
  MLP_TORCH_PROFILE_EPOCH=1 NSYS_NVTX_PROFILER_REGISTER_ONLY=0 timeout 300 nsys profile --trace cuda,nvtx \
    --capture-range=nvtx --nvtx-capture=profile-epoch --cuda-graph-trace=node --force-overwrite true \
    -o "$d/torch" python -m harness.baseline.pytorch_baseline --results "$d" --variants "$theirs" \
    --batch "$b" --epochs 3 > "$d/nsys_torch.log" 2>&1
  for side in ours torch; do
    timeout 200 nsys stats --force-export=true --report cuda_gpu_kern_sum --format csv --output "$d/$side" \
      "$d/$side.nsys-rep" >> "$d/nsys_$side.stats.log" 2>&1
  done
  python -m analysis.side_by_side "$d/ours_cuda_gpu_kern_sum.csv" "$d/torch_cuda_gpu_kern_sum.csv" \
    --steps "$steps" --ours-label "$ours" --theirs-label "$theirs" --out "$R/side_by_side_h${h}_b${b}$tag.md"
  echo "== beside $pt"; cat "$R/side_by_side_h${h}_b${b}$tag.md" 2>/dev/null | head -30
done
