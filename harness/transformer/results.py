"""results/transformer.json from the parts in results/transformer/ (run.py, torch_time.py, train.py):
the model, the weights, every check of every engine (value, limit at the engine's precision,
verdict), the accuracies per precision, the timing table per precision against PyTorch's variants of
the same precision (ratios to the fastest, images/s, the share of the FP32 rate; PyTorch at TF32 as
reference rows), the profile's kernel rows and the provenance. A part that is absent leaves its
section null (the report says "not measured yet"). docs/formats.md describes the file.

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
from spec.transformer import (CONFIG_PATH, ENGINES, PRECISIONS, REFERENCE_PRECISIONS, TORCH_FAMILIES, engine_precision,
                              forward_flop, layout_table, load_config, n_params, precision_engines, precision_name,
                              precision_path, shape, torch_key_precision)

PARTS = RESULTS_DIR / "transformer"
OUT = RESULTS_DIR / "transformer.json"
GOAL, ACCEPTANCE = 0.5, 0.7   # our forward's time over PyTorch's fastest variant's of the same precision (issue 31)


def _load(path: Path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _checks(doc) -> dict | None:
    if doc is None:
        return None
    out = {k: doc.get(k) for k in ("weights", "gpu", "layer_batch", "logits_batch", "u", "u_operands", "passed",
                                   "checks", "argmax_agree", "argmax_n", "reference_seconds")}
    return out | {"precision": doc.get("precision") or "fp32"}   # the binary's; a file from before bf16: fp32


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


def _ours_stats(o: list, b: int, flop, fp32, passed) -> dict:
    """Our record at one (precision, batch) from the `vit_forward time` rows of that precision's engines:
    every <engine>-stream / <engine>-graph variant, the best of the engines that passed (`passed`; None:
    all count; none passed: all, and `engine_passed` says so)."""
    variants = {f"{e.get('engine', 'fp32')}-{how}": _stats(e[how]) for e in o for how in ("stream", "graph")}
    eligible = [k for k in variants if passed is None or k.rsplit("-", 1)[0] in passed] or list(variants)
    best = min(eligible, key=lambda k: variants[k]["median_ms"])
    med = variants[best]["median_ms"]
    engine = best.rsplit("-", 1)[0]
    ours = {"variants": variants, "best": best, "engine": engine, "eligible": eligible,
            "engine_passed": None if passed is None else engine in passed, "median_ms": med,
            "images_per_s": b / (med / 1e3), "tflops": flop * b / (med / 1e3) / 1e12 if flop else None}
    if fp32 and ours["tflops"] is not None:
        ours["fp32_share"] = ours["tflops"] / fp32
    return ours


def timing(ours, torch: dict | None, ceilings: dict | None, passed: list[str] | None = None) -> dict | None:
    """The table: a row per (precision, batch), fp32's then bf16's then the reference precisions' (tf32).
    At fp32 and bf16: our variants of that precision's engines (<engine>-stream, <engine>-graph), ours the
    fastest of those that passed their checks (`passed`; None: all count), and PyTorch's variants of the
    same precision (spec/transformer.py torch_key_precision), the ratio to the fastest of them judged
    against the goal and the acceptance. At tf32: PyTorch's variants alone. `ours`: the `vit_forward time`
    documents (one per precision's run; a single one or None taken too)."""
    docs = [d for d in (ours if isinstance(ours, list) else [ours]) if d]
    if not docs and torch is None:
        return None
    fp32 = ((ceilings or {}).get("fp32_matmul") or {}).get("tflops")
    flop = next((d.get("timing", {}).get("flop_per_image") for d in docs if d.get("timing", {}).get("flop_per_image")),
                None) or (torch or {}).get("flop_per_image")
    ours_rows: dict[tuple[str, int], list] = {}
    for d in docs:
        for r in d.get("timing", {}).get("rows", []):
            ours_rows.setdefault((engine_precision(r.get("engine", "fp32")), r["batch"]), []).append(r)
    torch_rows: dict[tuple[str, int], dict] = {}
    for r in (torch or {}).get("rows", []):
        for key, rec in r["variants"].items():
            torch_rows.setdefault((torch_key_precision(key), r["batch"]), {})[key] = rec
    rows = []
    for precision in PRECISIONS + REFERENCE_PRECISIONS:
        batches = sorted({b for p, b in set(ours_rows) | set(torch_rows) if p == precision})
        for b in batches:
            o, t = ours_rows.get((precision, b)), torch_rows.get((precision, b))
            row = {"precision": precision, "batch": b, "ours": None, "torch": {}, "fastest_torch": None, "ratio": None,
                   "goal_met": None, "acceptance_met": None,
                   "tiles": "; ".join(e["tiles"] for e in o if e.get("tiles")) if o else None,
                   "tile_mismatches": sum(e.get("tile_mismatches") or 0 for e in o) if o else None}
            if o:
                row["ours"] = _ours_stats(o, b, flop, fp32, passed)
            if t is not None:
                row["torch"] = {k: _stats(v) for k, v in t.items()}
                ok = {k: v["median_ms"] for k, v in row["torch"].items() if v and "median_ms" in v}
                if ok:
                    name = min(ok, key=ok.get)
                    row["fastest_torch"] = {"name": name, "median_ms": ok[name], "images_per_s": b / (ok[name] / 1e3),
                                            "tflops": flop * b / (ok[name] / 1e3) / 1e12 if flop else None}
            if row["ours"] and row["fastest_torch"]:
                row["ratio"] = row["ours"]["median_ms"] / row["fastest_torch"]["median_ms"]
                row["goal_met"], row["acceptance_met"] = row["ratio"] <= GOAL, row["ratio"] <= ACCEPTANCE
            rows.append(row)
    first = docs[0].get("timing", {}) if docs else {}
    timed = {torch_key_precision(k) for r in (torch or {}).get("rows", []) for k in r["variants"]}
    return {"goal": GOAL, "acceptance": ACCEPTANCE, "fp32_tflops": fp32,
            "fp32_source": "results/ceilings.json fp32_matmul (cuBLAS SGEMM, TF32 off)" if fp32 else None,
            "flop_per_image": flop, "ours_method": "CUDA events around each forward; 'stream' launches the "
            "kernels one by one, 'graph' replays a CUDA graph of the same launches; fp32 runs the GEMMs as FFMA "
            "on the CUDA cores, tf32x3 on the tensor cores (float32-accurate), bf16 on the tensor cores with "
            "bfloat16 operands summed in float32; at each precision ours is the fastest variant of that "
            "precision's engines that passed their checks, against PyTorch's fastest of the same precision",
            "engines_passed": passed,
            "precisions": {p: {"engines": list(precision_engines(p)), "compared": True,
                               "engines_passed": None if passed is None else [e for e in passed if engine_precision(e) == p],
                               "torch_families": [f for f, fp in TORCH_FAMILIES.items() if fp == p],
                               "torch_timed": p in timed} for p in PRECISIONS}
            | {p: {"engines": [], "compared": False, "engines_passed": None,
                   "torch_families": [f for f, fp in TORCH_FAMILIES.items() if fp == p], "torch_timed": p in timed}
               for p in REFERENCE_PRECISIONS},
            "warmup": first.get("warmup"), "repeats": first.get("repeats"),
            "torch_version": (torch or {}).get("torch_version"), "torch_tf32": (torch or {}).get("tf32"),
            "torch_families": (torch or {}).get("families"), "torch_cut": (torch or {}).get("cut"),
            "compile_modes": (torch or {}).get("compile_modes"), "rows": rows}


def assemble(parts=PARTS, out=OUT, ceilings_path=RESULTS_DIR / "ceilings.json", config_path=CONFIG_PATH) -> dict:
    parts = Path(parts)
    config = load_config(config_path)
    s = shape(config)
    manifest = _load(parts / "weights" / "manifest.json")
    checks = {e: {k: _checks(_load(parts / f"check_{k}_{e}.json")) for k in ("trained", "random")} for e in ENGINES}
    checks = {e: c for e, c in checks.items() if any(v is not None for v in c.values())}
    passed = [e for e, c in checks.items() if all(v is not None and v["passed"] for v in c.values())]
    torch = _load(parts / "torch_time.json")
    ours_t = [_load(precision_path(parts / "time_ours.json", p)) for p in PRECISIONS]
    ceil = _load(ceilings_path) or {}
    gpu = next((d.get("gpu") for d in [c for e in checks.values() for c in e.values()] + ours_t + [torch]
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
        "precisions": list(PRECISIONS),
        "checks": checks or None, "checks_passed": all(verdicts) if verdicts else None,
        "engines_passed": passed if checks else None,
        **{precision_name("accuracy", p): _load(precision_path(parts / "accuracy.json", p)) for p in PRECISIONS},
        "torch_accuracy": (torch or {}).get("test_accuracy"),
        "torch_accuracy_bf16": (torch or {}).get("test_accuracy_bf16"),
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
    """A few lines for the device command's output tail: checks per engine, accuracy per precision, the
    timing table per precision (a file from before bf16: its fp32 rows, bf16 not measured)."""
    lines = [f"transformer: commit {doc['commit']} on {doc['gpu'] or 'no GPU'}"]
    for engine, kinds in (doc.get("checks") or {e: {} for e in ENGINES}).items():
        for kind in ("trained", "random"):
            c = kinds.get(kind)
            if c is None:
                lines.append(f"  checks ({engine}, {kind}): not run")
                continue
            bad = [f"{r['name']}/{r['measure']} {_g(r['value'])}>{_g(r['limit'])}" for r in c["checks"] if not r["passed"]]
            worst = max(c["checks"], key=_share)
            lines.append(f"  checks ({engine}, {kind}): {sum(r['passed'] for r in c['checks'])}/{len(c['checks'])} pass "
                         f"at {c.get('precision') or 'fp32'}; "
                         f"tightest {worst['name']}/{worst['measure']} at {_share(worst):.2f} of its limit"
                         + (f"; FAIL: {', '.join(bad[:4])}{' ...' if len(bad) > 4 else ''}" if bad else ""))
    for p in PRECISIONS:
        a = doc.get(precision_name("accuracy", p))
        lines.append(f"  accuracy ({p}): ours {100 * a['ours']:.2f}%  PyTorch {100 * a['torch']:.2f}%  differ {a['differ']}"
                     f" ({a['explained_within_bound']}/{a['explained_shown']} within bound) on {a.get('engine')}"
                     if a else f"  accuracy ({p}): not measured")
    t = doc.get("timing")
    if t:
        lines.append(f"  {'prec':>4} {'batch':>6} {'ours ms':>9} {'(how)':>13} {'torch ms':>9} {'fastest torch':>30} "
                     f"{'ratio':>6} {'img/s':>9} {'FP32%':>6}")
        for r in t["rows"]:
            o, f = r["ours"] or {}, r["fastest_torch"] or {}
            share = o.get("fp32_share")
            lines.append(f"  {r.get('precision', 'fp32'):>4} {r['batch']:>6} {_f(o.get('median_ms'), 9, 4)} "
                         f"{o.get('best') or '-':>13} {_f(f.get('median_ms'), 9, 4)} {f.get('name') or '-':>30} "
                         f"{_f(r['ratio'], 6, 3)} {_f(o.get('images_per_s'), 9, 0)} "
                         f"{_f(None if share is None else 100 * share, 6, 1)}")
        timed = {r.get("precision", "fp32") for r in t["rows"] if r.get("ours")}
        lines += [f"  timing ({p}): ours not measured" for p in PRECISIONS if p not in timed]
        for r in t["rows"]:
            v = (r["ours"] or {}).get("variants") or {}
            if v:
                lines.append(f"  ours at {r.get('precision', 'fp32')} {r['batch']}: " + ", ".join(
                    f"{k} {x['median_ms']:.4f}" for k, x in v.items() if x and x.get("median_ms") is not None))
        if t.get("torch_cut"):
            lines.append(f"  PyTorch runs cut by its deadline: {len(t['torch_cut'])}")
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
