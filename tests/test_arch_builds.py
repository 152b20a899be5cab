"""Issue 38's fallback: the objects whose code depends on the architecture (the GEMM engine, whose
kernels have bodies only in an sm_90 build's sm_90a code, and the tiled path that calls it) compile
for the T4's and L4's architectures, where the engine refuses every problem and the tiled paths keep
mma.sync or SIMT (tests/test_portability.py checks the fit those devices get). Each build goes to a
folder of its own, so build/ is untouched. Slow: two nvcc compiles an architecture."""
from __future__ import annotations

import subprocess

import pytest

from spec.files import ROOT

OBJECTS = ("obj/kernels/gemm/sm90_engine.o", "obj/paths/tiled_path.o")


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["sm_75", "sm_89"])
def test_the_engine_and_the_tiled_path_compile_for_an_older_architecture(tmp_path, arch):
    build = tmp_path / "build"
    res = subprocess.run(["make", "-s", f"BUILD={build}", f"ARCH={arch}", *[str(build / o) for o in OBJECTS]],
                         cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    for o in OBJECTS:
        assert (build / o).stat().st_size > 0
    assert f"ARCH={arch}" in (build / "config.stamp").read_text()


@pytest.mark.parametrize("arch, sm90a", [("sm_75", False), ("sm_89", False), ("sm_90", True)])
def test_only_an_sm_90_build_compiles_the_engine_as_sm_90a(tmp_path, arch, sm90a):
    """The engine's kernels have bodies only under MLP_GEMM_SM90A with sm_90a code (the Makefile's
    GEMM_GENCODE); `make -n` prints the compile command without running it."""
    build = tmp_path / "build"
    res = subprocess.run(["make", "-n", f"BUILD={build}", f"ARCH={arch}", str(build / OBJECTS[0])],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    cmd = [line for line in res.stdout.splitlines() if "sm90_engine.cu" in line]
    assert len(cmd) == 1, res.stdout
    assert ("-DMLP_GEMM_SM90A=1" in cmd[0]) == sm90a and ("arch=compute_90a,code=sm_90a" in cmd[0]) == sm90a, cmd[0]
