#!/usr/bin/env bash
# dev/persistent_precision_device.sh — one device call for persistent2-tf32 and persistent2-bf16
# (issue 38, PERFLOG change 8): at POINTS (hidden:batch) `mlp_train --perf-only --parity` times them
# beside persistent2 and the tiled precision paths, then the gate's train stage (parity, rerun,
# accuracy and case 9 at each path's precision) runs them at the recipe. Binaries from .devbuild/
# (dev/pack_devbuild.sh, or just build/mlp_train packed the same way). Everything comes back as
# $OUT/persistent_precision.tgz.
set -u
cd "$(dirname "$0")/.."
: "${OUT:?OUT must be set (the device output folder)}"
: "${POINTS:=64:128 128:128 512:128 256:256}"
: "${EPOCHS:=6}"
R="$OUT/p"
source dev/devbuild.sh && unpack_devbuild || exit 1
pack_on_exit persistent_precision.tgz p
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$R/smi.txt"
summary() { python3 dev/run_summary.py "$1" --config 0; }  # one line per path of a run.json
for pt in $POINTS; do
  h=${pt%:*}; b=${pt#*:}
  d="$R/h${h}_b${b}"
  timeout 90 build/mlp_train --data data --out "$d" --perf-only --parity \
    --paths persistent2,persistent2-tf32,persistent2-bf16,tiled-tf32,tiled-bf16 \
    --hidden "$h" --batch "$b" --epochs "$EPOCHS" > "$d.log" 2>&1
  echo "h$h b$b rc=$?"
  [ -f "$d/run.json" ] && summary "$d/run.json" || tail -5 "$d.log"
  rm -f "$d"/*.npy
done
timeout 200 build/mlp_train --stage train --paths fused,persistent2-tf32,persistent2-bf16 --data data --out "$R/train" \
  > "$R/train.log" 2>&1
echo "train stage rc=$?"; grep -E "epoch-check at|overfit|perf|^7 |^gate|FAIL" "$R/train.log" | tail -10
rm -f "$R/train"/*.npy
