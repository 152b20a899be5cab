"""The gate's hints for a run the supervisor merged from stages that ran in separate processes: asked of
`build/mlp_host hints`, whose cuda/gate/hints.cpp is their one owner (the binary prints the same
hints under its own table). No hint text lives here.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from spec.files import BUILD_DIR, InputError


def _line(text) -> str:
    return " ".join(str(text).split())  # one line: the protocol is line by line


def hints_for(cases: list[dict], path_failures=(), endings=(), build_dir: Path = BUILD_DIR) -> list[str]:
    """cuda/gate/hints.cpp hints_for over `cases` (run.json rows), the paths that fail their parity
    or rerun, and how the stages that did not end by themselves ended."""
    return hints_for_sets([(cases, path_failures, endings)], build_dir)[0]


def hints_for_sets(sets, build_dir: Path = BUILD_DIR) -> list[list[str]]:
    """hints_for of each (cases, path_failures, endings) in one mlp_host call."""
    lines = []
    for cases, path_failures, endings in sets:
        for c in cases:
            lines.append(f"{int(c.get('id', 0))} {1 if c.get('passed') is True else 0} {_line(c.get('detail', ''))}")
        lines += [f"path {_line(f)}" for f in path_failures]
        lines += [f"ended {_line(e)}" for e in endings]
        if not cases and not path_failures and not endings:
            lines.append("ended exited 0")  # an empty set still gets its (empty) answer
        lines.append("")
    host = Path(build_dir) / "mlp_host"
    if not host.exists():
        raise InputError(f"error: {host} missing: run `invoke build` first (the hints come from it)")
    proc = subprocess.run([str(host), "hints"], input="\n".join(lines) + "\n", capture_output=True, text=True)
    if proc.returncode != 0:
        raise InputError(f"error: {host} hints exited {proc.returncode}: {proc.stderr.strip()[:200]}")
    out = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.strip()]
    if len(out) != len(sets):
        raise InputError(f"error: {host} hints answered {len(out)} sets for {len(sets)}")
    return out
