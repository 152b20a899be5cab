"""Our epoch's kernels beside PyTorch's, per training step, from two Nsight Systems kernel
summaries (cuda_gpu_kern_sum CSVs of one profiled epoch each, graph nodes traced one by one).

    python -m analysis.side_by_side OURS.csv THEIRS.csv --steps N [--ours-label tiled]
        [--theirs-label compiled-step] [--out FILE.md]

Each side's rows become: the kernel's name (template arguments and parameter lists cut, so a
row names the kernel, not its signature), its launches per step (instances / steps) and its time
per step (total / steps, µs); the sides are ranked by time and printed next to each other, with
each side's total per step and the row count. Both CSVs must come from one epoch of the same
point (the same `--steps`): a capture with more epochs would divide wrongly, which this module
cannot see, so the caller passes the epoch's step count. Writes FILE.md (or prints it).
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pandas as pd

from analysis.nsys_csv import read_kern_sum
from spec import files


def short_name(name: str) -> str:
    """`void mlp::tiled::k_tiled_gemm<(int)2, ...>(mlp::tiled::GemmArgs)` -> `mlp::tiled::k_tiled_gemm<2, ...>`:
    the return type and parameter list dropped, `(int)` casts dropped, templates kept (they say
    which tile shape ran) but cut to 60 characters."""
    s = re.sub(r"^void\s+", "", str(name).strip())
    depth, cut = 0, len(s)
    for i, ch in enumerate(s):  # the parameter list: the first '(' outside template brackets
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    s = re.sub(r"\((?:int|bool|unsigned int|mlp::tiled::\w+)\)", "", s[:cut])
    return s if len(s) <= 60 else s[:57] + "..."


def per_step(frame: pd.DataFrame, steps: int) -> pd.DataFrame:
    """name, launches a step, µs a step, share of the side's time; ranked by time."""
    if steps < 1:
        raise ValueError(f"steps must be at least 1, got {steps}")
    out = pd.DataFrame({"kernel": frame["name"].map(short_name),
                        "launches_per_step": frame["instances"] / steps,
                        "us_per_step": frame["total_ns"] / steps / 1000.0})
    out = out.groupby("kernel", as_index=False, sort=False).sum()
    out = out.sort_values("us_per_step", ascending=False, kind="stable").reset_index(drop=True)
    total = out["us_per_step"].sum()
    out["share_pct"] = 100.0 * out["us_per_step"] / total if total > 0 else float("nan")
    return out


def table(ours: pd.DataFrame, theirs: pd.DataFrame, ours_label: str, theirs_label: str) -> str:
    """The two ranked lists side by side as a markdown table, then each side's totals."""
    rows = max(len(ours), len(theirs))
    lines = [f"| rank | {ours_label}: kernel | launches/step | µs/step | share | "
             f"{theirs_label}: kernel | launches/step | µs/step | share |",
             "|---:|---|---:|---:|---:|---|---:|---:|---:|"]

    def cells(df, i):
        if i >= len(df):
            return ["", "", "", ""]
        r = df.iloc[i]
        return [f"`{r.kernel}`", f"{r.launches_per_step:.2f}", f"{r.us_per_step:.2f}", f"{r.share_pct:.1f}%"]

    for i in range(rows):
        lines.append("| " + " | ".join([str(i + 1), *cells(ours, i), *cells(theirs, i)]) + " |")
    for label, df in ((ours_label, ours), (theirs_label, theirs)):
        lines.append("")
        lines.append(f"{label}: {df['us_per_step'].sum():.2f} µs of kernels a step, "
                     f"{df['launches_per_step'].sum():.2f} launches a step, {len(df)} distinct kernels.")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.side_by_side", description=__doc__.split("\n\n")[0])
    ap.add_argument("ours", type=Path)
    ap.add_argument("theirs", type=Path)
    ap.add_argument("--steps", type=int, required=True, help="training steps of the profiled epoch")
    ap.add_argument("--ours-label", default="ours")
    ap.add_argument("--theirs-label", default="PyTorch")
    ap.add_argument("--out", type=Path)
    a = ap.parse_args(argv)
    try:
        if a.steps < 1:
            raise ValueError(f"--steps must be at least 1, got {a.steps}")
        text = table(per_step(read_kern_sum(a.ours), a.steps), per_step(read_kern_sum(a.theirs), a.steps),
                     a.ours_label, a.theirs_label)
    except (OSError, ValueError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    if a.out:
        files.write_all({a.out: text})
        print(f"wrote {a.out}")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
