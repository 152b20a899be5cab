"""Every kernel's registers and static shared memory against each architecture's limits
(harness/studies/arch_resources.py), built for every architecture of the table this nvcc supports; and
the checker itself on synthetic reports that break each limit."""
from __future__ import annotations

import shutil
from collections import defaultdict

import pytest

from harness.studies import arch_resources as ar
from harness.studies.launch_sites import launch_block_sizes

KB = 1024


def kernel(arch="sm_90", regs=32, threads=256, smem=0, **kw) -> ar.Kernel:
    return ar.Kernel(arch=arch, mangled="_Z1kv", name="void k()", registers=regs, smem_static=smem,
                     threads=threads, threads_from=kw.pop("threads_from", "launch bounds"), **kw)


# ---- the table ---------------------------------------------------------------------------------
def test_table_has_every_architecture_of_the_issue():
    assert list(ar.ARCHS) == ["sm_75", "sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]


@pytest.mark.parametrize("arch,per_sm,optin,threads_sm,blocks", [
    ("sm_75", 64, 64, 1024, 16), ("sm_80", 164, 163, 2048, 32), ("sm_86", 100, 99, 1536, 16),
    ("sm_89", 100, 99, 1536, 24), ("sm_90", 228, 227, 2048, 32), ("sm_100", 228, 227, 2048, 32),
    ("sm_120", 100, 99, 1536, 24)])
def test_table_rows(arch, per_sm, optin, threads_sm, blocks):
    lim = ar.ARCHS[arch]
    assert (lim.smem_per_sm, lim.smem_per_block_optin) == (per_sm * KB, optin * KB)
    assert (lim.max_threads_per_sm, lim.max_blocks_per_sm) == (threads_sm, blocks)
    # The opt-in maximum is the SM's shared memory less the system's per-block reserve.
    assert lim.smem_per_block_optin + lim.reserved_smem_per_block == lim.smem_per_sm
    assert lim.clusters == (int(arch[3:]) >= 90)
    assert (lim.max_regs_per_thread, lim.regs_per_block, lim.regs_per_sm) == (255, 64 * KB, 64 * KB)
    assert (lim.smem_per_block_static, lim.max_threads_per_block) == (48 * KB, 1024)
    assert "Technical Specifications per Compute Capability" in lim.source and "CUDA 13" in lim.source


# ---- the checker on synthetic input ------------------------------------------------------------
SYNTHETIC_PTXAS = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z4finev' for 'sm_86'
ptxas info    : Function properties for _Z4finev
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 32 registers, used 1 barriers, 2048 bytes smem, 376 bytes cmem[0]
ptxas info    : Compile time = 1.0 ms
ptxas info    : Function properties for _Z6helperv
    64 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads
ptxas info    : Compiling entry function '_Z8manyregsv' for 'sm_86'
ptxas info    : Function properties for _Z8manyregsv
    16 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 255 registers, used 0 barriers, 376 bytes cmem[0]
ptxas info    : Compiling entry function '_Z7bigsmemv' for 'sm_86'
ptxas info    : Function properties for _Z7bigsmemv
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 50000 bytes smem, 376 bytes cmem[0]
"""

SYNTHETIC_PTX = """\
.visible .entry _Z4finev(
)
{
 ret;
}
.visible .entry _Z8manyregsv(
 .param .u64 p
)
.maxntid 1024, 1, 1
.minnctapersm 1
{
 ret;
}
.visible .entry _Z7bigsmemv(
)
.reqntid 16, 8, 2
{
}
"""


def test_parse_ptxas_report():
    ks = {k.mangled: k for k in ar.parse_ptxas(SYNTHETIC_PTXAS, "cuda/x.cu")}
    assert list(ks) == ["_Z4finev", "_Z8manyregsv", "_Z7bigsmemv"]
    fine, many, big = ks.values()
    assert (fine.arch, fine.registers, fine.smem_static, fine.barriers, fine.source) == ("sm_86", 32, 2048, 1, "cuda/x.cu")
    assert (fine.stack, fine.spill_stores) == (0, 0)  # the callee's 64-byte frame is not its own
    assert (many.registers, many.stack, many.spill_stores, many.spill_loads) == (255, 16, 4, 12)
    assert (big.registers, big.smem_static) == (40, 50000)


def test_parse_ptx_launch_bounds():
    assert ar.parse_ptx_bounds(SYNTHETIC_PTX) == {"_Z8manyregsv": 1024, "_Z7bigsmemv": 256}


def test_checker_flags_a_report_that_exceeds_limits():
    ks = ar.parse_ptxas(SYNTHETIC_PTXAS)
    bounds = ar.parse_ptx_bounds(SYNTHETIC_PTX)
    rows = {}
    for k in ks:
        k.threads = bounds.get(k.mangled, 256)
        rows[k.mangled] = ar.check(k, ar.ARCHS[k.arch])
    assert rows["_Z4finev"].violations == []
    many = rows["_Z8manyregsv"]  # 255 registers x 1024 threads: 261,120 > 65,536 per block
    assert any("registers x 1024 threads" in v for v in many.violations), many.violations
    assert many.max_threads_by_regs == 256 and any("spills" in n for n in many.notes)
    big = rows["_Z7bigsmemv"]  # 50,000 B of static shared memory > 48 KB
    assert any("static shared memory" in v for v in big.violations), big.violations


def test_checker_limits_one_by_one():
    lim = ar.ARCHS["sm_90"]
    assert ar.check(kernel(regs=255, threads=256), lim).violations == []  # 255 x 256 fits exactly
    assert ar.check(kernel(regs=256), lim).violations  # more than 255 per thread
    assert ar.check(kernel(threads=1056), lim).violations  # more than 1024 threads
    assert ar.check(kernel(smem=48 * KB), lim).violations == []
    assert ar.check(kernel(smem=48 * KB + 1), lim).violations
    # 65 registers: 2,080 per warp rounds to 2,304; 32 warps hold 73,728 > 65,536.
    assert ar.check(kernel(regs=65, threads=1024), lim).violations
    assert ar.check(kernel(regs=64, threads=1024), lim).violations == []


def test_dynamic_shared_memory_against_the_opt_in_maximum():
    # The persistent kernels: 216 registers, 256 threads, 100,352 B of dynamic shared memory.
    k = kernel(regs=216, threads=256)
    t4 = ar.check(kernel(arch="sm_75", regs=216), ar.ARCHS["sm_75"], dynamic_smem=100352)
    assert any("opt-in maximum" in v for v in t4.violations) and t4.blocks_per_sm == 0
    l4 = ar.check(k, ar.ARCHS["sm_89"], dynamic_smem=100352)
    assert l4.violations == [] and l4.blocks_per_sm == 1 and any("opt-in" in n for n in l4.notes)
    assert ar.check(k, ar.ARCHS["sm_89"], dynamic_smem=99 * KB + 1).violations


def test_blocks_per_sm():
    h = ar.ARCHS["sm_90"]
    assert ar.blocks_per_sm(h, 64, 256, 0) == 4       # registers: 65,536 / (64 x 256)
    assert ar.blocks_per_sm(h, 16, 256, 0) == 8       # threads: 2,048 / 256
    assert ar.blocks_per_sm(h, 16, 32, 0) == 32       # the block limit
    assert ar.blocks_per_sm(h, 16, 256, 100 * KB) == 2  # (100 KB + 1 KB reserve) twice in 228 KB
    assert ar.blocks_per_sm(ar.ARCHS["sm_75"], 16, 256, 0) == 4  # 1,024 threads per SM


def test_names():
    assert ar.base_name("void mlp::k_colsum<(mlp::Col)0>(int, int, float const*, float*)") == "k_colsum"
    assert ar.base_name("void (anonymous namespace)::k_x<int>(int)") == "k_x"
    assert ar.short_name("void mlp::k_colsum<(mlp::Col)0>(int, float*)") == "mlp::k_colsum<(mlp::Col)0>"


def test_launch_sites(tmp_path):
    (tmp_path / "a.cu").write_text(
        "constexpr int kEw = 256, kCols = 32, kSlices = kEw / kCols;\n"
        "namespace x { constexpr int kT = 128; }\n"
        "void f() {\n"
        "  k_a<<<blocks(n, kEw), kEw, 0, st>>>(n);\n"
        "  k_b<Col::db2><<<g, kCols * kSlices, 0, st>>>(n);\n"
        "  k_c<<<g, dim3(kT, 2)>>>(n);\n"
        "  k_d<<<g, threads_of<T>()>>>(n);\n"
        "  k_a<<<g, 64>>>(n);\n"
        "}\n")
    sizes = launch_block_sizes(tmp_path)
    assert sizes["k_a"] == (256, "a.cu:4")  # the largest of its launch sites
    assert sizes["k_b"][0] == 256 and sizes["k_c"][0] == 256
    assert "k_d" not in sizes  # not an integer expression of constants


def test_bad_input_exits_2(capsys):
    assert ar.main(["--dynamic", "k_persistent_epoch"]) == 2
    assert "KERNEL=BYTES" in capsys.readouterr().err
    if shutil.which("nvcc"):
        assert ar.main(["--arch", "sm_61"]) == 2
        assert "not in the table" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_an_architecture_that_fails_to_compile_is_named(tmp_path):
    (tmp_path / "Makefile").write_text(
        "print-nvcc:\n\t@echo nvcc -O3 -std=c++17 -gencode=arch=compute_90,code=[sm_90,compute_90] -Icuda\n")
    (tmp_path / "cuda").mkdir()
    (tmp_path / "cuda" / "k.cuh").write_text(
        "#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ == 750\n#error no code for 7.5\n#endif\n"
        "__global__ void __launch_bounds__(1024) k_fill(float* x) { x[threadIdx.x] = 1.f; }\n")
    (tmp_path / "cuda" / "k.cu").write_text('#include "k.cuh"\n')
    (tmp_path / "cuda" / "host.cu").write_text("int host_only() { return 1; }\n")
    assert [p.name for p in ar.sources(False, tmp_path / "cuda")] == ["k.cu"]  # via its header
    report = ar.run(["sm_75", "sm_90"], all_sources=False, root=tmp_path)
    assert list(report.compile_errors) == ["sm_75"] and "no code for 7.5" in report.compile_errors["sm_75"][0]
    assert [(r.kernel.arch, ar.base_name(r.kernel.name), r.kernel.threads, r.kernel.threads_from)
            for r in report.rows] == [("sm_90", "k_fill", 1024, "launch bounds")]
    assert any("failed to compile" in f for f in report.failures())


# ---- the real build ----------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_every_kernel_fits_on_every_architecture_nvcc_supports():
    # The translation units that define or include a kernel (--kernels-only): a unit without one has
    # nothing for ptxas to report, and its device pass compiles no code (the sm_75 and sm_90 builds
    # of test_host compile every unit whole).
    report = ar.run(all_sources=False)
    print("\n" + ar.render(report))
    assert report.archs, "nvcc supports none of the table's architectures"
    assert "sm_90" in report.archs  # what the README's build and CI use
    assert report.compile_errors == {}, report.compile_errors
    by_arch = defaultdict(set)
    for r in report.rows:
        by_arch[r.kernel.arch].add(r.kernel.mangled)
    assert set(by_arch) == set(report.archs), "an architecture reported no kernels"
    first = by_arch[report.archs[0]]
    assert all(names == first for names in by_arch.values()), "the kernels differ between architectures"
    violations = [f"{r.kernel.arch} {r.kernel.name}: {v}" for r in report.rows for v in r.violations]
    assert violations == [], "\n".join(violations)
