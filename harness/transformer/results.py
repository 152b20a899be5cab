"""results/transformer.json from the parts in results/transformer/ (run.py, torch_time.py, train.py):
the model, the weights, every check (value, limit, verdict), the accuracies, the timing table
against every PyTorch variant (ratios to the fastest, images/s, the share of the FP32 rate), the
profile's kernel rows and the provenance. A part that is absent leaves its section null (the report
says "not measured yet"). docs/formats.md describes the file.

    python -m harness.transformer.results [--summary]   assemble (and print the compact summary)
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path

from spec import provenance
from spec.files import RESULTS_DIR, write_json
from spec.transformer import CONFIG_PATH, forward_flop, layout_table, load_config, n_params, shape

PARTS = RESULTS_DIR / "transformer"
OUT = RESULTS_DIR / "transformer.json"
GOAL, ACCEPTANCE = 0.5, 0.7   # our forward's time over PyTorch's fastest variant's (issue 31)


def _load(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _checks(doc) -> dict | None:
    if doc is None:
        return None
    return {k: doc.get(k) for k in ("weights", "gpu", "layer_batch", "logits_batch", "u", "passed", "checks",
                                    "argmax_agree", "argmax_n", "reference_seconds")}


def _stats(rec: dict | None) -> dict | None:
    """{median_ms, cv_pct, min_ms, max_ms, repeats} of a timing record (ours or PyTorch's), or
    {"error"}; None when absent."""
    if rec is None:
        return None
    if rec.get("error"):
        return {"error": rec["error"]}
    med = rec.get("median_ms", rec.get("median"))
    return {"median_ms": med, "cv_pct": rec.get("cv_pct"), "min_ms": rec.get("min_ms", rec.get("min")),
            "max_ms": rec.get("max_ms", rec.get("max")), "repeats": len(rec.get("times_ms") or []),
            **({"setup_s": rec["setup_s"]} if "setup_s" in rec else {})}


def timing(ours: dict | None, torch: dict | None, ceilings: dict | None, passed: list[str] | None = None) -> dict | None:
    """The table: per batch our variants (<engine>-stream, <engine>-graph) and PyTorch's, ours the fastest
    of the engines that passed their checks (`passed`; None: all count), the ratio to PyTorch's fastest."""
    if ours is None and torch is None:
        return None
    fp32 = ((ceilings or {}).get("fp32_matmul") or {}).get("tflops")
    flop = (ours or {}).get("timing", {}).get("flop_per_image") or (torch or {}).get("flop_per_image")
    ours_rows: dict[int, list] = {}
    for r in (ours or {}).get("timing", {}).get("rows", []):
        ours_rows.setdefault(r["batch"], []).append(r)
    torch_rows = {r["batch"]: r for r in (torch or {}).get("rows", [])}
    rows = []
    for b in sorted(set(ours_rows) | set(torch_rows)):
        o, t = ours_rows.get(b), torch_rows.get(b)
        row = {"batch": b, "ours": None, "torch": {}, "fastest_torch": None, "ratio": None,
               "goal_met": None, "acceptance_met": None,
               "tiles": "; ".join(e["tiles"] for e in o if e.get("tiles")) if o else None,
               "tile_mismatches": sum(e.get("tile_mismatches") or 0 for e in o) if o else None}
        if o:
            variants = {f"{e.get('engine', 'fp32')}-{how}": _stats(e[how]) for e in o for how in ("stream", "graph")}
            eligible = [k for k in variants if passed is None or k.rsplit("-", 1)[0] in passed] or list(variants)
            best = min(eligible, key=lambda k: variants[k]["median_ms"])
            med = variants[best]["median_ms"]
            row["ours"] = {"variants": variants, "best": best, "engine": best.rsplit("-", 1)[0],
                           "eligible": eligible, "median_ms": med,
                           "images_per_s": b / (med / 1e3), "tflops": flop * b / (med / 1e3) / 1e12 if flop else None}
            if fp32 and row["ours"]["tflops"] is not None:
                row["ours"]["fp32_share"] = row["ours"]["tflops"] / fp32
        if t is not None:
            row["torch"] = {k: _stats(v) for k, v in t["variants"].items()}
            ok = {k: v["median_ms"] for k, v in row["torch"].items() if v and "median_ms" in v}
            if ok:
                name = min(ok, key=ok.get)
                row["fastest_torch"] = {"name": name, "median_ms": ok[name], "images_per_s": b / (ok[name] / 1e3),
                                        "tflops": flop * b / (ok[name] / 1e3) / 1e12 if flop else None}
        if row["ours"] and row["fastest_torch"]:
            row["ratio"] = row["ours"]["median_ms"] / row["fastest_torch"]["median_ms"]
            row["goal_met"], row["acceptance_met"] = row["ratio"] <= GOAL, row["ratio"] <= ACCEPTANCE
        rows.append(row)
    return {"goal": GOAL, "acceptance": ACCEPTANCE, "fp32_tflops": fp32,
            "fp32_source": "results/ceilings.json fp32_matmul (cuBLAS SGEMM, TF32 off)" if fp32 else None,
            "flop_per_image": flop, "ours_method": "CUDA events around each forward; 'stream' launches the "
            "kernels one by one, 'graph' replays a CUDA graph of the same launches; fp32 runs the GEMMs as FFMA "
            "on the CUDA cores, tf32x3 on the tensor cores (float32-accurate); ours is the fastest variant of "
            "the engines that passed their checks",
            "engines_passed": passed,
            "warmup": (ours or {}).get("timing", {}).get("warmup"), "repeats": (ours or {}).get("timing", {}).get("repeats"),
            "torch_version": (torch or {}).get("torch_version"), "torch_tf32": (torch or {}).get("tf32"),
            "compile_modes": (torch or {}).get("compile_modes"), "rows": rows}


def assemble(parts=PARTS, out=OUT, ceilings_path=RESULTS_DIR / "ceilings.json", config_path=CONFIG_PATH) -> dict:
    parts = Path(parts)
    config = load_config(config_path)
    s = shape(config)
    manifest = _load(parts / "weights" / "manifest.json")
    engines = ("fp32", "tf32x3")
    checks = {e: {k: _checks(_load(parts / f"check_{k}_{e}.json")) for k in ("trained", "random")} for e in engines}
    checks = {e: c for e, c in checks.items() if any(v is not None for v in c.values())}
    passed = [e for e, c in checks.items() if all(v is not None and v["passed"] for v in c.values())]
    torch = _load(parts / "torch_time.json")
    ours_t = _load(parts / "time_ours.json")
    ceil = _load(ceilings_path) or {}
    gpu = next((d.get("gpu") for d in [c for e in checks.values() for c in e.values()] + [ours_t, torch]
                if d and d.get("gpu")), None)
    verdicts = [c["passed"] for e in checks.values() for c in e.values() if c is not None]
    doc = {
        "schema": 1, "commit": provenance.git_commit(),
        "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "gpu": gpu, "driver": provenance.driver_version(), "config": config,
        "model": {"tokens": s.tokens, "patch_dim": s.patch_dim, "d_model": s.d, "heads": s.heads,
                  "head_dim": s.head_dim, "mlp_dim": s.mlp, "layers": s.layers, "classes": s.classes,
                  "ln_eps": s.eps, "gelu": config["gelu"], "pool": config["pool"], "n_params": n_params(s),
                  "tensors": len(layout_table(s)), "flop_per_image": forward_flop(s)},
        "weights": None if manifest is None else {"path": "results/transformer/weights",
                                                  "sha256": manifest["files"][0]["sha256"],
                                                  "origin": manifest.get("origin")},
        "checks": checks or None, "checks_passed": all(verdicts) if verdicts else None,
        "engines_passed": passed if checks else None,
        "accuracy": _load(parts / "accuracy.json"),
        "torch_accuracy": (torch or {}).get("test_accuracy"),
        "timing": timing(ours_t, torch, ceil, passed if checks else None),
        "ceilings": {"fp32_tflops": (ceil.get("fp32_matmul") or {}).get("tflops"),
                     "copy_gb_per_s": (ceil.get("copy") or {}).get("gb_per_s"),
                     "source": "results/ceilings.json" if ceil else None, "gpu": ceil.get("gpu")},
        "profile": _load(parts / "profile.json"),
        "steps": _load(parts / "steps.json"),
    }
    write_json(out, doc)
    return doc


def _f(x, width: int, digits: int) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:>{width}.{digits}f}"


def _g(x) -> str:
    return "nan" if x is None else f"{x:.3g}"


def _share(r: dict) -> float:
    if r.get("value") is None:
        return float("inf")
    return r["value"] / r["limit"] if r.get("limit") else 0.0


def summary(doc: dict) -> str:
    """A few lines for the device command's output tail: checks, accuracy, the timing table."""
    lines = [f"transformer: commit {doc['commit']} on {doc['gpu'] or 'no GPU'}"]
    for engine, kinds in (doc.get("checks") or {"fp32": {}, "tf32x3": {}}).items():
        for kind in ("trained", "random"):
            c = kinds.get(kind)
            if c is None:
                lines.append(f"  checks ({engine}, {kind}): not run")
                continue
            bad = [f"{r['name']}/{r['measure']} {_g(r['value'])}>{_g(r['limit'])}" for r in c["checks"] if not r["passed"]]
            worst = max(c["checks"], key=_share)
            lines.append(f"  checks ({engine}, {kind}): {sum(r['passed'] for r in c['checks'])}/{len(c['checks'])} pass; "
                         f"tightest {worst['name']}/{worst['measure']} at {_share(worst):.2f} of its limit"
                         + (f"; FAIL: {', '.join(bad[:4])}{' ...' if len(bad) > 4 else ''}" if bad else ""))
    a = doc.get("accuracy")
    lines.append(f"  accuracy ({a.get('engine')}): ours {100 * a['ours']:.2f}%  PyTorch {100 * a['torch']:.2f}%  differ {a['differ']}"
                 f" ({a['explained_within_bound']}/{a['explained_shown']} within bound)" if a else "  accuracy: not measured")
    t = doc.get("timing")
    if t:
        lines.append(f"  {'batch':>6} {'ours ms':>9} {'(how)':>13} {'torch ms':>9} {'fastest torch':>26} {'ratio':>6} "
                     f"{'img/s':>9} {'FP32%':>6}")
        for r in t["rows"]:
            o, f = r["ours"] or {}, r["fastest_torch"] or {}
            share = o.get("fp32_share")
            lines.append(f"  {r['batch']:>6} {_f(o.get('median_ms'), 9, 4)} {o.get('best') or '-':>13} "
                         f"{_f(f.get('median_ms'), 9, 4)} {f.get('name') or '-':>26} {_f(r['ratio'], 6, 3)} "
                         f"{_f(o.get('images_per_s'), 9, 0)} {_f(None if share is None else 100 * share, 6, 1)}")
        for r in t["rows"]:
            v = (r["ours"] or {}).get("variants") or {}
            lines.append(f"  ours at {r['batch']}: " + ", ".join(
                f"{k} {x['median_ms']:.4f}" for k, x in v.items() if x and x.get("median_ms") is not None))
    else:
        lines.append("  timing: not measured")
    p = doc.get("profile")
    if p and p.get("kernels"):
        k = p["kernels"][0]
        lines.append(f"  profile (batch {p['batch']}, {p.get('engine')}): widest {k['op']} {100 * (k['share'] or 0):.1f}% "
                     f"({k['avg_ns'] / 1e3:.1f} us avg, {k['tflops'] or 0:.1f} TFLOP/s, {k['gb_per_s'] or 0:.0f} GB/s); "
                     + ", ".join(f"{x['op']} {100 * (x['share'] or 0):.0f}%" for x in p["kernels"][1:6]))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", action="store_true", help="also print the compact summary")
    a = ap.parse_args(argv)
    doc = assemble()
    print(f"wrote {OUT}", file=sys.stderr)
    if a.summary:
        print(summary(doc))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
