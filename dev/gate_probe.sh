#!/usr/bin/env bash
# dev/gate_probe.sh — a quick look at the gate's new cases on a GPU (not evidence): our submission and
# a few of tests/submissions/ in --quick mode, racecheck's time on naive, logs packed into $OUT.
set -u
L=${OUT:-/tmp}/probe; mkdir -p "$L"
invoke build --arch sm_90 > "$L/build.log" 2>&1 || { tail -20 "$L/build.log"; exit 1; }
build/mlp_train --data data --quick --paths fused > "$L/ours_quick.log" 2>&1; echo "ours quick rc=$?"
python3 - <<'PY' > "$L/builds.log" 2>&1
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from harness.gate import course
names = ["naive", "atomic_bias", "mutant_legacy_stream", "mutant_sync_in_epoch", "mutant_leak_epoch",
         "mutant_fixed_hyperparams", "mutant_stride_784", "mutant_warp_race"]
common = course.build_common("sm_90")
with ThreadPoolExecutor(8) as pool:
    for n, (b, err) in zip(names, pool.map(lambda n: course.build_one(Path(f"tests/submissions/{n}.cu"), "sm_90", common), names)):
        print(n, b, err)
PY
for s in naive atomic_bias mutant_legacy_stream mutant_sync_in_epoch mutant_leak_epoch mutant_fixed_hyperparams mutant_stride_784; do
  timeout 300 build/gate/$s/mlp_train --data data --quick --paths submission > "$L/$s.log" 2>&1; echo "$s rc=$?"
done
S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for s in naive mutant_warp_race; do
  ( t0=$SECONDS; $S --tool racecheck build/gate/$s/mlp_train --data data --out /tmp/rc_$s --stage entry,epoch-check --paths submission > "$L/racecheck_$s.log" 2>&1; echo "racecheck $s rc=$? in $((SECONDS - t0)) s" >> "$L/racecheck_$s.log" ) &
done
( t0=$SECONDS; $S --tool memcheck build/gate/naive/mlp_train --data data --out /tmp/mc_naive --stage entry,epoch-check,contract --paths submission > "$L/memcheck_naive.log" 2>&1; echo "memcheck naive rc=$? in $((SECONDS - t0)) s" >> "$L/memcheck_naive.log" ) &
wait
tail -n 3 "$L"/racecheck_*.log "$L"/memcheck_naive.log
grep -h "^1[0-3] \|^[1-9] " "$L"/*.log | cut -c1-220
tar czf "${OUT:-/tmp}/probe.tgz" -C "${OUT:-/tmp}" probe && rm -rf "$L"
