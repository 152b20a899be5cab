"""The report (analysis/): its section data checked against the inputs' numbers, its bad-input
handling (one line, exit 2, nothing written), and ONE golden test that the committed RESULTS.md,
PROFILES.md and SWEEP.md re-render byte for byte from the committed results.

tests/fixtures/nsys holds real nsys CSVs (fused and unfused, an older build); tests/fixtures/results
holds SYNTHETIC run.json, pytorch.json, persistent_phases.json, ... (their numbers are placeholders;
the `graph` path is marked failed on purpose)."""
from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path

import pytest

from analysis import render as renderer
from analysis import report, sweep_report
from analysis.loaders import InputError, load_inputs
from analysis.sections import gate, phases, profiles, sanitize, summary
from analysis.sections.profiles import MEASURES
from spec.files import ROOT, TEMPLATES_DIR

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PREDICTIONS, GAPS = ROOT / "predictions.toml", ROOT / "GAPS.toml"


@pytest.fixture
def inputs(tmp_path):
    results, profile = tmp_path / "results", tmp_path / "profile"
    shutil.copytree(FIXTURES / "results", results)
    shutil.copytree(FIXTURES / "nsys", profile, ignore=shutil.ignore_patterns("*.md"))
    return results, profile, tmp_path / "out"


def render(inputs) -> str:
    results, profile, out = inputs
    report.render(results, profile, PREDICTIONS, GAPS, out / "RESULTS.md",
                  plots_dir=out / "plots")
    return (out / "RESULTS.md").read_text(encoding="utf-8")


def context(inputs) -> dict:
    results, profile, _ = inputs
    return renderer.results_context(load_inputs(results, profile, PREDICTIONS, GAPS, MEASURES))


def edit(results: Path, name: str, change) -> None:
    doc = json.loads((results / name).read_text())
    change(doc)
    (results / name).write_text(json.dumps(doc))


def run_main(inputs, capsys) -> tuple[int, str]:
    results, profile, out = inputs
    rc = report.main(["--results", str(results), "--profile", str(profile),
                      "--out", str(out / "RESULTS.md"), "--plots", str(out / "plots")])
    return rc, capsys.readouterr().err


# ----------------------------------------------------------------------------- golden

REAL = ROOT / "results"


@pytest.mark.skipif(not (REAL / "run.json").is_file(), reason="no committed results/run.json")
def test_committed_reports_rerender_byte_for_byte():
    """RESULTS.md, PROFILES.md, SWEEP.md and their plots, from the committed results (the
    summary counts commits in this repository's history, which a shallow clone cuts)."""
    from spec import provenance
    if provenance.is_shallow(ROOT):
        pytest.skip("a shallow clone cannot count the commits RESULTS.md's summary names "
                    "(git fetch --unshallow)")
    outputs, _ = renderer.render_results(
        load_inputs(REAL, ROOT / "profile", PREDICTIONS, GAPS, MEASURES), ROOT / "RESULTS.md",
        ROOT / "PROFILES.md", REAL / "plots", ROOT / "SWEEP.md", TEMPLATES_DIR)
    outputs |= renderer.render_sweep(sweep_report.load_sweep(REAL / "sweep.json"),
                                     REAL / "sweep.json", ROOT / "SWEEP.md", REAL / "plots",
                                     TEMPLATES_DIR)
    for path, data in outputs.items():
        want = data.encode("utf-8") if isinstance(data, str) else data
        assert path.is_file(), f"{path} is not committed (python -m analysis.report)"
        assert path.read_bytes() == want, f"{path} differs from its re-render"


# ----------------------------------------------------------------------------- rendering

def test_render_writes_every_output_and_is_byte_identical_twice(inputs):
    out = inputs[2]
    text = render(inputs)
    first = {p.name: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    render(inputs)
    second = {p.name: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    assert first == second
    assert {"RESULTS.md", "PROFILES.md", "loss_per_epoch.png", "loss_deviation.png",
            "epoch_time.png", "persistent_phases.png", "fused_kernel_breakdown.png",
            "unfused_kernel_breakdown.png"} <= set(first)
    assert "](PROFILES.md)" in text and "## Summary" in text.split("## Setup")[0]
    assert not list(out.rglob("*.tmp"))


def test_templates_hold_no_numbers():
    for name in ("RESULTS.md.j2", "PROFILES.md.j2", "results_memory.md.j2",
                 "results_profiles.md.j2"):
        text = (TEMPLATES_DIR / name).read_text()
        literal = re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", "", text, flags=re.S)
        literal = re.sub(r"\b(?:float|int)(?:32|64)\b|sm_\d+|\bv\d\b|\d+-image|2·M·N·K|\bL2\b|Float64|TF32|FP32|FP64|fp32|fp64|nvtx_sum|sm_90", "", literal)
        assert not re.findall(r"\d", literal), (name, re.findall(r".{20}\d.{20}", literal)[:3])


# ----------------------------------------------------------------------------- the summary

def test_summary_fields_trace_to_the_inputs(inputs):
    ctx = context(inputs)
    s = ctx["summary"]
    run = json.loads((inputs[0] / "run.json").read_text())
    torch = json.loads((inputs[0] / "pytorch.json").read_text())["variants"]
    # graph fails its checks on purpose: the one verdict is then FAIL, whatever the cases say
    assert not s["gate_passed"] and s["verdict"] == "FAIL" and s["failed_paths"] == ["graph"]
    assert s["first_hint"].startswith("path check: path graph") and s["failed_cases"] == []
    f = s["fastest"]
    passing = {n: r["median_ms"] for n, r in run["paths"].items() if r["passed"]}
    assert f["path"] == min(passing, key=passing.get) == "persistent"
    ok = {n: v["median_ms"] for n, v in torch.items() if not v.get("error")}
    assert f["best_torch"] == min(ok, key=ok.get)
    assert f["vs_best_torch"] == pytest.approx(passing["persistent"] / ok[f["best_torch"]])
    assert f["vs_eager"] == pytest.approx(passing["persistent"] / torch["eager"]["median_ms"])
    assert f["us_step"] == pytest.approx(passing["persistent"] * 1000 / 47)
    # persistent: the limit comes from its kernel's phase breakdown
    lim = s["limit"]
    assert lim["source"] == "phases" and lim["path"] == "persistent"
    assert lim["top"]["us"] == max(p["us"] for p in lim["parts"])
    # the fixtures' commits ("abc1234", "synthetic") are not this repository's; the rest record none
    ev = {e["key"]: e["age"]["state"] for e in s["evidence"]}
    assert ev == {"pytorch": "none", "phases": "none", "ceilings": "none", "sanitize": "none",
                  "sweep": "unknown", "full_split": "unknown", "profiles": "none"}


def _git(repo, *args):
    import os
    import subprocess
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def test_summary_lists_evidence_older_than_the_run_by_commits(inputs, tmp_path, monkeypatch):
    """Each evidence file's age against run.json's commit, counted in a throwaway repository:
    three commits a, b, c; the run at c."""
    import functools
    from spec import provenance
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    ids = []
    for name in "abc":
        _git(repo, "commit", "-q", "--allow-empty", "-m", name)
        ids.append(_git(repo, "rev-parse", "--short", "HEAD"))
    a, b, c = ids
    monkeypatch.setattr(summary, "commit_age", functools.partial(provenance.age, repo=repo))
    results = inputs[0]
    for name, commit in (("run.json", c), ("pytorch.json", c), ("sweep.json", a),
                         ("ceilings.json", b + "-dirty"), ("sanitize.json", "0000000")):
        edit(results, name, lambda d, commit=commit: d.update(commit=commit))
    edit(results, "persistent_phases.json", lambda d: d.pop("commit", None))
    ev = {e["key"]: e for e in context(inputs)["summary"]["evidence"]}
    assert "pytorch" not in ev                              # the run's own commit: not listed
    assert ev["sweep"]["age"] == {"state": "older", "commits": 2} and ev["sweep"]["commit"] == a
    assert ev["ceilings"]["age"] == {"state": "older", "commits": 1}
    assert ev["sanitize"]["age"]["state"] == "unknown"
    assert ev["phases"]["age"]["state"] == "none"
    text = render(inputs)
    top = text.split("## Setup")[0]
    assert f"/sweep.json` (Memory and cost): commit `{a}` of 2026-01-01T00:00:00Z: **2 commits older** than the run" in top
    assert f"/ceilings.json` (Roofline): commit `{b}-dirty` of 2026-11-30T18:55:00Z: **1 commit older** than the run" in top
    assert "/sanitize.json` (Sanitizers): commit `0000000`, undated: commit not in this repository" in top
    assert "/persistent_phases.json` (Where the persistent epoch's time goes): no commit recorded, undated" in top


def test_summary_says_when_the_run_records_no_commit(inputs):
    edit(inputs[0], "run.json", lambda d: d.pop("commit"))
    ev = context(inputs)["summary"]["evidence"]
    assert {e["key"]: e["age"]["state"] for e in ev}["sweep"] == "no_run_commit"
    assert "run.json records no commit to count from" in render(inputs)


def test_summary_limit_comes_from_the_fastest_paths_own_profile(inputs):
    results = inputs[0]

    def only_fused_fast(doc):
        doc["paths"]["persistent"]["passed"] = False
    edit(results, "run.json", only_fused_fast)
    s = context(inputs)["summary"]
    assert s["fastest"]["path"] == "fused"
    lim = s["limit"]
    assert lim["source"] == "profile" and lim["path"] == "fused" and not lim["is_graph"]
    assert lim["filler"] in ("kernel", "launch")
    # a graph path is never told to become a CUDA graph
    text = render(inputs)
    assert "CUDA graph" not in text.split("**What limits it**")[1].split("\n")[0] or \
        lim["filler"] == "launch"


def test_graph_path_limit_does_not_recommend_a_graph(inputs):
    results, profile, _ = inputs
    for kind in ("cuda_gpu_kern_sum", "cuda_api_sum", "nvtx_sum"):
        shutil.copy(profile / f"fused_{kind}.csv", profile / f"graph_{kind}.csv")
    ctx = context(inputs)
    lim = next(x for x in ctx["limits"] if x["path"] == "graph")
    assert lim["is_graph"]
    text = render(inputs)
    line = next(ln for ln in text.splitlines() if ln.startswith("- `graph`:"))
    assert "replay the epoch as one CUDA graph" not in line
    fused = next(ln for ln in text.splitlines() if ln.startswith("- `fused`:"))
    assert ("replay the epoch as one CUDA graph" in fused) == (lim["filler"] == "launch")


# ----------------------------------------------------------------------------- sections

def test_case_8_row_drops_out_for_the_epoch_time_table(inputs):
    text = render(inputs)
    gate_sec = text.split("## Gate: the cases")[1].split("### Per-path checks")[0]
    assert "\n| 8 |" not in gate_sec and "Case 8 (" in gate_sec
    assert next(r for r in context(inputs)["cases"]["rows"] if r["id"] == 8)["timing"]


def test_tiers_collapse_when_every_path_has_one_tier(inputs):
    ctx = context(inputs)
    tiers = ctx["tiers"]
    assert [t["path"] for t in tiers["rows"]] == ["fused", "persistent"]  # graph failed
    crit = tiers["headline"]["criteria"]
    assert crit[0]["against"] == 3.1759 and crit[0]["ratio"] == pytest.approx(1.9623 / 3.1759)
    if tiers["same"]:
        assert "| path | tier |" not in render(inputs)
    run = json.loads((inputs[0] / "run.json").read_text())
    eager = {"median_ms": 1.0}
    t = gate.tier_for("fused", run["paths"], eager)  # 1.96 ms is above 0.90 × 1.0 ms
    assert t["tier"] == "bronze" and [c["met"] for c in t["criteria"]] == [True, False, False]


def test_goals_are_computed_from_the_medians(inputs):
    rows = {g["key"]: g for g in context(inputs)["goals"]["rows"]}
    assert rows["fastest_ms"]["path"] == "persistent" and rows["fastest_ms"]["met"] is False
    assert rows["fastest_vs_eager"]["ratio"] == pytest.approx(1.2089 / 10.3544)
    assert rows["cv"]["worst"] in ("fused", "unfused", "graph", "persistent")


def test_phase_breakdown_reads_kernel_phases_and_staging(inputs):
    ph = context(inputs)["phases"]
    doc = json.loads((inputs[0] / "persistent_phases.json").read_text())
    by = {tuple(v["phases"]): v["median_ms"] for v in doc["variants"]}
    bd = ph["breakdowns"][0]
    assert bd["kernel"] == "persistent"
    assert bd["barriers"] == pytest.approx(by[()] * 1000 / 47)
    assert [p["phase"] for p in bd["parts"]] == ["A", "B", "C"]
    assert bd["parts"][0]["us"] == pytest.approx((by[("A",)] - by[()]) * 1000 / 47)
    assert bd["full"] == pytest.approx(by[("A", "B", "C")] * 1000 / 47)


def test_phase_comparisons_set_the_shipped_staging_against_another(inputs):
    def add_rows(doc):
        doc["variants"] += [
            {"kernel": "persistent2", "phases": ["A", "B", "C"], "staging": "v5",
             "production": True, "label": "p2", "median_ms": 0.9, "cv_pct": 0.3},
            {"kernel": "persistent2", "phases": ["A", "B", "C"], "staging": "v4",
             "production": False, "label": "p2 v4", "median_ms": 1.0, "cv_pct": 0.3}]
    edit(inputs[0], "persistent_phases.json", add_rows)
    cmp = [c for c in context(inputs)["phases"]["comparisons"] if c["kernel"] == "persistent2"]
    assert len(cmp) == 1 and cmp[0]["diff"] == pytest.approx(-100 / 47)


def test_loss_curve_flags_and_deviation(inputs):
    ctx = context(inputs)
    run = json.loads((inputs[0] / "run.json").read_text())
    ref = run["reference_fp64"]["loss_per_epoch"]
    lc = ctx["loss_curve"]
    cell = lc["rows"][0]["cells"][0]
    first = run["paths"][next(iter(run["paths"]))]["loss_per_epoch"][0]
    assert cell["rel"] == pytest.approx((first - ref[0]) / ref[0])
    assert all(abs(f["rel"]) > 0.02 for x in lc["flagged"] for f in x["epochs"])
    dev = gate.loss_deviation(run, None)
    assert dev[0]["dev"][0] == pytest.approx(abs(first / ref[0] - 1))


def test_sanitizer_table_is_one_line_unless_something_failed(inputs):
    san = json.loads((inputs[0] / "sanitize.json").read_text())
    sec = sanitize.section(san, None)
    assert sec["runs"] == len(san["runs"])
    text = render(inputs)
    part = text.split("## Sanitizers")[1].split("\n## ")[0]
    assert ("| tool | target |" in part) == bool(sec["bad"])
    failed = [r for r in san["runs"] if r["errors"] != 0 or r["exit_code"] != 0]
    assert sec["bad"] == failed and sec["clean"] == (not failed and san.get("complete", True))
    clean = copy.deepcopy(san)
    for r in clean["runs"]:
        r["errors"], r["exit_code"] = 0, 0
    sec = sanitize.section(clean, None)
    assert sec["clean"] and sec["bad"] == [] and sec["total"] == 0


def test_sanitize_log_parser_reads_interleaved_parallel_runs():
    done, current = sanitize.log_runs(
        "sanitize: memcheck path fused\nsanitize: racecheck path fused\n"
        "sanitize: racecheck path fused -> 0 errors, exit 0 (3.0 s)\n"
        "sanitize: memcheck path fused -> 2 errors, exit 99 (4.0 s)\n"
        "sanitize: initcheck path graph\n")
    assert [(r["tool"], r["errors"], r["exit_code"]) for r in done] == \
        [("racecheck", "0", "0"), ("memcheck", "2", "99")]
    assert current == {"tool": "initcheck", "target": "path graph"}


def test_predictions_against_the_profiles(inputs):
    preds = {p["measure"]: p for p in context(inputs)["predictions"]}
    assert preds["lower_epoch_time"]["measured"] == "fused"
    assert preds["lower_epoch_time"]["evidence"]["medians"] == {"fused": 1.9623,
                                                                "unfused": 3.1759}
    assert preds["widest_kernel"]["measured"] == "k_fwd_hidden_bias_relu"
    assert preds["epoch_filler"]["verdict"] in ("match", "mismatch")


def test_profiles_md_holds_every_kernel_row(inputs):
    render(inputs)
    text = (inputs[2] / "PROFILES.md").read_text()
    for path in ("fused", "unfused"):
        rows = (FIXTURES / "nsys" / f"{path}_cuda_gpu_kern_sum.csv").read_text().splitlines()[1:]
        part = text.split(f"## Path `{path}`")[1].split("## ")[0]
        assert part.count("\n| `k_") == len(rows)
    assert "| `k_colsum<(Col)0>` | colsum db1 |" in text


def test_without_pytorch_and_profiles_the_report_still_renders(inputs):
    (inputs[0] / "pytorch.json").unlink()
    for f in inputs[1].glob("*.csv"):
        f.unlink()
    text = render(inputs)
    assert "PyTorch was not run" in text and "No profile of this run exists" in text
    assert not (inputs[2] / "plots" / "fused_kernel_breakdown.png").exists()


# ----------------------------------------------------------------------------- bad inputs

def nothing_written(out: Path) -> bool:
    return not out.exists() or not any(p.is_file() for p in out.rglob("*"))


@pytest.mark.parametrize("name, change, field", [
    ("run.json", lambda d: d["paths"]["fused"].__setitem__("median_ms", "fast"),
     "run.json: paths.fused.'median_ms': expected a finite number >= 0 or null, got the string 'fast'"),
    ("run.json", lambda d: d["paths"]["fused"].__setitem__("passed", "false"),
     "paths.fused.'passed': expected true or false, got the string 'false'"),
    ("run.json", lambda d: d["recipe"].pop("steps_per_epoch"),
     "missing key recipe.'steps_per_epoch'"),
    ("pytorch.json", lambda d: d["variants"]["eager"].__setitem__("median_ms", [1]),
     "variants.eager.'median_ms'"),
    ("persistent_phases.json", lambda d: d["variants"][0].__setitem__("mask", 7) or
     d["variants"][0].pop("kernel"), "missing key variants[0].'kernel'"),
    ("sanitize.json", lambda d: d["runs"][0].__setitem__("errors", "0"), "runs[0].'errors'"),
    ("sweep.json", lambda d: d["points"][0].__setitem__("hidden", 1.5), "points[0].'hidden'"),
])
def test_a_field_of_the_wrong_type_is_one_line_exit_2_and_nothing_written(
        inputs, capsys, name, change, field):
    before = (inputs[0] / name).read_text()
    edit(inputs[0], name, change)
    rc, err = run_main(inputs, capsys)
    assert rc == 2 and err.count("\n") == 1 and field in err and name in err, err
    assert nothing_written(inputs[2])
    assert (inputs[0] / name).read_text() != before  # the edit, untouched by the report


def test_loading_never_changes_the_inputs(inputs):
    results, profile, _ = inputs
    docs = {n: json.loads((results / n).read_text()) for n in ("run.json", "pytorch.json",
                                                               "persistent_phases.json")}
    edit(results, "run.json", lambda d: d["paths"]["fused"].__setitem__("launches_per_step", -1))
    docs["run.json"]["paths"]["fused"]["launches_per_step"] = -1
    inp = load_inputs(results, profile, PREDICTIONS, GAPS, MEASURES)
    renderer.results_context(inp)
    assert inp.run == docs["run.json"] and inp.pytorch == docs["pytorch.json"]
    assert inp.phases == docs["persistent_phases.json"]
    assert all("passed" not in v for v in inp.pytorch["variants"].values())


@pytest.mark.parametrize("mutate, words", [
    (lambda rows: rows.__setitem__(2, rows[2].split(",", 1)[1]), "cells, the header"),
    (lambda rows: rows.insert(3, ""), "blank line inside the table"),
    (lambda rows: rows.__setitem__(slice(1, None), []), "a header without data rows"),
])
def test_a_malformed_profile_csv_stops_the_report_naming_file_and_line(
        inputs, capsys, mutate, words):
    f = inputs[1] / "fused_cuda_gpu_kern_sum.csv"
    rows = f.read_text().splitlines()
    mutate(rows)
    f.write_text("\n".join(rows) + "\n")
    rc, err = run_main(inputs, capsys)
    assert rc == 2 and f"{f}: line " in err and words in err and err.count("\n") == 1, err
    assert nothing_written(inputs[2])


def test_a_failing_write_leaves_every_output_untouched(inputs, monkeypatch):
    render(inputs)
    out = inputs[2]
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    edit(inputs[0], "run.json", lambda d: d.__setitem__("commit", "def5678"))
    import spec.files

    real = spec.files._write_temp
    calls = []

    def fail_late(path, data):
        calls.append(path)
        if len(calls) == 3:
            raise OSError("disk full (test)")
        return real(path, data)
    monkeypatch.setattr(spec.files, "_write_temp", fail_late)
    with pytest.raises(OSError):
        render(inputs)
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_malformed_gaps_toml_is_one_line_exit_2_and_nothing_written(inputs, capsys, tmp_path):
    gaps = tmp_path / "GAPS.toml"
    gaps.write_text("[[gap]\n")
    results, profile, out = inputs
    rc = report.main(["--results", str(results), "--profile", str(profile), "--gaps", str(gaps),
                      "--out", str(out / "RESULTS.md"), "--plots", str(out / "plots")])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(f"error: {gaps}: malformed TOML") and err.count("\n") == 1, err
    assert nothing_written(out)


# ----------------------------------------------------------------------------- one recipe

SAME_RECIPE = "pytorch.json` of the same run and recipe."
UNVERIFIED = "that the two halves trained the same recipe is unverified"


def test_equal_recipes_render_as_the_same_recipe(inputs):
    results = inputs[0]
    run, torch = (json.loads((results / n).read_text()) for n in ("run.json", "pytorch.json"))
    assert torch["recipe"] == run["recipe"]
    text = render(inputs)
    assert SAME_RECIPE in text and UNVERIFIED not in text


@pytest.mark.parametrize("change, named", [
    (lambda r: r.update(batch=256), "batch 256 vs 128"),
    (lambda r: r.update(lr=0.05, hidden_dim=512), "hidden_dim 512 vs 256, lr 0.05 vs 0.1"),
    (lambda r: r.pop("seed"), "seed absent vs 20260829"),
])
def test_a_different_recipe_is_one_line_exit_2_and_nothing_written(inputs, capsys, change, named):
    edit(inputs[0], "pytorch.json", lambda d: change(d["recipe"]))
    rc, err = run_main(inputs, capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: {inputs[0] / 'pytorch.json'}: recipe differs from "
                          f"{inputs[0] / 'run.json'}'s: {named} "), err
    assert nothing_written(inputs[2])


def test_a_pytorch_json_without_recipe_renders_marked_unverified(inputs):
    edit(inputs[0], "pytorch.json", lambda d: d.pop("recipe"))
    text = render(inputs)
    line = next(ln for ln in text.splitlines() if ln.startswith("- **Fastest passing path"))
    assert f"{UNVERIFIED}, since `" in line and "records none" in line
    assert SAME_RECIPE not in text


def test_missing_run_json_is_one_line(inputs, capsys):
    (inputs[0] / "run.json").unlink()
    rc, err = run_main(inputs, capsys)
    assert rc == 2 and "run.json: file not found" in err and nothing_written(inputs[2])
    with pytest.raises(InputError):
        render(inputs)


def test_summary_module_reads_no_phase_masks():
    for mod in (phases, summary, profiles):
        assert "mask" not in Path(mod.__file__).read_text()


# ----------------------------------------------------------------------------- hostile results (issue 28)

def _hashes(*roots) -> dict:
    import hashlib
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for r in roots for p in sorted(Path(r).rglob("*"))
            if p.is_file()}


def _set(path: list, value):
    def change(doc):
        for key in path[:-1]:
            doc = doc[key]
        doc[path[-1]] = value
    return change


@pytest.mark.parametrize("name, change, words", [
    ("run.json", _set(["paths", "fused", "median_ms"], -1), "paths.fused.'median_ms': expected a finite number >= 0"),
    ("run.json", _set(["paths", "fused", "epoch_ms"], [1.0, -2.0]), "paths.fused.epoch_ms[1]"),
    ("run.json", _set(["paths", "fused", "test_accuracy"], 1.5), "expected a fraction in [0, 1]"),
    ("run.json", _set(["paths", "fused", "min_ms"], 1e6), "expected min <= median <= max"),
    ("pytorch.json", _set(["variants", "eager", "median_ms"], -3), "variants.eager.'median_ms'"),
    ("pytorch.json", _set(["variants", "eager", "test_accuracy_per_epoch"], [0.5, -0.1]),
     "test_accuracy_per_epoch[1]"),
    ("sweep.json", _set(["points", 0, "best_cuda", "median_ms"], -1.0), "points[0].best_cuda.'median_ms'"),
    ("ceilings.json", _set(["copy", "gb_per_s"], -5), "copy.'gb_per_s': expected a positive number"),
])
def test_values_outside_their_physical_range_are_one_line_exit_2(inputs, capsys, name, change, words):
    edit(inputs[0], name, change)
    rc, err = run_main(inputs, capsys)
    assert rc == 2 and err.count("\n") == 1 and words in err and name in err, err
    assert nothing_written(inputs[2])


def test_a_number_too_large_for_a_float_is_refused(inputs, capsys):
    f = inputs[0] / "run.json"
    doc = json.loads(f.read_text())
    doc["paths"]["fused"]["median_ms"] = 12345.5
    f.write_text(json.dumps(doc).replace("12345.5", "1e400"))   # Python reads 1e400 as inf
    rc, err = run_main(inputs, capsys)
    assert rc == 2 and err.count("\n") == 1 and "paths.fused.'median_ms'" in err and "the number inf" in err, err
    assert nothing_written(inputs[2])


def test_nan_and_infinity_literals_are_malformed_json(inputs, capsys):
    f = inputs[0] / "run.json"
    f.write_text(f.read_text().replace('"median_ms": ', '"median_ms": NaN, "x": ', 1))
    rc, err = run_main(inputs, capsys)
    assert rc == 2 and err.count("\n") == 1 and "malformed JSON: NaN is no JSON number" in err, err


@pytest.mark.parametrize("name", ["../../../../elsewhere/evil", "/tmp/evil", "a/b", "..", ".hidden", "x y"])
def test_a_path_name_that_is_no_safe_name_is_refused_naming_file_and_field(inputs, capsys, tmp_path, name):
    results = inputs[0]
    edit(results, "run.json", lambda d: d["paths"].__setitem__(name, d["paths"].pop("fused")))
    elsewhere = tmp_path / "elsewhere"
    rc, err = run_main(inputs, capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert f"{results / 'run.json'}: paths: key {name!r} is not a safe name" in err, err
    assert nothing_written(inputs[2]) and not elsewhere.exists()


def test_a_pytorch_variant_name_that_is_no_safe_name_is_refused(inputs, capsys):
    edit(inputs[0], "pytorch.json", lambda d: d["variants"].__setitem__("../evil", d["variants"].pop("eager")))
    rc, err = run_main(inputs, capsys)
    assert rc == 2 and "pytorch.json: variants: key '../evil' is not a safe name" in err, err


@pytest.mark.parametrize("special", ["folder", "fifo"])
@pytest.mark.parametrize("name", ["run.json", "pytorch.json", "logs/profile.log", "logs/nvidia-smi.csv"])
def test_a_results_file_that_is_a_folder_or_a_fifo_is_one_line(inputs, capsys, special, name):
    import os
    f = inputs[0] / name
    f.unlink(missing_ok=True)
    f.parent.mkdir(parents=True, exist_ok=True)
    f.mkdir() if special == "folder" else os.mkfifo(f)
    rc, err = run_main(inputs, capsys)
    assert rc == 2 and err.count("\n") == 1 and str(f) in err, err
    assert ("a folder" if special == "folder" else "a FIFO") in err
    assert nothing_written(inputs[2])


@pytest.mark.parametrize("block", ["plots_is_a_file", "a_plot_is_a_folder", "profiles_md_is_a_folder"])
def test_an_output_in_the_way_leaves_every_output_as_it_was(inputs, capsys, block):
    """All or none: whatever is in the way of one output is found before RESULTS.md is replaced."""
    results, profile, out = inputs
    render(inputs)
    edit(results, "run.json", lambda d: d.__setitem__("commit", "def5678"))   # a new render would differ
    target = {"plots_is_a_file": out / "plots", "a_plot_is_a_folder": out / "plots" / "epoch_time.png",
              "profiles_md_is_a_folder": out / "PROFILES.md"}[block]
    if target.is_dir():
        shutil.rmtree(target)
        target.write_text("in the way")
    else:
        target.unlink()
        target.mkdir()
    before = _hashes(out)
    rc, err = run_main(inputs, capsys)
    assert rc == 2 and err.count("\n") == 1 and str(target) in err, err
    assert _hashes(out) == before


def test_invoke_exits_2_with_the_entry_points_one_line_alone():
    import tasks
    from invoke import Exit
    with pytest.raises(Exit) as exc:
        tasks._exit_on(2, "report: rendering failed (its message is above)")
    assert exc.value.code == 2 and not exc.value.message
