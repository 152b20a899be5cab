"""Nsight Compute counters of the kernels that bound the epoch (`invoke gpu.ncu`): the persistent
path's one-launch epoch, the fused path's two widest rows and the stationary path's one-launch
epoch (a cluster launch; its template arguments follow the name, so the regex has no `$`). --clock-control none leaves the
clocks as the timed runs see them (ncu otherwise locks them to base). Writes
results/ncu/<name>.ncu-rep, its raw-metric and details pages as <name>_raw.csv and
<name>_details.csv (analysis/ncu_csv.py reads them) and <name>.log. Run after `invoke build`;
$NCU names another ncu."""
from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import NamedTuple

from spec import files
from spec.files import BUILD_DIR, DATA_DIR, RESULTS_DIR, ROOT


class Target(NamedTuple):
    name: str        # the files' name
    path: str        # mlp_train --profile PATH
    kernels: str     # ncu -k regex:...
    count: int       # ncu -c: launches to profile
    application: bool = False  # straight to --replay-mode application


# The stationary cluster launch profiles under kernel replay with every metric nan (H200, ncu of
# CUDA 13.0: results/experiments/stationary/ncu_dev_kernelreplay.log), so it goes straight to
# application replay (one run of the binary per pass).
TARGETS = (Target("persistent", "persistent", "k_persistent_epoch$", 1),
           Target("fused", "fused", "k_fwd_hidden_bias_relu|k_dW1", 2),
           Target("stationary", "stationary", "k_stationary_epoch", 1, application=True))


def _has_numbers(details_csv: str) -> bool:
    """False when the details page has no row or only nan values (a replay that measured
    nothing); ncu still exits 0 then."""
    rows = [ln for ln in details_csv.splitlines()[1:] if ln.strip()]
    return bool(rows) and not all('"nan"' in ln or ",nan" in ln for ln in rows)


def _rel(p) -> str:
    return os.path.relpath(Path(p).resolve(), ROOT)


def profile_command(ncu: str, t: Target, report: Path, binary: Path, data_dir: Path,
                    application_replay: bool = False) -> list[str]:
    return [ncu, "--clock-control", "none", "--set", "full",
            *(["--replay-mode", "application"] if application_replay else []),
            "-k", f"regex:{t.kernels}", "-c", str(t.count), "-o", _rel(report), "-f",
            _rel(binary), "--data", _rel(data_dir), "--profile", t.path]


def profile(t: Target, ncu: str, out_dir: Path, binary: Path, data_dir: Path,
            results_dir: Path = RESULTS_DIR) -> bool:
    """One target into out_dir; the final files, <name>.log among them, appear only when every step
    succeeded (a failed one's log goes to the git-ignored results/failed/ncu/<name>.log,
    files.failed_path, and the last good files stay)."""
    tmp = out_dir / f".{t.name}"                 # ncu adds .ncu-rep
    rep = tmp.with_name(tmp.name + ".ncu-rep")
    rep.unlink(missing_ok=True)
    log, tmp_log = out_dir / f"{t.name}.log", out_dir / f".{t.name}.log"
    print(f"ncu: {t.name} (path {t.path}, kernels {t.kernels})", flush=True)
    with open(tmp_log, "w") as fh:
        try:
            pages = _measure(t, ncu, tmp, rep, binary, data_dir, fh)
        except OSError as exc:        # ncu could not be started
            fh.write(f"{exc}\n")
            pages = None
    if pages is None:
        failed = files.failed_path(log, results_dir)
        failed.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp_log, failed)
        rep.unlink(missing_ok=True)
        print(f"ncu: {t.name} failed (see {_rel(failed)}, git-ignored); the last good files stay", flush=True)
        return False
    for page, text in pages.items():
        tmp_csv = out_dir / f".{t.name}_{page}.csv"
        tmp_csv.write_text(text)
        os.replace(tmp_csv, out_dir / f"{t.name}_{page}.csv")
    os.replace(rep, out_dir / f"{t.name}.ncu-rep")
    os.replace(tmp_log, log)
    return True


def _measure(t: Target, ncu: str, tmp: Path, rep: Path, binary: Path, data_dir: Path, fh) -> dict | None:
    """{page: CSV text} of the target's report, its commands and output in `fh`; None when it failed."""
    # Cooperative launches replay per kernel where the tool allows it, else per application;
    # a kernel replay that exits 0 with no numbers counts as failed.
    for application in ((True,) if t.application else (False, True)):
        if application and not t.application:
            print(f"ncu: {t.name}: kernel replay failed; retrying with --replay-mode application", flush=True)
        cmd = profile_command(ncu, t, tmp, binary, data_dir, application)
        fh.write("$ " + shlex.join(cmd) + "\n")
        fh.flush()
        if subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT).returncode != 0:
            continue
        pages = {}
        for page in ("raw", "details"):
            res = subprocess.run([ncu, "--import", str(rep), "--csv", "--page", page], capture_output=True, text=True)
            if res.returncode != 0:
                print(f"ncu: {t.name}: --import --page {page} failed: {res.stderr.strip()}", flush=True)
                fh.write(f"--import --page {page} failed: {res.stderr.strip()}\n")
                return None
            pages[page] = res.stdout
        if _has_numbers(pages["details"]):
            return pages
        fh.write("(the report's details page has no numbers)\n")
    return None


def main(build_dir: Path = BUILD_DIR, data_dir: Path = DATA_DIR, results_dir: Path = RESULTS_DIR,
         ncu: str | None = None, targets=TARGETS) -> int:
    """Every target; 0 when all succeeded, else 1."""
    ncu = ncu or os.environ.get("NCU", "ncu")
    out_dir = Path(results_dir) / "ncu"
    out_dir.mkdir(parents=True, exist_ok=True)
    ok = [profile(t, ncu, out_dir, Path(build_dir) / "mlp_train", data_dir, results_dir) for t in targets]
    return 0 if all(ok) else 1
