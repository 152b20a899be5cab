"""The runs of build/vit_forward behind `invoke transformer.*`, each writing its part into
results/transformer/ (results.py assembles results/transformer.json from the parts):

    check     `vit_forward check` on each GEMM engine (spec/transformer.py ENGINES: fp32, FFMA on the CUDA
              cores; tf32x3, the tensor cores, float32-accurate; bf16, bfloat16 operands summed in float32),
              trained weights and seeded random ones -> check_<kind>_<engine>.json (every check's value,
              limit and verdict, the limits at the engine's precision; exit 1 when one fails)
    time      `vit_forward time` on the engines of each precision, one run per precision (a failing
              engine costs its precision only) -> time_ours.json (fp32's), time_ours_bf16.json
    accuracy  `vit_forward predict` over the test set on each engine -> ours_logits_<engine>.npy; per
              precision (spec/transformer.py PRECISIONS), its headline engine's (headline_engine: the
              faster of that precision's engines that passed their checks) against PyTorch's logits at
              the same precision and weights (torch_time.py's torch_logits.npy, torch_logits_bf16.npy):
              the predictions that differ, each explained by `vit_forward check --explain` on that engine
              (its float64 logits and their rounding bounds at the engine's precision) -> accuracy.json
              (fp32), accuracy_bf16.json
    profile   nsys on `vit_forward profile --batch 1024` on the fp32 headline engine ->
              profile/transformer.nsys-rep and its three CSVs, their kernel rows -> profile.json

Per-precision parts are named by spec/transformer.py precision_path (the fp32 one keeps the name it had
before bf16 existed).

$VIT_FORWARD names another binary (the CPU tests use build/vit_forward_emu).
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from spec import provenance
from spec.files import BUILD_DIR, DATA_DIR, PROFILE_DIR, RESULTS_DIR, ROOT, repo_relative, write_json
from spec.transformer import (CONFIG_PATH, ENGINES, PRECISIONS, TIME_BATCHES, engine_precision, kernel_op, load_config,
                              op_costs, precision_engines, precision_path, shape)

PARTS = RESULTS_DIR / "transformer"
WEIGHTS = PARTS / "weights"
RANDOM_SEED = 31
PROFILE_NAME, PROFILE_RANGE, PROFILE_BATCH = "transformer", "vit-forward", 1024
EXPLAIN_MAX = 64   # differing predictions explained one by one (the rest counted)


def _margin(logits, a: int, b: int) -> float:
    """How far class a's logit is above class b's (negative: below)."""
    return float(logits[a] - logits[b])


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def binary() -> Path:
    return Path(os.environ.get("VIT_FORWARD", BUILD_DIR / "vit_forward"))


def config_path() -> Path:
    """transformer.toml, or $VIT_CONFIG (the CPU tests' smaller test_size)."""
    return Path(os.environ.get("VIT_CONFIG", CONFIG_PATH))


def vit(*args, timeout: float | None = None, env: dict | None = None) -> int:
    """Run the binary from the repository root (its output passes through); its exit status. Paths
    go as repo_relative gives them: the binary records them in its results files (relative to the
    repository, naming no machine)."""
    cmd = [_arg(binary()), *map(_arg, args), "--data", _arg(DATA_DIR), "--config", _arg(config_path())]
    log("+ " + shlex.join(cmd))
    try:
        return subprocess.run(cmd, cwd=ROOT, timeout=timeout, env=env).returncode
    except FileNotFoundError:
        log(f"error: {cmd[0]} not found: run `invoke build` (or make {cmd[0]})")
        return 2
    except subprocess.TimeoutExpired:
        log(f"error: {cmd[0]} {args[0]}: no result after {timeout} s")
        return 124


def _arg(a) -> str:
    """A command-line argument: a path relative to the repository when inside it (files.repo_relative)."""
    return repo_relative(a) if isinstance(a, Path) else str(a)


def weights_args(weights) -> list[str]:
    return ["--random", str(RANDOM_SEED)] if weights == "random" else ["--weights", _arg(Path(weights))]


def check(weights=WEIGHTS, parts=PARTS, layer_batch: int = 32, logits_batch: int = 256, engines=ENGINES) -> int:
    """Every check on each engine, trained weights then random ones -> check_<kind>_<engine>.json; the
    worst exit status."""
    rcs = []
    for engine in engines:
        for kind, w in (("trained", weights), ("random", "random")):
            out = Path(parts) / f"check_{kind}_{engine}.json"
            out.unlink(missing_ok=True)
            rcs.append(vit("check", *weights_args(w), "--gemm", engine, "--layer-batch", layer_batch,
                           "--logits-batch", logits_batch, "--out", out))
            _stamped(out)
    return max(rcs)


def _read(path: Path):
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def _stamped(path: Path) -> None:
    """The binary's JSON at `path` with the commit and date every results file records
    (spec.provenance.stamp) in front; nothing when it wrote none."""
    doc = _read(path)
    if isinstance(doc, dict):
        write_json(path, {**provenance.stamp(), **doc})


def passed_engines(parts=PARTS, engines=ENGINES) -> list[str]:
    """The engines among `engines` whose checks (both kinds of weights) ran and passed."""
    out = []
    for e in engines:
        docs = [_read(Path(parts) / f"check_{k}_{e}.json") for k in ("trained", "random")]
        if all(d is not None and d.get("passed") for d in docs):
            out.append(e)
    return out


def time_part(parts, precision: str) -> Path:
    """The `vit_forward time` file of a precision's engines: time_ours.json at fp32, time_ours_bf16.json."""
    return precision_path(Path(parts) / "time_ours.json", precision)


def headline_engine(parts=PARTS, precision: str = "fp32") -> tuple[str, str]:
    """(engine, why) at `precision`: the faster at batch 1024 (else the largest batch timed) of that
    precision's engines that passed their checks; its first engine (fp32's: FFMA) when none is known
    to have passed."""
    engines = precision_engines(precision)
    ok = passed_engines(parts, engines)
    if not ok:
        return engines[0], f"no {precision} engine's checks are known to have passed: the first of {', '.join(engines)}"
    rows = (_read(time_part(parts, precision)) or {}).get("timing", {}).get("rows", [])
    best = {}
    for r in rows:
        if r.get("engine") in ok:
            best.setdefault(r["batch"], {})[r["engine"]] = min(r["stream"]["median_ms"], r["graph"]["median_ms"])
    if not best:
        return ok[0], f"not timed yet: the first {precision} engine that passed its checks"
    b = 1024 if 1024 in best else max(best)
    engine = min(best[b], key=best[b].get)
    return engine, f"the faster at batch {b} of the {precision} engines that passed their checks ({', '.join(ok)})"


def accuracy(weights=WEIGHTS, parts=PARTS, torch_logits=None, engine: str | None = None, engines=ENGINES) -> int:
    """Per precision of `engines`: its headline engine's test-set predictions (`engine` instead, at its
    precision, when given) against PyTorch's at the same precision and weights (`torch_logits`: the
    fp32 logits file, default parts/torch_logits.npy; the bf16 one beside it by precision_path), the
    precision's other engines' accuracies beside -> accuracy.json (fp32), accuracy_bf16.json. Exit
    status: the worst of the precisions' (accuracy_at's)."""
    parts = Path(parts)
    torch_logits = Path(torch_logits or parts / "torch_logits.npy")
    for p in PRECISIONS:
        for stale in ("accuracy.json", "explain.json"):
            precision_path(parts / stale, p).unlink(missing_ok=True)
    for e in ENGINES:
        for stale in (f"predict_{e}.json", f"ours_logits_{e}.npy"):
            (parts / stale).unlink(missing_ok=True)
    precisions = [engine_precision(engine)] if engine else [p for p in PRECISIONS if precision_engines(p, engines)]
    rcs = [accuracy_at(p, weights, parts, precision_path(torch_logits, p),
                       (engine, "given") if engine else headline_engine(parts, p), engines)
           for p in precisions]
    return max(rcs, default=0)


def accuracy_at(precision: str, weights, parts: Path, torch_logits: Path, headline: tuple[str, str], engines=ENGINES) -> int:
    """One precision's comparison (see accuracy): `headline` = (engine, why). Exit status: a run's, 2 when
    PyTorch's logits of that precision are missing, else 1 when the accuracies differ by more than the
    differing predictions, or one of those is not within the engine's bound."""
    engine, why = headline
    others = {}
    for e in [engine] + [x for x in precision_engines(precision, engines) if x != engine]:
        rc = vit("predict", *weights_args(weights), "--gemm", e, "--out", parts / f"ours_logits_{e}.npy",
                 "--json", parts / f"predict_{e}.json")
        _stamped(parts / f"predict_{e}.json")
        if rc and e == engine:
            return rc
        if not rc and e != engine:
            others[e] = (_read(parts / f"predict_{e}.json") or {}).get("accuracy")
    if not torch_logits.is_file():
        log(f"error: {torch_logits}: PyTorch's {precision} logits not found (run `invoke transformer.time` first)")
        return 2
    from harness.data.dataset import load_dataset
    labels = load_dataset(DATA_DIR)["test_labels"]
    ours, theirs = np.load(parts / f"ours_logits_{engine}.npy"), np.load(torch_logits)
    n = min(len(ours), len(theirs))
    ours, theirs, labels = ours[:n], theirs[:n], labels[:n]
    po, pt = ours.argmax(1), theirs.argmax(1)
    differ = [int(i) for i in np.nonzero(po != pt)[0]]
    cases = []
    if differ:
        explain_out = precision_path(parts / "explain.json", precision)
        shown = differ[:EXPLAIN_MAX]
        vit("check", *weights_args(weights), "--gemm", engine, "--layer-batch", 1, "--logits-batch", 1,
            "--explain", ",".join(map(str, shown)), "--out", explain_out)
        _stamped(explain_out)
        explained = {e["index"]: e for e in (_read(explain_out) or {}).get("explain", [])}
        for i in shown:
            e = explained.get(i)
            a, b = int(po[i]), int(pt[i])           # our class, PyTorch's class
            rec = {"index": i, "label": int(labels[i]), "ours": a, "torch": b,
                   "margin_ours": _margin(ours[i], a, b), "margin_torch": _margin(theirs[i], b, a),
                   "max_logit_gap": float(np.abs(ours[i] - theirs[i]).max())}
            if e is not None:
                ref, bound = np.asarray(e["ref"]), np.asarray(e["bound"])
                rec |= {"ref_margin": _margin(ref, a, b), "bound": float(bound[a] + bound[b]),
                        "within_bound": bool(abs(ref[a] - ref[b]) <= bound[a] + bound[b])}
            cases.append(rec)
    acc_o, acc_t = float((po == labels).mean()), float((pt == labels).mean())
    doc = {**provenance.stamp(), "precision": precision, "engine": engine, "engine_why": why,
           "torch_logits": repo_relative(torch_logits), "other_engines": others, "n": int(n), "ours": acc_o, "torch": acc_t,
           "correct_ours": int((po == labels).sum()), "correct_torch": int((pt == labels).sum()),
           "differ": len(differ), "explained_shown": len(cases),
           "explained_within_bound": sum(1 for c in cases if c.get("within_bound")),
           "max_logit_gap": float(np.abs(ours - theirs).max()), "cases": cases}
    write_json(precision_path(parts / "accuracy.json", precision), doc)
    log(f"accuracy at {precision} ({engine}): ours {100 * acc_o:.2f}%, PyTorch {100 * acc_t:.2f}% on {n} test images; "
        f"predictions differ on {len(differ)} ({doc['explained_within_bound']} of {len(cases)} shown within the "
        f"{engine} engine's bound of the float64 margin); max |logit gap| {doc['max_logit_gap']:.3g}")
    same = abs(doc["correct_ours"] - doc["correct_torch"]) <= len(differ) and \
        doc["explained_within_bound"] == len(cases)
    return 0 if same else 1


def time_ours(weights=WEIGHTS, parts=PARTS, batches=",".join(map(str, TIME_BATCHES)), warmup: int = 5,
              repeats: int = 30, engines=ENGINES) -> int:
    """`vit_forward time` on `engines`, one run per precision (time_part's file each); the worst exit
    status."""
    rcs = []
    for precision in PRECISIONS:
        mine = precision_engines(precision, engines)
        out = time_part(parts, precision)
        out.unlink(missing_ok=True)
        if not mine:
            continue
        rcs.append(vit("time", *weights_args(weights), "--gemm", ",".join(mine), "--batches", batches,
                       "--warmup", warmup, "--repeats", repeats, "--out", out))
        _stamped(out)
    return max(rcs, default=0)


def kernel_rows(kern, batch: int) -> list[dict]:
    """The profile's kernel rows (analysis.nsys_csv frame) with their operation, share and the rates
    their average launch reached (spec/transformer.py op_costs at `batch`)."""
    s = shape(load_config(config_path()))
    costs = op_costs(s)
    total = float(kern["total_ns"].sum())
    rows = []
    for _, r in kern.iterrows():
        op = kernel_op(str(r["name"]))
        c = costs.get(op, {"flop": 0, "bytes": 0})
        avg_s = float(r["avg_ns"]) * 1e-9
        rows.append({"name": str(r["name"]), "op": op, "instances": int(r["instances"]),
                     "total_ns": float(r["total_ns"]), "avg_ns": float(r["avg_ns"]),
                     "share": float(r["total_ns"]) / total if total else None,
                     "tflops": c["flop"] * batch / avg_s / 1e12 if avg_s > 0 else None,
                     "gb_per_s": c["bytes"] * batch / avg_s / 1e9 if avg_s > 0 else None})
    return sorted(rows, key=lambda r: -r["total_ns"])


def profile(weights=WEIGHTS, parts=PARTS, profile_dir=PROFILE_DIR, batch: int = PROFILE_BATCH,
            engine: str | None = None) -> int:
    """nsys of one forward at `batch` (NVTX range vit-forward) on the fp32 headline engine (`engine`
    when given): the report, its three CSVs, profile.json."""
    from harness.profiling import REPORTS, find_nsys, remove_stale
    from analysis.nsys_csv import read_kern_sum
    try:
        nsys = find_nsys()
    except SystemExit as exc:
        log(str(exc))
        return 2
    profile_dir = Path(profile_dir)
    profile_dir.mkdir(parents=True, exist_ok=True)
    remove_stale(PROFILE_NAME, profile_dir)
    (Path(parts) / "profile.json").unlink(missing_ok=True)
    engine, why = (engine, "given") if engine else headline_engine(parts, "fp32")
    with tempfile.TemporaryDirectory(dir=profile_dir, prefix=".transformer-nsys-") as tmp:
        base = Path(tmp) / PROFILE_NAME
        cmd = [nsys, "profile", "--trace", "cuda,nvtx", "--capture-range=nvtx", f"--nvtx-capture={PROFILE_RANGE}",
               "--capture-range-end=stop", "--force-overwrite", "true", "-o", _arg(base), _arg(binary()), "profile",
               *weights_args(weights), "--gemm", engine, "--batch", str(batch), "--data", _arg(DATA_DIR),
               "--config", _arg(config_path())]
        log("+ " + shlex.join(cmd))
        env = dict(os.environ, NSYS_NVTX_PROFILER_REGISTER_ONLY="0")
        rc = subprocess.run(cmd, cwd=ROOT, env=env).returncode
        rep = base.with_name(f"{PROFILE_NAME}.nsys-rep")
        if not rep.is_file():
            log(f"error: nsys profile wrote no {rep.name} (exit status {rc})")
            return rc or 1
        stats = [nsys, "stats", "--force-export=true"] + [x for r in REPORTS for x in ("--report", r)] + \
                ["--format", "csv", "--output", str(base), str(rep)]
        log("+ " + shlex.join(stats))
        if subprocess.run(stats, cwd=ROOT).returncode:
            log("error: nsys stats failed")
            return 1
        moved = {}
        for r in REPORTS:
            src = base.with_name(f"{PROFILE_NAME}_{r}.csv")
            if not src.is_file() or src.stat().st_size == 0:
                log(f"error: nsys stats wrote no {src.name}")
                return 1
            moved[r] = profile_dir / src.name
            os.replace(src, moved[r])
        os.replace(rep, profile_dir / rep.name)
    rows = kernel_rows(read_kern_sum(moved["cuda_gpu_kern_sum"]), batch)
    write_json(Path(parts) / "profile.json", {
        **provenance.stamp(), "batch": batch, "engine": engine, "precision": engine_precision(engine), "engine_why": why, "range": PROFILE_RANGE, "report": f"profile/{PROFILE_NAME}.nsys-rep",
        "csv": {r: f"profile/{moved[r].name}" for r in REPORTS}, "kernels": rows,
        "gpu_ns": sum(r["total_ns"] for r in rows)})
    log(f"profile: {len(rows)} kernel rows, widest {rows[0]['op'] if rows else '-'}")
    return 0


def main(argv=None) -> int:
    """python -m harness.transformer.run check|accuracy|time|profile (the device script's steps)."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m harness.transformer.run", description=main.__doc__)
    ap.add_argument("step", choices=("check", "accuracy", "time", "profile"))
    ap.add_argument("--weights", default=str(WEIGHTS))
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help="the GEMM engines to check, time and compare (profile: the fp32 headline engine's)")
    ap.add_argument("--batches", default=",".join(map(str, TIME_BATCHES)))
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--batch", type=int, default=PROFILE_BATCH)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--layer-batch", type=int, default=32)
    ap.add_argument("--logits-batch", type=int, default=256)
    a = ap.parse_args(argv)
    engines = tuple(e for e in a.engines.split(",") if e)
    bad = [e for e in engines if e not in ENGINES]
    if bad or not engines:
        log(f"error: --engines {a.engines!r}: want a comma-separated subset of {','.join(ENGINES)}")
        return 2
    w = a.weights if a.weights == "random" else Path(a.weights)
    if a.step == "check":
        return check(w, layer_batch=a.layer_batch, logits_batch=a.logits_batch, engines=engines)
    if a.step == "accuracy":
        return accuracy(w, engines=engines)
    if a.step == "time":
        return time_ours(w, batches=a.batches, warmup=a.warmup, repeats=a.repeats, engines=engines)
    return profile(w, batch=a.batch)


if __name__ == "__main__":
    raise SystemExit(main())
