#!/usr/bin/env python3
"""A stand-in for `mlp_train --stage NAME` (tests/test_stages.py): FAKE_PLAN (JSON) maps a stage to
what it does: "pass" or "fail" (print its rows, write OUT/stage-NAME.json, exit 0 or 1), "hang"
(print its first row, then sleep), "segv" (first row, then SIGSEGV), "cuda" (first row, then exit 3
with a cudaErrorIllegalAddress line), "nopart" (rows, exit 0, no part), "nodevice" (exit 3 before
any row), "badinput" (exit 2). A stage missing from the plan passes. FAKE_REFUSE (a name): a run whose
--out holds it exits 2 at once with mlp_train's line for an mlp_precision() out of range. FAKE_PATH_FAILURES (JSON list)
goes into the train part. FAKE_SLEEP (seconds) makes every stage take that long; FAKE_LOG (a file)
gets one JSON line per stage: its name, CUDA_VISIBLE_DEVICES, start and end times, and whether it met
a peer, and for a stage that took a GPU section (MLP_GATE_SECTION_FDS set: cuda/cli/gpu_section.h's
handshake, after its start and before its rows) when it asked ("ready") and held it ("go", "done").
FAKE_START_S (seconds): its start before the section. FAKE_RENDEZVOUS (a folder): a stage that shares its GPU (not the catalog's exclusive ones)
marks itself running there (GPU.PID, removed before it ends) and, until some stage on its GPU has met
a peer (GPU.met), waits for another stage's mark on the same GPU: two shared stages provably overlap
there (or, after 60 s without one, it goes on, met false, and the test that asked fails).
`--sanitizer-workload measure|once|race` (the sanitizer cases' workload): FAKE_WORKLOAD "ok" (the
default: measure writes OUT/sanitizer-workload.json with FAKE_LAUNCHES launches, default 40, and
0.05 s), "hang" (sleeps 60 s) or "crash" (exit 3 with a CUDA error line)."""
import atexit
import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from spec import catalog  # noqa: E402 - the stages and their cases are the real binary's
from tests.fakes import gpu_section_client  # noqa: E402

NAMES = catalog.case_names()
CASES = {s["name"]: [(i, NAMES[i]) for i in s["cases"]] for s in catalog.stages("mlp_train")}
EXCLUSIVE = {s["name"]: s["exclusive"] for s in catalog.stages("mlp_train")}
args = sys.argv[1:]
get = lambda f: args[args.index(f) + 1] if f in args else None  # noqa: E731
stage, out, run_id = get("--stage"), get("--out"), get("--run-id")
if get("--sanitizer-workload"):
    how = os.environ.get("FAKE_WORKLOAD", "ok")
    if how == "hang":
        time.sleep(60)
    if how == "crash":
        print("mlp_train: CUDA error: sanitizer_workload.cu:99: cudaErrorIllegalAddress", file=sys.stderr)
        sys.exit(3)
    if get("--sanitizer-workload") == "measure":
        os.makedirs(out, exist_ok=True)
        json.dump({"calls": 19, "launches": int(os.environ.get("FAKE_LAUNCHES", "40")), "memory_ops": 0,
                   "seconds": 0.05, "capture": "ok", "statuses": [], "workload": "fake workload",
                   "race_workload": "fake workload, racecheck's plan"},
                  open(os.path.join(out, "sanitizer-workload.json"), "w"))
    print("sanitizer workload: 19 calls", flush=True)
    sys.exit(0)
mode = json.loads(os.environ.get("FAKE_PLAN", "{}")).get(stage, "pass")
t_start = time.time()
time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
met, mark = None, None
if os.environ.get("FAKE_RENDEZVOUS") and not EXCLUSIVE.get(stage, True):
    where, gpu = Path(os.environ["FAKE_RENDEZVOUS"]), os.environ.get("CUDA_VISIBLE_DEVICES", "none")
    mark = where / f"{gpu}.{os.getpid()}"
    mark.touch()
    atexit.register(mark.unlink, missing_ok=True)   # on every way out but a signal (FAKE_PLAN's segv)
    met, deadline = (where / f"{gpu}.met").exists(), time.monotonic() + 60
    while not met and time.monotonic() < deadline:
        if any(p != mark for p in where.glob(f"{gpu}.[0-9]*")):   # another shared stage runs on this GPU now
            (where / f"{gpu}.met").touch()
            met = True
        else:
            met = (where / f"{gpu}.met").exists()
            time.sleep(0.01)
section = gpu_section_client.fds()
ready = go = None
if section:
    time.sleep(float(os.environ.get("FAKE_START_S", "0")))
    ready = time.time()
    gpu_section_client.ready(*section)
    go = time.time()
print("#  case value limit verdict", flush=True)
if os.environ.get("FAKE_REFUSE") and os.environ["FAKE_REFUSE"] in (out or ""):
    print("mlp_train: error: the submission's mlp_precision() returned 7, which is no precision: ...", file=sys.stderr)
    sys.exit(2)
if mode == "badinput":
    print("mlp_train: error: --epochs: 0 is out of range", file=sys.stderr)
    sys.exit(2)
if mode == "nodevice":
    print("mlp_train: CUDA error: no CUDA device found", file=sys.stderr)
    sys.exit(3)
rows = [{"id": i, "name": n, "passed": mode != "fail", "value": 0.5, "limit": 1.0, "detail": f"{stage} {mode}"}
        for i, n in CASES[stage]]
for k, r in enumerate(rows):
    print(f"{r['id']:<2d} {r['name']:<18s} {r['value']:12.4g} {r['limit']:12.4g}  "
          f"{'PASS' if r['passed'] else 'FAIL'}   {r['detail']}", flush=True)
    if mode == "hang":
        time.sleep(60)
    if mode == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if mode == "cuda":
        print("mlp_train: CUDA error: gate.cu:33: cudaDeviceSynchronize() failed: cudaErrorIllegalAddress (x)",
              file=sys.stderr)
        sys.exit(3)
part = {"schema": 1, "date_utc": "2026-12-01T00:00:00Z", "run_id": run_id, "gpu": {"name": "fake", "sm_count": 1},
        "device_limits": {}, "submission": "fake.cu", "gated_path": "submission", "run_command": "x",
        "recipe": {"steps_per_epoch": 47, "batch": 128}, "reference_source": "shipped",
        "gate_precision": "tf32", "gate_unit_roundoff": 2.0 ** -11, "gate_precision_declared": True, "stage": stage,
        "memory": {"from_train": 1.0 if stage == "train" else 0.0}, "cases": rows}
if stage == "train":
    part |= {"paths": {"submission": {"passed": mode != "fail", "median_ms": 6.3, "epoch_ms": [6.3]}},
             "reference_fp64": {"test_accuracy": 0.8}, "path_failures": json.loads(os.environ.get("FAKE_PATH_FAILURES", "[]"))}
if mode != "nopart":
    json.dump(part, open(os.path.join(out, f"stage-{stage}.json"), "w"))
if mark is not None:
    mark.unlink()   # before t1: the mark lives inside [t0, t1]
done = None
if section:
    done = time.time()
    gpu_section_client.done(section[0])
if os.environ.get("FAKE_LOG"):
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write(json.dumps({"stage": stage, "gpu": os.environ.get("CUDA_VISIBLE_DEVICES"), "t0": t_start,
                              "t1": time.time(), "out": out, "met": met, "ready": ready, "go": go,
                              "done": done}) + "\n")
sys.exit(1 if mode == "fail" or part.get("path_failures") else 0)
