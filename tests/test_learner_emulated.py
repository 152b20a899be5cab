"""CPU: the submissions of tests/submissions/ run on the CPU through cuda/transformer/emu/'s emulation of
the CUDA runtime (tests/emu/learner_emu.cpp, built once per submission from a copy of the sources
whose `kernel<<<...>>>(...)` launches are rewritten into the emulation's), checked against float64
as the gate's cases 1-5, 9 and 10 check them. The learner-style submissions (tiled16, tiled32,
regtile, launch_heavy) and naive.cu pass; launch_heavy computes tiled16's bits with 222 more
launches a recipe epoch; every defect of the learner-style headers, and naive_base.cuh's that the
emulation can run, fails each case of its table entry (harness/gate/course_gen.py defects_of) that
the emulation stands for. The emulation cannot stand for cases 6-8 and 11-13 (a device's training,
memcheck, racecheck, the stream contract): a defect that only those catch must still make the
emulation fail something (a missing barrier gives wrong numbers when a block's threads run one after
another between barriers, as here); tests/test_gpu_course.py gates them all on a GPU."""
from __future__ import annotations

import atexit
import functools
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.gate import course_gen as cg
from spec.files import ROOT

EMU = ROOT / "tests" / "emu" / "learner_emu.cpp"
EMULATED_CASES = {1, 2, 3, 4, 5, 9, 10}
CHECKS = 16   # learner_emu.cpp's check lines when nothing writes into a guard band
RECIPE_TAIL = 6000 % 128   # the recipe epoch's short last batch: 112 rows
CORRECT = ["naive.cu", "tiled16.cu", "tiled32.cu", "regtile.cu", "launch_heavy.cu"]
# naive_base.cuh's defects the emulation runs (not: a spin, which never ends; a wild address or a
# literal stride that reads past the host buffers; NaN at step 3, which case 9's epochs never reach;
# the stream contract's, which a CPU has no stream for).
NAIVE = ["MUTANT_NO_RELU_MASK", "MUTANT_FLIPPED_UPDATE", "MUTANT_NO_MAX_SHIFT", "MUTANT_DB_WRONG_AXIS",
         "MUTANT_SILENT_FORWARD", "MUTANT_FROZEN_B2", "MUTANT_TAIL_MEAN", "MUTANT_FORWARD_OVERRUN",
         "MUTANT_FIXED_HYPERPARAMS", "MUTANT_RACY_TILE", "MUTANT_WARP_RACE"]
# Each learner-style defect on a file of its base; tiled_base.cuh's at both tile sizes (784, the
# recipe's input width, is a multiple of 16, not of 32).
DEFECTS = ([("tiled16.cu", m) for m in (*cg.defects_of("learner_common.cuh"), *cg.defects_of("tiled_base.cuh"))]
           + [("tiled32.cu", m) for m in cg.defects_of("tiled_base.cuh")]
           + [("regtile.cu", m) for m in cg.defects_of("regtile_base.cuh")]
           + [("naive.cu", m) for m in NAIVE])
TABLE = {**cg.BASES["tiled"].defects(), **cg.BASES["regtile"].defects(), **cg.BASES["naive"].defects()}


# ------------------------------------------------------------------------------------- the rewrite
def _back_to_open(text: str, k: int) -> int:
    """The index of the '<' that opens the template argument list whose '>' is at k."""
    depth = 0
    while True:
        depth += (text[k] == ">") - (text[k] == "<")
        if depth == 0:
            return k
        k -= 1


def _top_level(s: str) -> list[str]:
    """s split at the commas outside any bracket."""
    parts, depth, cur = [], 0, ""
    for c in s:
        depth += (c in "([{") - (c in ")]}")
        if c == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += c
    return parts + [cur.strip()]


def rewrite_launches(text: str) -> str:
    """Every `kernel<<<grid, block[, smem[, stream]]>>>(args)` as
    `EMU_LAUNCH((kernel), grid, block, smem, stream, args)` (smem 0 and stream nullptr when absent)."""
    out, i = [], 0
    while (j := text.find("<<<", i)) >= 0:
        k = _back_to_open(text, j - 1) if text[j - 1] == ">" else j
        start = re.search(r"[A-Za-z_][\w:]*$", text[:k]).start()
        end = text.index(">>>", j)
        config = _top_level(text[j + 3:end])
        assert 2 <= len(config) <= 4, config
        config += ["0", "nullptr"][len(config) - 2:]
        assert text[end + 3] == "(", text[end:end + 40]
        depth, q = 0, end + 3
        while True:
            depth += (text[q] == "(") - (text[q] == ")")
            if depth == 0:
                break
            q += 1
        out.append(text[i:start] + f"EMU_LAUNCH(({text[start:j]}), {', '.join(config)}, {text[end + 4:q]})")
        i = q + 1
    return "".join(out) + text[i:]


def test_the_rewrite_turns_each_launch_into_the_emulations():
    src = ("k<<<g, b>>>(x, f(y, z));\nns::t<A, B<C>><<<dim3(p, q), 256, 0, ON(st)>>>(1);\n"
           "if (t == 3) p<<<1, 1, 0, s>>>(a + t);\n")
    assert rewrite_launches(src) == ("EMU_LAUNCH((k), g, b, 0, nullptr, x, f(y, z));\n"
                                     "EMU_LAUNCH((ns::t<A, B<C>>), dim3(p, q), 256, 0, ON(st), 1);\n"
                                     "if (t == 3) EMU_LAUNCH((p), 1, 1, 0, s, a + t);\n")
    for f in sorted(cg.SUBMISSIONS.iterdir()):
        if f.suffix in (".cu", ".cuh"):
            assert "<<<" not in rewrite_launches(f.read_text()), f.name


# ----------------------------------------------------------------------------------- build and run
@dataclass(frozen=True)
class Emulated:
    returncode: int
    stdout: str
    failed: frozenset   # the cases with a FAIL line
    checks: int         # ok and FAIL lines
    launches: int       # a recipe epoch's launches
    outputs_hash: str


@functools.lru_cache(maxsize=1)
def _sources() -> Path:
    """tests/submissions/' *.cu and *.cuh with their launches rewritten, in a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="learner-emu-"))
    atexit.register(shutil.rmtree, folder, True)
    for f in cg.SUBMISSIONS.iterdir():
        if f.suffix in (".cu", ".cuh"):
            (folder / f.name).write_text(rewrite_launches(f.read_text()))
    return folder


@functools.lru_cache(maxsize=None)
def emulate(source: str, *defines: str) -> Emulated:
    if not shutil.which("g++"):
        pytest.skip("no g++")
    src = _sources()
    exe = src / ("emu-" + "-".join([source.replace(".", "_"), *defines]))
    # -Wno-unused-*, -Wno-volatile: what nvcc does not warn about in device code (a mutant leaves a variable
    # unused; naive_base.cuh's warp reduction adds into volatile shared memory, deprecated in C++20)
    made = subprocess.run(["g++", "-O2", "-std=c++20", "-pthread", "-DVIT_EMULATE", "-Wall", "-Wextra", "-Werror",
                           "-Wno-unknown-pragmas", "-Wno-sign-compare", "-Wno-unused-parameter", "-Wno-unused-function",
                           "-Wno-unused-variable", "-Wno-unused-but-set-variable", "-Wno-volatile",
                           f"-I{ROOT / 'cuda/transformer/emu'}", f"-I{ROOT / 'cuda/contract'}", f"-I{src}",
                           f'-DLEARNER_SOURCE="{source}"', *[f"-D{d}" for d in defines], str(EMU), "-o", str(exe)],
                          capture_output=True, text=True, timeout=600)
    assert made.returncode == 0, made.stderr[-3000:]
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=600)
    rows = re.findall(r"^case (\d+) .*?: (ok|FAIL)", res.stdout, re.M)
    launches = re.search(r"^launches per epoch .*: (-?\d+)$", res.stdout, re.M)
    digest = re.search(r"^outputs hash: (\w+)$", res.stdout, re.M)
    return Emulated(res.returncode, res.stdout + res.stderr, frozenset(int(c) for c, v in rows if v == "FAIL"),
                    len(rows), int(launches.group(1)) if launches else -1, digest.group(1) if digest else "")


@pytest.mark.slow
@pytest.mark.parametrize("source", CORRECT)
def test_a_correct_submission_passes_every_emulated_check(source):
    r = emulate(source)
    print(r.stdout)
    assert r.returncode == 0 and r.checks == CHECKS and not r.failed, r.stdout


@pytest.mark.slow
def test_launch_heavy_computes_tiled16s_bits_with_a_launch_pair_a_tail_row():
    base, heavy = emulate("tiled16.cu"), emulate("launch_heavy.cu")
    assert base.returncode == heavy.returncode == 0, heavy.stdout
    assert heavy.outputs_hash == base.outputs_hash != ""
    # 47 steps of gather, 2 forward GEMMs, loss, 3 GEMMs and 2 bias sums, step; then the tail's forward
    # as 2 launches a row instead of 2
    assert base.launches == 47 * 10
    assert heavy.launches - base.launches == 2 * RECIPE_TAIL - 2 == 222


@pytest.mark.slow
@pytest.mark.parametrize("source, macro", DEFECTS, ids=[f"{s[:-3]}-{m}" for s, m in DEFECTS])
def test_a_defect_fails_each_emulated_case_its_entry_names(source, macro):
    must = set(TABLE[macro].must_fail)
    r = emulate(source, macro)
    print(r.stdout)
    assert r.returncode == 1 and r.checks >= CHECKS, r.stdout
    assert must & EMULATED_CASES <= r.failed, (macro, sorted(must), sorted(r.failed))
