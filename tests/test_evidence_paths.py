"""The committed evidence names no machine: no absolute path of a home folder, of a checkout (this
one's or another's) or of a temp folder in any committed JSON, CSV, Markdown, text, HTML or log
file under results/ and profile/, nor in the rendered reports (RESULTS.md, SWEEP.md, PROFILES.md).
Paths there are relative to the repository (spec.files.repo_relative), or named ($TMPDIR/..., ~/...,
spec.files.shown_path). Left out, and why: binary reports (.nsys-rep, .ncu-rep, .png, .gz),
whose bytes are the tools'.
dev/relativize_evidence.py rewrites older evidence mechanically."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from spec.files import ROOT, repo_relative, shown_path

TEXT = (".json", ".csv", ".md", ".txt", ".html", ".log")
REPORTS = ("RESULTS.md", "SWEEP.md", "PROFILES.md")


def machine_paths() -> re.Pattern:
    """An absolute path of a machine: a home folder (/home/u/, /Users/u/, /root/, this one's), a temp
    folder (/tmp/, /var/tmp/, /var/folders/, this one's, or ../../tmp/ climbing out to one), this
    checkout, or any absolute path that runs into one of this repository's own top folders
    (another machine's checkout)."""
    here = {str(ROOT), os.path.realpath(ROOT), str(Path.home()), tempfile.gettempdir()} - {"", "/"}
    alternatives = [re.escape(p.rstrip("/")) + r"(?![\w.-])" for p in sorted(here, key=len, reverse=True)]
    alternatives += [r"/(?:home|Users)/[^/\s\"'`]+/", r"/root/", r"/tmp/", r"/var/tmp/", r"/var/folders/",
                     r"/private/var/", r"(?:\.\./)+(?:tmp|var|home|Users|root)/",
                     r"(?:/[\w.-]+)+/(?:results|build|profile|harness|templates)/"]
    return re.compile(r"(?<![\w$~.:/-])(?:" + "|".join(alternatives) + ")")


def evidence_files() -> list[Path]:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "results", "profile", *REPORTS],
                             capture_output=True, check=True, timeout=60).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the committed files cannot be listed")
    return [ROOT / f for f in out.split("\0") if f and (f in REPORTS or f.endswith(TEXT))]


def test_the_pattern_finds_machine_paths_and_passes_the_others():
    found = machine_paths()
    for bad in (str(ROOT / "results" / "x.json"), "/home/ann/mlp-gate/results/run.json", "/root/out/tiled/h256_b128",
                "--out /work/main/results/gate/x", "/tmp/noprof/fused.csv", "../../../../tmp/noprof/fused.csv",
                "/Users/bo/x", tempfile.gettempdir() + "/x", str(Path.home()) + "/x", "/srv/ci/build/mlp_train"):
        assert found.search(bad), bad
    for good in ("results/transformer/weights", "$TMPDIR/noprof/fused.csv", "~/out/x", "build/mlp_train",
                 "/usr/local/cuda/bin/compute-sanitizer", "https://github.com/o/r/blob/main/results/run.json",
                 "cuda/paths/kernel_path.h", "0.388 ms / 54.125 ms"):
        assert not found.search(good), good


def test_no_committed_evidence_names_a_machine_path():
    found = machine_paths()
    bad = []
    for path in evidence_files():
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            m = found.search(line)
            if m:
                bad.append(f"{path.relative_to(ROOT)}:{n}: {line[max(0, m.start() - 40):m.end() + 40].strip()}")
    assert not bad, (f"{len(bad)} line(s) name a machine's path (python dev/relativize_evidence.py rewrites "
                     f"them; the writers use spec.files.repo_relative/shown_path):\n" + "\n".join(bad[:20]))


def test_repo_relative_and_shown_path():
    assert repo_relative(ROOT / "results" / "run.json") == "results/run.json" and repo_relative(ROOT) == "."
    assert repo_relative("results/run.json") == "results/run.json"
    tmp = Path(tempfile.gettempdir()) / "mlp-x" / "a.csv"
    assert repo_relative(tmp) == str(tmp)                       # a command still finds it
    assert shown_path(tmp) == "$TMPDIR/mlp-x/a.csv" and shown_path(ROOT / "data") == "data"
    assert shown_path(Path.home() / "out" / "x") == "~/out/x" or str(Path.home()) == "/"
    assert shown_path("/usr/local/cuda/bin/nvcc") == "/usr/local/cuda/bin/nvcc"


def test_the_transformer_driver_hands_the_binary_repository_relative_paths():
    """vit_forward records the --weights it was given in check_*.json, predict_*.json and time_ours.json
    (results/transformer.json and RESULTS.md then quote it): the driver gives it relative to the
    repository, where the binary runs."""
    from harness.transformer import run as vit
    assert vit.weights_args(vit.WEIGHTS) == ["--weights", "results/transformer/weights"]
    assert vit._arg(ROOT / "data") == "data" and vit._arg(7) == "7"
