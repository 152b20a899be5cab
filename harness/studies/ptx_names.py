"""Names and launch bounds read from nvcc's output, for harness/studies/arch_resources.py: the
`.reqntid`/`.maxntid` launch bounds of each PTX entry, the demangled names of kernels (c++filt),
a kernel's base name (no template arguments) and its short name for the tables."""
from __future__ import annotations

import re
import shutil
import subprocess

_PTX_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(")
_PTX_NTID = re.compile(r"\.(reqntid|maxntid)\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")


def parse_ptx_bounds(ptx: str) -> dict[str, int]:
    """Entry name -> threads per block its launch bounds allow (.reqntid or .maxntid product)."""
    bounds: dict[str, int] = {}
    entries = list(_PTX_ENTRY.finditer(ptx))
    for i, m in enumerate(entries):
        body_start = m.end()
        end = entries[i + 1].start() if i + 1 < len(entries) else len(ptx)
        brace = ptx.find("{", body_start, end)  # directives sit between ")" and the body's "{"
        head = ptx[body_start:brace if brace >= 0 else end]
        d = _PTX_NTID.search(head)
        if d:
            n = 1
            for g in d.groups()[1:]:
                n *= int(g) if g else 1
            bounds[m.group(1)] = n
    return bounds


def demangle(names: list[str]) -> dict[str, str]:
    """Mangled -> demangled by cu++filt or c++filt; a name they do not change stays as it is."""
    tool = shutil.which("cu++filt") or shutil.which("c++filt")
    if not tool or not names:
        return {n: n for n in names}
    out = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True)
    lines = out.stdout.splitlines()
    if out.returncode != 0 or len(lines) != len(names):
        return {n: n for n in names}
    return dict(zip(names, lines))


def base_name(demangled: str) -> str:
    """The unqualified function name: "void mlp::k_colsum<(mlp::Col)0>(int, ...)" -> "k_colsum"."""
    s = demangled.replace("(anonymous namespace)::", "")
    s = re.sub(r"^\s*(?:[\w:]+\s+)+(?=[\w:]+[<(])", "", s)  # a leading return type
    cut = len(s)
    for ch in "<(":
        i = s.find(ch)
        if i > 0:
            cut = min(cut, i)
    return s[:cut].split("::")[-1].strip()


def short_name(demangled: str) -> str:
    """Without the return type and the parameter list: "mlp::k_colsum<(mlp::Col)0>"."""
    s = demangled.strip()
    if s.endswith(")"):
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i]
                break
    return s[5:] if s.startswith("void ") else s


# ---- building ----------------------------------------------------------------------------------
