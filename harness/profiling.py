"""Profile one epoch of a kernel path with Nsight Systems and export its three CSV summaries.

    python -m harness.profiling [fused unfused ...] [--no-pytorch]

For each path P this writes profile/P.nsys-rep and profile/P_cuda_gpu_kern_sum.csv,
profile/P_nvtx_sum.csv, profile/P_cuda_api_sum.csv (docs/formats.md). Everything is made in a
temporary folder inside profile/ and moved into place only when every step succeeded; the
previous run's files of P are deleted first, so a failed capture never leaves an older run's
CSVs looking current.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Sequence

from spec import catalog, validate
from spec.files import BUILD_DIR, DATA_DIR, PROFILE_DIR, RESULTS_DIR, ROOT

REPORTS = ("cuda_gpu_kern_sum", "nvtx_sum", "cuda_api_sum")
CAPTURE_RANGE = "profile-epoch"
# The binary's paths (cuda/paths/stepwise_path.cu path_names), used when results/run.json does not list them.
# Extra `nsys profile` options profile_all passes: trace the kernels inside CUDA graphs one by one
# (the default, "graph", traces a graph as one item, so the graph path's kernels would not appear
# in cuda_gpu_kern_sum and its launches per step could not be counted).
PROFILE_ALL_NSYS_ARGS = ("--cuda-graph-trace=node",)

# Report names whose CSVs `nsys stats --output <dir>/P` may have written as P_<report>.csv,
# current and older: stale ones are deleted before a new capture. An exact list, so that another
# path whose name starts with "P_" keeps its files.
KNOWN_REPORTS = frozenset(REPORTS + (
    "cuda_api_gpu_sum", "cuda_api_trace", "cuda_gpu_kern_gb_sum", "cuda_gpu_mem_size_sum",
    "cuda_gpu_mem_time_sum", "cuda_gpu_sum", "cuda_gpu_trace", "cuda_kern_exec_sum",
    "cuda_kern_exec_trace", "nvtx_gpu_proj_sum", "nvtx_gpu_proj_trace", "nvtx_kern_sum",
    "nvtx_pushpop_sum", "nvtx_pushpop_trace", "nvtx_startend_sum", "osrt_sum", "um_sum",
    "um_total_sum", "um_cpu_page_faults_sum",
    "gpukernsum", "cudaapisum", "nvtxsum", "gpumemtimesum", "gpumemsizesum", "gpusum",
    "gputrace", "cudaapitrace", "nvtxppsum", "nvtxsesum", "nvtxkernsum", "osrtsum",
    "kernexecsum", "kernexectrace", "umsum", "umtotalsum", "umcpupagefaults",
))

INSTALL_HINT = ("error: nsys not found: install Nsight Systems (part of the CUDA toolkit, or "
                "developer.nvidia.com/nsight-systems) or set NSYS=/path/to/nsys")


def find_nsys() -> str:
    """The nsys executable: $NSYS if set, else the first on PATH; else SystemExit (one line)."""
    env = os.environ.get("NSYS")
    if env:
        found = shutil.which(env)
        if found is None:
            raise SystemExit(f"error: NSYS={env} is not an executable file; install Nsight "
                             "Systems (part of the CUDA toolkit, or "
                             "developer.nvidia.com/nsight-systems) or fix NSYS=/path/to/nsys")
        return found
    found = shutil.which("nsys")
    if found is None:
        raise SystemExit(INSTALL_HINT)
    return found


def output_names(path_name: str) -> list[str]:
    """The file names profile_path leaves in out_dir for one path."""
    return [f"{path_name}.nsys-rep"] + [f"{path_name}_{r}.csv" for r in REPORTS]


def remove_stale(path_name: str, out_dir: Path) -> list[Path]:
    """Delete out_dir/P.nsys-rep and out_dir/P_<report>.csv; returns what was deleted."""
    out_dir = Path(out_dir)
    gone = []
    candidates = [out_dir / f"{path_name}.nsys-rep", out_dir / f"{path_name}.sqlite"]
    prefix = f"{path_name}_"
    for csv_path in sorted(out_dir.glob(f"{glob_escape(path_name)}_*.csv")):
        if csv_path.stem[len(prefix):] in KNOWN_REPORTS:
            candidates.append(csv_path)
    for p in candidates:
        if p.is_file() or p.is_symlink():
            p.unlink()
            gone.append(p)
    return gone


def glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[]" else c for c in text)


def _run(step: str, cmd: list[str], env: dict | None = None, timeout_s: float | None = None,
         cwd=None, ok_codes: tuple[int, ...] = (0,)) -> None:
    print("+ " + shlex.join(cmd), flush=True)
    try:
        proc = subprocess.run(cmd, env=env, timeout=timeout_s, cwd=cwd)
    except OSError as exc:
        raise SystemExit(f"error: {step} failed: cannot run {cmd[0]}: {exc}") from None
    except subprocess.TimeoutExpired:
        raise SystemExit(f"error: {step} failed: no result after {timeout_s:g} s") from None
    if proc.returncode not in ok_codes:
        raise SystemExit(f"error: {step} failed (exit status {proc.returncode}): "
                         f"{shlex.join(cmd)}")


def profile_path(path_name: str, binary: str | os.PathLike = "build/mlp_train",
                 data_dir: str | os.PathLike = "data", out_dir: str | os.PathLike = PROFILE_DIR,
                 extra_args: Sequence[str] = (), nsys_args: Sequence[str] = (),
                 timeout_s: float | None = None, cwd: str | os.PathLike | None = None
                 ) -> dict[str, Path]:
    """Capture one epoch of `path_name` and export its summaries; returns {file kind: path}.

    Steps: `nsys profile` (capture range = the NVTX range "profile-epoch") into a temporary
    folder inside out_dir; `nsys stats` for the three reports; check that each CSV exists and is
    not empty; only then delete the path's old outputs and move the report and the CSVs into
    out_dir. Any failure before that raises SystemExit with one line naming the step and leaves
    out_dir's files of this path as they were (a run without a GPU destroys no evidence). `extra_args` go to the binary, `nsys_args` to `nsys profile` (before
    the binary, e.g. "--capture-range-end=stop"). `cwd` is where the binary runs (relative
    `binary` and `data_dir` are taken from there); out_dir is used as given.
    """
    nsys = find_nsys()
    out_dir = Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    if not (Path(cwd or ".") / binary).is_file():
        raise SystemExit(f"error: binary {binary} not found: build it first")

    with tempfile.TemporaryDirectory(dir=out_dir, prefix=f".{path_name}-nsys-") as tmp:
        base = Path(tmp) / path_name
        rep = base.with_name(f"{path_name}.nsys-rep")
        env = dict(os.environ, NSYS_NVTX_PROFILER_REGISTER_ONLY="0")
        profile_cmd = [nsys, "profile", "--trace", "cuda,nvtx", "--capture-range=nvtx",
                       f"--nvtx-capture={CAPTURE_RANGE}", "--force-overwrite", "true",
                       *nsys_args, "-o", str(base), str(binary), "--data", str(data_dir),
                       "--profile", path_name, *extra_args]
        # With the default --capture-range-end=stop-shutdown, nsys ends the binary with SIGTERM
        # once the range closes and itself exits 143 (128 + 15), the report complete: seen with
        # nsys 2025.3.1 on the H200 (results/logs/profile.log). The report's presence and the
        # stats below decide success.
        _run(f"nsys profile of path {path_name}", profile_cmd, env=env, timeout_s=timeout_s,
             cwd=cwd, ok_codes=(0, 143))
        if not rep.is_file() or rep.stat().st_size == 0:
            raise SystemExit(f"error: nsys profile of path {path_name} wrote no report {rep.name} "
                             f"(did the binary open the NVTX range {CAPTURE_RANGE!r}?)")

        stats_cmd = [nsys, "stats", "--force-export=true"]
        for report in REPORTS:
            stats_cmd += ["--report", report]
        stats_cmd += ["--format", "csv", "--output", str(base), str(rep)]
        _run(f"nsys stats of path {path_name}", stats_cmd, timeout_s=timeout_s, cwd=cwd)
        csvs = [base.with_name(f"{path_name}_{r}.csv") for r in REPORTS]
        for csv_path in csvs:
            if not csv_path.is_file() or csv_path.stat().st_size == 0:
                raise SystemExit(f"error: nsys stats of path {path_name} wrote no {csv_path.name}"
                                 " (or an empty one): the capture holds no such data")

        for gone in remove_stale(path_name, out_dir):   # the new outputs are ready: the old ones go
            print(f"removed stale {gone}", flush=True)
        moved: dict[str, Path] = {}
        try:
            for src, kind in zip(csvs + [rep], list(REPORTS) + ["nsys-rep"]):
                dest = out_dir / src.name
                os.replace(src, dest)
                moved[kind] = dest
        except OSError as exc:
            for dest in moved.values():
                dest.unlink(missing_ok=True)
            raise SystemExit(f"error: moving the outputs of path {path_name} into {out_dir} "
                             f"failed: {exc}") from None
    for kind, dest in moved.items():
        print(f"wrote {dest}", flush=True)
    return moved


def default_paths(results_dir: Path = RESULTS_DIR) -> list[str]:
    """The paths results/run.json lists (those the build ran), else the build's default set
    (the binary's registry, spec/catalog.py)."""
    run_json = Path(results_dir) / "run.json"
    try:
        paths = list(json.loads(run_json.read_text())["paths"])
    except (OSError, ValueError, KeyError, TypeError):
        paths = []
    # Names from a results file become file names: each must be a safe name (spec/validate.py).
    return [validate.safe_name(p, f"{run_json}: paths") for p in paths] or list(catalog.default_path_names())


def profile_all(paths: Sequence[str] | None = None, pytorch: bool = True,
                binary: Path = BUILD_DIR / "mlp_train", data_dir: Path = DATA_DIR,
                out_dir: Path = PROFILE_DIR, results_dir: Path = RESULTS_DIR) -> dict[str, dict]:
    """profile_path for each path (default: default_paths()), run from the repository root with
    PROFILE_ALL_NSYS_ARGS; with `pytorch`, also a torch.profiler trace of one eager epoch into
    out_dir/pytorch_eager_trace.json. Stops at the first failure (SystemExit, one line)."""
    def rel(p) -> str:
        return os.path.relpath(Path(p).resolve(), ROOT)

    names = list(paths) if paths else default_paths(results_dir)
    done = {}
    for name in names:
        done[name] = profile_path(name, binary=rel(binary), data_dir=rel(data_dir),
                                  out_dir=out_dir, nsys_args=PROFILE_ALL_NSYS_ARGS, cwd=ROOT)
    if pytorch:
        from harness.baseline.eager_trace import trace_eager_epoch
        trace = Path(out_dir) / "pytorch_eager_trace.json"
        print(f"torch.profiler trace of one eager epoch -> {trace}", flush=True)
        trace_eager_epoch(trace, results_dir=results_dir)
    return done


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*",
                        help="kernel paths to profile (default: those of results/run.json)")
    parser.add_argument("--no-pytorch", action="store_true",
                        help="skip the torch.profiler trace of one eager epoch")
    args = parser.parse_args(argv)
    profile_all(args.paths or None, pytorch=not args.no_pytorch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
