"""Issue 38's GEMM benchmark: our GEMM kernels (build/gemm_bench: the tiled path's SIMT fp32 and
mma.sync tf32/bf16 GEMMs on the plans the path runs) against cuBLAS (torch.matmul,
harness/studies/gemm_torch.py) at every shape of harness/studies/gemm_shapes.py -> results/gemm.json.

    python -m harness.studies.gemm_bench [--precisions fp32,tf32,bf16] [--layouts nn,tn,nt]
        [--shapes MxNxK:LAYOUT,...] [--repeats 30] [--warmup 5] [--seed 20260829] [--no-cublas]
        [--timeout 600] [--ceilings results/ceilings.json] [--out results/gemm.json] [--list]

Each side runs in processes of its own, one per layout (build/gemm_bench takes one layout a call),
ours first, never both sides in one process: `build/gemm_bench --shapes ... --layout L` and
`python -m harness.studies.gemm_torch` with the same arguments, each writing its side's file
(spec/schema.py GEMM_SIDE) into a temporary folder. The rows are then joined by (M, N, K, layout,
precision): ours and cuBLAS's TFLOP/s (2·M·N·K over the median of `repeats` event-timed launches),
ours as a percentage of cuBLAS's, and each as a percentage of the measured ceiling of its precision
(results/ceilings.json: fp32_matmul, tf32_matmul, bf16_matmul, `invoke ceilings`), with ours' plan and
spot-check verdict. Ours runs the tiled path's epilogues (nn: bias + ReLU, tn: the momentum update),
cuBLAS the plain product; cuBLAS's bf16 reads bfloat16 operands where ours reads float32 (docs/formats.md).

results/gemm.json and each side's output (results/gemm/<side>_<layout>.log) are written together, all
or none, with the commit and date (spec/provenance.py), when some row of ours was measured; when none
was (no GPU, no binary output), only the logs, into results/gemm.failed/. Exit status: 0 every side
exited 0 and every check of ours passed; 1 written, but a side failed or a check did not pass; 2 bad
input; 3 nothing of ours measured. $GEMM_BENCH names another binary and $GEMM_TORCH another Python
file for the cuBLAS side (the CPU tests' fakes, tests/fakes/gemm_side.py).
NOT YET RUN ON A GPU: written and tested with fakes on a CPU machine (issue 38's groundwork).
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

from harness.studies import gemm_shapes
from harness.studies.gemm_torch import DEFAULT_SEED, precision_list
from spec import files, provenance, schema, validate
from spec.files import BUILD_DIR, RESULTS_DIR, ROOT, InputError

OUT = RESULTS_DIR / "gemm.json"
CEILINGS = RESULTS_DIR / "ceilings.json"
CEILING_KEYS = {"fp32": "fp32_matmul", "tf32": "tf32_matmul", "bf16": "bf16_matmul"}
TAIL_LINES = 20
MEASURED = ("ok", "failed")   # a side row with a time (failed: its check did not pass)


def binary() -> Path:
    return Path(os.environ.get("GEMM_BENCH", BUILD_DIR / "gemm_bench"))


def torch_argv() -> list[str]:
    fake = os.environ.get("GEMM_TORCH")
    return [sys.executable, fake] if fake else [sys.executable, "-m", "harness.studies.gemm_torch"]


def side_argv(prefix: Sequence[str], rows: Sequence[dict], layout: str, precisions: Sequence[str], repeats: int,
              warmup: int, seed: int, out: Path) -> list[str]:
    """One side's command for one layout (the same arguments for both sides)."""
    return [*map(str, prefix), "--shapes", gemm_shapes.shapes_arg(rows), "--layout", layout,
            "--precisions", ",".join(precisions), "--repeats", str(repeats), "--warmup", str(warmup),
            "--seed", str(seed), "--out", str(out)]


def run_side(argv: Sequence[str], timeout: float) -> tuple[int | None, float, str]:
    """(exit status or None after the time limit, seconds, stdout and stderr together)."""
    t0 = time.monotonic()
    try:
        proc = subprocess.run(list(argv), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              timeout=timeout)
        return proc.returncode, time.monotonic() - t0, proc.stdout
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return None, time.monotonic() - t0, out + f"\n(stopped after its time limit of {timeout:g} s)\n"
    except OSError as exc:
        return None, time.monotonic() - t0, f"cannot run {argv[0]}: {exc.strerror or exc}\n"


def load_side(path: Path, side: str, layout: str) -> dict:
    """A side's file, held to GEMM_SIDE and to the side and layout asked of it; InputError when not."""
    try:
        doc = json.loads(files.read_input_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"error: {path}: not JSON: {exc}") from None
    try:
        schema.validate(doc, "gemm_side", path)
    except schema.SchemaError as exc:
        raise InputError(f"error: {exc}") from None
    if doc["side"] != side or doc["layout"] != layout:
        raise InputError(f"error: {path}: side {doc['side']!r}, layout {doc['layout']!r}; asked {side!r}, {layout!r}")
    return doc


def _shown(path) -> str:
    """`path` relative to the repository root when inside it (notes name files so)."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def dumps(doc: dict) -> str:
    """gemm.json's text: the header indented, one line per row."""
    head = json.dumps({k: v for k, v in doc.items() if k != "rows"}, indent=1)
    rows = ",\n".join("  " + json.dumps(r) for r in doc["rows"])
    return head[:-2] + ',\n "rows": [\n' + rows + "\n ]\n}\n"


def ceiling_rates(path: Path) -> tuple[dict | None, list[str]]:
    """({"fp32_tflops", "tf32_tflops", "bf16_tflops" (None where absent), "gpu", "commit"} or None, notes)."""
    if not Path(path).exists():
        return None, [f"no {_shown(path)}: no ceiling percentages (run `invoke ceilings` first)"]
    try:
        doc = json.loads(files.read_input_text(path))
        schema.validate(doc, "ceilings", path)
    except json.JSONDecodeError as exc:
        raise InputError(f"error: {path}: not JSON: {exc}") from None
    except schema.SchemaError as exc:
        raise InputError(f"error: {exc}") from None
    rates = {f"{p}_tflops": (doc.get(key) or {}).get("tflops") for p, key in CEILING_KEYS.items()}
    notes = [f"{_shown(path)} has no {key} (measured before it was added): no {p} ceiling percentage; "
             "run `invoke ceilings`"
             for p, key in CEILING_KEYS.items() if rates[f"{p}_tflops"] is None]
    return {**rates, "gpu": doc.get("gpu"), "commit": doc.get("commit")}, notes


def _pct(a, b) -> float | None:
    return 100.0 * a / b if isinstance(a, (int, float)) and isinstance(b, (int, float)) and b > 0 else None


def _entry(row: dict | None) -> dict | None:
    return None if row is None else {k: v for k, v in row.items() if k not in ("M", "N", "K", "layout", "precision")}


def merge(shapes: Sequence[dict], precisions: Sequence[str], docs: Sequence[dict], ceilings: dict | None) -> list[dict]:
    """One row per (shape, precision) in shape order: both sides' entries and the percentages; a
    side's TFLOP/s is counted only when its status is "ok" (ours: its spot-check passed)."""
    index = {(d["side"], r["M"], r["N"], r["K"], r["layout"], r["precision"]): r for d in docs for r in d["rows"]}
    rows = []
    for s in shapes:
        for p in precisions:
            key = (s["m"], s["n"], s["k"], s["layout"], p)
            ours, cublas = index.get(("ours", *key)), index.get(("cublas", *key))
            ot = ours["tflops"] if ours and ours["status"] == "ok" else None
            ct = cublas["tflops"] if cublas and cublas["status"] == "ok" else None
            ceiling = (ceilings or {}).get(f"{p}_tflops")
            rows.append({"M": s["m"], "N": s["n"], "K": s["k"], "layout": s["layout"], "precision": p,
                         "sources": list(s["sources"]), "flop": 2 * s["m"] * s["n"] * s["k"],
                         "ours": _entry(ours), "cublas": _entry(cublas), "ours_tflops": ot, "cublas_tflops": ct,
                         "pct_of_cublas": _pct(ot, ct), "ceiling_tflops": ceiling,
                         "ours_pct_of_ceiling": _pct(ot, ceiling), "cublas_pct_of_ceiling": _pct(ct, ceiling),
                         "check_passed": ((ours or {}).get("check") or {}).get("passed")})
    return rows


def summary_lines(rows: Sequence[dict], largest: int = 8) -> list[str]:
    """The printed table: each (layout, precision)'s row count and median % of cuBLAS, then the
    `largest` largest shapes' rows."""
    out = [f"{'layout':6} {'prec':4} {'M x N x K':>22} {'ours TF/s':>10} {'cuBLAS':>8} {'% cuBLAS':>9} "
           f"{'% ceiling':>9}"]
    big = sorted({(r["M"], r["N"], r["K"], r["layout"]) for r in rows}, key=lambda t: -t[0] * t[1] * t[2])[:largest]
    fmt = lambda v, f: format(v, f) if isinstance(v, (int, float)) else "-"  # noqa: E731
    for r in rows:
        if (r["M"], r["N"], r["K"], r["layout"]) in big:
            out.append(f"{r['layout']:6} {r['precision']:4} {r['M']:>8}x{r['N']:>6}x{r['K']:>6} "
                       f"{fmt(r['ours_tflops'], '10.1f')} {fmt(r['cublas_tflops'], '8.1f')} "
                       f"{fmt(r['pct_of_cublas'], '9.1f')} {fmt(r['ours_pct_of_ceiling'], '9.1f')}")
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["layout"], r["precision"]), []).append(r["pct_of_cublas"])
    for (lay, p), pcts in groups.items():
        got = sorted(x for x in pcts if x is not None)
        med = got[len(got) // 2] if got else None
        out.append(f"{lay} {p}: {len(got)} of {len(pcts)} shapes timed on both sides, "
                   f"median {fmt(med, '.1f')}% of cuBLAS")
    return out


def bench(shapes: Sequence[dict], precisions: Sequence[str], repeats: int = 30, warmup: int = 5,
          seed: int = DEFAULT_SEED, out: Path = OUT, ceilings: Path = CEILINGS, cublas: bool = True,
          timeout: float = 600.0) -> int:
    out = Path(out)
    logs_ok, logs_failed = out.with_suffix(""), out.with_name(out.stem + ".failed")
    files.check_targets([out])
    exe = binary()
    if not exe.is_file():
        raise InputError(f"error: {exe}: not built (run `invoke build` first)")
    rates, notes = ceiling_rates(ceilings)
    groups = gemm_shapes.by_layout(shapes)
    sides, docs, logs = [], [], {}
    with tempfile.TemporaryDirectory(prefix="gemm_bench.") as tmp:
        for side, prefix in (("ours", [exe]), *((("cublas", torch_argv()),) if cublas else ())):
            for layout, rows in groups.items():
                part = Path(tmp) / f"{side}_{layout}.json"
                argv = side_argv(prefix, rows, layout, precisions, repeats, warmup, seed, part)
                print(f"gemm_bench: {side} {layout}: {len(rows)} shapes x {len(precisions)} precisions", flush=True)
                rc, seconds, text = run_side(argv, timeout)
                logs[f"{side}_{layout}.log"] = "$ " + shlex.join(map(str, argv)) + "\n" + text
                error = None
                if part.exists() and rc in (0, 1):
                    try:
                        docs.append(load_side(part, side, layout))
                    except InputError as exc:
                        error = str(exc)
                if rc != 0 and error is None:
                    tail = " | ".join([ln.strip() for ln in text.splitlines() if ln.strip()][-3:]) or "no output"
                    error = f"exit status {rc}: {tail}" if rc is not None else tail
                sides.append({"side": side, "layout": layout, "exit_status": rc, "seconds": round(seconds, 2),
                              "error": error})
                print("\n".join(text.splitlines()[-TAIL_LINES:]) + (f"\ngemm_bench: {side} {layout}: {error}"
                                                                    if error else ""), flush=True)
    if not any(r["status"] in MEASURED for d in docs if d["side"] == "ours" for r in d["rows"]):
        files.write_all({logs_failed / name: text for name, text in logs.items()})
        print(f"error: gemm_bench: no GEMM of ours was measured; nothing written but the logs in {logs_failed}",
              file=sys.stderr)
        return 3
    rows = merge(shapes, precisions, docs, rates)
    first = {d["side"]: d for d in docs}
    gpu = (first.get("ours") or first.get("cublas") or {}).get("gpu")
    if rates and rates.get("gpu") and gpu and rates["gpu"] != gpu:
        notes.append(f"the ceilings were measured on {rates['gpu']}, these GEMMs on {gpu}")
    passed = all(s["exit_status"] == 0 and s["error"] is None for s in sides) and all(
        r["check_passed"] is not False for r in rows)
    doc = {"schema": 1, **provenance.stamp(), "gpu": gpu,
           "compute_capability": (first.get("ours") or {}).get("compute_capability"),
           "torch_version": (first.get("cublas") or {}).get("torch_version"),
           "torch_cuda_version": (first.get("cublas") or {}).get("torch_cuda_version"),
           "config": {"precisions": list(precisions), "layouts": list(groups), "repeats": repeats,
                      "warmup": warmup, "seed": seed, "shapes": len(shapes), "cublas": cublas},
           "ceilings": rates, "sides": sides, "notes": notes, "passed": passed, "rows": rows}
    schema.validate(doc, "gemm", out)
    files.write_all({out: dumps(doc), **{logs_ok / n: t for n, t in logs.items()}})
    print("\n".join(summary_lines(rows) + notes))
    print(f"gemm_bench: {len(rows)} rows -> {out} ({'passed' if passed else 'NOT passed: see sides and check_passed'})")
    return 0 if passed else 1


def main(argv: Sequence[str] | None = None) -> int:
    ap = validate.ArgParser(prog="python -m harness.studies.gemm_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--precisions", default="fp32,tf32,bf16", type=precision_list)
    ap.add_argument("--layouts", default=",".join(gemm_shapes.LAYOUTS), help="of nn, tn, nt (the shape list's)")
    ap.add_argument("--shapes", type=lambda t: gemm_shapes.parse_shapes(t, layouts=True),
                    help="MxNxK:LAYOUT,... instead of the shape list")
    ap.add_argument("--repeats", default=30, type=lambda t: validate.count(t, "--repeats", 3, 10000))
    ap.add_argument("--warmup", default=5, type=lambda t: validate.count(t, "--warmup", 0, 1000))
    ap.add_argument("--seed", default=DEFAULT_SEED, type=lambda t: validate.count(t, "--seed", 0, 2 ** 53 - 1))
    ap.add_argument("--no-cublas", action="store_true", help="ours alone")
    ap.add_argument("--timeout", default=600.0, type=lambda t: validate.positive_seconds(t, "--timeout"),
                    help="each side's call, per layout (default 600 s)")
    ap.add_argument("--ceilings", default=str(CEILINGS))
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--list", action="store_true", help="print the shapes and exit (no GPU)")
    a = ap.parse_args(argv)
    layouts = [x.strip() for x in a.layouts.split(",")]
    if any(x not in gemm_shapes.LAYOUTS for x in layouts) or len(set(layouts)) != len(layouts):
        raise InputError(f"error: --layouts {a.layouts!r}: expected distinct layouts of "
                         f"{', '.join(gemm_shapes.LAYOUTS)}")
    shapes = [s for s in (a.shapes or gemm_shapes.shapes()) if s["layout"] in layouts]
    if not shapes:
        raise InputError(f"error: --layouts {a.layouts!r}: no shape of those layouts")
    if a.list:
        for s in shapes:
            print(f"{s['layout']} {s['m']}x{s['n']}x{s['k']}  {'; '.join(s['sources'])}")
        return 0
    return bench(shapes, a.precisions, a.repeats, a.warmup, a.seed, Path(a.out), Path(a.ceilings),
                 cublas=not a.no_cublas, timeout=a.timeout)


if __name__ == "__main__":
    files.run_main(main)
