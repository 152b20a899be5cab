#!/usr/bin/env bash
# dev/gemm_device.sh — one device call of the GEMM engine's evidence (issue 38), in the order a
# failure should stop it: (1) a smoke run of build/gemm_bench at four shapes per layout, tf32 and
# bf16, its float64 checks the verdict; (2) `invoke ceilings` into $OUT/ceilings.json; (3) the
# whole benchmark (harness.studies.gemm_bench, ours beside cuBLAS, REPEATS repeats) with those
# ceilings, into results/gemm.json when the card is an H200 (the issue's card) and into
# results/experiments/$EXPERIMENT/gemm.json otherwise; (4) the GPU tests of tests/test_gemm_bench.py.
# Binaries built on the CPU machine for sm_90 travel in .devbuild/ (dev/pack_devbuild.sh).
# Everything it writes comes back as $OUT/gemm_device.tgz (the device returns at most 8 files).
set -u
cd "$(dirname "$0")/.."
: "${OUT:?OUT must be set (the device output folder)}"
: "${EXPERIMENT:=gemm_engine}"
: "${REPEATS:=20}"
mkdir -p build "$OUT/g"
if [ -f .devbuild/build.tar.xz ]; then
  source dev/devbuild.sh && unpack_devbuild || exit 1
else
  make -j16 ARCH=sm_90 > "$OUT/g/build.log" 2>&1 || { tail -30 "$OUT/g/build.log"; exit 1; }
fi
finish() { tar czf "$OUT/gemm_device.tgz" -C "$OUT" g && rm -rf "$OUT/g"; }
trap finish EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv > "$OUT/g/smi.txt"
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "card: $card; commit ${MLP_COMMIT:-unknown}"

smoke_ok=1
for layout in nn tn nt; do
  build/gemm_bench --shapes 4096x4096x4096,2048x4096x784,784x4096x2048,300x200x136 --layout "$layout" \
    --precisions tf32,bf16 --repeats 10 --warmup 2 --out "$OUT/g/smoke_$layout.json" > "$OUT/g/smoke_$layout.log" 2>&1 \
    || smoke_ok=0
  grep -E "^(nn|tn|nt) " "$OUT/g/smoke_$layout.log" | cut -c1-200
done
[ "$smoke_ok" = 1 ] || { echo "smoke: a check or a launch failed (logs in the tarball); stopping"; exit 1; }

# Kernel durations without the host's launch gaps: nsys over gemm_bench at the sweep's batch-128
# shapes (cuda_gpu_trace: one row a kernel, its grid names the plan).
for layout in nn tn; do
  timeout 120 nsys profile -t cuda -o "$OUT/g/small_$layout" --force-overwrite true build/gemm_bench \
    --shapes 128x256x784,128x4096x784,128x16384x784,1024x256x784,784x256x128,784x4096x128,784x256x2048 \
    --layout "$layout" --precisions tf32,bf16 --repeats 10 --warmup 1 --out "$OUT/g/small_$layout.json" \
    > "$OUT/g/small_$layout.log" 2>&1 || echo "nsys $layout: failed (see small_$layout.log)"
  timeout 120 nsys stats -r cuda_gpu_trace -f csv -o "$OUT/g/small_$layout" "$OUT/g/small_$layout.nsys-rep" > /dev/null 2>&1
  rm -f "$OUT/g/small_$layout.nsys-rep" "$OUT/g/small_$layout.sqlite"
done
ls "$OUT/g" | grep -c cuda_gpu_trace

timeout 120 invoke ceilings --out "$OUT/g/ceilings.json" > "$OUT/g/ceilings.log" 2>&1 || echo "ceilings: failed (see ceilings.log)"
tail -5 "$OUT/g/ceilings.log"
ceil=results/ceilings.json
if [[ "$card" == *H200* ]]; then
  dest=results/gemm.json
  [ -f "$OUT/g/ceilings.json" ] && cp "$OUT/g/ceilings.json" results/ceilings.json
else
  dest=results/experiments/$EXPERIMENT/gemm.json
  [ -f "$OUT/g/ceilings.json" ] && ceil="$OUT/g/ceilings.json"
fi
mkdir -p "$(dirname "$dest")"
( time timeout 300 python -m harness.studies.gemm_bench --repeats "$REPEATS" --ceilings "$ceil" --out "$dest" ) \
  > "$OUT/g/gemm_bench_stdout.log" 2>&1
echo "gemm_bench rc=$? -> $dest"
tail -25 "$OUT/g/gemm_bench_stdout.log"
cp "$dest" "$OUT/g/" 2>/dev/null; cp -r "${dest%.json}" "$OUT/g/sides" 2>/dev/null; cp -r "${dest%.json}.failed" "$OUT/g/sides_failed" 2>/dev/null
cp results/ceilings.json "$OUT/g/ceilings_used.json"

timeout 150 python -m pytest -q -m gpu tests/test_gemm_bench.py > "$OUT/g/pytest_gemm.log" 2>&1
echo "pytest rc=$?"; tail -3 "$OUT/g/pytest_gemm.log"
