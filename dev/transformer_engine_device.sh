#!/usr/bin/env bash
# dev/transformer_engine_device.sh — one quick device call on the transformer's engine flows (issue 39),
# random weights (seed 7), no PyTorch: `vit_forward check` on fp32, tf32x3 (on a 9.0 device the wgmma
# engine's 3xTF32 flow) and bf16, and on tf32x3 with VIT_TF32X3_MMA=1; `vit_forward time` of fp32, tf32x3
# and bf16 at BATCHES, and of tf32x3 on mma.sync;
# nsys's kernel summary of one forward of each of PROFILE_ENGINES at each of PROFILE_BATCHES; with .devbuild_base (VIT=1),
# the base builds' `time` right after this build's (build/vit_forward and build/vit_forward.LABEL in its tar). Binaries from .devbuild (VIT=1).
# Everything comes back as $OUT/transformer_engine.tgz.
set -u
cd "$(dirname "$0")/.."
: "${OUT:?OUT must be set (the device output folder)}"
: "${BATCHES:=128,1024,10000}"
: "${PROFILE_BATCHES:=128 1024}"
: "${PROFILE_ENGINES:=tf32x3 bf16}"
R="$OUT/te"
source dev/devbuild.sh && unpack_devbuild || exit 1
pack_on_exit transformer_engine.tgz te
V=build/vit_forward
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$R/smi.txt"
for e in fp32 tf32x3 bf16; do
  timeout 60 $V check --random 7 --gemm $e --out "$R/check_$e.json" > "$R/check_$e.log" 2>&1
  echo "check $e rc=$?: $(tail -1 "$R/check_$e.log")"; grep FAIL "$R/check_$e.log" | head -5
done
VIT_TF32X3_MMA=1 timeout 60 $V check --random 7 --gemm tf32x3 --out "$R/check_tf32x3_mma.json" > "$R/check_tf32x3_mma.log" 2>&1
echo "check tf32x3 (mma.sync) rc=$?: $(tail -1 "$R/check_tf32x3_mma.log")"
timeout 100 $V time --random 7 --gemm fp32,tf32x3,bf16 --batches "$BATCHES" --repeats 20 --out "$R/time.json" > "$R/time.log" 2>&1
echo "time rc=$?"; grep -E "^ours" "$R/time.log"
if unpack_base /tmp/vitbase; then  # the base builds (build/vit_forward, build/vit_forward.LABEL), same call
  for b in /tmp/vitbase/build/vit_forward*; do
    label=$(basename "$b"); label=${label#vit_forward}; label=${label#.}
    timeout 100 "$b" time --random 7 --gemm fp32,tf32x3 --batches "$BATCHES" --repeats 20 \
      --out "$R/time_base${label:+_$label}.json" > "$R/time_base${label:+_$label}.log" 2>&1
    echo "time (base build ${label:-}) rc=$?"; grep -E "^ours" "$R/time_base${label:+_$label}.log"
  done
fi
VIT_TF32X3_MMA=1 timeout 100 $V time --random 7 --gemm tf32x3 --batches "$BATCHES" --repeats 20 --out "$R/time_mma.json" > "$R/time_mma.log" 2>&1
echo "time (tf32x3 on mma.sync) rc=$?"; grep -E "^ours" "$R/time_mma.log"
for pe in $PROFILE_ENGINES; do
for pb in $PROFILE_BATCHES; do
  NSYS_NVTX_PROFILER_REGISTER_ONLY=0 timeout 120 nsys profile -t cuda,nvtx --capture-range=nvtx --nvtx-capture=vit-forward \
    -o "$R/prof_${pe}_b$pb" --force-overwrite true $V profile --random 7 --gemm "$pe" --batch "$pb" > "$R/prof_${pe}_b$pb.log" 2>&1
  timeout 60 nsys stats -r cuda_gpu_kern_sum -f csv -o "$R/prof_${pe}_b$pb" "$R/prof_${pe}_b$pb.nsys-rep" > /dev/null 2>&1
  rm -f "$R/prof_${pe}_b$pb.nsys-rep" "$R/prof_${pe}_b$pb.sqlite"
  echo "$pe kernels at batch $pb:"
  python3 - "$R/prof_${pe}_b${pb}_cuda_gpu_kern_sum.csv" <<'PY'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    n = r["Name"]
    tag = n[n.find("Tile<"):n.find(">,") + 1] + " epi " + n[n.find("Epilogue)") + 9:][:1] if "Tile<" in n else n[:40]
    print(f'  {float(r["Avg (ns)"]) / 1e3:8.1f} us x{r["Instances"]:>2}  {float(r["Time (%)"]):5.1f}%  {tag}')
PY
done
done
