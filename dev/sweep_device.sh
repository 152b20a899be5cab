#!/usr/bin/env bash
# dev/sweep_device.sh PART — one device call of the sweep (harness/studies/sweep.py) in parts that
# each fit a call: PART "widths" (9 widths at batch 128) or "batches" (6 batches at width 256 and
# the extra point 4096 x 2048); or, with PyTorch's tf32 and bf16 variants at every point (four
# more, two of them compiled: about 15-25 s more a point), the smaller parts "widths-lo" (64 to
# 1,024), "widths-hi" (2,048 to 16,384), "batches-lo" (32, 64, 256) and "batches-hi" (512, 1,024,
# 2,048 and 4096 x 2048). PRECISIONS=fp32 (passed as --precisions) leaves the tf32 and bf16
# variants out; default: every precision. Binaries built on the CPU machine for sm_90 travel in
# .devbuild/ (copied into build/ when they run here; else `make`). results/sweep/ comes back in
# $OUT/sweep.tgz (no .npy); the collection (`--collect-only --report`) runs on the CPU machine.
set -u
cd "$(dirname "$0")/.."
EPOCHS="${EPOCHS:-6}"
mkdir -p build
source dev/devbuild.sh
if unpack_devbuild; then
  :
else
  make -j16 ARCH=sm_90 > "$OUT/build.log" 2>&1 || { tail -30 "$OUT/build.log"; exit 1; }
fi
finish() { tar czf "$OUT/sweep.tgz" --exclude='*.npy' results/sweep; }
trap finish EXIT
case "${1:-}" in
  widths) args=(--widths 64,128,256,512,1024,2048,4096,8192,16384 --batches none --points none) ;;
  batches) args=(--widths none --batches 32,64,256,512,1024,2048 --points 4096x2048) ;;
  widths-lo) args=(--widths 64,128,256,512,1024 --batches none --points none) ;;
  widths-hi) args=(--widths 2048,4096,8192,16384 --batches none --points none) ;;
  batches-lo) args=(--widths none --batches 32,64,256 --points none) ;;
  batches-hi) args=(--widths none --batches 512,1024,2048 --points 4096x2048) ;;
  *) echo "usage: [PRECISIONS=fp32[,tf32][,bf16]] dev/sweep_device.sh widths|batches|widths-lo|widths-hi|batches-lo|batches-hi"; exit 2 ;;
esac
[ -n "${PRECISIONS:-}" ] && args+=(--precisions "$PRECISIONS")
timeout -s INT "${SWEEP_LIMIT:-540}" python -m harness.studies.sweep "${args[@]}" --epochs "$EPOCHS" 2>&1 | tee "$OUT/sweep_$1.log" | \
  grep -E "^(==|point|  )|median|error|failed" | head -150
