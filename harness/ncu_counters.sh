#!/usr/bin/env bash
# Hardware counters (Nsight Compute) for the kernels that bound the epoch: the persistent path's
# one-launch epoch and the fused path's two widest rows. --clock-control none leaves the clocks as
# the timed runs see them (ncu otherwise locks them to base). Writes results/ncu/<name>.ncu-rep
# and its raw-metric and details pages as CSV (analysis/ reads the CSVs).
#   bash harness/ncu_counters.sh            (from the repository root, after `invoke build`)
set -u
cd "$(dirname "$0")/.."
NCU=${NCU:-ncu}
OUT=results/ncu
mkdir -p "$OUT"
profile() {  # profile NAME PATH KERNEL_REGEX COUNT
  local name=$1 path=$2 kernels=$3 count=$4
  local tmp="$OUT/.$name"
  rm -f "$tmp.ncu-rep"
  echo "ncu: $name (path $path, kernels $kernels)"
  # Cooperative launches replay per kernel where the tool allows it, else per application.
  if ! "$NCU" --clock-control none --set full -k "regex:$kernels" -c "$count" -o "$tmp" -f \
        build/mlp_train --data data --profile "$path" > "$OUT/$name.log" 2>&1; then
    echo "ncu: $name: kernel replay failed; retrying with --replay-mode application"
    "$NCU" --clock-control none --set full --replay-mode application -k "regex:$kernels" -c "$count" \
        -o "$tmp" -f build/mlp_train --data data --profile "$path" >> "$OUT/$name.log" 2>&1 || {
      echo "ncu: $name failed (see $OUT/$name.log)"; return 1; }
  fi
  "$NCU" --import "$tmp.ncu-rep" --csv --page raw > "$OUT/.$name.raw.csv" &&
    "$NCU" --import "$tmp.ncu-rep" --csv --page details > "$OUT/.$name.details.csv" &&
    mv "$tmp.ncu-rep" "$OUT/$name.ncu-rep" && mv "$OUT/.$name.raw.csv" "$OUT/${name}_raw.csv" &&
    mv "$OUT/.$name.details.csv" "$OUT/${name}_details.csv"
}
rc=0
profile persistent persistent 'k_persistent_epoch$' 1 || rc=1
profile fused fused 'k_fwd_hidden_bias_relu|k_dW1' 2 || rc=1
exit $rc
