#!/usr/bin/env bash
# dev/transformer_ab_device.sh — the transformer's forward timed against a base build in the same call
# (issue 39), after dev/transformer_device.sh has trained the weights (results/transformer/weights):
#   base/      the base commit's vit_forward (.devbuild_base, `VIT=1 DEST=.devbuild_base SLIM=1
#              dev/pack_devbuild.sh` at the base) on fp32 and tf32x3
#   mma/       this build with VIT_TF32X3_MMA=1: tf32x3 on the mma.sync kernels (the flow before the
#              wgmma engine), the rest of this build's kernels
#   ours/      this build (tf32x3 on the wgmma engine where the device is 9.0)
# each `vit_forward time --batches BATCHES --repeats 20` into a JSON and a log; everything comes back
# as $OUT/transformer_ab.tgz.
set -u
cd "$(dirname "$0")/.."
: "${OUT:?OUT must be set (the device output folder)}"
: "${BATCHES:=128,1024,10000}"
R="$OUT/ab"
source dev/devbuild.sh
pack_on_exit transformer_ab.tgz ab
W=results/transformer/weights
[ -f "$W/manifest.json" ] || { echo "no trained weights in $W (run dev/transformer_device.sh first)"; exit 1; }
timed() {  # timed NAME BINARY [ENV=...]
  local name=$1 bin=$2; shift 2
  env "$@" timeout 100 "$bin" time --weights "$W" --gemm fp32,tf32x3 --batches "$BATCHES" --repeats 20 \
    --out "$R/$name.json" > "$R/$name.log" 2>&1
  echo "$name rc=$?"; grep -E "^ours" "$R/$name.log"
}
if unpack_base /tmp/vitbase && [ -x /tmp/vitbase/build/vit_forward ]; then
  timed base /tmp/vitbase/build/vit_forward
fi
timed mma build/vit_forward VIT_TF32X3_MMA=1
timed ours build/vit_forward
