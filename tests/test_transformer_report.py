"""RESULTS.md's transformer section renders without results/transformer.json ("not measured yet") and
with one (tests/fixtures/transformer/transformer.json: SYNTHETIC, from the CPU emulation with PyTorch's
timings, the profile rows and one differing prediction invented, and every bf16 and tf32 number
invented); its numbers are the file's, per precision; a file from before the bf16 engine
(transformer_before_bf16.json, and the committed results/transformer.json while it has no bf16) still
validates and renders, bf16's parts "not measured yet"; its template holds no number; a malformed file
is one line, exit 2, nothing written."""
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
OLD_DOC = FIXTURES / "transformer" / "transformer_before_bf16.json"   # as assembled before the bf16 engine


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
    assert [(c["engine"], c["kind"], c["n_pass"], c["precision"]) for c in s["checks"]["cols"]] == [
        ("fp32", "trained", 30, "fp32"), ("fp32", "random", 30, "fp32"), ("tf32x3", "trained", 30, "fp32"),
        ("tf32x3", "random", 30, "fp32"), ("bf16", "trained", 30, "bf16"), ("bf16", "random", 30, "bf16")]
    fp32, bf16 = s["checks"]["tables"]
    assert (fp32["precision"], len(fp32["cols"]), len(fp32["rows"])) == ("fp32", 4, 30)
    assert (bf16["precision"], len(bf16["cols"]), len(bf16["rows"])) == ("bf16", 2, 30)
    assert (bf16["u_operands"], fp32["u_operands"], fp32["u"]) == (2.0 ** -8, 0, 2.0 ** -24) and s["checks"]["missing"] == []
    for a, b in zip(fp32["rows"], bf16["rows"]):           # each table's limits are its precision's
        assert (a["name"], a["measure"]) == (b["name"], b["measure"]) and b["limit"] == a["limit"] * 2 ** 16
    assert s["checks"]["passed"] and s["timing"]["misses"]
    tables = {t["precision"]: t for t in s["timing"]["tables"]}
    assert list(tables) == ["fp32", "bf16"] and [t["precision"] for t in s["timing"]["reference"]] == ["tf32"]
    assert tables["bf16"]["torch_names"][:2] == ["bf16/eager-encoder", "bf16/eager-sdpa-auto"]
    assert tables["bf16"]["torch_names"][-2:] == ["bf16-model/eager-encoder", "bf16-model/eager-sdpa-flash"]
    assert (tables["bf16"]["n_acceptance"], tables["bf16"]["n_goal"], tables["fp32"]["n_acceptance"]) == (1, 0, 0)
    assert [a["precision"] for a in s["accuracies"]] == ["fp32", "bf16"] and s["accuracies"][1]["doc"]["differ"] == 2
    assert s["profile"]["widest"]["bound"] == "compute" and len(s["definitions"]) == 4
    assert section.section(None) == {"present": False}
    lines = summary(doc)
    assert "checks (tf32x3, trained): 30/30 pass" in lines and "accuracy (fp32): ours" in lines
    assert "checks (bf16, random): 30/30 pass at bf16" in lines and "accuracy (bf16): ours 75.00%" in lines
    assert "bf16      2    5.2000    bf16-graph" in lines and "tf32      2         -" in lines
    assert "not measured" not in lines


@pytest.mark.parametrize("path", [OLD_DOC, ROOT / "results" / "transformer.json"], ids=["fixture", "committed"])
def test_a_file_from_before_bf16_validates_and_renders_bf16_as_not_measured(tmp_path, path):
    doc = json.loads(path.read_text())
    if doc.get("accuracy_bf16") or any(r.get("precision") == "bf16" for r in (doc.get("timing") or {}).get("rows", [])):
        pytest.skip(f"{path.name} has bf16 results now: the fixture case covers the file from before")
    rc, text = _render(tmp_path, doc)
    assert rc == 0
    t = doc["timing"]["rows"][0]                           # fp32's numbers, as before
    assert f"| FP32 | {t['batch']} | {t['ours']['median_ms']:.4f} | `{t['ours']['best']}` |" in text
    assert f"| {t['batch']} | {t['ours']['median_ms']:.4f} | `{t['ours']['best']}` |" in text
    assert "| BF16 | — | not measured yet |" in text and "The BF16 engine's checks: not measured yet." in text
    bf16_parts = [part.split("\n\n")[1] for part in text.split("#### BF16")[1:]]
    assert bf16_parts == ["Not measured yet.", "Not measured yet."]          # accuracy, timing
    assert text.split("#### TF32")[1].split("\n\n")[1] == "Not measured yet."
    s = section.section(doc)
    assert [t["precision"] for t in s["checks"]["tables"]] == ["fp32"] and s["checks"]["missing"] == ["bf16"]
    lines = summary(doc)
    assert "accuracy (bf16): not measured" in lines and "timing (bf16): ours not measured" in lines
    assert "accuracy (fp32): " in lines


def test_with_bf16_the_headline_and_tables_are_per_precision(tmp_path):
    doc = json.loads(DOC.read_text())
    rc, text = _render(tmp_path, doc)
    assert rc == 0
    headline = text.split("**The headline**")[1].split("**The model**")[0]
    for r in doc["timing"]["rows"]:
        if r["precision"] == "tf32":
            assert f"`{r['fastest_torch']['name']}`" not in headline     # a reference, judged against nothing
            continue
        label = r["precision"].upper()
        verdicts = " | ".join("yes" if m else "no" for m in (r["acceptance_met"], r["goal_met"]))
        assert (f"| {label} | {r['batch']} | {r['ours']['median_ms']:.4f} | `{r['ours']['best']}` | "
                f"`{r['fastest_torch']['name']}` | {r['fastest_torch']['median_ms']:.4f} | {r['ratio']:.3g}× | {verdicts} |"
                in headline)
    assert "- BF16: the acceptance met at 1 of 1 batches, the goal at 0." in headline
    bf16_checks = text.split("At BF16 (")[1].split("### Test-set accuracy")[0]
    assert bf16_checks.startswith("u = 5.96e-08, float32's unit roundoff; every GEMM operand rounded first at u_op = 0.00391):")
    assert "At FP32 (u = 5.96e-08, float32's unit roundoff; the GEMM operands float32, rounded no further):" in text
    first = doc["checks"]["bf16"]["trained"]["checks"][0]
    assert "| check | measure | limit | D | bf16, trained | bf16, random | verdict |" in bf16_checks
    assert f"| `{first['name']}` | {first['measure']} | {first['limit']:.3g} |" in bf16_checks
    assert "| 9 | 2 | 5 | 2 | 0.004 | 0.011 | -0.003 | 0.06 | yes |" in text       # bf16's differing prediction
    timing_bf16 = text.split("### Forward time against PyTorch")[1].split("#### BF16")[1].split("#### TF32")[0]
    assert "| `bf16-model/eager-encoder` | 7.8000 (1.50%) |" in timing_bf16
    assert "| `bf16/compiled-default` | error: not run: the 5 s budget" in timing_bf16
    assert "| fastest | `tf32/eager-encoder` 8.5000 |" in text.split("#### TF32")[1]


def test_the_template_holds_no_numbers():
    text = (TEMPLATES_DIR / "results_transformer.md.j2").read_text()
    literal = re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", "", text, flags=re.S)
    literal = re.sub(r"\b(?:float|int)(?:32|64)\b|FP32|TF32|3xTF32|tf32x3|fp32|bfloat16|BF16|bf16|SHA-256|"
                     r"results_transformer", "", literal)
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
