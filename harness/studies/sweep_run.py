"""Running the sweep (harness/studies/sweep.py): each point's binary and baseline as subprocesses
(argument lists, each under a time limit, its output in a log), the point's folder staged and
then renamed into place, and sweep.json with its report written together at the end."""
from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

from harness.baseline import registry
from harness.studies.sweep_collect import new_doc, outputs_of, summary, sweep_plot_files
from harness.studies.sweep_plan import (BATCH_SWEEP_HIDDEN, BATCHES, DEFAULT_EPOCHS,
                                        DEFAULT_TIMEOUT_S, EXTRA_POINTS, POINT_CONFIG_KEYS,
                                        POINT_JSON, STAGING, SWEEP_DIR, SWEEP_JSON, UNKNOWN,
                                        WIDTH_SWEEP_BATCH, WIDTHS, parse_epochs, parse_precisions,
                                        rel, resolve_paths, resolve_variants, sweep_points)
from harness.studies.sweep_point import collect_point, load_ceilings
from spec import files, provenance, validate
from spec.files import BUILD_DIR, DATA_DIR, RESULTS_DIR, ROOT, InputError
from spec.torch_variants import FP32, PRECISIONS


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
            return None, f"stopped after the {timeout_s:g} s time limit (log: {rel(log_path)})"
        except OSError as exc:
            return None, f"could not start {cmd[0]}: {exc}"
    return proc.returncode, ""


def _fmt_ms(x) -> str:
    return "—" if x is None else f"{x:.4g} ms"


def progress_line(i: int, n: int, rec: dict, seconds: float) -> str:
    """The point's closing line: `[sweep i/n] <label>: best ...` or `... FAILED: ...`."""
    head = f"[sweep {i}/{n}] {rec['label']}:"
    if rec["best_cuda"] is None:
        first = rec["errors"][0] if rec["errors"] else "failed"
        return f"{head} FAILED: {first} ({seconds:.1f} s)"
    best = rec["best_cuda"]
    cv = best.get("cv_pct")
    parts = [f"best {rec['best_cuda_path']} ({best.get('accumulator', UNKNOWN)}) "
             f"{_fmt_ms(best['median_ms'])}"
             + (f" (CV {cv:.1f}%)" if isinstance(cv, (int, float)) else "")]
    top = rec.get("fastest_pytorch_variant")
    if top is not None:
        r = rec["ratio_best_cuda_vs_fastest_pytorch"]
        parts.append(f"fastest PyTorch {top} {_fmt_ms(rec['fastest_pytorch_median_ms'])}"
                     + (f" (ratio {r:.3g})" if r is not None else ""))
    elif rec["pytorch"]:
        parts.append("no PyTorch variant passed")
    if best.get("parity_vs_fused") is not None:
        parts.append(f"parity vs fused {best['parity_vs_fused']:.2g}"
                     + (f" (limit {best['parity_limit']:g})" if best.get("parity_limit") else ""))
    if best.get("parity_vs_fp64") is not None:
        parts.append(f"vs float64 {best['parity_vs_fp64']:.2g}"
                     + (f" (limit {best['parity_limit']:g})"
                        if best.get("parity_limit") and best.get("parity_vs_fused") is None else ""))
    for prec, e in (rec.get("precisions") or {}).items():
        if prec == FP32 or not (e["paths"] or e["variants"]):
            continue
        if e["best_cuda_path"] is None:
            parts.append(f"{prec}: " + ("no path" if e["no_path"] else "no path passed"))
            continue
        ours = f"{prec}: best {e['best_cuda_path']} {_fmt_ms(e['best_cuda_median_ms'])}"
        if e["fastest_pytorch_variant"]:
            r = e["ratio_best_cuda_vs_fastest_pytorch"]
            ours += (f" vs {e['fastest_pytorch_variant']} {_fmt_ms(e['fastest_pytorch_median_ms'])}"
                     + (f" (ratio {r:.3g})" if r is not None else ""))
        parts.append(ours)
    roof = rec.get("roofline") or {}
    if roof.get("floor_ms") is not None:
        share = (roof.get("best") or {}).get("share_of_floor")
        parts.append(f"floor {_fmt_ms(roof['floor_ms'])} ({roof['bound']}"
                     + (f", {100 * share:.0f}% of it" if share is not None else "") + ")")
    if rec["skipped_paths"]:
        parts.append("skipped " + ", ".join(rec["skipped_paths"]))
    tail = f"; {len(rec['errors'])} problem(s): {rec['errors'][0]}" if rec["errors"] else ""
    return f"{head} " + ", ".join(parts) + f" ({seconds:.1f} s){tail}"


def _check_point_folders(sweep_root: Path, points: list[dict], results_dir: Path) -> None:
    """InputError naming the first path in the way of a point's folders (a file where a folder goes):
    the point's, its staging folder's, and its place under the git-ignored results/failed/."""
    spots = [sweep_root / (p["label"] + sfx) for p in points for sfx in ("", STAGING)]
    for path in [sweep_root, *spots, *(files.failed_path(sweep_root / p["label"], results_dir) for p in points)]:
        if path.exists() and not path.is_dir():
            raise InputError(f"error: {path}: not a folder, but the sweep writes a folder there")


def sweep(widths: Sequence[int] = WIDTHS, batches: Sequence[int] = BATCHES, epochs: int = DEFAULT_EPOCHS,
          paths: str | Sequence[str] | None = None, results_dir: Path = RESULTS_DIR,
          pytorch: bool = True, data_dir: Path = DATA_DIR, train_size: int | None = None, *,
          binary: Path | None = None, pytorch_cmd: Sequence[str] | None = None,
          device: str = "cuda", timeout_s: float = DEFAULT_TIMEOUT_S,
          width_batch: int = WIDTH_SWEEP_BATCH, batch_hidden: int = BATCH_SWEEP_HIDDEN,
          extra_points: Sequence[Sequence[int]] = EXTRA_POINTS,
          variants: str | Sequence[str] | None = None, parity: bool = True,
          report: Path | None = None, precisions: str | Sequence[str] | None = None) -> dict:
    """Run every point and, when some point timed a CUDA path, write results_dir/sweep.json
    (with `report`: also that SWEEP.md and results_dir/plots' three sweep plots, all together);
    returns the sweep's object either way.

    binary: the mlp_train to run (default build/mlp_train; the default paths come from the
    mlp_host beside it); pytorch_cmd: the command prefix of the baseline (default: this Python,
    -m harness.baseline.pytorch_baseline), given --results, --variants, --batch, --data and
    --device; device: the baseline's torch device; timeout_s: the time limit of each subprocess
    of a point; extra_points: (hidden, batch) pairs run after the two sweeps; variants: the
    PyTorch variants (default: the registry's sweep variants); precisions: the precisions of
    the registry's sweep variants to run (default every one; parse_precisions; not with
    `variants`); parity: pass --parity to the binary (its one-epoch float64 check). Each point's folder also gets point.json (its record
    and how it was run), from which collect() rebuilds sweep.json when a sweep was run in parts.
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
    chosen = resolve_variants(variants, precisions)   # checked even with pytorch off
    variant_list = chosen if pytorch else []
    precision_list = (parse_precisions(precisions) if variants is None
                      else sorted({registry.get(v).precision for v in chosen},
                                  key=list(PRECISIONS).index))
    points = sweep_points(widths, batches, width_batch, batch_hidden, extra_points)
    if not points:
        raise InputError("error: no sweep points (empty widths, batches and extra points)")
    path_list, paths_source = resolve_paths(paths, binary.parent)
    pytorch_cmd = list(pytorch_cmd) if pytorch_cmd else [sys.executable, "-m",
                                                         "harness.baseline.pytorch_baseline"]
    sweep_root = results_dir / SWEEP_DIR
    out_path = results_dir / SWEEP_JSON
    plots_dir = results_dir / "plots"
    _check_point_folders(sweep_root, points, results_dir)
    files.check_targets([out_path] + ([Path(report)] + [plots_dir / f for f in sweep_plot_files()]
                                      if report is not None else []))
    roof = load_ceilings(results_dir)
    doc = new_doc(widths, batches, width_batch, batch_hidden, extra_points, epochs, path_list,
                   pytorch, rel(data_dir), train_size, timeout_s,
                   "written by harness/studies/sweep.py; see docs/formats.md",
                   variants=variant_list, parity=bool(parity), paths_source=paths_source,
                   roofline=roof, precisions=precision_list if pytorch else None)
    n = len(points)
    print(f"sweep: {n} point(s), {epochs} epochs each; CUDA paths {','.join(path_list)} "
          f"({paths_source}); PyTorch {','.join(variant_list) or 'not run'}; "
          f"precisions {','.join(precision_list) if pytorch else '—'}; "
          f"float64 parity {'on' if parity else 'off'}; roofline "
          + ("on " + roof["source"] if roof["ceilings"] else f"off ({roof['absent']})"), flush=True)
    for i, point in enumerate(points, 1):
        t0 = time.perf_counter()
        final = sweep_root / point["label"]
        pdir = final.with_name(final.name + STAGING)
        if pdir.exists():
            shutil.rmtree(pdir)        # left by an interrupted sweep
        pdir.mkdir(parents=True)
        point = dict(point, dir=rel(final))
        cmd = [rel(binary), "--data", rel(data_dir), "--out", rel(pdir), "--perf-only",
               *(["--parity"] if parity else []),
               "--paths", ",".join(path_list), "--hidden", str(point["hidden"]),
               "--batch", str(point["batch"]), "--epochs", str(epochs)]
        if train_size is not None:
            cmd += ["--train-size", str(int(train_size))]
        stage = f"[sweep {i}/{n}] {point['label']} -"
        print(f"{stage} mlp_train ({'/'.join(point['sweeps'])} sweep): {len(path_list)} path(s), "
              f"{epochs} epochs{', float64 parity' if parity else ''} ...", flush=True)
        rc, why = _run_logged(cmd, pdir / "mlp_train.log", timeout_s)
        # 0: every path trained; 1 with run.json: a path failed (run.json says which); any
        # other status (1 without run.json included) stopped the binary: its last line says why.
        finished = rc == 0 or (rc == 1 and (pdir / "run.json").is_file())
        binary_error = why or ("" if finished else
                               f"exit status {rc}: {_tail(pdir / 'mlp_train.log')}")
        print(f"{stage} mlp_train: " + (f"exit status {rc}" if not binary_error else binary_error)
              + f" ({time.perf_counter() - t0:.1f} s)", flush=True)
        pytorch_error, tcmd = "", None
        if pytorch:
            if (pdir / "init_params.npy").exists() and (pdir / "order.npy").exists():
                tcmd = [*pytorch_cmd, "--results", rel(pdir),
                        "--variants", ",".join(variant_list),
                        "--batch", str(point["batch"]), "--data", rel(data_dir),
                        "--device", device]
                t1 = time.perf_counter()
                print(f"{stage} PyTorch {','.join(variant_list)} ...", flush=True)
                trc, twhy = _run_logged(tcmd, pdir / "pytorch.log", timeout_s)
                pytorch_error = twhy or ("" if trc == 0 else
                                         f"exit status {trc}: {_tail(pdir / 'pytorch.log')}")
                print(f"{stage} PyTorch: {pytorch_error or 'exit status 0'} "
                      f"({time.perf_counter() - t1:.1f} s)", flush=True)
            else:
                pytorch_error = "not run: mlp_train wrote no init_params.npy / order.npy"
        rec = collect_point(pdir, point, pytorch=pytorch, binary_error=binary_error,
                            pytorch_error=pytorch_error, variants=variant_list,
                            parity=bool(parity), ceilings=roof["ceilings"])
        if rec["best_cuda"] is None:   # the old folder stays; this run's files go to results/failed/
            final = files.failed_path(final, results_dir)
            final.parent.mkdir(parents=True, exist_ok=True)
            rec["dir"] = point["dir"] = rel(final)
        rec["command"] = shlex.join(cmd)
        rec["pytorch_command"] = (shlex.join(["python" if x == sys.executable else x
                                              for x in tcmd]) if tcmd else None)
        rec["exit_code"] = rc
        files.write_json(pdir / POINT_JSON, {
            "schema": 1, "point": point, "binary_error": binary_error,
            "pytorch": pytorch, "pytorch_error": pytorch_error, "parity": bool(parity),
            "command": rec["command"], "pytorch_command": rec["pytorch_command"],
            "exit_code": rc, "commit": doc["commit"], "date_utc": provenance.utc_now(), "driver": doc["driver"],
            "paths_source": paths_source,
            "config": {k: doc["config"][k] for k in POINT_CONFIG_KEYS}})
        files.replace_folder(pdir, final)
        doc["points"].append(rec)
        doc.update(summary(doc["points"]))
        doc["complete"] = i == n
        print(progress_line(i, n, rec, time.perf_counter() - t0), flush=True)
    ok = sum(1 for r in doc["points"] if r["status"] == "ok")
    if not any(r["best_cuda"] is not None for r in doc["points"]):
        print(f"sweep: no point timed a CUDA path: {rel(out_path)} and the report untouched "
              f"(this run's files, git-ignored: {', '.join(r['dir'] + '/' for r in doc['points'])})", flush=True)
        return doc
    outputs = outputs_of(doc, out_path, report, plots_dir)
    files.write_all(outputs)
    print(f"sweep: {ok}/{n} points without a problem; wrote " + ", ".join(rel(p) for p in outputs), flush=True)
    return doc

