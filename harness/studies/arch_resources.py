"""Per-architecture resource limits, and a check of every kernel's registers and shared memory
against them, from ptxas's own report.

    python -m harness.studies.arch_resources [--arch sm_75 ...] [--kernels-only] [--dynamic NAME=BYTES ...]
                                     [--json PATH] [--limits] [--paths-table]

builds every CUDA translation unit cuda/*.cu (`--kernels-only`: those that define or include a
`__global__` function) for each architecture of `ARCHS` that this machine's
nvcc supports, one nvcc call per file with one -gencode per architecture and the Makefile's
flags (`make print-nvcc`), with `--resource-usage`; reads each kernel's registers, static shared
memory, stack frame and spills from ptxas's report and its launch bounds from the PTX; and checks
them against that architecture's limits (`check`). Exit status: 0 every kernel fits on every
architecture built; 1 a kernel exceeds a limit or an architecture failed to compile; 2 bad input
(an unknown architecture, a malformed --dynamic, no nvcc).

The threads a kernel is checked at are, in order: its `__launch_bounds__` (PTX .reqntid or
.maxntid), the largest block size at its `<<<...>>>` launch sites when the size evaluates from
integer constants in cuda/, else `DEFAULT_THREADS` (said in the row's note). Dynamic shared memory
is not in the binary: `--dynamic NAME=BYTES` (or `check(..., dynamic_smem=)`) adds it for a kernel.
"""
from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness.studies.launch_sites import launch_block_sizes
from harness.studies.ptx_names import base_name, demangle, parse_ptx_bounds, short_name
from spec import catalog, files, validate
from spec.files import ROOT, write_text

CUDA_DIR = ROOT / "cuda"
KB = 1024
DEFAULT_THREADS = 256  # the block size of every kernel of ours without launch bounds

# The limits below are the rows of the "Technical Specifications per Compute Capability" table of
# the CUDA C++ Programming Guide for CUDA 13 (https://docs.nvidia.com/cuda/cuda-programming-guide/,
# appendix "Compute Capabilities"). Cross-checked against what NVIDIA encodes of the same table:
# the CUDA 13.0 toolkit's include/cuda_occupancy.h (blocks per SM, shared memory per SM by carveout)
# and CCCL's libcudacxx include/cuda/__device/arch_traits.h (every field here).
GUIDE = ('CUDA C++ Programming Guide (CUDA 13), "Technical Specifications per Compute Capability"')

# Allocation rules of the toolkit's occupancy calculator (CUDA 13.0 include/cuda_occupancy.h,
# cudaOccRegAllocationGranularity, cudaOccSubPartitionsPerMultiprocessor,
# cudaOccSMemAllocationGranularity, cudaOccMaxBlocksPerSMRegsLimit), the same for sm_75..sm_120
# except the shared-memory granularity (256 bytes on 7.x, 128 from 8.0).
WARP = 32
REG_ALLOC_UNIT = 256  # registers are allocated per warp in units of 256
SUB_PARTITIONS = 4    # the register file is split over 4 sub-partitions; a block's warps are
                      # rounded up to a multiple of 4 in the hardware's per-block check


@dataclass(frozen=True)
class ArchLimits:
    arch: str
    gpus: str                   # examples of the class (product facts, not the guide's)
    smem_per_sm: int            # shared memory per SM, bytes (the largest carveout)
    smem_per_block_optin: int   # per block with cudaFuncAttributeMaxDynamicSharedMemorySize
    max_threads_per_sm: int
    max_blocks_per_sm: int
    clusters: bool              # thread-block clusters (compute capability 9.0 and later)
    reserved_smem_per_block: int  # kept by the system per block (1 KB from 8.0)
    smem_alloc_unit: int        # shared-memory allocation granularity
    max_regs_per_thread: int = 255
    regs_per_sm: int = 64 * KB
    regs_per_block: int = 64 * KB
    smem_per_block_static: int = 48 * KB  # static __shared__ (and dynamic without opt-in)
    max_threads_per_block: int = 1024
    source: str = GUIDE


ARCHS: dict[str, ArchLimits] = {a.arch: a for a in (
    # CC 7.5: 64 KB per SM, all of it to one block; 1024 threads and 16 blocks per SM.
    ArchLimits("sm_75", "T4, RTX 20xx", 64 * KB, 64 * KB, 1024, 16, False, 0, 256),
    # CC 8.0: 164 KB per SM, 163 KB per block; 2048 threads, 32 blocks.
    ArchLimits("sm_80", "A100, A30", 164 * KB, 163 * KB, 2048, 32, False, KB, 128),
    # CC 8.6: 100 KB per SM, 99 KB per block; 1536 threads, 16 blocks.
    ArchLimits("sm_86", "A10, A40, RTX 30xx", 100 * KB, 99 * KB, 1536, 16, False, KB, 128),
    # CC 8.9: 100 KB per SM, 99 KB per block; 1536 threads, 24 blocks.
    ArchLimits("sm_89", "L4, L40S, RTX 40xx", 100 * KB, 99 * KB, 1536, 24, False, KB, 128),
    # CC 9.0: 228 KB per SM, 227 KB per block; 2048 threads, 32 blocks; clusters.
    ArchLimits("sm_90", "H100, H200", 228 * KB, 227 * KB, 2048, 32, True, KB, 128),
    # CC 10.0: 228 KB per SM, 227 KB per block; 2048 threads, 32 blocks; clusters.
    ArchLimits("sm_100", "B200, GB200", 228 * KB, 227 * KB, 2048, 32, True, KB, 128),
    # CC 12.0: 100 KB per SM, 99 KB per block; 1536 threads, 24 blocks; clusters.
    ArchLimits("sm_120", "RTX 50xx, RTX PRO 6000 Blackwell", 100 * KB, 99 * KB, 1536, 24, True, KB, 128),
)}


class ResourceError(Exception):
    """Bad input to the check (unknown architecture, no nvcc, malformed option): exit status 2."""


@dataclass
class Kernel:
    """One kernel's resources on one architecture, as ptxas reported them."""
    arch: str
    mangled: str
    name: str = ""              # demangled
    source: str = ""            # the translation unit
    registers: int = 0
    smem_static: int = 0
    stack: int = 0
    spill_stores: int = 0
    spill_loads: int = 0
    lmem: int = 0
    barriers: int = 0
    threads: int = 0            # the block size it is checked at
    threads_from: str = ""      # "launch bounds", "launch site <file:line>", "assumed"


@dataclass
class Row:
    kernel: Kernel
    dynamic_smem: int
    regs_per_block: int         # allocated, by the occupancy calculator's rule
    blocks_per_sm: int
    max_threads_by_regs: int    # the largest block (a multiple of 32) its registers allow
    violations: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# ---- the check ---------------------------------------------------------------------------------
def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def regs_per_warp(regs: int) -> int:
    return _round_up(regs * WARP, REG_ALLOC_UNIT)


def block_regs(regs: int, threads: int) -> int:
    """Registers one block holds for the hardware's per-block check (cuda_occupancy.h)."""
    warps = -(-threads // WARP)
    return regs_per_warp(regs) * _round_up(warps, SUB_PARTITIONS)


def blocks_per_sm(lim: ArchLimits, regs: int, threads: int, smem: int) -> int:
    """Resident blocks per SM by threads, blocks, registers (per sub-partition) and shared memory
    (`smem` static plus dynamic, plus the system's reserve, in allocation units)."""
    warps = -(-threads // WARP)
    by_threads = lim.max_threads_per_sm // (warps * WARP)
    per_warp = regs_per_warp(regs)
    if per_warp:
        warps_per_part = (lim.regs_per_sm // SUB_PARTITIONS) // per_warp
        by_regs = (warps_per_part * SUB_PARTITIONS) // warps
    else:
        by_regs = lim.max_blocks_per_sm
    need = _round_up(smem + lim.reserved_smem_per_block, lim.smem_alloc_unit)
    by_smem = lim.smem_per_sm // need if need else lim.max_blocks_per_sm
    return max(0, min(lim.max_blocks_per_sm, by_threads, by_regs, by_smem))


def check(k: Kernel, lim: ArchLimits, dynamic_smem: int = 0) -> Row:
    """Every limit of `lim` that `k` at `k.threads` threads and `dynamic_smem` bytes breaks."""
    v: list[str] = []
    notes: list[str] = []
    t = k.threads
    if t > lim.max_threads_per_block:
        v.append(f"{t} threads per block > {lim.max_threads_per_block}")
    if k.registers > lim.max_regs_per_thread:
        v.append(f"{k.registers} registers per thread > {lim.max_regs_per_thread}")
    per_block = block_regs(k.registers, t)
    if per_block > lim.regs_per_block:
        v.append(f"{k.registers} registers x {t} threads = {per_block} allocated > {lim.regs_per_block} per block")
    if k.smem_static > lim.smem_per_block_static:
        v.append(f"{k.smem_static} B static shared memory > {lim.smem_per_block_static} per block")
    total = k.smem_static + dynamic_smem
    if total > lim.smem_per_block_optin:
        v.append(f"{total} B shared memory (static {k.smem_static} + dynamic {dynamic_smem}) "
                 f"> {lim.smem_per_block_optin} opt-in maximum per block")
    elif total > lim.smem_per_block_static:
        notes.append(f"needs the opt-in: {total} B > {lim.smem_per_block_static} B per block")
    resident = blocks_per_sm(lim, k.registers, t, total)
    if resident < 1 and not v:
        v.append("no block of it fits on an SM")
    if k.spill_stores or k.spill_loads:
        notes.append(f"spills {k.spill_stores} B stores, {k.spill_loads} B loads")
    by_regs = 0
    for threads in range(WARP, lim.max_threads_per_block + 1, WARP):
        if block_regs(k.registers, threads) <= lim.regs_per_block:
            by_regs = threads
    if k.threads_from == "assumed":
        notes.append(f"block size not found: checked at {t} threads (registers allow {by_regs})")
    return Row(k, dynamic_smem, per_block, resident, by_regs, v, notes)


# ---- ptxas's report and the PTX ----------------------------------------------------------------
_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\d+a?)'")
_PROPS = re.compile(r"Function properties for (\S+)")
_STACK = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BYTES = re.compile(r"(\d+) bytes (smem|lmem)")
_BARRIERS = re.compile(r"used (\d+) barriers")


def parse_ptxas(text: str, source: str = "") -> list[Kernel]:
    """Kernels of a ptxas `--resource-usage` report (or `-v`), in report order. Stack lines of
    non-inlined callees ("Function properties for" another name) are not charged to the entry."""
    out: list[Kernel] = []
    cur: Kernel | None = None
    props_of = None
    for line in text.splitlines():
        m = _ENTRY.search(line)
        if m:
            cur = Kernel(arch=m.group(2), mangled=m.group(1), source=source)
            out.append(cur)
            props_of = None
            continue
        m = _PROPS.search(line)
        if m:
            props_of = m.group(1)
            continue
        m = _STACK.search(line)
        if m and cur is not None and props_of == cur.mangled:
            cur.stack, cur.spill_stores, cur.spill_loads = (int(g) for g in m.groups())
            props_of = None
            continue
        m = _USED.search(line)
        if m and cur is not None:
            cur.registers = int(m.group(1))
            for n, kind in _BYTES.findall(line):
                if kind == "smem":
                    cur.smem_static = int(n)
                else:
                    cur.lmem = int(n)
            b = _BARRIERS.search(line)
            cur.barriers = int(b.group(1)) if b else 0
            cur = None  # the entry's report is complete
    return out


def nvcc_path() -> str:
    nvcc = shutil.which("nvcc")
    if not nvcc:
        raise ResourceError("nvcc not found on PATH")
    return nvcc


def nvcc_archs(nvcc: str | None = None) -> set[str]:
    """The real architectures this nvcc compiles for ("sm_90", ...), from --list-gpu-arch."""
    out = subprocess.run([nvcc or nvcc_path(), "--list-gpu-arch"], capture_output=True, text=True)
    if out.returncode != 0:
        raise ResourceError(f"nvcc --list-gpu-arch failed: {out.stderr.strip()}")
    return {"sm_" + m for m in re.findall(r"compute_(\d+)\b", out.stdout)}


def supported_archs(nvcc: str | None = None) -> list[str]:
    """The architectures of ARCHS this machine's nvcc supports, in ARCHS's order."""
    have = nvcc_archs(nvcc)
    return [a for a in ARCHS if a in have]


def project_flags(root: Path = ROOT) -> list[str]:
    """The Makefile's nvcc flags (`make print-nvcc` in `root`) without -gencode/-arch, its -I
    paths made absolute."""
    out = subprocess.run(["make", "-s", "--no-print-directory", "-C", str(root), "print-nvcc"],
                         capture_output=True, text=True)
    if out.returncode != 0 or not out.stdout.strip():
        raise ResourceError(f"make print-nvcc failed: {out.stderr.strip() or 'no output'}")
    words = shlex.split(out.stdout.strip().splitlines()[-1])[1:]
    arch_opt = re.compile(r"(-gencode|--generate-code|-arch|--gpu-architecture|-code|--gpu-code)(=|$)")
    flags = [w for i, w in enumerate(words)
             if not arch_opt.match(w) and not (i and arch_opt.match(words[i - 1]) and "=" not in words[i - 1])]
    return [("-I" + str(Path(root) / f[2:]) if f.startswith("-I") and not Path(f[2:]).is_absolute() else f)
            for f in flags]


_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)


def holds_kernels(path: Path, cuda_dir: Path = CUDA_DIR, _seen: set | None = None) -> bool:
    """Whether `path` or a project header it includes (recursively) has a __global__ function."""
    seen = _seen if _seen is not None else set()
    path = Path(path).resolve()
    if path in seen or not path.is_file():
        return False
    seen.add(path)
    text = path.read_text(errors="replace")
    if re.search(r"\b__global__\b", text):
        return True
    for inc in _INCLUDE.findall(text):
        for base in (path.parent, Path(cuda_dir)):
            if (base / inc).is_file() and holds_kernels(base / inc, cuda_dir, seen):
                return True
    return False


def sources(all_sources: bool = True, cuda_dir: Path = CUDA_DIR) -> list[Path]:
    """The translation units to build, found now (cuda/ changes while others work on it)."""
    units = sorted(Path(cuda_dir).rglob("*.cu"))
    return units if all_sources else [u for u in units if holds_kernels(u, cuda_dir)]


def _rel(path: Path, root: Path) -> str:
    path = Path(path).resolve()
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


def _gencode(arch: str) -> str:
    n = arch[3:]
    return f"-gencode=arch=compute_{n},code=sm_{n}"


def build_unit(src: Path, archs: list[str], flags: list[str], nvcc: str,
               root: Path = ROOT) -> tuple[list[Kernel], dict[str, str]]:
    """One nvcc call (-fatbin: device code only) for every arch; kernels and {arch: error}.
    When the call fails, each architecture is retried alone to name the ones that fail."""
    with tempfile.TemporaryDirectory(prefix="arch_resources.") as tmp:
        def nvcc_call(which: list[str]):
            keep = Path(tmp) / "_".join(which)
            keep.mkdir()
            cmd = [nvcc, *flags, *(_gencode(a) for a in which), "--resource-usage", "--keep",
                   f"--keep-dir={keep}", "-fatbin", str(src), "-o", str(keep / "out.fatbin")]
            return subprocess.run(cmd, capture_output=True, text=True, cwd=root), keep

        proc, keep = nvcc_call(archs)
        errors: dict[str, str] = {}
        runs = [(proc, keep)]
        if proc.returncode != 0:
            runs = []
            for a in archs:
                p, k = nvcc_call([a])
                if p.returncode != 0:
                    lines = p.stderr.strip().splitlines() or ["nvcc failed"]
                    errors[a] = f"{src.name}: " + next((ln.strip() for ln in lines if "error" in ln), lines[-1])
                else:
                    runs.append((p, k))
        kernels: list[Kernel] = []
        for p, k in runs:
            found = parse_ptxas(p.stdout + "\n" + p.stderr, _rel(src, root))
            bounds: dict[str, dict[str, int]] = {}
            for ptx in k.glob("*.ptx"):  # named by arch only when there are several: read .target
                text = ptx.read_text(errors="replace")
                m = re.search(r"^\s*\.target\s+(sm_\d+)", text, re.M)
                if m:
                    bounds[m.group(1)] = parse_ptx_bounds(text)
            for kern in found:
                n = bounds.get(kern.arch, {}).get(kern.mangled)
                if n:
                    kern.threads, kern.threads_from = n, "launch bounds"
            kernels += found
    return kernels, errors


@dataclass
class Report:
    archs: list[str]
    sources: list[str]
    rows: list[Row]
    compile_errors: dict[str, list[str]]
    seconds: float
    unsupported: list[str]  # architectures of ARCHS this nvcc does not know

    def failures(self) -> list[str]:
        out = [f"{a}: failed to compile: {e}" for a, errs in self.compile_errors.items() for e in errs]
        out += [f"{r.kernel.arch} {r.kernel.name}: {v}" for r in self.rows for v in r.violations]
        return out


def run(archs: list[str] | None = None, all_sources: bool = True, jobs: int = 2,
        dynamic: dict[str, int] | None = None, root: Path = ROOT) -> Report:
    """Build every unit for every architecture (default: those of ARCHS nvcc supports), parse,
    check. `dynamic`: kernel base name -> dynamic shared memory bytes it launches with."""
    t0 = time.monotonic()
    nvcc = nvcc_path()
    have = supported_archs(nvcc)
    if archs is None:
        archs = have
    for a in archs:
        if a not in ARCHS:
            raise ResourceError(f"--arch {a}: not in the table ({', '.join(ARCHS)})")
        if a not in have:
            raise ResourceError(f"--arch {a}: this nvcc does not support it")
    root = Path(root).resolve()
    cuda_dir = root / "cuda"
    flags = project_flags(root)
    units = sources(all_sources, cuda_dir)
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(units) or 1))) as pool:
        results = list(pool.map(lambda u: build_unit(u, archs, flags, nvcc, root), units))
    kernels = [k for ks, _ in results for k in ks]
    errors: dict[str, list[str]] = {}
    for _, errs in results:
        for a, e in errs.items():
            errors.setdefault(a, []).append(e)
    names = demangle(sorted({k.mangled for k in kernels}))
    sites = launch_block_sizes(cuda_dir)
    dynamic = dynamic or {}
    rows = []
    for k in kernels:
        k.name = names.get(k.mangled, k.mangled)
        base = base_name(k.name)
        if not k.threads:
            if base in sites:
                k.threads, where = sites[base]
                k.threads_from = f"launch site {where}"
            else:
                k.threads, k.threads_from = DEFAULT_THREADS, "assumed"
        rows.append(check(k, ARCHS[k.arch], dynamic.get(base, 0)))
    rows.sort(key=lambda r: (list(ARCHS).index(r.kernel.arch), r.kernel.source, r.kernel.name))
    return Report(archs, [_rel(u, root) for u in units],
                  rows, errors, time.monotonic() - t0, [a for a in ARCHS if a not in have])


# ---- rendering ---------------------------------------------------------------------------------
def limits_table() -> str:
    head = ("| arch | class | regs/thread | regs/SM, /block | smem/block static, opt-in | smem/SM | "
            "threads/block, /SM | blocks/SM | clusters |\n|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for a in ARCHS.values():
        lines.append(f"| {a.arch} | {a.gpus} | {a.max_regs_per_thread} | {a.regs_per_sm // KB}K, {a.regs_per_block // KB}K | "
                     f"{a.smem_per_block_static // KB} KB, {a.smem_per_block_optin // KB} KB | {a.smem_per_sm // KB} KB | "
                     f"{a.max_threads_per_block}, {a.max_threads_per_sm} | {a.max_blocks_per_sm} | "
                     f"{'yes' if a.clusters else 'no'} |")
    return "\n".join(lines) + f"\n\nSource: {GUIDE}."


# One GPU of each class for the path table: its SM count (a product fact, not the guide's).
EXAMPLE_GPUS: dict[str, tuple[str, int]] = {
    "sm_75": ("T4", 40), "sm_80": ("A100", 108), "sm_86": ("A10", 72), "sm_89": ("L4", 58),
    "sm_90": ("H100 SXM / H200", 132), "sm_100": ("B200", 148), "sm_120": ("RTX 5090", 170)}
FIT_TOOL = ROOT / "build" / "mlp_fit"


def fit_args(lim: ArchLimits, sms: int) -> list[str]:
    """build/mlp_fit's limits for an architecture of the table and an SM count."""
    return ["--cc", lim.arch[3:], "--sms", str(sms), "--smem-per-block", str(lim.smem_per_block_optin),
            "--smem-per-sm", str(lim.smem_per_sm), "--reserved", str(lim.reserved_smem_per_block),
            "--threads-per-sm", str(lim.max_threads_per_sm), "--max-blocks-per-sm", str(lim.max_blocks_per_sm),
            "--clusters", "1" if lim.clusters else "0"]


def path_fits(arch: str, sms: int | None = None, tool: Path = FIT_TOOL) -> dict:
    """Each path's {"config", "skipped"} on `arch` (its example GPU's SM count unless given), from
    the binary's own fit logic (build/mlp_fit, cuda/paths/path_fit.h)."""
    if not Path(tool).is_file():
        raise ResourceError(f"{tool} not found: run `make` (invoke build) first")
    lim = ARCHS[arch]
    out = subprocess.run([str(tool), *fit_args(lim, sms or EXAMPLE_GPUS[arch][1])], capture_output=True, text=True)
    if out.returncode != 0:
        raise ResourceError(f"mlp_fit failed for {arch}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def _cell(fit: dict) -> str:
    if fit["config"] is not None:
        return "yes" if fit["config"] == "ordinary launches" else f"yes: {fit['config']}"
    return f"skipped: {fit['skipped']}"


def path_table(tool: Path = FIT_TOOL) -> str:
    """README's table: which paths run, in which configuration, on which class of GPU."""
    table_paths = catalog.path_names()   # every path of the binary's registry, opt-in ones too
    lines = ["| GPU class (example, SMs) | " + " | ".join(f"`{p}`" for p in table_paths) + " |",
             "|---|" + "---|" * len(table_paths)]
    for arch, lim in ARCHS.items():
        name, sms = EXAMPLE_GPUS[arch]
        fits = path_fits(arch, sms, tool)
        lines.append(f"| {arch} {lim.gpus} ({name}, {sms}) | " + " | ".join(_cell(fits[p]) for p in table_paths) + " |")
    return "\n".join(lines) + "\n"


def render(report: Report) -> str:
    lines = ["| arch | kernel | unit | regs | threads (from) | regs/block | static smem | dyn smem | "
             "stack | blocks/SM | fits | notes |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report.rows:
        k = r.kernel
        frm = "bounds" if k.threads_from == "launch bounds" else ("site" if k.threads_from.startswith("launch site") else "assumed")
        lines.append(f"| {k.arch} | `{short_name(k.name)}` | "
                     f"{Path(k.source).name} | {k.registers} | {k.threads} ({frm}) | {r.regs_per_block} | {k.smem_static} | "
                     f"{r.dynamic_smem} | {k.stack} | {r.blocks_per_sm} | {'no: ' + '; '.join(r.violations) if r.violations else 'yes'} | "
                     f"{'; '.join(r.notes)} |")
    summary = [f"built {', '.join(report.sources)} for {', '.join(report.archs)} in {report.seconds:.0f} s"]
    if report.unsupported:
        summary.append(f"this nvcc does not support {', '.join(report.unsupported)}: not built")
    fails = report.failures()
    summary.append(f"{len(fails)} failure(s)" + ("" if not fails else ":\n  " + "\n  ".join(fails)))
    return "\n".join(lines) + "\n\n" + "\n".join(summary)


def to_json(report: Report) -> dict:
    return {"guide": GUIDE, "limits": {a: asdict(l) for a, l in ARCHS.items()},
            "archs": report.archs, "unsupported": report.unsupported, "sources": report.sources,
            "seconds": round(report.seconds, 1), "compile_errors": report.compile_errors,
            "kernels": [{**asdict(r.kernel), "dynamic_smem": r.dynamic_smem, "regs_per_block": r.regs_per_block,
                         "blocks_per_sm": r.blocks_per_sm, "max_threads_by_regs": r.max_threads_by_regs,
                         "violations": r.violations, "notes": r.notes} for r in report.rows]}


def _parse_dynamic(items: list[str]) -> dict[str, int]:
    out = {}
    for it in items:
        m = re.fullmatch(r"([A-Za-z_]\w*)=(\d+)", it)
        if not m:
            raise ResourceError(f"--dynamic {it!r}: expected KERNEL=BYTES, e.g. k_persistent_epoch=100352")
        out[m.group(1)] = int(m.group(2))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = validate.ArgParser(prog="python -m harness.studies.arch_resources", description=__doc__.split("\n\n")[0],
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", action="append", type=validate.arch,
                    help="an architecture of the table (repeatable; default: all nvcc supports)")
    ap.add_argument("--kernels-only", action="store_true", help="build only the cuda/*.cu that hold kernels")
    ap.add_argument("--dynamic", action="append", default=[], metavar="KERNEL=BYTES",
                    help="dynamic shared memory a kernel (base name) launches with")
    ap.add_argument("--jobs", type=lambda t: validate.count(t, "--jobs", 1, 64), default=2,
                    help="nvcc calls at once, 1-64 (default 2)")
    ap.add_argument("--json", type=Path, help="also write the report as JSON here")
    ap.add_argument("--limits", action="store_true", help="print the limits table and stop")
    ap.add_argument("--paths-table", action="store_true",
                    help="print README's table of which paths run where (build/mlp_fit) and stop")
    args = ap.parse_args(argv)
    try:
        if args.limits:
            print(limits_table())
            return 0
        if args.paths_table:
            print(path_table(), end="")
            return 0
        report = run(args.arch, not args.kernels_only, args.jobs, _parse_dynamic(args.dynamic))
    except ResourceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(render(report))
    if args.json:
        write_text(args.json, json.dumps(to_json(report), indent=1) + "\n")
    return 1 if report.failures() else 0


if __name__ == "__main__":
    files.run_main(main)
