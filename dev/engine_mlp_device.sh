#!/usr/bin/env bash
# dev/engine_mlp_device.sh — one device call of tiled-bf16 on the GEMM engine (issue 38): at
# sweep points (POINTS, hidden:batch) `mlp_train --perf-only --parity` times tiled, tiled-bf16 and
# tiled-tf32 (EPOCHS epochs; each path's config in run.json names where its GEMMs ran and the
# measured pairs), then the gate's cases with tiled-bf16 at the recipe (--reference shipped), then
# nsys's kernel summary of tiled-bf16's epochs at PROFILE_POINT. Binaries from .devbuild/
# (dev/pack_devbuild.sh). With .devbuild_base/ (`DEST=.devbuild_base SLIM=1 dev/pack_devbuild.sh` at
# the base commit) each point runs the base build's binary right after this one's, so a change is timed against its
# base on the same machine in the same call (m/base/). GATE_PATHS: the paths the recipe's gate runs.
# Everything comes back as $OUT/engine_mlp.tgz.
set -u
cd "$(dirname "$0")/.."
: "${OUT:?OUT must be set (the device output folder)}"
: "${POINTS:=256:128 4096:128 16384:128 256:2048 4096:2048}"
: "${EPOCHS:=6}"
: "${PROFILE_POINT:=4096:128}"
: "${GATE_PATHS:=tiled-bf16}"
source dev/devbuild.sh && unpack_devbuild || exit 1
pack_on_exit engine_mlp.tgz m
base=""
if unpack_base /tmp/base; then
  base=/tmp/base/build/mlp_train
  mkdir -p "$OUT/m/base"
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/m/smi.txt"
summary() { python3 dev/run_summary.py "$@"; }  # one line per path of a run.json
for pt in $POINTS; do
  h=${pt%:*}; b=${pt#*:}
  d="$OUT/m/h${h}_b${b}"
  timeout 150 build/mlp_train --data data --out "$d" --perf-only --parity --paths tiled,tiled-tf32,tiled-bf16 \
    --hidden "$h" --batch "$b" --epochs "$EPOCHS" > "$d.log" 2>&1
  echo "h$h b$b rc=$?"
  [ -f "$d/run.json" ] && summary "$d/run.json" || tail -5 "$d.log"
  rm -f "$d"/*.npy
  if [ -n "$base" ]; then
    db="$OUT/m/base/h${h}_b${b}"
    timeout 150 "$base" --data data --out "$db" --perf-only --parity --paths tiled,tiled-tf32,tiled-bf16 \
      --hidden "$h" --batch "$b" --epochs "$EPOCHS" > "$db.log" 2>&1
    echo "  base rc=$?"
    [ -f "$db/run.json" ] && summary "$db/run.json" --config 0 || tail -3 "$db.log"
    rm -f "$db"/*.npy
  fi
done
timeout 300 build/mlp_train --data data --out "$OUT/m/gate" --paths "$GATE_PATHS" --reference shipped > "$OUT/m/gate.log" 2>&1
echo "gate ($GATE_PATHS, recipe) rc=$?"; grep -E "^gate:|FAIL|epoch-check at|^[0-9]+ +perf" "$OUT/m/gate.log" | tail -12
rm -f "$OUT/m/gate"/*.npy
h=${PROFILE_POINT%:*}; b=${PROFILE_POINT#*:}
timeout 120 nsys profile -t cuda --cuda-graph-trace=node -o "$OUT/m/prof" --force-overwrite true build/mlp_train --data data --out "$OUT/m/prof_run" \
  --perf-only --paths tiled-bf16 --hidden "$h" --batch "$b" --epochs 3 > "$OUT/m/prof.log" 2>&1
timeout 60 nsys stats -r cuda_gpu_kern_sum -f csv -o "$OUT/m/prof" "$OUT/m/prof.nsys-rep" > /dev/null 2>&1
rm -rf "$OUT/m/prof.nsys-rep" "$OUT/m/prof.sqlite" "$OUT/m/prof_run"/*.npy
head -12 "$OUT/m/prof_cuda_gpu_kern_sum.csv" 2>/dev/null | cut -c1-220
