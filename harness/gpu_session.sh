#!/usr/bin/env bash
# One GPU session's evidence, stage by stage, each under its own time limit so a slow stage
# cannot cost the others their results. Run from the repository root on the GPU machine:
#
#   MLP_COMMIT=<commit> bash harness/gpu_session.sh [STAGES]      (default: all, in this order)
#
# STAGES is a comma-separated subset of: build,ceilings,run,phases,profile,pytest,sanitize,sweep,ncu,
# accum (float64 vs float32 accumulation A/B, harness/accumulate_ab.sh; not in the default set)
# (sweep is not in the default set: run it on its own call; ceilings, the copy and matmul
# roofline ceilings of harness/ceilings.py, takes seconds). A full set
# takes longer than one 10-minute call on the lent H200 (the PyTorch baseline's max-autotune
# compile alone is about 4 minutes), so split it: e.g. "build,ceilings,run,phases,profile" then
# "build,pytest,sanitize". MLP_COMMIT names the commit (the tree copy's .git can be stale); RUN_PATHS
# (e.g. unfused,fused,graph,persistent,persistent2) picks the paths the run stage times.
# Each stage's output goes to results/logs/<stage>.log and its exit status to stages.txt.
# With $OUT set (the lent machine) it ends by packing results/, profile/ and SWEEP.md into
# $OUT/evidence.tgz (no .npy): unpack it in the repository root.
set -u
cd "$(dirname "$0")/.."
STAGES=${1:-build,ceilings,run,phases,profile,pytest,sanitize}
LOG=results/logs
mkdir -p "$LOG"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$LOG/nvidia-smi.csv" 2>&1

stage() {  # stage NAME LIMIT_S COMMAND...
  local name=$1 limit=$2
  shift 2
  case ",$STAGES," in *",$name,"*) ;; *) return 0 ;; esac
  echo "== $name (limit ${limit} s)"
  timeout "$limit" "$@" > "$LOG/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc$([ $rc = 124 ] && echo ' (time limit)')" | tee -a "$LOG/stages.txt"
  tail -n 4 "$LOG/$name.log"
}

stage build 120 invoke build
stage ceilings 120 invoke ceilings
stage run 480 invoke run ${RUN_PATHS:+--paths $RUN_PATHS}
stage phases 90 ./build/mlp_train --data data --out results --persistent-phases
stage profile 240 invoke profile
# test_pytorch_cpu.py's GPU tests train every PyTorch variant (torch.compile's max-autotune
# compile alone takes minutes), hence the longer limit.
stage pytest 500 python3 -m pytest -q -ra tests/test_gpu_entry_points.py tests/test_gpu_gate.py \
  tests/test_host.py tests/test_reference.py tests/test_pytorch_cpu.py
stage sanitize 600 invoke sanitize
stage sweep 580 invoke sweep
stage ncu 300 bash harness/ncu_counters.sh
stage accum 200 bash harness/accumulate_ab.sh
rm -f profile/*.sqlite
# On the lent machine only what lies under $OUT comes back, at most 8 files of limited size: one
# tarball of the evidence, without the regenerable .npy copies (a width-8192 sweep point's initial
# weights alone are 25 MB, which once cost a whole sweep's results).
if [ -n "${OUT:-}" ]; then
  tar czf "$OUT/evidence.tgz" --exclude='*.npy' --exclude='*.sqlite' results profile \
    $( [ -f SWEEP.md ] && echo SWEEP.md ) && ls -l "$OUT/evidence.tgz"
fi
