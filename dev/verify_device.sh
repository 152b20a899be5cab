#!/usr/bin/env bash
# dev/verify_device.sh — one device call that checks a commit before the evidence runs: the main
# job's build and gate (`invoke build run`, over $RUN_PATHS, PyTorch's default variants; no build
# with SKIP_BUILD=1), then
# PyTorch's tf32 and bf16 variants at the recipe ($PREC_VARIANTS, into $OUT/verify/precision/).
# The results it wrote come back in $OUT/verify.tgz (no .npy); the printout is each stage's tail.
set -u
cd "$(dirname "$0")/.."
R="$OUT/verify"
mkdir -p "$R"
touch "$R/.stamp"
finish() {
  find results -newer "$R/.stamp" -type f ! -name '*.npy' > "$R/changed.txt" 2>/dev/null
  tar czf "$OUT/verify.tgz" --exclude='*.npy' -T "$R/changed.txt" -C "$OUT" verify 2>/dev/null
}
trap finish EXIT
# SKIP_BUILD=1: binaries built on the CPU machine for sm_90 travel in .devbuild/ (copied into build/).
if [ "${SKIP_BUILD:-0}" = 1 ]; then
  source dev/devbuild.sh && unpack_devbuild && build_step=true || exit 1
else
  build_step="invoke build --arch sm_90"
fi
{ $build_step && invoke run ${RUN_PATHS:+--paths "$RUN_PATHS"}; } > "$R/main.log" 2>&1
echo "main job rc=$?"; grep -E "PASS|FAIL|case|median|fastest" "$R/main.log" | tail -40
if [ -n "${PREC_VARIANTS-eager-tf32,cuda-graph-tf32,compiled-step-tf32,eager-bf16,cuda-graph-bf16,compiled-step-bf16}" ]; then
  mkdir -p "$R/precision" && cp results/init_params.npy results/order.npy results/run.json "$R/precision/"
  timeout 400 python -m harness.baseline.pytorch_baseline --results "$R/precision" \
    --variants "${PREC_VARIANTS:-eager-tf32,cuda-graph-tf32,compiled-step-tf32,eager-bf16,cuda-graph-bf16,compiled-step-bf16}" \
    > "$R/precision.log" 2>&1
  echo "precision rc=$?"; tail -15 "$R/precision.log"
fi
