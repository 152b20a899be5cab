"""float64 against float32 accumulation in the stepwise GEMMs (`invoke gpu.accumulate-ab`).

The accumulator is a compile-time choice (cuda/kernels/stepwise.cuh, MLP_ACCUM), so the two are two
binaries: build/mlp_train (the default, double) and build/f32acc/mlp_train (ACCUM=float, made
here for the last build's architecture). They run back to back on one GPU, alternating (double,
float, double, float), so a drift of the machine shows as a difference between the two rounds of
one build. Each run: the stepwise paths (unfused, fused, graph) for the recipe's epochs, case 7
against the shipped float64 reference, into OUT_DIR/<accumulator>_<round>/ (run.json with the
commit added, run.log; the .npy files removed): each runs in <run>.new/ and replaces the folder only
when it finished (exit 0 or 1 with run.json), else it goes to <run>.failed/ and the last good run
stays. `python -m analysis.accumulate_ab OUT_DIR` summarises them."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from harness.build import load_build_info, make_command
from spec import files, provenance
from spec.files import BUILD_DIR, DATA_DIR, RESULTS_DIR, ROOT, write_json

DEFAULT_OUT = RESULTS_DIR / "experiments" / "accumulate"
PATHS = "unfused,fused,graph"
ROUNDS = 2


def _rel(p) -> str:
    return os.path.relpath(Path(p).resolve(), ROOT)


def binaries(build_dir: Path = BUILD_DIR) -> dict[str, Path]:
    return {"double": Path(build_dir) / "mlp_train", "float": Path(build_dir) / "f32acc" / "mlp_train"}


def record_commit(run_json: Path) -> None:
    """The binary dates its run.json; the commit is the tree's (as harness/run.py adds it)."""
    try:
        doc = json.loads(Path(run_json).read_text())
    except (OSError, ValueError):
        return                       # no run.json: the run's status and run.log say why
    if isinstance(doc, dict):
        doc["commit"] = provenance.git_commit()
        write_json(run_json, doc)


def main(out_dir: Path = DEFAULT_OUT, build_dir: Path = BUILD_DIR, data_dir: Path = DATA_DIR,
         rounds: int = ROUNDS) -> int:
    """Make the float build, run the alternating rounds; 2 when the float build fails, else 0
    (each run's status is printed and its run.log kept)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    info = load_build_info(build_dir)
    bins = binaries(build_dir)
    make = make_command(info["arch"], None, bins["float"].parent, _rel(bins["float"]), "float")
    build_log, new_log = out_dir / "build_float.log", out_dir / "build_float.new.log"
    with open(new_log, "w") as fh:
        fh.write(" ".join(make) + "\n")
        fh.flush()
        built = subprocess.run(make, stdout=fh, stderr=subprocess.STDOUT).returncode == 0
    if not built:
        failed = files.failed_path(build_log)
        failed.parent.mkdir(parents=True, exist_ok=True)
        os.replace(new_log, failed)
        print(f"error: ACCUM=float build failed (see {_rel(failed)}, git-ignored)", flush=True)
        return 2
    os.replace(new_log, build_log)
    for rnd in range(1, rounds + 1):
        for acc, binary in bins.items():
            run_dir = out_dir / f"{acc}_{rnd}"
            stage = run_dir.with_name(run_dir.name + ".new")
            if stage.exists():
                shutil.rmtree(stage)   # left by an interrupted run
            stage.mkdir(parents=True)
            cmd = [_rel(binary), "--data", _rel(data_dir), "--out", _rel(stage), "--paths", PATHS,
                   "--reference", "shipped"]
            with open(stage / "run.log", "w") as fh:
                rc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT).returncode
            if (stage / "run.json").is_file():
                record_commit(stage / "run.json")
            for f in stage.glob("*.npy"):
                f.unlink()
            # A run that finished (its gate passed or failed, run.json written) replaces the
            # folder; one that did not (no GPU, a bad input) leaves it and goes to the git-ignored
            # results/failed/ (files.failed_path).
            finished = rc in (0, 1) and (stage / "run.json").is_file()
            dest = run_dir if finished else files.failed_path(run_dir)
            dest.parent.mkdir(parents=True, exist_ok=True)
            files.replace_folder(stage, dest)
            print(f"{acc} round {rnd}: exit {rc}"
                  + ("" if finished else f"; {_rel(run_dir)} left as it was, this run's log in {_rel(dest)}"),
                  flush=True)
    return 0
