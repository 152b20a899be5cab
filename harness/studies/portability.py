"""The main job under the limits of smaller GPUs, on the GPU at hand (issue 16).

    python -m harness.studies.portability [--classes t4,l4] [--out results/portability] [--no-report]

For each class, runs build/mlp_train as `invoke run` does (harness.run.run_gate: a fresh run id,
run.json completed with the build, commit and driver; no PyTorch baseline) with the MLP_CAP_*
testing caps of that class in the environment (cuda/paths/path_fit.h: the binary then fits every path,
and sizes every grid by the SM count, as on that GPU), into <out>/<class>/: run.json, run.log
(everything mlp_train printed) and RESULTS.md rendered from that folder by analysis.report
(--no-report: not rendered). Every path runs, in the configuration that fits, or is skipped with
its reason; the gate's verdict stands. A run that does not finish its gate (no GPU, a bad flag)
replaces nothing: it runs in <out>/<class>.new/ and ends in the git-ignored results/failed/ (for
the default <out>, results/failed/portability/<class>/).

Exit status: 0 every class ran and its gate passed; 1 a class's gate failed; 2 bad input (an
unknown class); otherwise the first failing run's status (3 CUDA error, 4 internal error).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from spec import files, validate
from spec.files import RESULTS_DIR, ROOT, InputError, write_text

KB = 1024
# The caps of each class: the limits the issue names (SMs, shared memory per block with the
# opt-in, resident threads per SM). The compute capability stays the device's, so the paths'
# resource fits (not their instruction sets) decide what runs.
CLASSES: dict[str, dict[str, int]] = {
    "t4": {"MLP_CAP_SMS": 40, "MLP_CAP_SMEM_PER_BLOCK": 64 * KB, "MLP_CAP_THREADS_PER_SM": 1024},
    "l4": {"MLP_CAP_SMS": 58, "MLP_CAP_SMEM_PER_BLOCK": 99 * KB, "MLP_CAP_THREADS_PER_SM": 1536},
}
OUT_DIR = RESULTS_DIR / "portability"

_CHILD = ("import sys\n"
          "from pathlib import Path\n"
          "from harness.run import RunFailed, run_gate\n"
          "try:\n"
          "    sys.exit(run_gate(results_dir=Path(sys.argv[1]), extra_args=sys.argv[2:]))\n"
          "except RunFailed as e:\n"
          "    print(e, file=sys.stderr)\n"
          "    sys.exit(e.code)\n")


def cap_env(cls: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a run under class `cls`'s caps (any MLP_CAP_* of `base` replaced)."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if not k.startswith("MLP_CAP_")}
    env.update({k: str(v) for k, v in CLASSES[cls].items()})
    return env


STAGING = ".new"   # a class folder's suffix while it runs (one that did not finish: files.failed_path)


def run_class(cls: str, out_dir: Path = OUT_DIR, report: bool = True, extra_args: tuple[str, ...] = ()) -> int:
    """One class: run.json, run.log and (report) RESULTS.md in out_dir/cls; mlp_train's status.

    The run goes into out_dir/cls.new/; only a gate that finished (status 0 or 1) replaces
    out_dir/cls/ (files.replace_folder), then its RESULTS.md is rendered there. A run that did not
    (bad input, no GPU, an internal error) leaves out_dir/cls/ as it was and its log in the
    git-ignored results/failed/ (files.failed_path: results/failed/portability/<class>/)."""
    dest = Path(out_dir) / cls
    stage = dest.with_name(cls + STAGING)
    failed = files.failed_path(dest)
    for path in (dest, stage, failed):
        if path.exists() and not path.is_dir():
            raise InputError(f"error: {path}: not a folder, but the run writes a folder there")
    if stage.exists():
        shutil.rmtree(stage)   # left by an interrupted run
    stage.mkdir(parents=True)
    caps = " ".join(f"{k}={v}" for k, v in CLASSES[cls].items())
    print(f"portability {cls}: {caps}", flush=True)
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(stage), *extra_args], cwd=ROOT, env=cap_env(cls),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    write_text(stage / "run.log", f"# caps: {caps}\n" + proc.stdout)
    print(proc.stdout, end="", flush=True)
    if proc.returncode not in (0, 1):
        failed.parent.mkdir(parents=True, exist_ok=True)
        files.replace_folder(stage, failed)
        print(f"portability {cls}: the run did not finish (exit {proc.returncode}); {dest} left as it was, "
              f"this run's log in {failed / 'run.log'} (git-ignored)", file=sys.stderr)
        return proc.returncode
    files.replace_folder(stage, dest)
    if report and (dest / "run.json").is_file():
        r = subprocess.run([sys.executable, "-m", "analysis.report", "--results", str(dest),
                            "--profile", str(dest / "profile"), "--out", str(dest / "RESULTS.md"),
                            "--plots", str(dest / "plots")], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        with open(dest / "run.log", "a") as log:
            log.write(f"# analysis.report (exit {r.returncode}):\n{r.stdout}")
        print(r.stdout, end="")
        if r.returncode != 0:
            print(f"portability {cls}: RESULTS.md not rendered (analysis.report exit {r.returncode})", file=sys.stderr)
    return proc.returncode


def main(argv: list[str] | None = None) -> int:
    ap = validate.ArgParser(prog="python -m harness.studies.portability", description=__doc__.split("\n\n")[0])
    ap.add_argument("--classes", default=",".join(CLASSES), help=f"comma-separated, of {', '.join(CLASSES)}")
    ap.add_argument("--out", type=Path, default=OUT_DIR)
    ap.add_argument("--no-report", action="store_true", help="do not render RESULTS.md")
    args, extra = ap.parse_known_args(argv)
    classes = [c for c in args.classes.split(",") if c]
    bad = [c for c in classes if c not in CLASSES]
    if bad or not classes:
        print(f"error: --classes {args.classes!r}: expected some of {', '.join(CLASSES)}", file=sys.stderr)
        return 2
    worst = 0
    for cls in classes:
        rc = run_class(cls, args.out, not args.no_report, tuple(extra))
        print(f"portability {cls}: mlp_train exit {rc}", flush=True)
        if rc and not worst:
            worst = rc
    return worst


if __name__ == "__main__":
    files.run_main(main)
