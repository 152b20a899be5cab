"""Block sizes of kernels from their `<<<grid, block, ...>>>` launch sites in cuda/, where the
block argument is an integer expression of literals and `constexpr` integer constants (each
file's own constants first, then those with one value across cuda/). Used by
harness/studies/arch_resources.py for kernels without `__launch_bounds__`.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

from spec.files import ROOT

CUDA_DIR = ROOT / "cuda"

_CONSTEXPR = re.compile(r"\bconstexpr\s+(?:unsigned\s+|signed\s+)?(?:int|long|size_t|std::size_t|unsigned)\s+([^;()]+);")
_LAUNCH = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<[^;{}<>]*(?:<[^;{}<>]*>[^;{}<>]*)*>)?\s*<<<")


def _split_top(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return parts


def _int_eval(expr: str, consts: dict[str, int]) -> int | None:
    """An integer expression of literals, known constants, + - * / % and parentheses; else None."""
    m = re.fullmatch(r"\s*dim3\s*\((.*)\)\s*", expr, re.S)
    if m:
        dims = [_int_eval(p, consts) for p in _split_top(m.group(1))]
        if not dims or any(d is None for d in dims):
            return None
        n = 1
        for d in dims:
            n *= d
        return n
    expr = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr).replace("::", "_SCOPE_")
    try:
        tree = ast.parse(expr.strip(), mode="eval")
    except SyntaxError:
        return None

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            return consts.get(node.id.split("_SCOPE_")[-1])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            x = ev(node.operand)
            return None if x is None else -x
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if a is None or b is None:
                return None
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.Div: lambda: a // b if b else None, ast.FloorDiv: lambda: a // b if b else None,
                   ast.Mod: lambda: a % b if b else None}
            f = ops.get(type(node.op))
            return f() if f else None
        return None

    return ev(tree)


def _constants(text: str, known: dict[str, int]) -> dict[str, int]:
    found: dict[str, int] = {}
    decls = []
    for m in _CONSTEXPR.finditer(text):
        for d in _split_top(m.group(1)):
            if "=" in d:
                name, expr = d.split("=", 1)
                decls.append((name.strip(), expr.strip()))
    for _ in range(len(decls) + 1):  # later constants may use earlier ones
        changed = False
        for name, expr in decls:
            if name not in found:
                val = _int_eval(expr, {**known, **found})
                if val is not None:
                    found[name] = val
                    changed = True
        if not changed:
            break
    return found


def launch_block_sizes(cuda_dir: Path = CUDA_DIR) -> dict[str, tuple[int, str]]:
    """Kernel base name -> (largest block size of its <<<>>> launch sites, "file:line") where the
    block argument evaluates from integer constants; each file's own constants first, then those
    with one value across cuda/."""
    files = sorted(p for ext in ("*.cu", "*.cuh", "*.h") for p in Path(cuda_dir).rglob(ext))
    texts = {p: p.read_text(errors="replace") for p in files}
    per_file = {p: _constants(t, {}) for p, t in texts.items()}
    values: dict[str, set[int]] = {}
    for consts in per_file.values():
        for k, v in consts.items():
            values.setdefault(k, set()).add(v)
    shared = {k: next(iter(v)) for k, v in values.items() if len(v) == 1}
    sizes: dict[str, tuple[int, str]] = {}
    for p, text in texts.items():
        consts = {**shared, **per_file[p]}
        for m in _LAUNCH.finditer(text):
            close = text.find(">>>", m.end())
            if close < 0:
                continue
            args = _split_top(text[m.end():close])
            if len(args) < 2:
                continue
            n = _int_eval(args[1], consts)
            if n is None:
                continue
            where = f"{p.name}:{text.count(chr(10), 0, m.start()) + 1}"
            if m.group(1) not in sizes or n > sizes[m.group(1)][0]:
                sizes[m.group(1)] = (n, where)
    return sizes
