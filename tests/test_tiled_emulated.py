"""The tiled path's kernels (cuda/kernels/tiled.cuh) on the CPU through cuda/transformer/emu/'s
emulation of the CUDA runtime, against float64 (tests/emu/tiled_emu.cpp: every tile shape, split-K
and its ticket reset, float4 and scalar loads, row gathers, the head kernels' splits, row blocks
and dZ chunks); and the same check against deliberately broken copies of the kernels, each of
which it must fail."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from spec.files import BUILD_DIR, ROOT

KERNELS = ROOT / "cuda" / "kernels"


def build(target, includes: str = "") -> None:
    args = ["make", "-s", f"BUILD={target.parent}", str(target)]
    if includes:
        args.append(f"TILED_EMU_INCLUDES=-I{includes}")
    subprocess.run(args, cwd=ROOT, check=True, capture_output=True, text=True, timeout=600)


def test_the_kernels_match_float64_on_the_emulated_device():
    exe = BUILD_DIR / "tiled_emu"
    build(exe)
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    print(out.stdout)
    lines = [ln for ln in out.stdout.splitlines() if " ok " in ln or " FAIL " in ln]
    assert out.returncode == 0 and len(lines) == 40 and all(" ok " in ln for ln in lines), out.stdout


# Each: (what it breaks, the text replaced, its replacement) in cuda/kernels/tiled.cuh.
MUTANTS = [
    ("split-K sums skip split 0", "for (unsigned z = 0; z < gridDim.z; ++z)", "for (unsigned z = 1; z < gridDim.z; ++z)"),
    ("split-K tickets never reset", "if (tid == 0) a.tickets[tile] = 0;", "(void)0;"),
    ("the ReLU mask lets zeros through", "d = h[u] > 0.f ? d : 0.f;", "d = h[u] >= 0.f ? d : 0.f;"),
    ("every row takes the first row's label", "const int y = __ldg(labels_all + rows[gr]);",
     "const int y = __ldg(labels_all + rows[0]);"),
    ("the gather ignored in the forward", "(a.a_rows ? a.a_rows[gm < a.M ? gm : 0] : gm)", "(gm)"),
]


@pytest.mark.slow
@pytest.mark.parametrize("what,old,new", MUTANTS, ids=[m[0] for m in MUTANTS])
def test_each_broken_copy_fails_the_check(tmp_path, what, old, new):
    src = (KERNELS / "tiled.cuh").read_text()
    assert src.count(old) == 1, f"the mutant's text is gone from tiled.cuh: {old!r}"
    (tmp_path / "inc" / "kernels").mkdir(parents=True)
    (tmp_path / "inc" / "kernels" / "tiled.cuh").write_text(src.replace(old, new))
    shutil.copy(KERNELS / "tiled_plan.h", tmp_path / "inc" / "kernels" / "tiled_plan.h")
    exe = tmp_path / "build" / "tiled_emu"
    build(exe, str(tmp_path / "inc"))
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 1 and " FAIL " in out.stdout, f"{what}: not caught\n{out.stdout}"
