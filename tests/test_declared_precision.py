"""CPU: submission.h's optional mlp_precision() and how the gate reads it
(cuda/common/declared_precision.h): a program linked without a definition gets FP32 by default
(the weak reference is null), one linked with a definition gets its value, and a value out of
range is one line naming it."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from spec.files import BUILD_DIR, ROOT

CXX = ["g++", "-O2", "-std=c++17", "-Wall", "-Wextra", "-Werror", f"-I{ROOT / 'cuda'}",
       f"-I{ROOT / 'cuda' / 'contract'}", "-isystem", "/usr/local/cuda/include"]
READER = [str(ROOT / "cuda" / "common" / "declared_precision.cpp"), str(ROOT / "cuda" / "common" / "common.cpp")]
MAIN = r"""
#include <cstdio>
#include "common/common.h"
#include "common/declared_precision.h"
int main() {
  try {
    const mlp::DeclaredPrecision d = mlp::declared_precision();
    std::printf("%s %d\n", mlp::precision_name(d.precision), d.declared ? 1 : 0);
  } catch (const UserError& e) {
    std::printf("error: %s\n", e.what());
    return 2;
  }
}
"""


def test_mlp_host_links_no_definition_and_reads_fp32():
    """build/mlp_host links the reader and no submission: the weak default, fp32."""
    res = subprocess.run([str(BUILD_DIR / "mlp_host"), "precision"], capture_output=True, text=True, check=True)
    doc = json.loads(res.stdout)
    assert doc["precision"] == "fp32" and doc["declared"] is False and doc["unit_roundoff"] == 2.0 ** -24, doc


@pytest.fixture(scope="module")
def linked(tmp_path_factory):
    """link(definition or None) -> the tiny program's (exit status, stdout)."""
    if not shutil.which("g++"):
        pytest.skip("no g++")
    folder = tmp_path_factory.mktemp("declared")
    (folder / "main.cpp").write_text(MAIN)
    objs = []   # the program and the reader, compiled once; each case compiles its definition and links
    for src in [str(folder / "main.cpp"), *READER]:
        objs.append(str(folder / (Path(src).stem + ".o")))
        subprocess.run([*CXX, "-c", src, "-o", objs[-1]], check=True)

    def link(definition: str | None, name: str):
        srcs = list(objs)
        if definition is not None:
            (folder / f"{name}.cpp").write_text('#include "submission.h"\n' + definition + "\n")
            srcs.append(str(folder / f"{name}.cpp"))
        subprocess.run([*CXX, *srcs, "-o", str(folder / name)], check=True)
        res = subprocess.run([str(folder / name)], capture_output=True, text=True)
        return res.returncode, res.stdout.strip()
    return link


def test_no_definition_is_fp32_by_default(linked):
    assert linked(None, "none") == (0, "fp32 0")


@pytest.mark.parametrize("value, want", [("MLP_PRECISION_FP32", "fp32 1"), ("MLP_PRECISION_TF32", "tf32 1"),
                                         ("MLP_PRECISION_BF16", "bf16 1")])
def test_a_definition_replaces_the_default(linked, value, want):
    # submission.h declares it extern "C": a definition without extern "C" of its own still has C linkage.
    assert linked(f"int mlp_precision(void) {{ return {value}; }}", value.lower()) == (0, want)


@pytest.mark.parametrize("value", [3, -1, 1 << 30])
def test_a_value_out_of_range_is_one_line_naming_it(linked, value):
    rc, out = linked(f'extern "C" int mlp_precision(void) {{ return {value}; }}', f"bad{value & 0xff}")
    assert rc == 2 and out.count("\n") == 0, out
    assert f"mlp_precision() returned {value}, which is no precision" in out and "MLP_PRECISION_TF32 (1)" in out, out


@pytest.fixture(scope="module")
def course_built(tmp_path_factory, built):
    """build(path) -> the submission's mlp_train, built as harness/gate/course.py builds a course's
    (from build/'s objects, made up to date first)."""
    built("mlp_train")
    from pathlib import Path

    from harness.gate import course

    def build(src: Path):
        binary, error = course.build_one(course.Submission(src, course.name_of(src)), "sm_90", BUILD_DIR)
        assert binary is not None, error
        return binary
    return build


def run_without_gpu(binary):
    """Without a GPU to see (CUDA_VISIBLE_DEVICES empty), so that the run stops at the device on any machine."""
    import os
    return subprocess.run([str(binary), "--data", "data", "--quick", "--paths", "submission"], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=120)


def test_mlp_train_reads_a_declaration_linked_as_a_course_links_it(course_built):
    res = run_without_gpu(course_built(ROOT / "tests" / "submissions" / "tf32_products.cu"))
    assert res.returncode == 3, res.stderr   # no device: after the declaration was read
    assert "submission: tf32, declared by mlp_precision(): cases 1, 2, 4 and 9 at its tolerances (u_p = 2^-11)" \
        in res.stderr, res.stderr
    res = run_without_gpu(course_built(ROOT / "tests" / "submissions" / "naive.cu"))
    assert res.returncode == 3, res.stderr
    assert not [ln for ln in res.stderr.splitlines() if ln.startswith("submission:")], res.stderr   # fp32: nothing said


def test_mlp_train_refuses_a_declaration_out_of_range_in_one_line(course_built, tmp_path):
    src = tmp_path / "bad_precision.cu"
    shutil.copy(ROOT / "tests" / "submissions" / "naive_base.cuh", tmp_path)
    src.write_text('#define NAIVE_PRECISION 7\n#include "naive_base.cuh"\n')
    res = run_without_gpu(course_built(src))
    assert res.returncode == 2 and res.stdout == "", (res.stdout, res.stderr)
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("mlp_train: error: the submission's mlp_precision() returned 7"), lines
