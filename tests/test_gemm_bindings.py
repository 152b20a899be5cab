"""Each stepwise GEMM kernel in cuda/kernels/stepwise.cuh takes GemmArgs<Op> of the Op whose kName is the
kernel's own name (the launch reports errors under kName, and profiles list the kernel's name),
and every Op has exactly one kernel."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNELS = ROOT / "cuda" / "kernels" / "stepwise.cuh"


def test_each_gemm_kernel_is_named_as_its_op():
    text = KERNELS.read_text()
    ops = dict(re.findall(r'struct (Op\w+) : GemmOp<[^>]*> \{\s*static constexpr const char\* kName = "(\w+)";', text))
    kernels = re.findall(r"__global__ void (\w+)\(GemmArgs<(Op\w+)> a\)", text)
    assert len(ops) == 9 and len(kernels) == 9, (ops, kernels)
    assert sorted(op for _, op in kernels) == sorted(ops)
    for name, op in kernels:
        assert ops[op] == name, f"{name} takes GemmArgs<{op}>, whose kName is {ops[op]!r}"


def test_launches_name_no_tile():
    """The launches in cuda/paths/stepwise_path.cu pass only the kernel: the tile and (M, N, K) come from its Op."""
    text = (ROOT / "cuda" / "paths" / "stepwise_path.cu").read_text()
    launches = re.findall(r"\bgemm\((k_\w+), s, \w+, st,", text)
    assert len(launches) == 11
    assert not re.search(r"gemm<Tile", text)
