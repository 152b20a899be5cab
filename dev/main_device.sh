#!/usr/bin/env bash
# dev/main_device.sh — one device call of the main job's GPU stages at the working tree's commit:
# `invoke run` (the supervised gate, results/run.json, the PyTorch baseline) and `invoke profile`
# (profile/), with binaries built on the CPU machine for sm_90 (.devbuild/, dev/pack_devbuild.sh)
# instead of `invoke build` on the device's clock. `invoke report` runs afterwards on the CPU
# machine. What the two stages wrote comes back in two tarballs (the device returns files of a few
# MB at most): $OUT/main_results.tgz (results/, with the two small top-level .npy the report reads)
# and $OUT/main_profile.tgz (profile/). Unpack both in the repository root.
set -u
cd "$(dirname "$0")/.."
: "${OUT:?OUT must be set (the device output folder)}"
source dev/devbuild.sh && unpack_devbuild || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
touch "$OUT/.stamp"
finish() {
  find results -newer "$OUT/.stamp" -type f \( ! -name '*.npy' -o -path 'results/*.npy' \) ! -path 'results/*/*.npy' \
    > "$OUT/results_changed.txt"
  find profile -newer "$OUT/.stamp" -type f > "$OUT/profile_changed.txt"
  tar czf "$OUT/main_results.tgz" -T "$OUT/results_changed.txt"
  tar czf "$OUT/main_profile.tgz" -T "$OUT/profile_changed.txt"
  ls -l "$OUT"/main_*.tgz
}
trap finish EXIT
( time timeout 330 invoke run ) > "$OUT/run.log" 2>&1
echo "invoke run rc=$?"; grep -E "gate:|PASS|FAIL|fastest|median" "$OUT/run.log" | tail -25
( time timeout 200 invoke profile ) > "$OUT/profile.log" 2>&1
echo "invoke profile rc=$?"; tail -8 "$OUT/profile.log"
