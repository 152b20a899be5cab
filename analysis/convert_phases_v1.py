"""One-off: rewrite a schema-1 results/persistent_phases.json (mlp_train --persistent-phases,
phase masks) as schema 2 (docs/formats.md: kernel, phases, staging, production per row), the
numbers copied exactly, so the report renders before the next GPU run writes schema 2 itself.

    python -m analysis.convert_phases_v1 results/persistent_phases.json --commit e68877a \
        --date 2026-11-30T22:09:12Z --steps 47

The schema-1 masks, as cuda/main.cu at e68877a defined them: bits 1, 2, 4 = phases A, B, C;
8 = persistent with v3 scalar phase-C staging (else v4); 16 = persistent2 with v4 scalar
next-batch staging (else v5); 32 = the row times k_persistent2_epoch. Only this converter knows
them; delete it once the committed file is schema 2 from a run.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from spec.files import write_text
from spec.schema import validate


def convert(doc: dict, commit: str, date: str, steps: int) -> dict:
    if doc.get("schema") != 1:
        raise SystemExit(f"error: schema {doc.get('schema')!r}, expected 1")
    rows = []
    for v in doc["variants"]:
        mask = v["mask"]
        kernel = "persistent2" if mask & 32 else "persistent"
        staging = ("v4" if mask & 16 else "v5") if kernel == "persistent2" else \
                  ("v3" if mask & 8 else "v4")
        phases = [p for bit, p in ((1, "A"), (2, "B"), (4, "C")) if mask & bit]
        production = phases == ["A", "B", "C"] and staging == ("v5" if kernel == "persistent2"
                                                               else "v4")
        rows.append({"kernel": kernel, "phases": phases, "staging": staging,
                     "production": production, "label": v["phases"],
                     "median_ms": v["median_ms"], "cv_pct": v.get("cv_pct")})
    return {"schema": 2, "source": "cuda/main.cu --persistent-phases (schema 1, converted)",
            "converted_from": f"schema 1, written by mlp_train --persistent-phases at {commit}; "
                              f"converted by analysis/convert_phases_v1.py, numbers unchanged",
            "commit": commit, "date_utc": date, "steps_per_epoch": steps, "variants": rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.convert_phases_v1")
    ap.add_argument("file")
    ap.add_argument("--commit", required=True)
    ap.add_argument("--date", required=True)
    ap.add_argument("--steps", type=int, required=True)
    args = ap.parse_args(argv)
    path = Path(args.file)
    out = convert(json.loads(path.read_text()), args.commit, args.date, args.steps)
    validate(out, "persistent_phases", path)
    write_text(path, json.dumps(out, indent=1) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
