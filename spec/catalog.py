"""The binary's lists, read from `build/mlp_host catalog` (cuda/gate/catalog.h, cuda/paths/registry.h):
the gate's cases (id, name, stage, whether it decides the verdict), its stages (the cases each runs,
who runs it, its time-limit floor and work, whether it needs the GPU to itself) and the kernel
paths (name, in the default set or opt-in). The binary is their one owner; this module keeps no
copy. The output is cached per build in build/catalog.json, keyed by mlp_host's size and mtime.

    from spec import catalog
    catalog.case_names()        {1: "onebatch-forward", ...} in table order
    catalog.verdict_case_ids()  the cases that decide the verdict (all but 8)
    catalog.stages("mlp_train") the stages `mlp_train --stage` runs, in order
    catalog.path_names()        every kernel path; default_path_names() the plain run's
"""
from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

from spec.files import BUILD_DIR, InputError, write_json


def _host(build_dir: Path) -> Path:
    return Path(build_dir) / "mlp_host"


@functools.lru_cache(maxsize=4)
def _load(build_dir: str, key: str) -> dict:
    cache = Path(build_dir) / "catalog.json"
    try:
        held = json.loads(cache.read_text())
        if held.get("key") == key and isinstance(held.get("catalog"), dict):
            return held["catalog"]
    except (OSError, ValueError):
        pass
    proc = subprocess.run([str(_host(Path(build_dir))), "catalog"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise InputError(f"error: {_host(Path(build_dir))} catalog exited {proc.returncode}: "
                         f"{proc.stderr.strip()[:200]} (rebuild with `invoke build`)")
    doc = json.loads(proc.stdout)
    try:
        write_json(cache, {"key": key, "catalog": doc})
    except OSError:
        pass  # a read-only build folder: the catalog is only not cached
    return doc


def load(build_dir: Path = BUILD_DIR) -> dict:
    """{"gate": {"cases": [...], "stages": [...]}, "paths": [...]} from the build's mlp_host."""
    host = _host(build_dir)
    try:
        st = host.stat()
    except OSError:
        raise InputError(f"error: {host} missing: run `invoke build` first (the gate's cases, stages and "
                         f"paths come from it)") from None
    return _load(str(Path(build_dir).resolve()), f"{st.st_size}:{st.st_mtime_ns}")


def cases(build_dir: Path = BUILD_DIR) -> list[dict]:
    """Every case, in the order the table prints them."""
    return list(load(build_dir)["gate"]["cases"])


def case_names(build_dir: Path = BUILD_DIR) -> dict[int, str]:
    return {c["id"]: c["name"] for c in cases(build_dir)}


def case_order(build_dir: Path = BUILD_DIR) -> list[int]:
    return [c["id"] for c in cases(build_dir)]


def verdict_case_ids(build_dir: Path = BUILD_DIR) -> tuple[int, ...]:
    """The cases that decide the verdict, in table order."""
    return tuple(c["id"] for c in cases(build_dir) if c["decides"])


def stages(runner: str | None = None, build_dir: Path = BUILD_DIR) -> list[dict]:
    """The stages in the order the supervisor runs them; `runner` "mlp_train" or
    "compute-sanitizer" keeps those only."""
    return [s for s in load(build_dir)["gate"]["stages"] if runner is None or s["runner"] == runner]


def paths(build_dir: Path = BUILD_DIR) -> list[dict]:
    """The kernel paths: {"name", "default", "what"}, in report order."""
    return list(load(build_dir)["paths"])


def path_names(build_dir: Path = BUILD_DIR) -> tuple[str, ...]:
    return tuple(p["name"] for p in paths(build_dir))


def default_path_names(build_dir: Path = BUILD_DIR) -> tuple[str, ...]:
    """The paths a plain run times (the opt-in ones run only when named)."""
    return tuple(p["name"] for p in paths(build_dir) if p["default"])
