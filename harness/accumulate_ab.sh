#!/usr/bin/env bash
# float64 against float32 accumulation in the stepwise GEMMs (cuda/kernels.cuh, MLP_ACCUM): the
# accumulator is a compile-time choice, so the two are two binaries; they run back to back on one
# GPU, alternating (double, float, double, float), so a drift of the machine shows as a
# difference between the two rounds of one build. Each run: the stepwise paths (unfused, fused,
# graph) for the recipe's 20 epochs, case 7 against the shipped float64 reference.
#
#   bash harness/accumulate_ab.sh [OUT_DIR]      (default results/experiments/accumulate)
#
# Needs build/mlp_train (built with the default, double); builds build/f32acc with ACCUM=float.
# Summarise with `python -m analysis.accumulate_ab OUT_DIR`.
set -u
cd "$(dirname "$0")/.."
DIR=${1:-results/experiments/accumulate}
ARCH=$(python3 -c "import json; print(json.load(open('build/build_info.json'))['arch'])")
mkdir -p "$DIR"
make --no-print-directory -j"$(nproc)" ARCH="$ARCH" BUILD=build/f32acc ACCUM=float build/f32acc/mlp_train \
  > "$DIR/build_float.log" 2>&1 || { echo "error: ACCUM=float build failed (see $DIR/build_float.log)"; exit 2; }
for round in 1 2; do
  for acc in double float; do
    bin=build/mlp_train
    [ "$acc" = float ] && bin=build/f32acc/mlp_train
    out="$DIR/${acc}_$round"
    mkdir -p "$out"
    "$bin" --data data --out "$out" --paths unfused,fused,graph --reference shipped > "$out/run.log" 2>&1
    echo "$acc round $round: exit $?"
    rm -f "$out"/*.npy
  done
done
