"""RESULTS.md's precision table (analysis/sections/precision.py; issue 30): at the recipe point,
per precision our fastest passing path beside PyTorch's fastest variant of the same precision,
the speed-up, and each one's loss and test accuracy against float64; its accuracy plot; "not
measured" wherever a precision's data is missing. On the CPU.

The inputs are tests/fixtures/results' SYNTHETIC run.json and pytorch.json, given tf32 and bf16
copies of some paths and variants here (invented numbers, not a measurement), and, for the one
check against the baseline's own `fastest_by_precision`, the committed H200 pytorch.json of
results/experiments/precision/.
"""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from analysis import fmt, report
from analysis import render as renderer
from analysis.loaders import InputError, load_inputs, load_json
from analysis.sections import precision
from analysis.sections.profiles import MEASURES
from spec.files import ROOT
from spec.torch_variants import BF16, FP32, PRECISIONS, TF32
from tests.test_report import inputs  # noqa: F401  (the fixture: a copy of the fixture results and profiles)

FIXTURES = Path(__file__).resolve().parent / "fixtures"
PREDICTIONS, GAPS = ROOT / "predictions.toml", ROOT / "GAPS.toml"
PRECISION_RUN = ROOT / "results" / "experiments" / "precision" / "pytorch_ffabfba" / "pytorch.json"


def _scaled(rec: dict, prec: str, speed: float, loss: float, acc: float) -> dict:
    """A copy of a path or variant at `prec`: its epochs `speed` times as long, its losses
    `loss` times, its accuracies `acc` (a fraction) higher."""
    out = copy.deepcopy(rec)
    out["precision"] = prec
    for k in ("median_ms", "mean_ms", "min_ms", "max_ms"):
        if out.get(k) is not None:
            out[k] = out[k] * speed
    out["epoch_ms"] = [x * speed for x in out.get("epoch_ms") or []]
    out["loss_per_epoch"] = [x * loss for x in out["loss_per_epoch"]]
    out["test_accuracy_per_epoch"] = [round(a + acc, 6) for a in out["test_accuracy_per_epoch"]]
    out["test_accuracy"] = out["test_accuracy_per_epoch"][-1]
    tail = out["test_accuracy_per_epoch"][-5:]
    out["test_accuracy_last5_mean"] = sum(tail) / len(tail)
    return out


def _with_precisions(results: Path) -> None:
    run = json.loads((results / "run.json").read_text())
    paths = run["paths"]
    paths["fused"]["precision"] = FP32                      # said, and not said (the others)
    paths["tiled-tf32"] = _scaled(paths["fused"], TF32, 0.6, 1.002, -0.003)
    paths["tiled-tf32"]["parity_vs_fused"] = 0.002
    paths["tiled-bf16"] = _scaled(paths["persistent"], BF16, 0.3, 1.01, -0.008)  # fastest of all
    paths["tiled-bf16"]["parity_vs_fused"] = 0.007
    paths["slow-bf16"] = _scaled(paths["persistent"], BF16, 0.9, 1.0, 0.0)
    (results / "run.json").write_text(json.dumps(run))
    torch = json.loads((results / "pytorch.json").read_text())
    v = torch["variants"]
    for rec in v.values():
        rec["precision"] = FP32
    v["cuda-graph-tf32"] = _scaled(v["cuda-graph"], TF32, 0.8, 1.001, 0.001)
    v["eager-tf32"] = _scaled(v["eager"], TF32, 0.9, 1.001, 0.0)
    v["compiled-step-bf16"] = _scaled(v["cuda-graph"], BF16, 0.7, 1.005, -0.002)
    v["eager-bf16"] = {"error": "RuntimeError: SYNTHETIC failure", "precision": BF16}
    best = {}
    for p in PRECISIONS:
        ok = {n: r["median_ms"] for n, r in v.items() if r["precision"] == p and not r.get("error")}
        best[p] = {"variant": min(ok, key=ok.get), "median_ms": min(ok.values())} if ok else None
    torch["fastest_by_precision"] = best
    (results / "pytorch.json").write_text(json.dumps(torch))




def _context(inputs) -> dict:
    results, profile, _ = inputs
    return renderer.results_context(load_inputs(results, profile, PREDICTIONS, GAPS, MEASURES))


def _render(inputs) -> str:
    results, profile, out = inputs
    report.render(results, profile, PREDICTIONS, GAPS, out / "RESULTS.md", plots_dir=out / "plots")
    return (out / "RESULTS.md").read_text(encoding="utf-8")


def _section(text: str) -> str:
    return text.split("## Precision: ours beside PyTorch's, against float64", 1)[1].split("\n## ", 1)[0]


def _rows(section: str) -> list[str]:
    return [ln for ln in section.splitlines() if ln.startswith(("| FP32 |", "| TF32 |", "| BF16 |"))]


# ----------------------------------------------------------------------------- the table

def test_each_precision_sets_our_fastest_beside_pytorchs_fastest_of_the_same_precision(inputs):
    _with_precisions(inputs[0])
    run = json.loads((inputs[0] / "run.json").read_text())
    torch = json.loads((inputs[0] / "pytorch.json").read_text())
    ref = run["reference_fp64"]
    tab = _context(inputs)["precision"]
    assert [r["precision"] for r in tab["rows"]] == list(PRECISIONS)
    for r in tab["rows"]:
        p = r["precision"]
        mine = {n: x["median_ms"] for n, x in run["paths"].items()
                if x.get("precision", FP32) == p and x["passed"]}
        theirs = {n: x["median_ms"] for n, x in torch["variants"].items()
                  if x["precision"] == p and not x.get("error")}
        ours, top = min(mine, key=mine.get), min(theirs, key=theirs.get)
        assert r["ours"]["name"] == ours and r["theirs"]["name"] == top, p
        assert top == torch["fastest_by_precision"][p]["variant"]      # the baseline's, too
        assert r["speedup"] == pytest.approx(theirs[top] / mine[ours])
        for side, rec in ((r["ours"], run["paths"][ours]), (r["theirs"], torch["variants"][top])):
            loss, rl = rec["loss_per_epoch"], ref["loss_per_epoch"]
            assert side["loss_final_rel"] == pytest.approx(loss[-1] / rl[-1] - 1)
            assert side["loss_mean_abs_rel"] == pytest.approx(
                sum(abs(x / y - 1) for x, y in zip(loss, rl)) / len(loss))
            assert side["acc_last_gap"] == pytest.approx(
                100 * (rec["test_accuracy"] - ref["test_accuracy"]))
            # the recorded last-5 mean where there is one (the binary's, case 7's), else the list's
            last5 = rec.get("test_accuracy_last5_mean",
                            sum(rec["test_accuracy_per_epoch"][-5:]) / 5)
            ref5 = ref.get("test_accuracy_last5_mean", sum(ref["test_accuracy_per_epoch"][-5:]) / 5)
            assert side["acc_last5_gap"] == pytest.approx(100 * (last5 - ref5))
        assert r["ours"]["parity_fused"] == run["paths"][ours]["parity_vs_fused"]
    names = {r["precision"]: (r["ours"]["name"], r["theirs"]["name"]) for r in tab["rows"]}
    assert names == {FP32: ("persistent", "compiled-reduce-overhead"), TF32: ("tiled-tf32", "cuda-graph-tf32"),
                     BF16: ("tiled-bf16", "compiled-step-bf16")}


def test_results_md_shows_the_table_after_the_accuracy_table_and_its_plot(inputs):
    _with_precisions(inputs[0])
    text = _render(inputs)
    tab = _context(inputs)["precision"]
    assert text.index("## Test accuracy") < text.index("## Precision: ours beside PyTorch's") \
        < text.index("## Loss curve against float64")
    sec = _section(text)
    rows = _rows(sec)
    assert len(rows) == 3 + 6                     # the time table, then ours and PyTorch's each
    for r, ln in zip(tab["rows"], rows[:3]):
        assert ln == (f"| {r['label']} | ours `{r['ours']['name']}` | {r['ours']['median']:.3f} | "
                      f"PyTorch `{r['theirs']['name']}` | {r['theirs']['median']:.3f} | "
                      f"{r['speedup']:.2f}× |")
    bf16 = next(r for r in tab["rows"] if r["precision"] == BF16)
    ours_bf16 = next(ln for ln in rows[3:] if ln.startswith("| BF16 | ours `tiled-bf16` |"))
    assert f"| {fmt.rel_pct(bf16['ours']['loss_final_rel'])} |" in ours_bf16
    assert f"| {bf16['ours']['acc_last5_gap']:+.2f} pp |" in ours_bf16
    assert ours_bf16.endswith("| 0.007 (0.01) |")
    assert "plots/precision_accuracy_vs_fp64.png" in sec
    png = (inputs[2] / "plots" / "precision_accuracy_vs_fp64.png").read_bytes()
    assert png[:4] == b"\x89PNG"
    # the summary names each precision's speed-up, and the fastest path is still fp32's
    summary = text.split("## Setup")[0]
    assert (f"BF16 `tiled-bf16` {bf16['speedup']:.2f}× the speed of `compiled-step-bf16`"
            in summary)
    assert "**Fastest passing path: `persistent`" in summary


def test_the_plot_draws_what_the_table_says(inputs):
    _with_precisions(inputs[0])
    tab = _context(inputs)["precision"]
    rows = precision.plot_rows(tab)
    for r, pr in zip(tab["rows"], rows):
        assert [(b["name"], b["last5"], b["last"]) for b in pr["bars"]] == [
            (s["name"], s["acc_last5_gap"], s["acc_last_gap"]) for s in (r["ours"], r["theirs"])]
    from analysis import plots
    changed = copy.deepcopy(rows)
    changed[1]["bars"][0]["last5"] += 1.0
    assert plots.precision_accuracy_plot(changed) != plots.precision_accuracy_plot(rows)


def test_a_run_without_the_other_precisions_says_not_measured(inputs):
    """The fixtures as they are: no precision anywhere (a run.json and pytorch.json before the
    field): fp32's row from every path and variant, tf32 and bf16 not measured."""
    text = _render(inputs)
    run = json.loads((inputs[0] / "run.json").read_text())
    passing = {n: r["median_ms"] for n, r in run["paths"].items() if r["passed"]}
    rows = _rows(_section(text))
    assert rows[0].startswith(f"| FP32 | ours `{min(passing, key=passing.get)}` |")
    for ln in rows[1:3]:
        assert "| ours: not measured (no " in ln and "| PyTorch: not measured (no " in ln
        assert ln.endswith("| not measured |")
    assert sum("not measured" in ln for ln in rows[3:]) == 4
    assert "TF32 not measured (no path of ours, no PyTorch variant)" in text


def test_no_pytorch_and_no_float64_curve_are_not_measured_cells(inputs):
    results = inputs[0]
    _with_precisions(results)
    (results / "pytorch.json").unlink()
    run = json.loads((results / "run.json").read_text())
    run["reference_fp64"].pop("loss_per_epoch")
    (results / "run.json").write_text(json.dumps(run))
    text = _render(inputs)
    sec = _section(text)
    assert "PyTorch: not measured (PyTorch was not run)" in sec
    ours_tf32 = next(ln for ln in _rows(sec)[3:] if ln.startswith("| TF32 | ours `tiled-tf32` |"))
    cells = [c.strip() for c in ours_tf32.strip("|").split("|")]
    assert cells[2:4] == ["not measured", "not measured"]          # no float64 loss curve
    assert cells[4].endswith(" pp") and cells[5].endswith(" pp")   # its accuracies still are
    assert "TF32 not measured (PyTorch not run)" in text


def test_a_precision_whose_paths_all_failed_names_them(inputs):
    results = inputs[0]
    _with_precisions(results)
    run = json.loads((results / "run.json").read_text())
    run["paths"]["tiled-tf32"] |= {"passed": False, "error": "SYNTHETIC: parity over its limit"}
    (results / "run.json").write_text(json.dumps(run))
    tab = _context(inputs)["precision"]
    tf32 = next(r for r in tab["rows"] if r["precision"] == TF32)
    assert tf32["ours"]["name"] is None and tf32["ours"]["candidates"] == ["tiled-tf32"]
    assert tf32["speedup"] is None
    assert "| TF32 | ours: none of `tiled-tf32` passed | not measured |" in _render(inputs)


def test_a_path_of_no_known_precision_is_refused_naming_the_field(inputs):
    results = inputs[0]
    run = json.loads((results / "run.json").read_text())
    run["paths"]["fused"]["precision"] = "fp16"
    (results / "run.json").write_text(json.dumps(run))
    with pytest.raises(InputError, match=r"paths.fused.'precision': expected one of 'fp32', "
                                         r"'tf32', 'bf16', got the string 'fp16'"):
        _context(inputs)


def test_reports_fastest_is_the_baselines_fastest_by_precision_on_the_h200_run():
    """results/experiments/precision/: the H200 run of ffabfba's six tf32 and bf16 variants."""
    torch = load_json(PRECISION_RUN, "pytorch")
    run = load_json(ROOT / "results" / "run.json", "run")
    tab = precision.table(run, torch)
    for r in tab["rows"]:
        want = (torch["fastest_by_precision"].get(r["precision"]) or {}).get("variant")
        assert r["theirs"]["name"] == want, r["precision"]
    assert {r["precision"]: r["theirs"]["name"] for r in tab["rows"]} == {
        FP32: None, TF32: "compiled-step-tf32", BF16: "compiled-step-bf16"}


def test_abs_pct():
    assert fmt.abs_pct(None) == "—" and fmt.abs_pct(0) == "0%"
    assert fmt.abs_pct(0.0123) == "1.23%" and fmt.abs_pct(-0.0123) == "1.23%"
    assert fmt.abs_pct(3e-6) == "0.0003%"


def test_the_epoch_time_tables_ratio_is_against_pytorchs_fastest_of_the_rows_precision(inputs):
    _with_precisions(inputs[0])
    ctx = _context(inputs)
    torch = json.loads((inputs[0] / "pytorch.json").read_text())
    best = {p: (b or {}).get("median_ms") for p, b in torch["fastest_by_precision"].items()}
    rows = {(r["kind"], r["name"]): r for r in ctx["timing"]["rows"]}
    run = json.loads((inputs[0] / "run.json").read_text())
    for name, rec in run["paths"].items():
        if rec.get("median_ms") is None:
            continue
        want = rec["median_ms"] / best[rec.get("precision", FP32)]
        assert rows[("cuda", name)]["vs_best_torch"] == pytest.approx(want), name
    assert ctx["timing"]["best_torch"] == torch["fastest_by_precision"][FP32]["variant"]
    text = _render(inputs)
    assert ("for a row of another precision over PyTorch's fastest of that precision (TF32: "
            f"`cuda-graph-tf32`, {best[TF32]:.3f} ms; BF16: `compiled-step-bf16`") in text
