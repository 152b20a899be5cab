"""Whether the stationary kernels compile to the same machine code as at another commit, without a
GPU: builds cuda/paths/stationary_path.cu (with --dev: dev/stationary/stationary_epoch.cu, every
variant) of REV (git archive into a temporary folder) and of the work tree to cubins, and compares
each stationary kernel's machine code (its .text section) byte for byte and its ptxas -v resources
(registers, stack frame, spill stores and loads). Kernels are matched by <CL, U, V>: the shipped
k_stationary_epoch<CL, U> counts as V = the shipped bits, so it matches k_stationary_epoch<CL, U,
kShippedV> of commits before the split and k_stationary_variant<CL, U, kShippedV> of the dev
program.

    python3 dev/stationary/same_code.py 9ebd635 [--dev] [--flags "-O3 -std=c++17 -arch=sm_90"]

Prints one line per kernel (SAME, DIFFERENT or NEW (no match at REV), code size, resources); exits 0 when every kernel
of the work tree has its match and all are the same, 1 otherwise, 2 when a build fails."""
from __future__ import annotations

import argparse
import re
import shlex
import struct
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHIPPED_V = 0x1B2B2  # dev/stationary/variant_ops.cuh's kShippedV
# The third template argument: a dev variant's V (Li<V>E), the shipped kernel's form as a bool
# (Lb1E split, Lb0E TF32: commits before Products) or as kernels/stationary/ops.cuh's Products
# (LNS0_8ProductsE<0|1|2>E: split, TF32, BF16), or none (commits before the TF32 form).
KERNEL = re.compile(r"_ZN3mlp5wstat\d+k_stationary_(epoch|variant)ILi(\d+)ELi(\d+)E"
                    r"(?:Li(\d+)E|Lb([01])E|LNS0_8ProductsE([012])E)?EE")
FORMS = {"b1": SHIPPED_V, "b0": "tf32", "p0": SHIPPED_V, "p1": "tf32", "p2": "bf16"}


def sections(cubin: Path) -> dict[str, bytes]:
    """name -> contents of every section of an ELF64 file (NOBITS sections empty)."""
    d = cubin.read_bytes()
    shoff, = struct.unpack_from("<Q", d, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    heads = [struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize) for i in range(shnum)]
    names = heads[shstrndx][4]
    out = {}
    for name_off, kind, _flags, _addr, off, size in heads:
        name = d[names + name_off:d.index(b"\0", names + name_off)].decode()
        out[name] = b"" if kind == 8 else d[off:off + size]
    return out


def key(name: str) -> tuple | None:
    """(CL, U, V, epoch|variant) of a stationary kernel's mangled name, else None; V is the dev
    variant's number, the shipped bits' (the FP32 form) or "tf32"/"bf16" (the one-MMA forms)."""
    m = KERNEL.match(name)
    if not m:
        return None
    if m.group(5) is not None:
        v = FORMS["b" + m.group(5)]
    elif m.group(6) is not None:
        v = FORMS["p" + m.group(6)]
    else:
        v = int(m.group(4) or SHIPPED_V)
    return (int(m.group(2)), int(m.group(3)), v, m.group(1))


def build(tree: Path, source: str, flags: list[str], cubin: Path) -> dict[tuple, tuple[bytes, str]]:
    """Compiles `source` of `tree`: (CL, U, V, name) -> (machine code, ptxas -v resources)."""
    cmd = ["nvcc", *flags, "-Icuda", "-Icuda/contract", "-cubin", "-Xptxas", "-v", source, "-o", str(cubin)]
    res = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    if res.returncode != 0:
        print(f"same_code: build failed in {tree}: {shlex.join(cmd)}\n{res.stderr[-4000:]}", file=sys.stderr)
        raise SystemExit(2)
    resources, current = {}, None
    for line in res.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            current = key(m.group(1))
        elif current and ("stack frame" in line or "Used" in line):
            resources.setdefault(current, []).append(re.sub(r"^\s*(ptxas info\s*:\s*)?", "", line))
    out = {}
    for name, data in sections(cubin).items():
        k = key(name[len(".text."):]) if name.startswith(".text.") else None
        if k:
            out[k] = (data, "; ".join(resources.get(k, [])))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev", help="the commit to compare with")
    ap.add_argument("--dev", action="store_true", help="the dev program (every variant) instead of the path")
    ap.add_argument("--flags", default="-O3 -std=c++17 -arch=sm_90", help="nvcc flags of both builds")
    a = ap.parse_args(argv)
    source = "dev/stationary/stationary_epoch.cu" if a.dev else "cuda/paths/stationary_path.cu"
    flags = shlex.split(a.flags)
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "old"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", a.rev, "cuda", "dev/stationary"],
                                 capture_output=True, check=True).stdout
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(old, filter="data")
        before = build(old, source, flags, Path(tmp) / "old.cubin")
        after = build(ROOT, source, flags, Path(tmp) / "new.cubin")
    bad = 0
    for k in sorted(after, key=str):
        cl, u, v, name = k
        other = "variant" if name == "epoch" else "epoch"  # the same <CL, U, V> under the other name
        ref = before.get(k, before.get((cl, u, v, other)))
        same = ref == after[k]
        bad += not same
        code, res = after[k]
        note = f" (no match at {a.rev})" if ref is None else "" if same else f" (at {a.rev}: {len(ref[0])} bytes; {ref[1]})"
        shown = f"{v:#x}" if isinstance(v, int) else v
        status = "NEW      " if ref is None else "SAME     " if same else "DIFFERENT"
        print(f"{status} k_stationary_{name}<{cl},{u}> V={shown}: {len(code)} bytes; {res}{note}")
    return 1 if bad or not after else 0


if __name__ == "__main__":
    sys.exit(main())
