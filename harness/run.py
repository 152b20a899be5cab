"""Run the gate binary and complete results/run.json with what only the host knows."""
from __future__ import annotations

import json
import os
import shlex
import uuid
from pathlib import Path

from harness.build import load_build_info
from spec import provenance
from spec.files import BUILD_DIR, DATA_DIR, RESULTS_DIR, ROOT, failed_path, replace_folder, write_json


# mlp_train's exit statuses (cuda/common/exit_status.h, docs/formats.md), one meaning each.
EXIT_PASS, EXIT_GATE_FAILED, EXIT_BAD_INPUT, EXIT_CUDA_ERROR, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_MEANINGS = {EXIT_PASS: "every gate case passed", EXIT_GATE_FAILED: "the gate failed",
                 EXIT_BAD_INPUT: "bad input", EXIT_CUDA_ERROR: "CUDA error",
                 EXIT_INTERNAL: "internal error"}


class RunFailed(Exception):
    """mlp_train stopped without writing this run's run.json; `code` is the exit status to give
    (the binary's, or 4 where the binary gave one without a meaning)."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code


def run_gate(build_dir: Path = BUILD_DIR, data_dir: Path = DATA_DIR, results_dir: Path = RESULTS_DIR,
             extra_args: list[str] | tuple[str, ...] = (), binary: Path | None = None, strict: bool = False,
             limit: float | None = None, staged: bool = True) -> int:
    """Run build/mlp_train under the supervisor (harness/gate/supervisor.py) with a fresh --run-id: in
    stages (each `--stage NAME` a fresh process under its own time limit; a hang or a fault
    fails its stage and the later ones still run) or, `staged` False, in one child; run.json is
    always written. Complete results/run.json with the build, the command, the commit and the
    driver; return the exit status (0 pass, 1 a gate case failed, a timeout or a fault
    included). Each child is the same binary with the same arguments as an unsupervised run
    (`--data D --out R [flags] --run-id X`, plus `--stage NAME` when staged).

    Raises RunFailed, leaving results/run.json and results/logs/ as they were (this run's logs in
    the git-ignored results/failed/logs/run_supervised/, which its message names), when the binary
    exits 2 (bad input), or
    stops before its first case with 3 (CUDA error: no device, no code for this GPU), 4 (internal
    error) or any other status, or exits 0 or 1 without this run's run.json (its run_id differs).

    `strict`: then cases 11-12 (compute-sanitizer memcheck and racecheck on a short run of the
    gated path, harness/gate/sanitizer_cases.py) join run.json and the verdict."""
    from harness.gate.supervisor import supervise_run
    info = load_build_info(build_dir)
    binary = Path(binary) if binary else Path(build_dir) / "mlp_train"
    if not binary.exists():
        raise SystemExit(f"error: {binary} missing: run `invoke build` first")

    def rel(p: Path) -> str:
        return os.path.relpath(Path(p).resolve(), ROOT)

    cmd = [rel(binary), "--data", rel(data_dir), "--out", rel(results_dir), *extra_args]
    shown = shlex.join(cmd)                     # the command as a user would repeat it
    run_json = Path(results_dir) / "run.json"
    # The run's logs go to a new folder in the git-ignored results/failed/; it replaces the committed
    # logs once a case ran, else it stays there as failed/logs/run_supervised (the committed logs
    # stay as they were, and git status stays clean).
    logs = Path(results_dir) / "logs" / "run_supervised"
    failed_logs = failed_path(logs, results_dir)
    fresh = failed_logs.with_name(f".{logs.name}.running-{uuid.uuid4().hex[:8]}")
    fresh.parent.mkdir(parents=True, exist_ok=True)
    try:
        outcome = supervise_run(binary, results_dir, list(extra_args), limit, data_dir, logs=fresh,
                                write_unstarted=False, staged=staged)
    finally:
        keep = logs if "outcome" in locals() and outcome.started and outcome.rc != EXIT_BAD_INPUT else failed_logs
        if fresh.exists():
            keep.parent.mkdir(parents=True, exist_ok=True)
            replace_folder(fresh, keep)
    rc = outcome.child_rc if outcome.child_rc is not None else outcome.rc
    if outcome.rc == EXIT_BAD_INPUT or not outcome.started:
        if rc in (EXIT_PASS, EXIT_GATE_FAILED):
            raise RunFailed(f"error: mlp_train exited with status {rc} but wrote no run.json for this run "
                            f"({rel(run_json)} is missing or another run's); left as it was, this run's logs in "
                            f"{rel(failed_logs)}/", EXIT_INTERNAL)
        meaning = EXIT_MEANINGS.get(rc, "no documented meaning")
        raise RunFailed(f"error: mlp_train exited with status {rc} ({meaning}; {outcome.ended}; its message is "
                        f"above); {rel(run_json)} left as it was, this run's logs in {rel(failed_logs)}/",
                        rc if rc in EXIT_MEANINGS else EXIT_INTERNAL)
    data = json.loads(run_json.read_text())
    data["build"] = {"command": info["nvcc_command"], "make_command": info["make_command"],
                     "arch": info["arch"], "submission": info["submission"],
                     "accumulate": info.get("accumulate", "float")}  # builds before the choice used float
    data["run_command"] = shown
    data["commit"] = provenance.git_commit()
    if isinstance(data.get("gpu"), dict):
        data["gpu"]["driver"] = provenance.driver_version()
    write_json(run_json, data)
    rc = outcome.rc
    if strict:
        from harness.gate import sanitizer_cases
        rc = sanitizer_cases.apply(binary, Path(results_dir), data.get("gated_path") or "fused", rc, data_dir, logs)
    return rc
