"""RESULTS.md's transformer section renders without results/transformer.json ("not measured yet") and
with one (tests/fixtures/transformer/transformer.json: SYNTHETIC, from the CPU emulation with PyTorch's
timings, the profile rows and one differing prediction invented); its numbers are the file's; its
template holds no number; a malformed file is one line, exit 2, nothing written."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from analysis import report
from analysis.sections import transformer as section
from harness.transformer.results import summary
from spec.files import ROOT, TEMPLATES_DIR

FIXTURES = Path(__file__).resolve().parent / "fixtures"
DOC = FIXTURES / "transformer" / "transformer.json"


def _render(tmp_path, doc: dict | None) -> tuple[int, str]:
    results = tmp_path / "results"
    shutil.copytree(FIXTURES / "results", results)
    if doc is not None:
        (results / "transformer.json").write_text(json.dumps(doc))
    rc = report.main(["--results", str(results), "--profile", str(tmp_path / "none"),
                      "--out", str(tmp_path / "out" / "RESULTS.md"), "--plots", str(tmp_path / "out" / "plots")])
    out = tmp_path / "out" / "RESULTS.md"
    text = out.read_text() if out.exists() else ""
    return rc, text.split("## Transformer extension")[1].split("## Open gaps")[0] if text else ""


def test_without_results_every_part_says_not_measured_yet(tmp_path):
    rc, text = _render(tmp_path, None)
    assert rc == 0 and "Not measured yet: there is no `" in text and text.count("not measured yet") == 5


def test_the_committed_results_md_has_the_section():
    text = (ROOT / "RESULTS.md").read_text()
    assert "## Transformer extension: a vision transformer's forward pass" in text


def test_with_results_the_numbers_are_the_files(tmp_path):
    doc = json.loads(DOC.read_text())
    rc, text = _render(tmp_path, doc)
    assert rc == 0 and "not measured yet" not in text.lower()
    t = doc["timing"]["rows"][0]
    assert f"| {t['batch']} | {t['ours']['median_ms']:.4f} | `{t['ours']['best']}` |" in text
    assert f"`{t['fastest_torch']['name']}` | {t['fastest_torch']['median_ms']:.4f} |" in text
    for name, x in t["ours"]["variants"].items():
        assert f"| ours, `{name}` | {x['median_ms']:.4f} (" in text
    runs = [doc["checks"][e][k]["checks"] for e in ("fp32", "tf32x3") for k in ("trained", "random")]
    for i, r in enumerate(runs[0][:4]):
        values = " | ".join(f"{run[i]['value']:.3g}" for run in runs)
        assert f"| `{r['name']}` | {r['measure']} | {r['limit']:.3g} | {r['depth']:.0f} | {values} | PASS |" in text
    assert "| 7 | 3 | 3 | 6 |" in text                     # the differing prediction's row
    widest = doc["profile"]["kernels"][0]
    assert f"The widest row is `{widest['op']}`" in text and "compute-bound" in text
    assert "Below the acceptance: batch" in text            # the synthetic ratio misses it


def test_section_records_and_summary():
    doc = json.loads(DOC.read_text())
    s = section.section(doc)
    assert [(c["engine"], c["kind"], c["n_pass"]) for c in s["checks"]["cols"]] == [
        ("fp32", "trained", 30), ("fp32", "random", 30), ("tf32x3", "trained", 30), ("tf32x3", "random", 30)]
    assert len(s["checks"]["rows"]) == 30 and s["checks"]["passed"] and s["timing"]["misses"]
    assert s["profile"]["widest"]["bound"] == "compute" and len(s["definitions"]) == 4
    assert section.section(None) == {"present": False}
    lines = summary(doc)
    assert "checks (tf32x3, trained): 30/30 pass" in lines and "accuracy (fp32): ours" in lines


def test_the_template_holds_no_numbers():
    text = (TEMPLATES_DIR / "results_transformer.md.j2").read_text()
    literal = re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", "", text, flags=re.S)
    literal = re.sub(r"\b(?:float|int)(?:32|64)\b|FP32|TF32|3xTF32|tf32x3|fp32|SHA-256|results_transformer", "", literal)
    assert not re.findall(r"\d", literal), re.findall(r".{20}\d.{20}", literal)[:3]


def test_a_malformed_file_is_one_line_and_exit_2(tmp_path, capsys):
    doc = json.loads(DOC.read_text())
    doc["timing"]["rows"][0]["batch"] = "many"
    rc, _ = _render(tmp_path, doc)
    err = capsys.readouterr().err
    assert rc == 2 and "transformer.json" in err and "batch" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out" / "RESULTS.md").exists()


@pytest.mark.parametrize("drop", ["torch", "ours", "accuracy", "profile", "checks", "weights"])
def test_a_missing_part_renders_as_not_measured(tmp_path, drop):
    doc = json.loads(DOC.read_text())
    if drop == "torch":
        for r in doc["timing"]["rows"]:
            r.update(torch={}, fastest_torch=None, ratio=None, goal_met=None, acceptance_met=None)
    elif drop == "ours":
        for r in doc["timing"]["rows"]:
            r.update(ours=None, ratio=None, goal_met=None, acceptance_met=None, tiles=None, tile_mismatches=None)
    elif drop == "weights":
        doc["weights"] = None
    else:
        doc[drop] = None
    rc, text = _render(tmp_path, doc)
    assert rc == 0 and "## Transformer" not in text
    if drop in ("accuracy", "profile", "checks"):
        assert "Not measured yet." in text
