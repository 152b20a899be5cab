"""Our binary's side of the two PyTorch studies of harness/baseline/profiles.py, from Nsight Systems.

  batch    step time against batch size (32, 128, 512, 2048) for our fastest path at each batch:
           `build/mlp_train --perf-only --paths stationary,persistent,graph,fused --batch B
           --epochs 5` times every candidate (a path that does not support B reports itself
           skipped: stationary needs B <= 128); the fastest that ran is the row's path, its
           untraced step = run.json median_ms / steps_per_epoch. Then one epoch of that path
           under nsys (harness.profiling.profile_path, --batch B): the summed kernel time, the GPU
           busy time (the union of the kernels' and copies' intervals, from the cuda_gpu_trace
           report), the host's CUDA API time (synchronisation calls excluded) and the wall time
           of the profiled epoch's NVTX range, each per step -> results/ours_batch_steps.json.
  linear   the `fused` path's kernels (one per operation) at batch 32 and 1024, each mapped to
           its layer and phase by KERNEL_ROLES, with times per step from the nsys kernel summary
           of one epoch -> results/ours_linear_kernels.json.

Each study writes its JSON and its nsys files (profile/ours/<study>_b<B>_<path>.nsys-rep and
its three summary CSVs) together (spec.files.write_all: all or none). Field meanings:
docs/formats.md. Six timing runs and six nsys captures: expected about a minute on the H200
(not yet measured; the session stage's limit is 180 s).

CLI:
  python -m harness.studies.ours_studies [--only batch,linear] [--results DIR] [--profile DIR]
"""
from __future__ import annotations

import csv
import io
import json
import math
import re
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Callable

from harness import profiling
from spec import files, provenance, validate
from spec.files import BUILD_DIR, DATA_DIR, PROFILE_DIR, RESULTS_DIR, ROOT, write_all

STUDIES = ("batch", "linear")
STEP_BATCHES = (32, 128, 512, 2048)    # as harness/baseline/profiles.py's STEP_BATCHES
LINEAR_BATCHES = (32, 1024)            # as its LINEAR_BATCHES
# The paths the batch study tries, fastest first (RESULTS.md's epoch times at the recipe batch).
CANDIDATES = ("stationary", "persistent", "graph", "fused")
LINEAR_PATH = "fused"
PERF_EPOCHS = 5                        # epoch 0 is the binary's warm-up, not timed
RUN_TIMEOUT_S = 120
LAYERS = ("fc1", "fc2")
# The fused path's kernels (cuda/paths/stepwise_path.cu), matched on the name nsys reports: pattern, layer
# (None: not a Linear layer's), phase, what it computes. The first match wins.
KERNEL_ROLES = (
    (r"k_fwd_hidden", "fc1", "forward", "H = ReLU(Xb·W1 + b1)"),
    (r"k_fwd_logits", "fc2", "forward", "Z = H·W2 + b2"),
    (r"k_dW2", "fc2", "backward", "dW2 = Hᵀ·dZ"),
    (r"k_colsum<(\(mlp::Col\)1|(mlp::)?(Col::)?db2)>", "fc2", "backward", "db2 = colsum(dZ)"),
    (r"k_dH", "fc2", "backward", "dH = (dZ·W2ᵀ) ⊙ (H > 0): the input gradient, ReLU's mask fused"),
    (r"k_dW1", "fc1", "backward", "dW1 = Xbᵀ·dH"),
    (r"k_colsum<(\(mlp::Col\)0|(mlp::)?(Col::)?db1)>", "fc1", "backward", "db1 = colsum(dH)"),
    (r"k_gather_batch", None, "data", "Xb, yb = X[order], y[order]"),
    (r"k_softmax_xent", None, "loss", "loss, dZ = softmax(Z) − onehot"),
    (r"k_momentum", None, "update", "v = μv − lr·g; p += v"),
)


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def role(name: str) -> tuple[str | None, str, str]:
    """(layer, phase, what) of a kernel name; (None, "other", "") when KERNEL_ROLES has none."""
    for pattern, layer, phase, what in KERNEL_ROLES:
        if re.search(pattern, name):
            return layer, phase, what
    return None, "other", ""


def _rel(path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


# --------------------------------------------------------------------------------------------
# the binary: timing runs and nsys captures
# --------------------------------------------------------------------------------------------

def perf_run(batch: int, paths=CANDIDATES, binary: Path = BUILD_DIR / "mlp_train",
             data_dir: Path = DATA_DIR, epochs: int = PERF_EPOCHS) -> dict:
    """run.json of `mlp_train --perf-only` at `batch` (in a temporary folder, with a fresh
    --run-id). SystemExit (one line) when it wrote none of this run's."""
    run_id = uuid.uuid4().hex
    with tempfile.TemporaryDirectory(prefix="mlp-ours-") as tmp:
        cmd = [str(binary), "--data", str(data_dir), "--perf-only", "--paths", ",".join(paths),
               "--batch", str(batch), "--epochs", str(epochs), "--out", tmp, "--run-id", run_id]
        log("+ " + " ".join(cmd))
        try:
            rc = subprocess.run(cmd, cwd=ROOT, timeout=RUN_TIMEOUT_S).returncode
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SystemExit(f"error: mlp_train --perf-only at batch {batch}: {exc}") from None
        try:
            doc = json.loads((Path(tmp) / "run.json").read_text())
        except (OSError, ValueError):
            doc = None
    if not isinstance(doc, dict) or doc.get("run_id") != run_id:
        raise SystemExit(f"error: mlp_train --perf-only at batch {batch} (exit status {rc}) "
                         "wrote no run.json of this run")
    return doc


def candidates(run: dict, paths=CANDIDATES) -> list[dict]:
    """Each tried path's µs a step (None when it did not run) and why not, in `paths` order."""
    steps = run["recipe"]["steps_per_epoch"]
    out = []
    for name in paths:
        rec = run["paths"].get(name)
        med = None if rec is None else rec.get("median_ms")
        why = None
        if rec is None:
            why = "not in run.json"
        elif rec.get("skipped"):
            why = f"skipped: {rec['skipped']}"
        elif rec.get("passed") is False or not (isinstance(med, (int, float)) and math.isfinite(med)):
            why = f"failed: {rec.get('error') or 'no finite median'}"
        out.append({"path": name, "us_per_step": None if why else med * 1e3 / steps, "why": why})
    return out


def fastest(cands: list[dict]) -> dict | None:
    ran = [c for c in cands if c["us_per_step"] is not None]
    return min(ran, key=lambda c: c["us_per_step"]) if ran else None


def capture(path: str, batch: int, out_dir: Path, binary: Path = BUILD_DIR / "mlp_train",
            data_dir: Path = DATA_DIR, trace: bool = False) -> dict[str, Path]:
    """One profiled epoch of `path` at `batch` into out_dir (profiling.profile_path: the .nsys-rep
    and its three summary CSVs); with `trace`, also <path>_cuda_gpu_trace.csv."""
    files = profiling.profile_path(path, binary=_rel(binary), data_dir=_rel(data_dir),
                                   out_dir=out_dir, extra_args=("--batch", str(batch)),
                                   nsys_args=profiling.PROFILE_ALL_NSYS_ARGS, cwd=ROOT,
                                   timeout_s=RUN_TIMEOUT_S)
    if trace:
        base = Path(out_dir) / path
        cmd = [profiling.find_nsys(), "stats", "--force-export=true", "--report", "cuda_gpu_trace",
               "--format", "csv", "--output", str(base), str(files["nsys-rep"])]
        profiling._run(f"nsys stats cuda_gpu_trace of path {path}", cmd, timeout_s=RUN_TIMEOUT_S)
        files["cuda_gpu_trace"] = base.with_name(f"{path}_cuda_gpu_trace.csv")
        if not files["cuda_gpu_trace"].is_file():
            raise SystemExit(f"error: nsys stats wrote no {files['cuda_gpu_trace'].name}")
    return files


# --------------------------------------------------------------------------------------------
# reading the captures
# --------------------------------------------------------------------------------------------

def busy_ns(trace_csv: str) -> float:
    """The union of the [start, start + duration) intervals of a cuda_gpu_trace CSV, in ns
    (every row: kernels, copies, memsets). Header units "(ns)", "(us)", "(ms)", "(s)"."""
    units = {"ns": 1.0, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}
    lines = [ln for ln in trace_csv.splitlines() if ln.strip()]
    head = next((i for i, ln in enumerate(lines) if ln.lstrip('"').startswith("Start")), None)
    if head is None:
        raise ValueError("cuda_gpu_trace CSV: no header starting with 'Start'")
    rows = list(csv.reader(io.StringIO("\n".join(lines[head:]))))
    cols = {}
    for j, cell in enumerate(rows[0]):
        m = re.match(r"^\s*(\w+)\s*(?:\((\w+|µs)\))?\s*$", cell)
        if m and m.group(1) in ("Start", "Duration"):
            cols[m.group(1)] = (j, units.get(m.group(2) or "ns"))
    if len(cols) != 2 or None in (u for _, u in cols.values()):
        raise ValueError(f"cuda_gpu_trace CSV: no Start/Duration columns in {rows[0]}")
    spans = []
    for r in rows[1:]:
        (js, us), (jd, ud) = cols["Start"], cols["Duration"]
        s = float(r[js].replace(",", "")) * us
        spans.append((s, s + float(r[jd].replace(",", "")) * ud))
    total, end = 0.0, -math.inf
    for s, e in sorted(spans):
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def epoch_stats(kern, api, nvtx, steps: int, busy: float | None) -> dict:
    """Per-step figures of one profiled epoch: kern/api/nvtx are analysis.nsys_csv frames; busy the
    GPU busy ns (None: not measured)."""
    rng = nvtx[nvtx["name"] == profiling.CAPTURE_RANGE]
    if rng.empty:
        raise ValueError(f"nvtx summary has no range {profiling.CAPTURE_RANGE!r}")
    wall = float(rng["total_ns"].iloc[0]) / 1e3 / steps
    issue = api[~api["name"].str.contains("Synchronize")]
    launches = api[api["name"].str.contains("Launch")]
    busy_us = None if busy is None else busy / 1e3 / steps
    return {"steps": steps, "wall_us_per_step": wall,
            "host_us_per_step": float(issue["total_ns"].sum()) / 1e3 / steps,
            "kernel_us_per_step": float(kern["total_ns"].sum()) / 1e3 / steps,
            "gpu_busy_us_per_step": busy_us,
            "gpu_busy_fraction": None if busy_us is None else busy_us / wall,
            "kernels_per_step": float(kern["instances"].sum()) / steps,
            "launches_per_step": float(launches["num_calls"].sum()) / steps}


def linear_layers(kern, steps: int, in_out: dict) -> tuple[list[dict], dict]:
    """The torch study's layers list (each layer's forward and backward kernels, per step) and
    the kernels of no layer ({"kernels", "gpu_us_per_step"}), from a kernel summary frame."""
    groups: dict[tuple, list] = {}
    for _, r in kern.iterrows():
        layer, phase, what = role(r["name"])
        groups.setdefault((layer, phase if layer else None), []).append({
            "name": r["name"], "what": what, "phase": phase,
            "instances_per_step": float(r["instances"]) / steps, "mean_us": float(r["avg_ns"]) / 1e3,
            "us_per_step": float(r["total_ns"]) / 1e3 / steps})

    def phase(rows):
        return {"kernels": rows, "gpu_us_per_step": sum(k["us_per_step"] for k in rows)}
    layers = [{"layer": L, "in_out": in_out[L], **{p: phase(groups.get((L, p), []))
                                                   for p in ("forward", "backward")}}
              for L in LAYERS]
    return layers, phase(groups.get((None, None), []))


def _read(files: dict[str, Path]):
    from analysis.nsys_csv import read_api_sum, read_kern_sum, read_nvtx_sum
    return (read_kern_sum(files["cuda_gpu_kern_sum"]), read_api_sum(files["cuda_api_sum"]),
            read_nvtx_sum(files["nvtx_sum"]))


def _keep(files: dict[str, Path], profile_dir: Path, stem: str, out: dict) -> str:
    """Queue the capture's report and summaries for write_all as profile_dir/<stem>[_report]."""
    for kind, p in files.items():
        if kind == "cuda_gpu_trace":
            continue
        name = f"{stem}.nsys-rep" if kind == "nsys-rep" else f"{stem}_{kind}.csv"
        out[profile_dir / name] = p.read_bytes()
    return _rel(profile_dir / f"{stem}.nsys-rep")


# --------------------------------------------------------------------------------------------
# the studies
# --------------------------------------------------------------------------------------------

def _meta(run: dict) -> dict:
    r = run["recipe"]
    return {"schema": 1, **provenance.stamp(), "gpu": (run.get("gpu") or {}).get("name"),
            "shape": [r["input_dim"], r["hidden_dim"], r["output_dim"]]}


def batch_study(results_dir: Path, profile_dir: Path, batches=STEP_BATCHES,
                runner: Callable = perf_run, capturer: Callable = capture) -> dict:
    """Step time against batch for our fastest path at each batch (module docstring)."""
    files, rows, doc = {}, [], None
    with tempfile.TemporaryDirectory(prefix="mlp-ours-nsys-") as tmp:
        for b in batches:
            run = runner(b)
            cands = candidates(run)
            best = fastest(cands)
            if best is None:
                raise SystemExit(f"error: no path ran at batch {b}: " + "; ".join(
                    f"{c['path']} {c['why']}" for c in cands))
            steps = int(run["recipe"]["steps_per_epoch"])
            cap = capturer(best["path"], b, Path(tmp) / f"b{b}", trace=True)
            kern, api, nvtx = _read(cap)
            st = epoch_stats(kern, api, nvtx, steps, busy_ns(cap["cuda_gpu_trace"].read_text()))
            stem = f"steps_b{b}_{best['path']}"
            row = {"batch": b, "path": best["path"], "untraced_us_per_step": best["us_per_step"],
                   "candidates": cands, **st, "profile": _keep(cap, profile_dir, stem, files)}
            rows.append(row)
            doc = doc or _meta(run) | {"epochs_timed": PERF_EPOCHS - 1,
                                       "tried": list(CANDIDATES), "batches": rows}
            log(f"[ours] batch {b}: {best['path']} {row['untraced_us_per_step']:.2f} us/step "
                f"untraced, kernels {st['kernel_us_per_step']:.2f}, host {st['host_us_per_step']:.2f}"
                f", GPU busy {st['gpu_busy_fraction']:.0%} of {st['wall_us_per_step']:.2f} us wall")
    for row in rows:
        row["work_vs_first"] = row["batch"] / rows[0]["batch"]
        row["untraced_time_vs_first"] = row["untraced_us_per_step"] / rows[0]["untraced_us_per_step"]
    out = Path(results_dir) / "ours_batch_steps.json"
    files[out] = json.dumps(doc, indent=2) + "\n"
    write_all(files)
    log(f"[ours] batch: wrote {out} and {len(files) - 1} files under {profile_dir}")
    return doc


def linear_study(results_dir: Path, profile_dir: Path, batches=LINEAR_BATCHES,
                 runner: Callable = perf_run, capturer: Callable = capture) -> dict:
    """The fused path's kernels by layer and phase at each batch (module docstring)."""
    files, out_rows, doc = {}, [], None
    with tempfile.TemporaryDirectory(prefix="mlp-ours-nsys-") as tmp:
        for b in batches:
            run = runner(b, paths=(LINEAR_PATH,))
            if fastest(candidates(run, (LINEAR_PATH,))) is None:
                raise SystemExit(f"error: path {LINEAR_PATH} did not run at batch {b}: "
                                 f"{candidates(run, (LINEAR_PATH,))[0]['why']}")
            r = run["recipe"]
            steps = int(r["steps_per_epoch"])
            cap = capturer(LINEAR_PATH, b, Path(tmp) / f"b{b}")
            kern, _, _ = _read(cap)
            layers, other = linear_layers(kern, steps, {
                "fc1": [r["input_dim"], r["hidden_dim"]], "fc2": [r["hidden_dim"], r["output_dim"]]})
            stem = f"linear_b{b}_{LINEAR_PATH}"
            out_rows.append({"batch": b, "steps": steps, "layers": layers, "other": other,
                             "profile": _keep(cap, profile_dir, stem, files)})
            doc = doc or _meta(run) | {"path": LINEAR_PATH, "batches": out_rows}
            log(f"[ours] linear at batch {b}: " + "; ".join(
                f"{e['layer']} fwd {e['forward']['gpu_us_per_step']:.2f} us, bwd "
                f"{e['backward']['gpu_us_per_step']:.2f} us" for e in layers))
    out = Path(results_dir) / "ours_linear_kernels.json"
    files[out] = json.dumps(doc, indent=2) + "\n"
    write_all(files)
    log(f"[ours] linear: wrote {out}")
    return doc


def main(argv=None) -> int:
    ap = validate.ArgParser(prog="python -m harness.studies.ours_studies",
                                 description="our binary's step time vs batch and Linear kernels")
    ap.add_argument("--only", default=",".join(STUDIES),
                    help=f"comma-separated subset of: {', '.join(STUDIES)} (default: both)")
    ap.add_argument("--results", type=Path, default=RESULTS_DIR, help="where the JSON goes")
    ap.add_argument("--profile", type=Path, default=PROFILE_DIR / "ours",
                    help="folder for the nsys reports and CSVs (default profile/ours/)")
    args = ap.parse_args(argv)
    only = [x.strip() for x in args.only.split(",") if x.strip()]
    bad = [x for x in only if x not in STUDIES]
    if bad or not only:
        ap.error(f"unknown study {', '.join(bad) or '(none named)'}; known: {', '.join(STUDIES)}")
    if not (BUILD_DIR / "mlp_train").is_file():
        raise SystemExit(f"error: {BUILD_DIR / 'mlp_train'} not found: run `invoke build` first")
    profiling.find_nsys()
    t0 = time.perf_counter()
    if "batch" in only:
        batch_study(args.results, args.profile)
    if "linear" in only:
        linear_study(args.results, args.profile)
    log(f"[ours] done in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    files.run_main(main)
