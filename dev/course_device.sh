#!/usr/bin/env bash
# dev/course_device.sh — one device call of the course gate over tests/submissions (issue 42's
# evidence): `python -m harness.gate.course tests/submissions --jobs JOBS` into a fresh folder, then,
# in the same call, its folders and leaderboard packed into $OUT/gate.tgz without binaries, objects
# or arrays, and $OUT/gate_noplots.tgz without the plots too (a later call of the device copies the
# working tree over results/gate, and a tarball over the device's size limit does not come back:
# PERFLOG "GEMM engine runs 2 and 3" lost a course that way).
# Unpack on the CPU machine with `tar xzf gate.tgz` in the repository root (it holds results/gate/),
# then `invoke report` renders the leaderboard and the reports again from the folders.
# Binaries from .devbuild/ (dev/pack_devbuild.sh).
set -u
cd "$(dirname "$0")/.."
: "${OUT:?OUT must be set (the device output folder)}"
: "${JOBS:=6}"
source dev/devbuild.sh && unpack_devbuild || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
rm -rf results/gate
( time timeout 540 python -m harness.gate.course tests/submissions --jobs "$JOBS" --out results/gate ) > "$OUT/course.log" 2>&1
echo "course rc=$?"
grep -oE "gate: \[[0-9]+/[0-9]+\] [A-Za-z0-9_]+: gated, exit [0-9]+" "$OUT/course.log" | sort -k3
tail -4 "$OUT/course.log"
skip=(--exclude='*.npy' --exclude='*.o' --exclude='*.so' --exclude='*.nsys-rep' --exclude='*.sqlite'
      --exclude='build' --exclude='mlp_train')
tar czf "$OUT/gate.tgz" "${skip[@]}" results/gate
tar czf "$OUT/gate_noplots.tgz" "${skip[@]}" --exclude='plots' results/gate
ls -l "$OUT"/gate*.tgz
