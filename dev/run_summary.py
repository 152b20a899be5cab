"""dev/run_summary.py RUN_JSON [--config N] — one line per path of an `mlp_train` run.json, for the
dev/*_device.sh printouts: its median epoch, parity against the fused path and float64, its
verdict and precision, and the first N characters of its config (0: none; default 260)."""
from __future__ import annotations

import argparse
import json


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_json")
    ap.add_argument("--config", type=int, default=260, help="characters of each path's config to print")
    args = ap.parse_args()
    with open(args.run_json) as f:
        paths = json.load(f).get("paths") or {}
    for name, p in paths.items():
        config = str(p.get("config") or "")[: args.config] if args.config else ""
        print(f"  {name:17s} median {p.get('median_ms')} ms  parity_vs_fused {p.get('parity_vs_fused')}  "
              f"vs fp64 {p.get('parity_vs_fp64')}  passed {p.get('passed')}  {p.get('precision')}  {config}".rstrip())


if __name__ == "__main__":
    main()
