"""The C++ owner of the parameter layout (cuda/contract/model.h, with submission.h's status names) and the
Python owner (spec/layout.py) agree: a tiny host program compiled with g++ prints the offsets and
workspace sizes for several shapes and the status names, and each is compared with spec.layout.
The recipe shape of both (and recipe.toml's) must be the same too."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from spec import layout
from spec.files import load_toml

ROOT = Path(__file__).resolve().parent.parent

# The recipe, both ends of the sweeps' hidden widths, odd and degenerate sizes, and one large
# enough that in·hidden overflows 32 bits (the offsets are size_t in C++).
SHAPES = [layout.RECIPE_SHAPE, (784, 64, 10), (784, 8192, 10), (3, 5, 7), (1, 1, 1), (785, 257, 11),
          (65536, 65537, 16)]
BATCHES = [1, 112, 128, 4097]

PROBE = r"""
#include <cstdio>
#include <cstdlib>
#include "submission.h"  // model.h's layout and the status names, as a submission sees them
int main(int argc, char** argv) {
  std::printf("recipe %d %d %d %d\n", mlp::kRecipeShape.in, mlp::kRecipeShape.hidden, mlp::kRecipeShape.out,
              mlp::kRecipeBatch);
  for (int st = 0; st <= MLP_ERR_CUDA; ++st) std::printf("status %d %s\n", st, mlp_status_name(st));
  for (int a = 1; a + 3 < argc; a += 4) {
    MlpShape s{std::atoi(argv[a]), std::atoi(argv[a + 1]), std::atoi(argv[a + 2])};
    int batch = std::atoi(argv[a + 3]);
    MlpOffsets o = mlp_offsets(s);
    std::printf("shape %d %d %d %d offsets %zu %zu %zu %zu %zu workspace %zu\n", s.in, s.hidden, s.out, batch,
                o.w1, o.b1, o.w2, o.b2, o.total, mlp_workspace_floats(s, batch));
  }
  return 0;
}
"""


def _cuda_include() -> Path:
    """The CUDA headers' folder, found as the Makefile finds it (submission.h needs cudaStream_t)."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return Path(os.environ[var]) / "include"
    nvcc = shutil.which("nvcc")
    if nvcc and (Path(nvcc).resolve().parent.parent / "include" / "cuda_runtime.h").exists():
        return Path(nvcc).resolve().parent.parent / "include"
    return Path("/usr/local/cuda/include")


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> dict:
    """The probe's output, parsed: recipe shape and batch, status names, and per (shape, batch)
    the offsets and the workspace size."""
    cxx = os.environ.get("CXX", "g++")
    inc = _cuda_include()
    if shutil.which(cxx) is None:
        pytest.skip(f"no C++ compiler {cxx!r} on PATH")
    if not (inc / "cuda_runtime.h").exists():
        pytest.skip(f"no CUDA headers at {inc} (set CUDA_HOME)")
    tmp = tmp_path_factory.mktemp("layout")
    src, exe = tmp / "probe.cpp", tmp / "probe"
    src.write_text(PROBE)
    subprocess.run([cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-I", str(ROOT / "cuda" / "contract"),
                    "-isystem", str(inc), str(src), "-o", str(exe)], check=True)
    args = [str(x) for shape in SHAPES for batch in BATCHES for x in (*shape, batch)]
    out = subprocess.run([str(exe), *args], capture_output=True, text=True, check=True).stdout
    got = {"status": {}, "shapes": {}}
    for line in out.splitlines():
        f = line.split()
        if f[0] == "recipe":
            got["recipe"] = tuple(int(x) for x in f[1:4])
            got["batch"] = int(f[4])
        elif f[0] == "status":
            got["status"][int(f[1])] = " ".join(f[2:])
        elif f[0] == "shape":
            key = (tuple(int(x) for x in f[1:4]), int(f[4]))
            got["shapes"][key] = (tuple(int(x) for x in f[6:11]), int(f[12]))
    return got


def test_offsets_and_workspace_agree(probe):
    assert len(probe["shapes"]) == len(SHAPES) * len(BATCHES)
    for shape in SHAPES:
        for batch in BATCHES:
            offsets, workspace = probe["shapes"][(tuple(shape), batch)]
            assert offsets == tuple(layout.offsets(shape)), (shape, batch)
            assert workspace == layout.workspace_floats(shape, batch), (shape, batch)


def test_recipe_shape_agrees(probe):
    toml = load_toml(ROOT / "recipe.toml")
    assert probe["recipe"] == tuple(layout.RECIPE_SHAPE)
    assert probe["recipe"] == (toml["input_dim"], toml["hidden_dim"], toml["output_dim"])
    assert probe["batch"] == toml["batch"]


def test_status_names_agree(probe):
    assert tuple(probe["status"][i] for i in sorted(probe["status"])) == tuple(layout.STATUS_NAMES)


def test_model_h_is_plain_c(tmp_path):
    """model.h is part of the learners' contract: it must compile as C, without CUDA headers."""
    cc = os.environ.get("CC", "gcc")
    if shutil.which(cc) is None:
        pytest.skip(f"no C compiler {cc!r} on PATH")
    src = tmp_path / "c.c"
    src.write_text('#include "model.h"\nint main(void) { MlpShape s = {784, 256, 10};\n'
                   '  return mlp_workspace_floats(s, 128) == 372106 && mlp_offsets(s).total == 203530 ? 0 : 1; }\n')
    subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-I", str(ROOT / "cuda" / "contract"), str(src),
                    "-o", str(tmp_path / "c")], check=True)
    assert subprocess.run([str(tmp_path / "c")]).returncode == 0
