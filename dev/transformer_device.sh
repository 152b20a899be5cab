#!/usr/bin/env bash
# dev/transformer_device.sh — the transformer extension's evidence (issue 31) in one command on a GPU
# machine (H200, CUDA 13, Python with torch, numpy, pandas, jinja2; nsys and invoke from the kit):
#
#   source .device-kit/env.sh && MLP_COMMIT=<commit> bash dev/transformer_device.sh
#
# Steps, in order, each under its own time limit and all within one budget (BUDGET_S, default 540 s;
# a step overruns its limit by at most 10 s and the packing and summary take a few, so the whole
# command ends inside 570 s):
#   build       make build/vit_forward
#   train       PyTorch on the GPU -> results/transformer/weights/ (params.npy, manifest.json)
#   check       vit_forward check on the three GEMM engines (fp32: FFMA on the CUDA cores; tf32x3: the
#               tensor cores, float32-accurate; bf16: bfloat16 operands summed in float32, checked at
#               bfloat16's bounds), trained and seeded random weights
#   time-ours   vit_forward time at 128, 1024, 10000, one run per precision (fp32 and tf32x3; bf16), the
#               tiles tuned first
#   profile     nsys of one forward at 1024 on the fp32 headline engine -> profile/transformer*
#   time-torch  PyTorch's variants at three precisions (fp32 with TF32 off, tf32, bf16: autocast and a
#               bfloat16 model); its test-set logits first (float32's and bf16 autocast's), then every
#               precision's cheap variants, its compiles last (about 25 s for the first, 2-5 s each
#               after): all of what is left of the budget but 85 s, its deadline 45 s before that (the
#               log and the summary say which runs it cut)
#   accuracy    our test-set predictions against PyTorch's, per precision (each precision's headline engine)
#   assemble    results/transformer.json
#   render      RESULTS.md (needs matplotlib, as `invoke report`)
# A failed step does not stop the next ones (a step whose input is missing fails on its own); each
# exit status is printed and kept in results/transformer/steps.json, each step's output in
# results/transformer/logs/<step>.log. Then everything is packed into $OUT/transformer.tgz (OUT
# defaults to results/transformer/out) and a compact summary (checks per engine, accuracy and the
# timing table per precision, PyTorch's runs its deadline cut) ends the output. A smoke run without a GPU (every CUDA step on the emulated binary; PyTorch's timing
# then fails alone): TRAIN_DEVICE=cpu TRAIN_ARGS="--epochs 1 --train-size 256 --eval-size 64"
# VIT_FORWARD=build/vit_forward_emu VIT_CONFIG=<transformer.toml with a small test_size>
# CHECK_ARGS="--layer-batch 2 --logits-batch 3" TIME_ARGS="--batches 2 --repeats 2 --warmup 1".
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3}
BUDGET_S=${BUDGET_S:-540}
OUT=${OUT:-$ROOT/results/transformer/out}
PARTS=results/transformer
LOGS=$PARTS/logs
mkdir -p "$LOGS" "$OUT"
START=$(date +%s)
STEPS_JSON=""

left() { echo $(( BUDGET_S - ($(date +%s) - START) )); }

# step NAME LIMIT_S COMMAND...: runs COMMAND with its output in $LOGS/NAME.log under
# min(LIMIT_S, what is left of the budget less a reserve for the report and the packing).
step() {
  local name=$1 limit=$2 rc t0 t1 avail
  shift 2
  avail=$(( $(left) - 25 ))
  case $name in assemble|render) avail=$(( $(left) - 5 )) ;; esac
  if [ "$avail" -lt "$limit" ]; then limit=$avail; fi
  if [ "$limit" -lt 0 ]; then limit=0; fi
  t0=$(date +%s)
  if [ "$limit" -le 5 ]; then
    rc=125
    echo "skipped: no time left in the ${BUDGET_S} s budget" > "$LOGS/$name.log"
  else
    timeout --kill-after=10 "$limit" "$@" > "$LOGS/$name.log" 2>&1
    rc=$?
  fi
  t1=$(date +%s)
  printf '%-11s exit %3d  %4d s  (limit %d s; log %s)\n' "$name" "$rc" "$((t1 - t0))" "$limit" "$LOGS/$name.log"
  [ "$rc" -ne 0 ] && tail -n 3 "$LOGS/$name.log" | sed 's/^/    | /'
  STEPS_JSON="$STEPS_JSON${STEPS_JSON:+, }{\"name\": \"$name\", \"rc\": $rc, \"seconds\": $((t1 - t0)), \"limit_s\": $limit}"
  printf '{"budget_s": %d, "steps": [%s]}\n' "$BUDGET_S" "$STEPS_JSON" > "$PARTS/steps.json"
  return 0
}

echo "transformer device run: $(date -u +%FT%TZ), budget ${BUDGET_S} s, commit ${MLP_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | sed 's/^/gpu: /'

# Binaries built on the CPU machine (dev/pack_devbuild.sh with VIT=1), where carried: make then finds
# build/vit_forward up to date.
if [ -f .devbuild/build.tar.xz ]; then source dev/devbuild.sh && unpack_devbuild; fi
step build 150 make --no-print-directory -j"$(nproc)" ARCH=sm_90 build/vit_forward
# shellcheck disable=SC2086  # TRAIN_ARGS: extra flags, e.g. "--epochs 1 --train-size 256" for a smoke run
step train 90 "$PY" -m harness.transformer.train --device "${TRAIN_DEVICE:-cuda}" ${TRAIN_ARGS:-}
# shellcheck disable=SC2086  # CHECK_ARGS, TIME_ARGS, PROFILE_ARGS, TORCH_ARGS: extra flags for a smoke run
step check 150 "$PY" -m harness.transformer.run check ${CHECK_ARGS:-}
step time-ours 60 "$PY" -m harness.transformer.run time ${TIME_ARGS:-}
step profile 90 "$PY" -m harness.transformer.run profile ${PROFILE_ARGS:-}
TORCH_LIMIT=$(( $(left) - 85 ))
step time-torch "$TORCH_LIMIT" "$PY" -m harness.transformer.torch_time --weights "$PARTS/weights" \
  --deadline-s $(( TORCH_LIMIT > 60 ? TORCH_LIMIT - 45 : 15 )) ${TORCH_ARGS:-}
step accuracy 60 "$PY" -m harness.transformer.run accuracy
step assemble 30 "$PY" -m harness.transformer.results
step render 60 "$PY" -m analysis.report

# Pack whatever exists (a missing part is simply absent from the tarball).
FILES=()
for f in results/transformer.json "$PARTS" profile/transformer.nsys-rep profile/transformer_*.csv RESULTS.md PROFILES.md; do
  [ -e "$f" ] && FILES+=("$f")
done
tar --exclude="$PARTS/out" --exclude='*.sqlite' -czf "$OUT/transformer.tgz" "${FILES[@]}" \
  && echo "packed: $OUT/transformer.tgz ($(du -h "$OUT/transformer.tgz" | cut -f1): ${FILES[*]})" \
  || echo "packing FAILED"

echo "---- summary ($(( $(date +%s) - START )) s in all)"
"$PY" -c "
import json
from harness.transformer.results import OUT, summary
try:
    print(summary(json.loads(OUT.read_text())))
except Exception as exc:
    print(f'no summary: {type(exc).__name__}: {exc}')
"
grep -E '^pytorch: the .* deadline cut|^  cut: ' "$LOGS/time-torch.log" 2>/dev/null
cat "$PARTS/steps.json"
