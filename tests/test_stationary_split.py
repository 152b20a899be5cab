"""CPU: the stationary kernel's split (issue 24, item 4). cuda/kernels/ holds only the shipped form,
in files of at most 600 lines that each say what they define; the variant bits live in
dev/stationary/; the gpu_session stage `stationary-check` makes build/stationary_epoch and runs its
bitwise check of the shipped kernel against dev's shipped-bit build; the Makefile target compiles."""
from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from harness import gpu_session
from spec.files import ROOT

SHIPPED = [ROOT / "cuda" / "kernels" / "stationary.cuh", *sorted((ROOT / "cuda" / "kernels" / "stationary").glob("*.cuh"))]


def test_the_shipped_kernel_files_are_short_and_say_what_they_define():
    assert len(SHIPPED) >= 5
    for path in SHIPPED:
        lines = path.read_text().splitlines()
        rel = path.relative_to(ROOT).as_posix()
        assert len(lines) <= 600, f"{rel}: {len(lines)} lines"
        assert lines[0].startswith(f"// {rel} — "), f"{rel}: its first comment names another file"


def test_cuda_kernels_has_no_variant_bits():
    for path in [*SHIPPED, ROOT / "cuda" / "paths" / "stationary_path.cuh", ROOT / "cuda" / "paths" / "stationary_path.cu"]:
        text = path.read_text()
        assert not re.search(r"\bkV[A-Z]\w*|\bkShippedV\b|WSTAT_MARK", text), path
    # The variants and their bits are dev's.
    ops = (ROOT / "dev" / "stationary" / "variant_ops.cuh").read_text()
    assert "constexpr int kShippedV" in ops and "constexpr int kVMma" in ops
    assert "k_stationary_variant(Args a)" in (ROOT / "dev" / "stationary" / "variant_kernel.cuh").read_text()


def test_the_stationary_check_stage_follows_phases_by_default():
    names = [s.name for s in gpu_session.all_stages()]
    assert "stationary-check" in gpu_session.STAGE_NAMES
    assert names.index("stationary-check") == names.index("phases") + 1
    assert gpu_session.DEFAULT_STAGES.index("stationary-check") == gpu_session.DEFAULT_STAGES.index("phases") + 1
    stage = next(s for s in gpu_session.all_stages() if s.name == "stationary-check")
    assert stage.limit_s <= 180 and "stationary_check()" in " ".join(stage.argv)


def test_stationary_check_makes_the_target_then_runs_the_check(tmp_path, monkeypatch):
    build = tmp_path / "build"
    build.mkdir()
    (build / "build_info.json").write_text(json.dumps({"arch": "sm_90", "submission": None, "accumulate": "double"}))
    calls, make_status = [], [0]

    def fake_run(cmd, cwd=None):
        calls.append(list(cmd))
        return subprocess.CompletedProcess(cmd, make_status[0] if len(calls) == 1 else 0)

    monkeypatch.setattr(gpu_session.subprocess, "run", fake_run)
    assert gpu_session.stationary_check(build, tmp_path / "data") == 0
    make, check = calls
    assert make[0] == "make" and "ARCH=sm_90" in make and make[-1].endswith("build/stationary_epoch")
    assert check[0].endswith("build/stationary_epoch") and check[1:3] == ["--check-shipped", "--data"]
    calls.clear()
    make_status[0] = 2
    assert gpu_session.stationary_check(build, tmp_path / "data") == 2 and len(calls) == 1


@pytest.mark.slow
def test_the_makefile_target_compiles(tmp_path):
    """make BUILD=<tmp> ARCH=sm_90 <tmp>/stationary_epoch: the dev harness (every variant, the check)
    compiles with the project's NVCCFLAGS (about 30 s)."""
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc not on PATH")
    build = tmp_path / "build"
    res = subprocess.run(["make", "--no-print-directory", "-C", str(ROOT), f"BUILD={build}", "ARCH=sm_90",
                          f"{build}/stationary_epoch"], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert (build / "stationary_epoch").is_file()
    all_rule = re.search(r"^all:(.*)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    assert "stationary_epoch" not in all_rule
