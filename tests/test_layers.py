"""The layers cuda/README.md and harness/README.md state, held to the code: each README's
`layers: a < b, c < ...` line is read here, and every include of cuda/ (every import of harness/,
from tests/test_import_graph.py's graph) goes to its own layer or one below, but for the
exceptions cuda/README.md lists, which must be exactly those that remain. cuda/'s include rule
too: an include of ours names its folder, except contract/'s headers and a learner's file."""
from __future__ import annotations

import re
from pathlib import Path

from test_import_graph import graph

ROOT = Path(__file__).resolve().parent.parent
CUDA = ROOT / "cuda"
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layers(readme: Path) -> dict[str, int]:
    """{name: layer index, bottom 0} from the README's `    layers: ...` line."""
    m = re.search(r"^ {4}layers: (.+)$", readme.read_text(encoding="utf-8"), re.M)
    assert m, f"{readme}: no `    layers: a < b < ...` line"
    return {name.strip(): i for i, group in enumerate(m.group(1).split("<")) for name in group.split(",")}


def cuda_sources() -> list[Path]:
    return sorted(p for p in CUDA.rglob("*") if p.suffix in (".h", ".cuh", ".cu", ".cpp"))


def cuda_level(path: Path, level: dict[str, int]) -> int:
    folder = path.relative_to(CUDA).parts[0]
    if folder == "contract" and path.suffix == ".cu":
        return max(level.values())      # a submission, linked in at the top
    return level[folder]


def test_cuda_includes_name_their_folder():
    bad = []
    for src in cuda_sources():
        for inc in INCLUDE.findall(src.read_text(encoding="utf-8")):
            if "/" in inc:
                if not (CUDA / inc).is_file():
                    bad.append(f"{src.relative_to(CUDA)}: {inc} (no such file)")
            elif not (src.parent.name == "contract" and inc in ("submission.h", "model.h")):
                bad.append(f"{src.relative_to(CUDA)}: {inc} (name its folder)")
    assert not bad, bad


def test_cuda_includes_follow_the_layers_but_for_the_listed_exceptions():
    readme = CUDA / "README.md"
    level = layers(readme)
    assert set(level) == {p.name for p in CUDA.iterdir() if p.is_dir()}, "every folder of cuda/ has a layer"
    found = set()
    for src in cuda_sources():
        for inc in INCLUDE.findall(src.read_text(encoding="utf-8")):
            if "/" in inc and level[inc.split("/")[0]] > cuda_level(src, level):
                found.add((src.relative_to(CUDA).as_posix(), inc))
    listed = set(re.findall(r"^- `([\w/.]+)` includes `([\w/.]+)`", readme.read_text(encoding="utf-8"), re.M))
    assert found <= listed, f"includes of a higher layer (cuda/README.md's layers): {sorted(found - listed)}"
    assert listed <= found, f"cuda/README.md lists exceptions that are gone (remove them): {sorted(listed - found)}"


def test_harness_imports_follow_the_layers():
    level = layers(ROOT / "harness" / "README.md")
    g = graph()

    def layer_of(module: str) -> int | None:
        parts = module.split(".")
        if parts[0] != "harness" or len(parts) == 1:
            return None                   # spec, analysis, tasks; the package itself
        assert parts[1] in level, f"harness/README.md's layers lack {parts[1]}"
        return level[parts[1]]

    bad = [(n, d) for n, deps in g.items() for d in deps
           if (a := layer_of(n)) is not None and (b := layer_of(d)) is not None and b > a]
    assert not bad, f"imports of a higher layer (harness/README.md's layers): {bad}"
    subpackages = {p.stem if p.is_file() else p.name for p in (ROOT / "harness").iterdir()
                   if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert subpackages == set(level), "harness/README.md's layers name every module and subpackage of harness/"
