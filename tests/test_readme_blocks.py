"""README.md holds no hand-typed count or measurement: its generated blocks equal their render
(analysis/readme_blocks.py, from the binary's catalog, recipe.toml, tests/submissions/ and
results/), and outside them no figure of a time, a speed-up or a count of cases, stages, paths
or mutants is typed. The paths-table block has its own test (tests/test_portability.py)."""
from __future__ import annotations

import re

from analysis import readme_blocks as rb
from spec import catalog
from spec.files import ROOT

README = ROOT / "README.md"


def test_readme_blocks_equal_their_render():
    bad = rb.stale(README.read_text(encoding="utf-8"), rb.render())
    assert not bad, f"README.md's blocks differ from their render: {bad} (python -m analysis.readme_blocks --write)"


def test_the_case_table_is_the_catalogs_in_table_order():
    table = rb.render()["gate-cases"]
    ids = [int(m) for m in re.findall(r"^\| (\d+) \|", table, re.M)]
    assert ids == catalog.case_order()
    row = next(ln for ln in table.splitlines() if ln.startswith("| 13 |"))
    assert "stream-contract" in row and "`contract`" in row and row.endswith("| yes |")
    assert next(ln for ln in table.splitlines() if ln.startswith("| 8 |")).endswith("| no |")
    assert "loss < 0.01" in table and "within 1 pp" in table   # the bounds, as the catalog words them


def test_counts_follow_the_catalog_and_the_files(tmp_path):
    cat = catalog.load()
    for name in ("mutant_a.cu", "mutant_b.cu", "naive.cu", "helper.cuh"):
        (tmp_path / name).write_text("")
    text = rb.counts(cat, tmp_path)
    assert f"**{len(cat['gate']['cases'])} cases**" in text
    assert f"**{len(cat['gate']['stages'])} stages**" in text
    assert f"**{len(cat['paths'])} kernel paths**" in text
    assert "**2 mutants**" in text and "1 correct submissions (`naive.cu`)" in text


def test_every_mutant_is_one_the_gpu_tests_gate():
    """README says each mutant is a defect the GPU tests require the gate to catch."""
    gpu_tests = (ROOT / "tests" / "test_gpu_gate.py").read_text()
    missing = [f.stem for f in sorted(rb.SUBMISSIONS.glob("mutant_*.cu")) if f.stem not in gpu_tests]
    assert not missing, f"mutants no GPU test names: {missing}"


def test_rewrite_touches_only_its_own_blocks():
    text = ("a <!-- recipe:start -->old<!-- recipe:end --> b\n<!-- paths-table:start -->\nkept\n"
            "<!-- paths-table:end -->\n<!-- headline:start -->x<!-- headline:end -->\n")
    rendered = {"recipe": "new", "headline": "H", "counts": "c"}
    out = rb.rewrite(text, rendered)
    assert out == text.replace(">old<", ">new<").replace(">x<", ">H<")
    assert rb.stale(out, rendered) == ["counts (missing)"]
    assert rb.stale(text.replace("recipe:start", "recip:start").replace("recipe:end", "recip:end"),
                    {}) == ["recip (no renderer)", "headline (no renderer)"]


def test_main_checks_and_writes(tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text(README.read_text(encoding="utf-8").replace(rb.render()["counts"], "**8 cases**"))
    assert rb.main(["--readme", str(readme)]) == 1
    assert "counts" in capsys.readouterr().err
    assert rb.main(["--readme", str(readme), "--write"]) == 0
    assert readme.read_text(encoding="utf-8") == README.read_text(encoding="utf-8")
    assert rb.main(["--readme", str(readme)]) == 0


NUMBER_WORDS = r"(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|\d+)"
TYPED = [
    (r"\b\d+(?:\.\d+)?\s?(?:ms|µs)\b", "a time"),
    (r"\d(?:\.\d+)?\s?×", "a speed-up"),
    (rf"\b{NUMBER_WORDS} (?:gate )?(?:cases|stages|mutants|kernel paths|paths|tests)\b", "a count"),
    (r"\bcases \d+[–-]\d+\b(?! and)", "a range of cases"),
    (r"\b\d+ s of wall time\b", "a wall time"),
]


def test_no_hand_typed_figure_outside_the_blocks():
    text = rb.MARK.sub("", README.read_text(encoding="utf-8"))
    found = [(what, m.group(0)) for pattern, what in TYPED for m in re.finditer(pattern, text)]
    assert not found, f"README.md types these by hand (render them in a block or link RESULTS.md): {found}"
