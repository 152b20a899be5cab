#!/usr/bin/env bash
# dev/engine_mlp_device.sh — one device call of tiled-bf16 on the GEMM engine (issue 38): at
# sweep points (POINTS, hidden:batch) `mlp_train --perf-only --parity` times tiled, tiled-bf16 and
# tiled-tf32 (EPOCHS epochs; each path's config in run.json names where its GEMMs ran and the
# measured pairs), then the gate's cases with tiled-bf16 at the recipe (--reference shipped), then
# nsys's kernel summary of tiled-bf16's epochs at PROFILE_POINT. Binaries from .devbuild/
# (dev/pack_devbuild.sh). Everything comes back as $OUT/engine_mlp.tgz.
set -u
cd "$(dirname "$0")/.."
: "${OUT:?OUT must be set (the device output folder)}"
: "${POINTS:=256:128 4096:128 16384:128 256:2048 4096:2048}"
: "${EPOCHS:=6}"
: "${PROFILE_POINT:=4096:128}"
mkdir -p build "$OUT/m"
tar xJf .devbuild/build.tar.xz && find build -type f -exec touch {} +
finish() { tar czf "$OUT/engine_mlp.tgz" -C "$OUT" m && rm -rf "$OUT/m"; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/m/smi.txt"
summary() {  # one line per path of a run.json: its median, parity and config
  python3 - "$1" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
paths = doc.get("paths") or {}
for name, p in (paths.items() if isinstance(paths, dict) else ((q.get("name"), q) for q in paths)):
    t = p.get("timing") or p
    print(f"  {name:12s} median {t.get('median_ms')} ms  parity_ok {p.get('parity_ok')} "
          f"parity {p.get('parity_vs_fp64')}  passed {p.get('passed')}  {str(p.get('config') or '')[:260]}")
EOF
}
for pt in $POINTS; do
  h=${pt%:*}; b=${pt#*:}
  d="$OUT/m/h${h}_b${b}"
  timeout 150 build/mlp_train --data data --out "$d" --perf-only --parity --paths tiled,tiled-tf32,tiled-bf16 \
    --hidden "$h" --batch "$b" --epochs "$EPOCHS" > "$d.log" 2>&1
  echo "h$h b$b rc=$?"
  [ -f "$d/run.json" ] && summary "$d/run.json" || tail -5 "$d.log"
  rm -f "$d"/*.npy
done
timeout 240 build/mlp_train --data data --out "$OUT/m/gate" --paths tiled-bf16 --reference shipped > "$OUT/m/gate.log" 2>&1
echo "gate (tiled-bf16, recipe) rc=$?"; grep -E "verdict|PASS|FAIL|case" "$OUT/m/gate.log" | tail -15
rm -f "$OUT/m/gate"/*.npy
h=${PROFILE_POINT%:*}; b=${PROFILE_POINT#*:}
timeout 120 nsys profile -t cuda -o "$OUT/m/prof" --force-overwrite true build/mlp_train --data data --out "$OUT/m/prof_run" \
  --perf-only --paths tiled-bf16 --hidden "$h" --batch "$b" --epochs 3 > "$OUT/m/prof.log" 2>&1
timeout 60 nsys stats -r cuda_gpu_kern_sum -f csv -o "$OUT/m/prof" "$OUT/m/prof.nsys-rep" > /dev/null 2>&1
rm -rf "$OUT/m/prof.nsys-rep" "$OUT/m/prof.sqlite" "$OUT/m/prof_run"/*.npy
head -12 "$OUT/m/prof_cuda_gpu_kern_sum.csv" 2>/dev/null | cut -c1-220
