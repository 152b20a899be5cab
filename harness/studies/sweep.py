"""The width and batch sweep (issue 8): the best CUDA path against PyTorch, point by point.

    python -m harness.studies.sweep [--widths 64,128,...] [--batches 32,128,...] [--epochs 20]
                            [--paths persistent,fused] [--no-pytorch] [--full]

Two sweeps on one GPU, in one run:
  width sweep   hidden width in WIDTHS at batch WIDTH_SWEEP_BATCH (128)
  batch sweep   batch in BATCHES at hidden width BATCH_SWEEP_HIDDEN (256)
The point they share (width 256, batch 128) is run once. Each point, labelled "h<width>_b<batch>":

  1. build/mlp_train --perf-only --paths P --hidden W --batch B --epochs E --out results/sweep/<label>
     (run.json, init_params.npy and order.npy of that shape; its output in mlp_train.log);
  2. the PyTorch baseline, the variants harness/baseline/registry.py marks for the sweep only
     (eager and cuda-graph among them), on that point's init_params.npy and order.npy, with
     --batch B and the same data folder (pytorch.json; pytorch.log);
  3. collection: per CUDA path and PyTorch variant the median epoch, its CV, the test accuracy,
     images per second and µs per step; the best CUDA path (the passed path with the lowest
     median) over eager and over cuda-graph (spec/torch_variants.py names the two); the
     measured memory peaks beside a ledger computed
     from the shapes (spec.layout.memory_ledger); GPU-seconds per 1,000 images.

A point that fails (a path fails, the binary stops, the baseline fails, a time limit) is recorded
with its error and the sweep goes on. The committed evidence is never lost to a failure: each point
runs in a staging folder, results/sweep/<label>.new/; a point that timed a CUDA path then replaces
results/sweep/<label>/ (the old folder removed only after the rename), while one that did not keeps
the old folder and leaves its own files in results/sweep/<label>.failed/. At the end sweep.json
(and, with `report`, SWEEP.md and its two plots) are written together, all or none, and only when
some point timed a CUDA path: a sweep that timed nothing (no GPU) writes none of them. An
interrupted sweep leaves the points it finished in their folders (point.json each), from which
--collect-only rebuilds sweep.json. The format is in docs/formats.md.
"""
from __future__ import annotations

import json
import math
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from harness.baseline import registry
from spec import files, provenance, validate
from spec.files import BUILD_DIR, DATA_DIR, RESULTS_DIR, ROOT, TEMPLATES_DIR, InputError
from spec.layout import DATA_NOTE, FLOAT_BYTES, GRADIENT_NOTE, LABEL_BYTES, memory_ledger
from spec.recipe import load_recipe
from spec.torch_variants import CUDA_GRAPH, EAGER

WIDTHS = (64, 128, 256, 512, 1024, 2048, 4096, 8192)
BATCHES = (32, 128, 512, 2048)
WIDTH_SWEEP_BATCH = 128        # the batch of the width sweep
BATCH_SWEEP_HIDDEN = 256       # the hidden width of the batch sweep
DEFAULT_PATHS = "persistent,fused"
SWEEP_DIR = "sweep"            # per-point folders: results/sweep/<label>/
SWEEP_JSON = "sweep.json"
POINT_JSON = "point.json"      # per point: its record's inputs (how it was run, what stopped it)
POINT_CONFIG_KEYS = ("epochs", "paths", "pytorch_variants", "data_dir", "train_size")
FULL_TRAIN_SIZE = 60_000       # data/full (invoke data --full)
COST_IMAGES = 1000             # cost is GPU-seconds per this many training images
DEFAULT_TIMEOUT_S = 300        # per subprocess (the binary, the baseline) of one point
LOG_TAIL_LINES = 20
DEFAULT_EPOCHS = 20
MIN_EPOCHS, MAX_EPOCHS = 2, 1000   # epoch 0 is a warm-up, not timed; the recipe's bound
MAX_WIDTH, MAX_BATCH = 16384, 65536   # the recipe bounds of hidden_dim and batch (spec.recipe.BOUNDS)
STAGING, FAILED = ".new", ".failed"   # a point folder's suffixes while it runs, when it failed
SWEEP_MD = ROOT / "SWEEP.md"

def label(hidden: int, batch: int) -> str:
    """The point's name and folder: h256_b128."""
    return f"h{int(hidden)}_b{int(batch)}"


def sweep_points(widths: Sequence[int] = WIDTHS, batches: Sequence[int] = BATCHES,
                 width_batch: int = WIDTH_SWEEP_BATCH, batch_hidden: int = BATCH_SWEEP_HIDDEN
                 ) -> list[dict]:
    """The points to run, in run order (the width sweep, then the batch sweep's new points);
    each {"label", "hidden", "batch", "sweeps": ["width"] / ["batch"] / ["width", "batch"]}.
    A point in both sweeps (256 x 128 by default) appears once."""
    points: dict[str, dict] = {}
    for sweep_name, shapes in (("width", [(int(w), int(width_batch)) for w in widths]),
                               ("batch", [(int(batch_hidden), int(b)) for b in batches])):
        for hidden, batch in shapes:
            if hidden < 1 or batch < 1:
                raise ValueError(f"widths and batches must be positive, got {hidden}x{batch}")
            key = label(hidden, batch)
            point = points.setdefault(key, {"label": key, "hidden": hidden, "batch": batch,
                                            "sweeps": []})
            if sweep_name not in point["sweeps"]:
                point["sweeps"].append(sweep_name)
    return list(points.values())


# ----------------------------------------------------------------------------- arithmetic

def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def metrics(entry: dict | None, train_size: int, steps: int) -> dict:
    """One CUDA path's or PyTorch variant's numbers at a point: median_ms, cv_pct,
    test_accuracy, images_per_s, step_us, gpu_s_per_1000_images, passed, error (None where
    absent). A PyTorch entry passes when it has no error and a median."""
    entry = entry or {}
    med = entry.get("median_ms")
    med = float(med) if _finite(med) else None
    error = entry.get("error") or ""
    passed = entry.get("passed")
    if passed is None:   # pytorch.json has no "passed": a variant passed when it ran and timed
        passed = not error and med is not None
    passed = bool(passed) and med is not None
    out = {
        "passed": passed,
        "error": error,
        "median_ms": med,
        "cv_pct": entry.get("cv_pct"),
        "min_ms": entry.get("min_ms"),
        "max_ms": entry.get("max_ms"),
        "test_accuracy": entry.get("test_accuracy"),
        "images_per_s": train_size / (med / 1000.0) if med and train_size else None,
        "step_us": med * 1000.0 / steps if med and steps else None,
        "gpu_s_per_1000_images": (med / 1000.0) / train_size * COST_IMAGES
        if med and train_size else None,
    }
    if "launches_per_step" in entry:
        out["launches_per_step"] = entry["launches_per_step"]
    if "max_memory_allocated_bytes" in entry:
        out["max_memory_allocated_bytes"] = entry["max_memory_allocated_bytes"]
    return out


def _ratio(a, b):
    return a / b if a is not None and b else None


def _read_json(path: Path):
    """(object, None) or (None, one-line reason)."""
    if not Path(path).exists():
        return None, f"{path.name} not written"
    try:
        obj = json.loads(files.read_input(path).decode("utf-8"))
    except InputError as exc:
        return None, f"{path.name}: " + str(exc).removeprefix(f"error: {path}: ")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, f"{path.name}: malformed JSON: {exc}"
    if not isinstance(obj, dict):
        return None, f"{path.name}: malformed JSON: the top level is not an object"
    return obj, None


def collect_point(point_dir: Path, point: dict, pytorch: bool = True,
                  binary_error: str = "", pytorch_error: str = "") -> dict:
    """The sweep.json record of one point from its folder (run.json, pytorch.json), with the
    registry's sweep variants of pytorch.json.

    binary_error / pytorch_error: why the binary or the baseline stopped (a non-zero exit
    status other than 1, a time limit), as the driver saw it; "" when they finished.
    """
    point_dir = Path(point_dir)
    rec = {"label": point["label"], "hidden": int(point["hidden"]), "batch": int(point["batch"]),
           "sweeps": list(point.get("sweeps", [])), "dir": point.get("dir", point_dir.name),
           "status": "ok", "errors": [], "steps_per_epoch": None, "n_params": None,
           "train_size": None, "test_size": None, "epochs": None,
           "cuda": {}, "best_cuda_path": None, "best_cuda": None, "pytorch": {},
           "ratio_best_cuda_vs_eager": None, "ratio_best_cuda_vs_cuda_graph": None,
           "memory": None}
    errors = rec["errors"]
    run, why = _read_json(point_dir / "run.json")
    if binary_error:
        errors.append(f"mlp_train: {binary_error}")
    if run is None:
        if not binary_error:
            errors.append(f"mlp_train: {why}")
        if pytorch and pytorch_error:
            errors.append(f"pytorch: {pytorch_error}")
        rec["status"] = "failed"
        return rec
    rec["gpu"] = run.get("gpu")
    rec["date_utc"] = run.get("date_utc")
    recipe = run.get("recipe") or {}
    for key in ("steps_per_epoch", "n_params", "train_size", "test_size", "epochs"):
        rec[key] = recipe.get(key)
    if recipe.get("hidden_dim") not in (None, rec["hidden"]) or \
            recipe.get("batch") not in (None, rec["batch"]):
        errors.append(f"run.json is for hidden {recipe.get('hidden_dim')} batch "
                      f"{recipe.get('batch')}, not {rec['hidden']} x {rec['batch']}")
    train_size = int(recipe.get("train_size") or 0)
    steps = int(recipe.get("steps_per_epoch") or 0)
    for name, entry in (run.get("paths") or {}).items():
        m = metrics(entry, train_size, steps)
        rec["cuda"][name] = m
        if not m["passed"]:
            errors.append(f"path {name}: {(m['error'] or 'failed').splitlines()[0]}")
    passed = [(m["median_ms"], name) for name, m in rec["cuda"].items() if m["passed"]]
    if passed:
        best = min(passed)[1]
        rec["best_cuda_path"] = best
        rec["best_cuda"] = rec["cuda"][best]
    else:
        errors.append("no CUDA path passed")

    if pytorch:
        torch_json, why = _read_json(point_dir / "pytorch.json")
        if pytorch_error:
            errors.append(f"pytorch: {pytorch_error}")
        elif torch_json is None:
            errors.append(f"pytorch: {why}")
        torch_json = torch_json or {}
        rec["torch_version"] = torch_json.get("torch_version")
        rec["torch_cuda_version"] = torch_json.get("cuda_version")
        got = torch_json.get("variants") or {}
        for name in registry.sweep_names():
            if name not in got and torch_json:
                errors.append(f"pytorch {name}: not in pytorch.json")
            if name not in got:
                continue
            m = metrics(got[name], train_size, steps)
            rec["pytorch"][name] = m
            if not m["passed"]:
                errors.append(f"pytorch {name}: {(m['error'] or 'no timing').splitlines()[0]}")
    best_med = rec["best_cuda"]["median_ms"] if rec["best_cuda"] else None
    eager = rec["pytorch"].get(EAGER) or {}
    graph = rec["pytorch"].get(CUDA_GRAPH) or {}
    # Ratios only against a variant that passed (ran, timed, finite loss).
    rec["ratio_best_cuda_vs_eager"] = _ratio(best_med, eager.get("median_ms")
                                             if eager.get("passed") else None)
    rec["ratio_best_cuda_vs_cuda_graph"] = _ratio(best_med, graph.get("median_ms")
                                                  if graph.get("passed") else None)

    mem = run.get("memory") or {}
    in_dim, out_dim = recipe.get("input_dim"), recipe.get("output_dim")
    led = None
    if all(isinstance(recipe.get(k), int) for k in ("input_dim", "output_dim", "train_size",
                                                       "test_size")):
        led = memory_ledger((in_dim, rec["hidden"], out_dim), rec["batch"], recipe["train_size"],
                            recipe["test_size"], recipe.get("epochs"))
    rec["memory"] = {
        "cuda_peak_used_bytes": mem.get("peak_used_bytes"),
        "device_total_bytes": mem.get("device_total_bytes"),
        "free_before_bytes": mem.get("free_before_bytes"),
        "torch_max_memory_allocated_bytes": {
            name: m.get("max_memory_allocated_bytes") for name, m in rec["pytorch"].items()},
        "ledger": led,
    }
    if errors:
        # "partial": a best CUDA path was timed, but something else at the point failed.
        rec["status"] = "partial" if rec["best_cuda"] is not None else "failed"
    return rec


# ----------------------------------------------------------------------------- running

def _rel(p: Path) -> str:
    """A path as the commands show it: relative to the repository root where that is short."""
    p = Path(p)
    try:
        return os.path.relpath(p.resolve(), ROOT)
    except ValueError:
        return str(p)


def _tail(log_path: Path) -> str:
    """The last non-empty line of a log (the one-line error of the binary or the baseline)."""
    try:
        lines = [ln.strip() for ln in log_path.read_text(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln for ln in lines if ln]
    return lines[-1] if lines else ""


def _run_logged(cmd: list[str], log_path: Path, timeout_s: float) -> tuple[int | None, str]:
    """Run cmd from the repository root with its output in log_path; (exit code or None on a
    time limit, a one-line reason when it did not finish normally)."""
    with open(log_path, "w", encoding="utf-8") as log:
        log.write("$ " + shlex.join(cmd) + "\n")
        log.flush()
        try:
            proc = subprocess.run(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                  timeout=timeout_s)
        except subprocess.TimeoutExpired:
            return None, f"stopped after the {timeout_s:g} s time limit (log: {_rel(log_path)})"
        except OSError as exc:
            return None, f"could not start {cmd[0]}: {exc}"
    return proc.returncode, ""


def _fmt_ms(x) -> str:
    return "—" if x is None else f"{x:.4g} ms"


def progress_line(i: int, n: int, rec: dict, seconds: float) -> str:
    head = f"[sweep {i}/{n}] {rec['label']}:"
    if rec["best_cuda"] is None:
        first = rec["errors"][0] if rec["errors"] else "failed"
        return f"{head} FAILED: {first} ({seconds:.1f} s)"
    best = rec["best_cuda"]
    parts = [f"best {rec['best_cuda_path']} {_fmt_ms(best['median_ms'])} "
             f"(CV {best['cv_pct']:.1f}%)" if isinstance(best.get("cv_pct"), (int, float))
             else f"best {rec['best_cuda_path']} {_fmt_ms(best['median_ms'])}"]
    for name, key in ((EAGER, "ratio_best_cuda_vs_eager"),
                      (CUDA_GRAPH, "ratio_best_cuda_vs_cuda_graph")):
        m = rec["pytorch"].get(name)
        if m is not None:
            r = rec[key]
            parts.append(f"{name} {_fmt_ms(m['median_ms'])}"
                         + (f" (ratio {r:.3g})" if r is not None else ""))
    tail = f"; {len(rec['errors'])} problem(s): {rec['errors'][0]}" if rec["errors"] else ""
    return f"{head} " + ", ".join(parts) + f" ({seconds:.1f} s){tail}"


def _summary(records: list[dict]) -> dict:
    """GPU, date and versions from the first point that has them."""
    first = next((r for r in records if r.get("gpu")), {})
    torch_first = next((r for r in records if r.get("torch_version")), {})
    return {"date_utc": first.get("date_utc"), "gpu": first.get("gpu"),
            "torch_version": torch_first.get("torch_version"),
            "torch_cuda_version": torch_first.get("torch_cuda_version")}


def _new_doc(widths, batches, width_batch, batch_hidden, epochs, paths, pytorch, data_dir,
             train_size, timeout_s, note: str) -> dict:
    recipe = load_recipe()
    return {
        "schema": 1,
        "note": note,
        "date_utc": None, "gpu": None, "torch_version": None, "torch_cuda_version": None,
        "commit": provenance.git_commit(), "driver": provenance.driver_version(),
        "config": {
            "widths": [int(w) for w in widths], "batches": [int(b) for b in batches],
            "width_sweep_batch": int(width_batch), "batch_sweep_hidden": int(batch_hidden),
            "epochs": epochs, "paths": list(paths) if paths is not None else None,
            "pytorch_variants": registry.sweep_names() if pytorch else [],
            "data_dir": data_dir, "train_size": train_size,
            "input_dim": recipe["input_dim"], "output_dim": recipe["output_dim"],
            "lr": recipe["lr"], "momentum": recipe["momentum"],
            "float_bytes": FLOAT_BYTES, "label_bytes": LABEL_BYTES,
            "cost_images": COST_IMAGES, "timeout_s": timeout_s,
        },
        "notes": {"gradients": GRADIENT_NOTE, "data": DATA_NOTE},
        "points": [],
        "complete": False,
    }


def _check_point_folders(sweep_root: Path, points: list[dict]) -> None:
    """InputError naming the first path in the way of a point's folders (a file where a folder goes)."""
    for path in [sweep_root] + [sweep_root / (p["label"] + sfx) for p in points for sfx in ("", STAGING, FAILED)]:
        if path.exists() and not path.is_dir():
            raise InputError(f"error: {path}: not a folder, but the sweep writes a folder there")


def sweep(widths: Sequence[int] = WIDTHS, batches: Sequence[int] = BATCHES, epochs: int = DEFAULT_EPOCHS,
          paths: str = DEFAULT_PATHS, results_dir: Path = RESULTS_DIR, pytorch: bool = True,
          data_dir: Path = DATA_DIR, train_size: int | None = None, *,
          binary: Path | None = None, pytorch_cmd: Sequence[str] | None = None,
          device: str = "cuda", timeout_s: float = DEFAULT_TIMEOUT_S,
          width_batch: int = WIDTH_SWEEP_BATCH, batch_hidden: int = BATCH_SWEEP_HIDDEN,
          report: Path | None = None) -> dict:
    """Run every point and, when some point timed a CUDA path, write results_dir/sweep.json
    (with `report`: also that SWEEP.md and results_dir/plots' two sweep plots, all together);
    returns the sweep's object either way.

    binary: the mlp_train to run (default build/mlp_train); pytorch_cmd: the command prefix of
    the baseline (default: this Python, -m harness.baseline.pytorch_baseline), given --results, --variants,
    --batch, --data and --device; device: the baseline's torch device; timeout_s: the time limit
    of each subprocess of a point. Each point's folder also gets point.json (its record and how
    it was run), from which collect() rebuilds sweep.json when a sweep was run in parts.
    """
    results_dir = Path(results_dir)
    data_dir = Path(data_dir)
    binary = Path(binary) if binary is not None else BUILD_DIR / "mlp_train"
    if not binary.exists():
        raise SystemExit(f"error: {binary} missing: run `invoke build` first")
    if not data_dir.is_dir():
        raise InputError(f"error: {data_dir}: data folder not found"
                         + (" (run `invoke data --full`)" if data_dir.name == "full" else ""))
    epochs = parse_epochs(epochs)
    timeout_s = validate.positive_seconds(timeout_s, "--timeout")
    path_list = [validate.safe_name(p.strip(), "--paths: path") for p in str(paths).split(",") if p.strip()]
    if not path_list:
        raise InputError("error: --paths names no path")
    points = sweep_points(widths, batches, width_batch, batch_hidden)
    if not points:
        raise InputError("error: no sweep points (empty widths and batches)")
    pytorch_cmd = list(pytorch_cmd) if pytorch_cmd else [sys.executable, "-m",
                                                         "harness.baseline.pytorch_baseline"]
    sweep_root = results_dir / SWEEP_DIR
    out_path = results_dir / SWEEP_JSON
    plots_dir = results_dir / "plots"
    _check_point_folders(sweep_root, points)
    files.check_targets([out_path] + ([Path(report)] + [plots_dir / f for f in _sweep_plot_files()]
                                      if report is not None else []))
    doc = _new_doc(widths, batches, width_batch, batch_hidden, epochs, path_list, pytorch,
                   _rel(data_dir), train_size, timeout_s,
                   "written by harness/studies/sweep.py; see docs/formats.md")
    n = len(points)
    for i, point in enumerate(points, 1):
        t0 = time.perf_counter()
        final = sweep_root / point["label"]
        pdir = final.with_name(final.name + STAGING)
        if pdir.exists():
            shutil.rmtree(pdir)        # left by an interrupted sweep
        pdir.mkdir(parents=True)
        point = dict(point, dir=_rel(final))
        cmd = [_rel(binary), "--data", _rel(data_dir), "--out", _rel(pdir), "--perf-only",
               "--paths", ",".join(path_list), "--hidden", str(point["hidden"]),
               "--batch", str(point["batch"]), "--epochs", str(epochs)]
        if train_size is not None:
            cmd += ["--train-size", str(int(train_size))]
        rc, why = _run_logged(cmd, pdir / "mlp_train.log", timeout_s)
        # 0: every path trained; 1 with run.json: a path failed (run.json says which); any
        # other status (1 without run.json included) stopped the binary: its last line says why.
        finished = rc == 0 or (rc == 1 and (pdir / "run.json").is_file())
        binary_error = why or ("" if finished else
                               f"exit status {rc}: {_tail(pdir / 'mlp_train.log')}")
        pytorch_error, tcmd = "", None
        if pytorch:
            if (pdir / "init_params.npy").exists() and (pdir / "order.npy").exists():
                tcmd = [*pytorch_cmd, "--results", _rel(pdir),
                        "--variants", ",".join(registry.sweep_names()),
                        "--batch", str(point["batch"]), "--data", _rel(data_dir),
                        "--device", device]
                trc, twhy = _run_logged(tcmd, pdir / "pytorch.log", timeout_s)
                pytorch_error = twhy or ("" if trc == 0 else
                                         f"exit status {trc}: {_tail(pdir / 'pytorch.log')}")
            else:
                pytorch_error = "not run: mlp_train wrote no init_params.npy / order.npy"
        rec = collect_point(pdir, point, pytorch=pytorch, binary_error=binary_error,
                            pytorch_error=pytorch_error)
        if rec["best_cuda"] is None:   # the old folder stays; this run's files go beside it
            final = final.with_name(final.name + FAILED)
            rec["dir"] = point["dir"] = _rel(final)
        rec["command"] = shlex.join(cmd)
        rec["pytorch_command"] = (shlex.join(["python" if x == sys.executable else x
                                              for x in tcmd]) if tcmd else None)
        rec["exit_code"] = rc
        files.write_json(pdir / POINT_JSON, {
            "schema": 1, "point": point, "binary_error": binary_error,
            "pytorch": pytorch, "pytorch_error": pytorch_error,
            "command": rec["command"], "pytorch_command": rec["pytorch_command"],
            "exit_code": rc, "commit": doc["commit"], "driver": doc["driver"],
            "config": {k: doc["config"][k] for k in POINT_CONFIG_KEYS}})
        files.replace_folder(pdir, final)
        doc["points"].append(rec)
        doc.update(_summary(doc["points"]))
        doc["complete"] = i == n
        print(progress_line(i, n, rec, time.perf_counter() - t0), flush=True)
    ok = sum(1 for r in doc["points"] if r["status"] == "ok")
    if not any(r["best_cuda"] is not None for r in doc["points"]):
        print(f"sweep: no point timed a CUDA path: {_rel(out_path)} and the report untouched "
              f"(this run's files: {', '.join(r['dir'] + '/' for r in doc['points'])})", flush=True)
        return doc
    outputs = {out_path: json.dumps(doc, indent=2) + "\n"}
    if report is not None:
        from analysis import render as renderer
        outputs |= renderer.render_sweep(doc, out_path, Path(report), plots_dir, TEMPLATES_DIR)
    files.write_all(outputs)
    print(f"sweep: {ok}/{n} points without a problem; wrote " + ", ".join(_rel(p) for p in outputs), flush=True)
    return doc


def _sweep_plot_files() -> list[str]:
    from analysis.render import SWEEP_PLOT_FILES
    return list(SWEEP_PLOT_FILES.values())


def collect(results_dir: Path = RESULTS_DIR, widths: Sequence[int] = WIDTHS,
            batches: Sequence[int] = BATCHES, pytorch: bool = True, write: bool = True,
            width_batch: int = WIDTH_SWEEP_BATCH, batch_hidden: int = BATCH_SWEEP_HIDDEN) -> dict:
    """Rebuild sweep.json from the point folders already in results_dir/sweep/, running
    nothing: for a sweep run in parts (`--widths 64,128 --batches none`, then the rest), or to
    re-collect after a change here. A point's point.json (written by sweep()) supplies how it was
    run and what stopped it; a point without its folder is recorded as failed ("not run")."""
    results_dir = Path(results_dir)
    points = sweep_points(widths, batches, width_batch, batch_hidden)
    doc = _new_doc(widths, batches, width_batch, batch_hidden, None, None, pytorch, None, None,
                   None, "collected by harness/studies/sweep.py (--collect-only) from results/sweep/*/")
    config_seen = False
    for point in points:
        pdir = results_dir / SWEEP_DIR / point["label"]
        point = dict(point, dir=_rel(pdir))
        saved, _ = _read_json(pdir / POINT_JSON)
        saved = saved or {}
        if not pdir.is_dir():
            rec = collect_point(pdir, point, pytorch=pytorch, binary_error="not run")
        else:
            rec = collect_point(pdir, point, pytorch=saved.get("pytorch", pytorch),
                                binary_error=saved.get("binary_error", ""),
                                pytorch_error=saved.get("pytorch_error", ""))
        rec["command"] = saved.get("command")
        rec["pytorch_command"] = saved.get("pytorch_command")
        rec["exit_code"] = saved.get("exit_code")
        cfg = saved.get("config") or {}
        if cfg:
            if not config_seen:
                doc["config"].update({k: cfg.get(k) for k in POINT_CONFIG_KEYS})
                doc["commit"] = saved.get("commit", doc["commit"])
                doc["driver"] = saved.get("driver", doc["driver"])
                config_seen = True
            elif any(cfg.get(k) != doc["config"][k] for k in POINT_CONFIG_KEYS):
                rec["errors"].append("run with other settings than the first point: " + ", ".join(
                    f"{k}={cfg.get(k)!r}" for k in POINT_CONFIG_KEYS
                    if cfg.get(k) != doc["config"][k]))
                if rec["status"] == "ok":
                    rec["status"] = "partial"
        doc["points"].append(rec)
    if not config_seen:   # folders without point.json (hand-made, or an older sweep)
        doc["config"]["epochs"] = next((r["epochs"] for r in doc["points"] if r["epochs"]), None)
        doc["config"]["train_size"] = next((r["train_size"] for r in doc["points"]
                                            if r["train_size"]), None)
        doc["config"]["paths"] = sorted({p for r in doc["points"] for p in r["cuda"]}) or None
    doc.update(_summary(doc["points"]))
    doc["complete"] = all((results_dir / SWEEP_DIR / p["label"]).is_dir() for p in points)
    if write:
        files.write_json(results_dir / SWEEP_JSON, doc)
    return doc


def parse_ints(text: str | Sequence[int] | None, default: Sequence[int], flag: str = "--widths",
               hi: int = MAX_WIDTH) -> list[int]:
    """"64,128" -> [64, 128]; None -> default; "none" -> [] (that sweep left out); anything else
    (an item that is not a plain decimal integer in [1, hi], one given twice, an empty list)
    is an InputError naming `flag` (spec.validate.integers)."""
    if text is None:
        return list(default)
    if not isinstance(text, str):
        return [validate.count(str(x), flag, 1, hi) for x in text]
    if text.strip().lower() == "none":
        return []
    return validate.integers(text, flag, 1, hi)


def parse_points(widths, batches) -> tuple[list[int], list[int]]:
    """(widths, batches) of --widths and --batches (parse_ints); both "none" is an InputError."""
    w = parse_ints(widths, WIDTHS, "--widths", MAX_WIDTH)
    b = parse_ints(batches, BATCHES, "--batches", MAX_BATCH)
    if not w and not b:
        raise InputError(f"error: --widths {widths!r} --batches {batches!r}: no sweep point to run")
    return w, b


def parse_epochs(text) -> int:
    """--epochs: a plain decimal integer in [2, 1000] (epoch 0 is a warm-up, so one epoch times
    nothing); None: DEFAULT_EPOCHS."""
    if text is None:
        return DEFAULT_EPOCHS
    return validate.count(str(text), "--epochs (epoch 0 is a warm-up, not timed)", MIN_EPOCHS, MAX_EPOCHS)


def data_for(full: bool) -> tuple[Path, int | None]:
    """(data folder, --train-size) of the shipped subset (data/) or the full split (data/full)."""
    if not full:
        return DATA_DIR, None
    full_dir = DATA_DIR / "full"
    if not (full_dir / "SHA256SUMS").is_file():
        raise InputError(f"error: {_rel(full_dir)}: not found: run `invoke data --full` first")
    return full_dir, FULL_TRAIN_SIZE


def main(argv: Sequence[str] | None = None) -> int:
    ap = validate.ArgParser(prog="python -m harness.studies.sweep",
                            description="Width and batch sweep: best CUDA path vs PyTorch")
    ap.add_argument("--widths", default=None,
                    help=f"hidden widths at batch {WIDTH_SWEEP_BATCH} "
                         f"(default {','.join(map(str, WIDTHS))}; none: no width sweep)")
    ap.add_argument("--batches", default=None,
                    help=f"batches at width {BATCH_SWEEP_HIDDEN} "
                         f"(default {','.join(map(str, BATCHES))}; none: no batch sweep)")
    ap.add_argument("--epochs", default=None, help=f"epochs per point, {MIN_EPOCHS}-{MAX_EPOCHS} (default {DEFAULT_EPOCHS})")
    ap.add_argument("--paths", default=DEFAULT_PATHS)
    ap.add_argument("--no-pytorch", action="store_true", help="CUDA paths only")
    ap.add_argument("--full", action="store_true",
                    help=f"train on data/full ({FULL_TRAIN_SIZE:,} images; `invoke data --full`)")
    ap.add_argument("--results", type=Path, default=RESULTS_DIR)
    ap.add_argument("--timeout", type=lambda t: validate.positive_seconds(t, "--timeout"), default=DEFAULT_TIMEOUT_S,
                    help="time limit of each subprocess of a point, seconds")
    ap.add_argument("--collect-only", action="store_true",
                    help="rebuild sweep.json from results/sweep/*/ without running anything")
    args = ap.parse_args(argv)
    widths, batches = parse_points(args.widths, args.batches)
    if args.collect_only:
        doc = collect(args.results, widths, batches, pytorch=not args.no_pytorch)
        print(f"sweep: collected {len(doc['points'])} points into "
              f"{_rel(Path(args.results) / SWEEP_JSON)}")
    else:
        data_dir, train_size = data_for(args.full)
        doc = sweep(widths, batches, args.epochs, args.paths, args.results,
                    pytorch=not args.no_pytorch, data_dir=data_dir, train_size=train_size,
                    timeout_s=args.timeout)
    return 0 if any(r["best_cuda"] is not None for r in doc["points"]) else 1


if __name__ == "__main__":
    files.run_main(main)
