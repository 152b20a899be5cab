"""CPU: RESULTS.md's "GEMMs against cuBLAS" section (analysis/sections/gemm.py,
templates/results_gemm.md.j2) renders results/gemm.json: the square and the 4,096 x 2,048 point's
rows with issue 38's lines judged, and the large squares. Its input here is the committed run 1
(results/experiments/gemm_engine1/gemm.json, H100) as it is, and SYNTHETIC changes of it written to
tmp_path: the card named H200, the rates moved across the lines."""
from __future__ import annotations

import copy
import json

import pytest

from analysis.sections import gemm as section
from spec.files import ROOT
from tests.report_render import render_with

RUN1 = ROOT / "results" / "experiments" / "gemm_engine1" / "gemm.json"


@pytest.fixture(scope="module")
def run1() -> dict:
    return json.loads(RUN1.read_text())


def render(tmp_path, doc: dict | None) -> tuple[int, str]:
    """(exit status, the section's text) from the fixture results and `doc` as results/gemm.json."""
    rc, _, part = render_with(tmp_path, "gemm.json", doc, "## GEMMs against cuBLAS")
    return rc, part


def with_pct(doc: dict, gpu: str, pct: float, low: tuple | None = None) -> dict:
    """`doc` on `gpu` with every judged row's ours at `pct` % of cuBLAS (`low`: one (M, N, K, layout,
    precision) at 50 %)."""
    d = copy.deepcopy(doc)
    d["gpu"] = gpu
    for r in d["rows"]:
        if r["cublas_tflops"] and r["ours_tflops"] is not None:
            p = 50.0 if low == (r["M"], r["N"], r["K"], r["layout"], r["precision"]) else pct
            r["ours_tflops"] = r["cublas_tflops"] * p / 100
            r["pct_of_cublas"] = p
    return d


def test_without_the_file_the_section_says_not_measured_yet(tmp_path):
    rc, part = render(tmp_path, None)
    assert rc == 0 and "Not measured yet: there is no `../results/gemm.json`" in part and "|" not in part


def test_run1_on_the_h100_is_not_evaluable_and_shows_its_rows(tmp_path, run1):
    s = section.section(run1)
    assert not s["on_acceptance_gpu"] and not s["all_met"] and s["n_failed_checks"] == 0
    sq = {r["precision"]: r for r in s["square"]}
    assert sq["bf16"]["judged"] == "met" and sq["bf16"]["kernel"] == "k_sm90_gemm" and sq["tf32"]["judged"] == "missed"
    judged = [(r["layout"], r["M"], r["N"], r["K"], r["precision"]) for r in s["point"] if r["judged"] is not None]
    assert sorted(judged) == [("nn", 2048, 4096, 784, "bf16"), ("nn", 2048, 4096, 784, "tf32"),
                              ("tn", 784, 4096, 2048, "bf16"), ("tn", 784, 4096, 2048, "tf32")]
    heads = [r for r in s["point"] if r["judged"] is None]
    assert {(r["layout"], r["M"], r["N"], r["K"]) for r in heads} >= {("nt", 2048, 4096, 10), ("nn", 2048, 10, 4096)}
    rc, part = render(tmp_path, run1)
    assert rc == 0, part
    assert "**Issue 38's GEMM lines are not evaluable here: these GEMMs ran on NVIDIA H100 80GB HBM3" in part
    assert ("| nn 4,096 × 4,096 × 4,096 (large 4096x4096x4096) | bf16 | `k_sm90_gemm` (wgmma bf16 128x256x64, 4 stages, "
            "512 tiles) | 593.7 | 791.0 | 75 % | line met |") in part
    assert "| tn 784 × 4,096 × 2,048 (sweep h4096_b2048 dW1) | bf16 |" in part and "| 48 % | **missed** |" in part


def test_every_row_over_its_line_on_the_h200_meets_the_lines(tmp_path, run1):
    rc, part = render(tmp_path, with_pct(run1, "NVIDIA H200", 80.0))
    assert rc == 0 and "**Issue 38's GEMM lines are met on the H200**" in part
    assert "**missed**" not in part and "line met" in part


def test_one_row_under_its_line_is_named_missed(tmp_path, run1):
    doc = with_pct(run1, "NVIDIA H200", 96.0, low=(784, 4096, 2048, "tn", "tf32"))
    s = section.section(doc)
    assert [(r["M"], r["layout"], r["precision"]) for r in s["missed"]] == [(784, "tn", "tf32")]
    rc, part = render(tmp_path, doc)
    assert rc == 0 and "**Issue 38's GEMM lines are not all met** (1 row under the line)" in part
    assert "| 50 % | **missed** |" in part and "goal met" in part
