"""The import graph of analysis/, harness/, spec/ and tasks.py, read with ast (nothing is
imported): no cycle among their modules, analysis/ imports nothing from harness/, and spec/
imports neither analysis/ nor harness/. Imports inside functions count too."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("analysis", "harness", "spec")


def module_files() -> dict[str, Path]:
    out = {"tasks": ROOT / "tasks.py"}
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            parts = f.relative_to(ROOT).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = f
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """The known modules `path` imports (a package import counts as its __init__)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            targets = [base] + [f"{base}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                found.add(t)
    return found


def graph() -> dict[str, set[str]]:
    files = module_files()
    return {n: imports_of(n, f, set(files)) for n, f in files.items()}


def top(name: str) -> str:
    return name.split(".")[0]


def test_the_graph_sees_the_packages():
    g = graph()
    assert "analysis.report" in g and "spec.schema" in g and "tasks" in g
    assert "spec.schema" in g["analysis.loaders"]  # the walk finds real edges


def test_analysis_imports_nothing_from_harness_and_spec_nothing_above_it():
    bad = [(n, d) for n, deps in graph().items() for d in deps
           if (top(n) == "analysis" and top(d) == "harness")
           or (top(n) == "spec" and top(d) in ("analysis", "harness"))]
    assert not bad, bad


def test_no_import_cycle():
    g = graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in sorted(g[n]):
            if state.get(d) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(d):] + [d]))
            if d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(g):
        if n not in state:
            visit(n)


# The transformer extension (issue 31) stands beside the MLP's harness: it reads the data and reuses the
# profiler's nsys helpers and analysis/nsys_csv.py, and nothing else of the MLP's harness (gate,
# baseline, studies, run); nothing of the MLP's imports it but tasks.py.
TRANSFORMER_MAY_IMPORT = ("harness.transformer", "harness.data", "harness.profiling", "analysis.nsys_csv", "spec")


def test_the_transformer_extension_imports_only_its_layers():
    g = graph()
    mine = [n for n in g if n.startswith("harness.transformer")]
    assert "harness.transformer.run" in mine
    bad = [(n, d) for n in mine for d in g[n]
           if not any(d == p or d.startswith(p + ".") for p in TRANSFORMER_MAY_IMPORT)]
    assert not bad, bad
    users = [n for n, deps in g.items() if any(d.startswith("harness.transformer") for d in deps)
             and not n.startswith("harness.transformer") and n != "tasks"]
    assert not users, users
