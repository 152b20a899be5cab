"""sweep.json as a whole (harness/studies/sweep.py): its head (config, provenance, roofline), its
summary, the outputs written together with it (SWEEP.md and its plots), and collect(), which
rebuilds it from the point folders already under results/sweep/ without running anything."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from harness.baseline import registry
from harness.studies.sweep_plan import (BATCH_SWEEP_HIDDEN, BATCHES, COST_IMAGES, EXTRA_POINTS,
                                        LABEL_RE, POINT_CONFIG_KEYS, POINT_JSON, SWEEP_DIR,
                                        SWEEP_JSON, WIDTH_SWEEP_BATCH, WIDTHS, rel, sweep_points)
from harness.studies.sweep_point import collect_point, load_ceilings, read_json
from spec import files, provenance
from spec.files import RESULTS_DIR, TEMPLATES_DIR
from spec.layout import DATA_NOTE, FLOAT_BYTES, GRADIENT_NOTE, LABEL_BYTES
from spec.recipe import load_recipe


def summary(records: list[dict]) -> dict:
    """GPU, date and versions from the first point that has them."""
    first = next((r for r in records if r.get("gpu")), {})
    torch_first = next((r for r in records if r.get("torch_version")), {})
    return {"date_utc": first.get("date_utc"), "gpu": first.get("gpu"),
            "torch_version": torch_first.get("torch_version"),
            "torch_cuda_version": torch_first.get("torch_cuda_version")}


def new_doc(widths, batches, width_batch, batch_hidden, extra_points, epochs, paths, pytorch,
             data_dir, train_size, timeout_s, note: str, *, variants=None, parity=None,
             paths_source=None, roofline=None, precisions=None) -> dict:
    recipe = load_recipe()
    return {
        "schema": 1,
        "note": note,
        "date_utc": None, "gpu": None, "torch_version": None, "torch_cuda_version": None,
        "commit": provenance.git_commit(), "driver": provenance.driver_version(),
        "config": {
            "widths": [int(w) for w in widths], "batches": [int(b) for b in batches],
            "width_sweep_batch": int(width_batch), "batch_sweep_hidden": int(batch_hidden),
            "extra_points": [[int(h), int(b)] for h, b in extra_points],
            "epochs": epochs, "paths": list(paths) if paths is not None else None,
            "paths_source": paths_source,
            "pytorch_variants": (list(variants) if variants is not None
                                 else registry.sweep_names()) if pytorch else [],
            "parity": parity,
            "precisions": list(precisions) if precisions is not None else None,
            "data_dir": data_dir, "train_size": train_size,
            "input_dim": recipe["input_dim"], "output_dim": recipe["output_dim"],
            "lr": recipe["lr"], "momentum": recipe["momentum"],
            "float_bytes": FLOAT_BYTES, "label_bytes": LABEL_BYTES,
            "cost_images": COST_IMAGES, "timeout_s": timeout_s,
        },
        "notes": {"gradients": GRADIENT_NOTE, "data": DATA_NOTE},
        "roofline": roofline,
        "points": [],
        "complete": False,
    }


def outputs_of(doc: dict, out_path: Path, report: Path | None, plots_dir: Path) -> dict:
    """{path: content} of sweep.json and, with `report`, SWEEP.md and its three plots."""
    outputs = {out_path: json.dumps(doc, indent=2) + "\n"}
    if report is not None:
        from analysis import render as renderer
        outputs |= renderer.render_sweep(doc, out_path, Path(report), plots_dir, TEMPLATES_DIR)
    return outputs


def sweep_plot_files() -> list[str]:
    from analysis.render import SWEEP_PLOT_FILES
    return list(SWEEP_PLOT_FILES.values())


def stray_folders(results_dir: Path, points: list[dict]) -> list[str]:
    """The point folders (h<W>_b<B>, not .new or .failed) under results_dir/sweep/ that are not
    among `points`: collect() leaves them out and says so."""
    root = Path(results_dir) / SWEEP_DIR
    wanted = {p["label"] for p in points}
    if not root.is_dir():
        return []
    return sorted((d.name for d in root.iterdir() if d.is_dir() and LABEL_RE.match(d.name)
                   and d.name not in wanted),
                  key=lambda s: tuple(int(x) for x in LABEL_RE.match(s).groups()))


def collect(results_dir: Path = RESULTS_DIR, widths: Sequence[int] = WIDTHS,
            batches: Sequence[int] = BATCHES, pytorch: bool = True, write: bool = True,
            width_batch: int = WIDTH_SWEEP_BATCH, batch_hidden: int = BATCH_SWEEP_HIDDEN,
            extra_points: Sequence[Sequence[int]] = EXTRA_POINTS,
            report: Path | None = None) -> dict:
    """Rebuild sweep.json from the point folders already in results_dir/sweep/, running
    nothing: for a sweep run in parts (`--widths 64,128 --batches none --points none`, then the
    rest), or to re-collect after a change here. A point's point.json (written by sweep())
    supplies how it was run and what stopped it; a point without its folder is recorded as
    failed ("not run"); a folder that is none of the points is left out (folders_not_collected).
    With write, sweep.json is written (with `report`, SWEEP.md and its plots too, all together)."""
    results_dir = Path(results_dir)
    points = sweep_points(widths, batches, width_batch, batch_hidden, extra_points)
    roof = load_ceilings(results_dir)
    doc = new_doc(widths, batches, width_batch, batch_hidden, extra_points, None, None, pytorch,
                   None, None, None,
                   "collected by harness/studies/sweep.py (--collect-only) from results/sweep/*/",
                   roofline=roof)
    config_seen = False
    for point in points:
        pdir = results_dir / SWEEP_DIR / point["label"]
        point = dict(point, dir=rel(pdir))
        saved, _ = read_json(pdir / POINT_JSON)
        saved = saved or {}
        cfg = saved.get("config") or {}
        variants = cfg.get("pytorch_variants")
        kw = {"variants": variants if isinstance(variants, list) else None,
              "parity": bool(saved.get("parity", cfg.get("parity", False))),
              "ceilings": roof["ceilings"]}
        if not pdir.is_dir():
            rec = collect_point(pdir, point, pytorch=pytorch, binary_error="not run", **kw)
        else:
            rec = collect_point(pdir, point, pytorch=saved.get("pytorch", pytorch),
                                binary_error=saved.get("binary_error", ""),
                                pytorch_error=saved.get("pytorch_error", ""), **kw)
        rec["command"] = saved.get("command")
        rec["pytorch_command"] = saved.get("pytorch_command")
        rec["exit_code"] = saved.get("exit_code")
        rec["commit"] = saved.get("commit")   # the binary's commit at this point (point.json)
        if cfg:
            if not config_seen:
                doc["config"].update({k: cfg.get(k) for k in POINT_CONFIG_KEYS})
                doc["config"]["paths_source"] = saved.get("paths_source")
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
    doc.update(summary(doc["points"]))
    doc["complete"] = all((results_dir / SWEEP_DIR / p["label"]).is_dir() for p in points)
    doc["folders_not_collected"] = stray_folders(results_dir, points)
    # Points re-run at a later commit than the sweep's: {commit: [labels]} of every commit but
    # doc["commit"] (empty when every point is of that commit).
    later: dict[str, list[str]] = {}
    for r in doc["points"]:
        if r.get("commit") and r["commit"] != doc["commit"]:
            later.setdefault(r["commit"], []).append(r["label"])
    doc["points_of_other_commits"] = later
    if write:
        out_path = results_dir / SWEEP_JSON
        plots_dir = results_dir / "plots"
        if report is not None:
            files.check_targets([out_path, Path(report)]
                                + [plots_dir / f for f in sweep_plot_files()])
        files.write_all(outputs_of(doc, out_path, report, plots_dir))
    return doc
