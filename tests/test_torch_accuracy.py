"""pytorch.json's accuracy on case 7's terms (harness/baseline/fp64_accuracy.py): the last-5
mean and the signed gap to float64, where float64 comes from (the same run's run.json, the shipped
data/reference for exactly its recipe, or none and why), the note of a variant over the 1 pp
line, and RESULTS.md's table of them, an old pytorch.json without the fields included.

CPU only; the two baseline runs train 2 epochs of a 512-image slice at hidden width 32."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from analysis import report  # noqa: E402
from analysis.sections import common  # noqa: E402
from harness.baseline import fp64_accuracy  # noqa: E402
from harness.baseline import pytorch_baseline as pb  # noqa: E402
from harness.baseline import registry  # noqa: E402
from spec import layout, stats  # noqa: E402
from spec.files import ROOT, TEMPLATES_DIR  # noqa: E402
from spec.recipe import load_recipe  # noqa: E402
from spec.schema import validate  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PREDICTIONS, GAPS = ROOT / "predictions.toml", ROOT / "GAPS.toml"
SHIPPED = ROOT / "data" / "reference"
SECTION = "## PyTorch: test accuracy against float64"


# ----------------------------------------------------------------------------- the numbers

def test_the_last_n_is_the_reports_and_the_mean_is_spec_stats():
    assert pb.LAST_N_ACCURACY == common.LAST_N_ACCURACY == 5
    per = [0.70, 0.71, 0.80, 0.81, 0.82, 0.83, 0.84]
    assert pb.last_mean(per) == pytest.approx(stats.last_n_mean(per, 5)) == pytest.approx(0.82)
    assert pb.last_mean([0.5, 0.7]) == pytest.approx(0.6)      # fewer epochs: all of them
    assert pb.last_mean([]) is None and pb.last_mean(None) is None


def test_the_gap_is_signed_percentage_points():
    assert pb.gap_pp(0.8045, 0.8240) == pytest.approx(-1.95)
    assert pb.gap_pp(0.83, 0.82) == pytest.approx(1.0)
    assert pb.gap_pp(None, 0.82) is None and pb.gap_pp(0.82, None) is None


def test_the_shipped_float64_gives_the_shipped_last5_mean():
    meta = json.loads((SHIPPED / "fp64_reference.json").read_text())
    per = np.load(SHIPPED / "fp64_test_accuracy_per_epoch.npy").tolist()
    assert pb.last_mean(per) == pytest.approx(meta["test_accuracy_last5_mean"], abs=1e-12)


def test_a_note_only_over_the_line_and_what_it_says():
    ref = [0.70, 0.80, 0.82, 0.82, 0.82, 0.82, 0.82]
    within = [0.70, 0.80, 0.81, 0.82, 0.82, 0.82, 0.82]          # -0.2 pp
    assert pb.accuracy_note(within, ref, 10000) is None
    assert pb.accuracy_note([0.70, 0.80, 0.815, 0.815, 0.815, 0.815, 0.815], ref, 10000) is None
    off = [0.70, 0.80, 0.80, 0.80, 0.80, 0.80, 0.80]              # -2 pp
    note = pb.accuracy_note(off, ref, 10000)
    assert note.startswith("last-5 mean 80.00% against float64's 82.00% "
                           "(gap -2.00 pp, over the 1 pp line)")
    assert "first differs from float64's at epoch 3 of 7" in note
    assert "no known mechanism" in note
    note = pb.accuracy_note(off, ref, 10000, numerics="drops the short last batch")
    assert note.endswith("known difference in its arithmetic: drops the short last batch")
    short = pb.accuracy_note([0.5, 0.6], [0.7, 0.8], 100)
    assert short.startswith("last-2 mean 55.00% against float64's 75.00% (gap -20.00 pp")
    assert pb.first_difference([0.8195], [0.81950000000000001], 10000) is None


def test_accuracy_fields_without_float64():
    assert pb.accuracy_fields({"test_accuracy_per_epoch": [0.5, 0.6]}, None, 100) == \
        {"accuracy_gap_pp_vs_fp64": None}


# ----------------------------------------------------------------------------- float64's source

def _shipped_recipe() -> dict:
    meta = json.loads((SHIPPED / "fp64_reference.json").read_text())["recipe"]
    r = dict(load_recipe(), **meta, test_size=10000)
    r["steps_per_epoch"] = -(-r["train_size"] // r["batch"])
    r["n_params"] = layout.n_params((r["input_dim"], r["hidden_dim"], r["output_dim"]))
    return r


@pytest.fixture(scope="module")
def shipped_inputs():
    return (np.load(SHIPPED / "init_params.npy"), np.load(SHIPPED / "order.npy"))


def _run_json(folder: Path, recipe: dict, per: list, **extra) -> None:
    doc = {"recipe": recipe, "paths": {}, "cases": [],
           "reference_fp64": {"test_accuracy_per_epoch": per, "test_accuracy": per[-1]}} | extra
    (folder / "run.json").write_text(json.dumps(doc))


def test_the_same_runs_run_json_comes_first(tmp_path, shipped_inputs):
    init, order = shipped_inputs
    recipe = _shipped_recipe()
    per = [0.5 + 0.01 * e for e in range(recipe["epochs"])]
    _run_json(tmp_path, recipe, per)
    got, source = pb.fp64_reference(tmp_path, recipe, init, order)
    assert source == pb.FP64_FROM_RUN == "run.json reference_fp64" and got == per
    short = dict(recipe, epochs=3)      # a shorter baseline run: float64's first epochs
    got, source = pb.fp64_reference(tmp_path, short, init, order)
    assert source == pb.FP64_FROM_RUN and got == per[:3]


def test_a_run_json_of_another_recipe_or_without_reference_is_passed_over(tmp_path, shipped_inputs):
    init, order = shipped_inputs
    recipe = _shipped_recipe()
    _run_json(tmp_path, dict(recipe, batch=64), [0.5] * recipe["epochs"])
    got, source = pb.fp64_reference(tmp_path, recipe, init, order)
    assert source == pb.FP64_SHIPPED and got == np.load(SHIPPED / "fp64_test_accuracy_per_epoch.npy").tolist()
    (tmp_path / "run.json").write_text(json.dumps({"recipe": recipe, "paths": {}, "cases": []}))
    assert pb.fp64_reference(tmp_path, recipe, init, order)[1] == pb.FP64_SHIPPED
    _, why = fp64_accuracy._from_run_json(tmp_path / "run.json", recipe)
    assert "has no reference_fp64" in why
    _run_json(tmp_path, dict(recipe, batch=64), [0.5] * recipe["epochs"])
    _, why = fp64_accuracy._from_run_json(tmp_path / "run.json", recipe)
    assert "is of another recipe (batch 64, this run's 128)" in why
    _run_json(tmp_path, recipe, [0.5, 0.6])
    _, why = fp64_accuracy._from_run_json(tmp_path / "run.json", recipe)
    assert why.endswith("reference_fp64 has 2 epochs, this run trains 20")
    (tmp_path / "run.json").write_text("{not json")
    _, why = fp64_accuracy._from_run_json(tmp_path / "run.json", recipe)
    assert "unreadable" in why


def test_the_shipped_reference_only_for_exactly_its_recipe(tmp_path, shipped_inputs):
    init, order = shipped_inputs
    recipe = _shipped_recipe()
    got, source = pb.fp64_reference(tmp_path, recipe, init, order)      # no run.json
    assert source == pb.FP64_SHIPPED == "data/reference (shipped)"
    assert len(got) == recipe["epochs"]
    for change, words in ((dict(epochs=3), "epochs 20, this run's 3"),
                          (dict(hidden_dim=64), "hidden_dim 256, this run's 64"),
                          (dict(batch=256), "batch 128, this run's 256"),
                          (dict(train_size=60000), "train_size 6000, this run's 60000")):
        got, source = pb.fp64_reference(tmp_path, dict(recipe, **change), init, order)
        assert got is None and source.startswith(f"none: no {tmp_path}/run.json; "), source
        assert f"data/reference is of another recipe ({words})" in source, source
    other = init.copy()
    other[0] += 1.0
    got, source = pb.fp64_reference(tmp_path, recipe, other, order)
    assert got is None and source.endswith("this run's init_params.npy is not data/reference's")
    got, source = pb.fp64_reference(tmp_path, recipe, init, order[::-1].copy())
    assert got is None and source.endswith("this run's order.npy is not data/reference's")
    got, source = pb.fp64_reference(tmp_path, recipe, init, order, data_dir=ROOT / "data" / "full")
    assert got is None and "data/reference was trained on data/, this run read data/full" in source


def test_a_shipped_reference_that_fails_its_hashes_is_not_used(tmp_path, shipped_inputs):
    init, order = shipped_inputs
    ref = tmp_path / "reference"
    shutil.copytree(SHIPPED, ref)
    per = np.load(ref / "fp64_test_accuracy_per_epoch.npy")
    np.save(ref / "fp64_test_accuracy_per_epoch.npy", per + 0.01)
    got, source = pb.fp64_reference(tmp_path, _shipped_recipe(), init, order, reference_dir=ref)
    assert got is None and "SHA-256 mismatch" in source


# ----------------------------------------------------------------------------- the baseline writes them

@pytest.fixture
def small(tmp_path):
    """The binary's two files for a 512-image slice at hidden width 32, 2 epochs, in tmp_path."""
    rng = np.random.default_rng(7)
    shape = layout.Shape(784, 32, 10)
    data = {"train_images": rng.uniform(0, 1, (512, 784)).astype(np.float32),
            "train_labels": rng.integers(0, 10, 512).astype(np.int32),
            "test_images": rng.uniform(0, 1, (200, 784)).astype(np.float32),
            "test_labels": rng.integers(0, 10, 200).astype(np.int32)}
    init = (rng.uniform(-1, 1, layout.n_params(shape)) / 28).astype(np.float32)
    order = np.stack([rng.permutation(512) for _ in range(2)]).astype(np.int32)
    np.save(tmp_path / "init_params.npy", init)
    np.save(tmp_path / "order.npy", order)
    return tmp_path, data, pb.recipe_ran(load_recipe(), init, order, data)


def test_pytorch_json_records_the_gap_to_the_same_runs_float64(small, monkeypatch):
    results, data, recipe = small
    monkeypatch.setattr("spec.provenance.git_commit", lambda: "test-commit")
    monkeypatch.setitem(registry.VARIANTS, "fake-drop", registry.Variant(
        "eager under another name (test)", registry.VARIANTS["eager"].build,
        numerics="drops the short last batch (test)"))
    _run_json(results, recipe, [1.0, 1.0])       # float64 "perfect": every variant far off
    doc = pb.run_all(results, ["eager", "fake-drop", "cuda-graph"], device="cpu", data=data)
    validate(doc, "pytorch", "pytorch.json")
    assert json.loads((results / "pytorch.json").read_text()) == json.loads(json.dumps(doc))
    assert doc["fp64_source"] == "run.json reference_fp64"
    assert doc["fp64_test_accuracy_last5_mean"] == 1.0
    eager = doc["variants"]["eager"]
    per = eager["test_accuracy_per_epoch"]
    assert eager["test_accuracy_last5_mean"] == pytest.approx(sum(per) / 2)
    assert eager["accuracy_gap_pp_vs_fp64"] == pytest.approx(100 * (sum(per) / 2 - 1.0))
    assert eager["accuracy_note"].startswith(
        f"last-2 mean {100 * sum(per) / 2:.2f}% against float64's 100.00% (gap ")
    assert "at epoch 1 of 2" in eager["accuracy_note"] and "no known mechanism" in eager["accuracy_note"]
    assert doc["variants"]["fake-drop"]["accuracy_note"].endswith(
        "known difference in its arithmetic: drops the short last batch (test)")
    assert doc["variants"]["cuda-graph"] == {"error": "skipped: cuda-graph needs a CUDA device",
                                             "precision": "fp32"}


def test_without_float64_the_fields_are_null_and_the_source_says_why(small, monkeypatch):
    results, data, _ = small
    monkeypatch.setattr("spec.provenance.git_commit", lambda: "test-commit")
    doc = pb.run_all(results, ["eager"], device="cpu", data=data)
    validate(doc, "pytorch", "pytorch.json")
    assert doc["fp64_test_accuracy_last5_mean"] is None
    assert doc["fp64_source"].startswith(f"none: no {results}/run.json; data/reference is of another recipe (")
    eager = doc["variants"]["eager"]
    assert eager["accuracy_gap_pp_vs_fp64"] is None and "accuracy_note" not in eager
    assert eager["test_accuracy_last5_mean"] == pytest.approx(np.mean(eager["test_accuracy_per_epoch"]))


def test_every_registered_variant_declares_its_numerics_as_one_line():
    for name, v in registry.VARIANTS.items():
        assert isinstance(v.numerics, str) and "\n" not in v.numerics, name


# ----------------------------------------------------------------------------- RESULTS.md

@pytest.fixture
def results(tmp_path):
    res = tmp_path / "results"
    shutil.copytree(FIXTURES / "results", res)
    return res


def _section(results: Path) -> str:
    out = results.parent / "out"
    report.render(results, results.parent / "no-profile", PREDICTIONS, GAPS, out / "RESULTS.md",
                  plots_dir=out / "plots")
    text = (out / "RESULTS.md").read_text(encoding="utf-8")
    return text.split(SECTION, 1)[1].split("\n## ", 1)[0]


def test_an_old_pytorch_json_without_the_fields_renders_dashes(results):
    doc = json.loads((results / "pytorch.json").read_text())
    assert "fp64_source" not in doc
    assert not any("test_accuracy_last5_mean" in v for v in doc["variants"].values())
    section = _section(results)
    assert "was written before the baseline recorded these fields" in section
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and not ln.startswith("| variant")]
    assert [r.split(" | ")[0][2:] for r in rows] == list(doc["variants"])
    for row in rows:
        assert row.endswith("| — | — | — | — |"), row


def test_the_recorded_fields_render_with_their_note(results):
    doc = json.loads((results / "pytorch.json").read_text())
    doc["fp64_source"] = "run.json reference_fp64"
    doc["fp64_test_accuracy_last5_mean"] = 0.824
    for rec in doc["variants"].values():
        rec["precision"] = "fp32"                 # as the baseline records it now
        if "test_accuracy_per_epoch" in rec:
            rec["test_accuracy_last5_mean"] = 0.8231
            rec["accuracy_gap_pp_vs_fp64"] = -0.09
    doc["variants"]["manual-ops"] |= {"test_accuracy_last5_mean": 0.81,
                                      "accuracy_gap_pp_vs_fp64": -1.4,
                                      "accuracy_note": "last-5 mean 81.00% against float64's "
                                                       "82.40% (gap -1.40 pp, over the 1 pp line)"}
    (results / "pytorch.json").write_text(json.dumps(doc))
    section = _section(results)
    assert "was written before" not in section
    assert "(`fp64_source`): run.json reference_fp64." in section
    assert "| eager | fp32 | passed | 82.31% | 82.40% | -0.09 pp | — |" in section
    assert ("| manual-ops | fp32 | passed | 81.00% | 82.40% | -1.40 pp | last-5 mean 81.00% against "
            "float64's 82.40% (gap -1.40 pp, over the 1 pp line) |") in section
    skipped = next(ln for ln in section.splitlines() if ln.startswith("| compiled-skipped-example |"))
    assert skipped.endswith("| — | — | — | — |")


def test_the_accuracy_section_of_the_template_types_no_number():
    text = (TEMPLATES_DIR / "results_torch.md.j2").read_text()
    part = text.split("{% set ta = torch_accuracy %}", 1)[1].split("{% set mem = torch_memory %}", 1)[0]
    literal = re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", "", part, flags=re.S)
    literal = re.sub(r"\bfloat64\b|fp64", "", literal)
    assert not re.findall(r"\d", literal), literal


def test_the_profiled_epoch_comes_from_its_variable_and_is_checked():
    import torch
    from harness.baseline import pytorch_baseline as pb
    env = {pb.PROFILE_EPOCH_ENV: "2"}
    assert pb.profile_epoch(5, "cpu", env) is None          # CPU: no NVTX range
    assert pb.profile_epoch(5, "cuda", {}) is None           # unset
    if torch.cuda.is_available():
        assert pb.profile_epoch(5, "cuda", env) == 2
    for bad in ("0", "5", "x", "-1"):
        with pytest.raises(ValueError, match=pb.PROFILE_EPOCH_ENV):
            pb.profile_epoch(5, "cuda", {pb.PROFILE_EPOCH_ENV: bad})
