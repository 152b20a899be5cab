"""CPU: RESULTS.md's "Gating a course" section (analysis/sections/gate_bench.py,
templates/results_gate_bench.md.j2) renders results/gate_bench.json: its headline, every verdict not
as intended named, the stage and verdict tables, and issue 40's acceptance judged from the wall time,
the course's size and its GPUs. The gate_bench.json here are SYNTHETIC (written to tmp_path); without
one the section says what is not measured yet and the rest of the report renders; with one, the
summary names its commit among the evidence; a malformed one is one line and exit 2."""
from __future__ import annotations

import re

import pytest

from analysis.sections import gate_bench as section
from spec.files import ROOT, TEMPLATES_DIR
from tests.report_render import render_with

BASES = ("naive", "tiled", "regtile")


def bench(n=50, wall_s=412.3, gpus=("NVIDIA H200",), flip=()) -> dict:
    """A course of n files, base by index (naive, tiled, regtile, ...), even ones correct, odd ones with a
    defect that must fail case 4; every verdict as intended but for the indices in `flip`: a correct
    file there FAILs case 9, a defect there PASSes."""
    rows = []
    for i in range(n):
        correct = i % 2 == 0
        row = {"file": f"sub-{i:03d}.cu", "base": BASES[i % 3], "defect": None if correct else "MUTANT_DB_WRONG_AXIS",
               "intent": "PASS" if correct else "FAIL", "must_fail": [] if correct else [4],
               "verdict": "PASS" if correct else "FAIL", "failed_cases": [] if correct else [4, 9],
               "first_hint": "" if correct else "grad-check: db1 worst at W1", "as_intended": True}
        if i in flip:
            row.update(as_intended=False, **({"verdict": "FAIL", "failed_cases": [9],
                                               "first_hint": "epoch-check: epoch differs | from its steps"}
                                              if correct else {"verdict": "PASS", "failed_cases": [], "first_hint": ""}))
        rows.append(row)
    k = sum(r["as_intended"] for r in rows)
    return {"schema": 1, "commit": "abc1234", "date_utc": "2026-12-05T10:00:00Z",
            "generator": {"n": n, "seed": 40, "correct_share": 0.5},
            "gpus": [{"index": i, "name": name, "uuid": f"GPU-{i}"} for i, name in enumerate(gpus)],
            "jobs": 6, "sanitizer_slots": {"memcheck": 1, "racecheck": 2},
            "build_s": 92.0, "builds_ended_s": 88.4, "gate_s": 410.9, "wall_s": wall_s, "submissions_per_minute": round(60 * n / wall_s, 2),
            "stages": {"entry": {"n": n, "median_s": 3.1, "p90_s": 4.8, "max_s": 6.0, "total_s": 160.2},
                       "racecheck": {"n": n, "median_s": 4.25, "p90_s": 13.5, "max_s": 31.75, "total_s": 270.4}},
            "submissions": rows, "as_intended": k, "all_as_intended": k == n}


def render(tmp_path, doc: dict | None) -> tuple[int, str, str]:
    """(exit status, the whole RESULTS.md, the section's text) from the fixture results and `doc`."""
    return render_with(tmp_path, "gate_bench.json", doc, "## Gating a course")


def test_without_the_file_the_section_says_not_measured_yet_and_the_report_renders(tmp_path):
    rc, text, part = render(tmp_path, None)
    assert rc == 0 and "## Memory and cost" in text and "## Open gaps" in text
    assert "Not measured yet: there is no `../results/gate_bench.json`" in part
    assert ("issue 40's acceptance, 50 submissions gated in at most 8 minutes (480 s) on one H200 "
            "(its goal: 100 in the same time), is not evaluable.") in part
    assert "|" not in part and "MET" not in part


def test_a_run_before_builds_ended_s_was_recorded_says_only_when_the_last_file_was_taken(tmp_path):
    doc = bench(wall_s=494.4)
    del doc["builds_ended_s"]
    rc, _, part = render(tmp_path, doc)
    assert rc == 0, part
    assert "the gating took the last built file at 92.0 s (a worker free for it)." in part
    assert "last build ended" not in part


def test_a_run_within_the_line_meets_the_acceptance(tmp_path):
    rc, text, part = render(tmp_path, bench(wall_s=412.3))
    assert rc == 0, part
    assert ("- `../results/gate_bench.json` (Gating a course): commit `abc1234` of 2026-12-05T10:00:00Z: "
            "commit not in this repository") in text.split("## Setup")[0]
    assert ("**50 submissions gated in 412.3 s on one NVIDIA H200, 7.28 a minute**, at commit `abc1234`, "
            "2026-12-05T10:00:00Z (`../results/gate_bench.json`; the generator's seed 40, 50% of the files correct)") in part
    assert ("of the gating's 410.9 s from the first build's start, the last build ended at 88.4 s and the gating "
            "took the last built file at 92.0 s (a worker free for it).") in part
    assert "Sanitizer slots on each GPU: memcheck 1, racecheck 2; 6 submissions gated at once on each GPU." in part
    assert "Every verdict as the generator intended: **50 of 50 as intended**" in part
    assert "| entry | 50 | 3.10 | 4.80 | 6.00 | 160.2 |" in part
    assert "| racecheck | 50 | 4.25 | 13.50 | 31.75 | 270.4 |" in part
    # base x intent: naive 0,3,...,48 (17: 9 correct), regtile 2,5,...,47 (16: 8), tiled 1,4,...,49 (17: 8)
    assert "| naive | 17 | 9 | 0 | 8 | 0 | 17 |" in part
    assert "| regtile | 16 | 8 | 0 | 8 | 0 | 16 |" in part
    assert "| tiled | 17 | 8 | 0 | 9 | 0 | 17 |" in part
    assert "| **all** | 50 | 25 | 0 | 25 | 0 | 50 |" in part
    assert ("Issue 40's acceptance, 50 submissions gated in at most 8 minutes (480 s) on one H200: **MET**; its "
            "goal, 100 in the same time: **not evaluable** (the run gated 50, fewer, within the time) "
            "(this run, commit `abc1234`: 50 in 412.3 s on one NVIDIA H200).") in part
    assert "not as intended" not in part


def test_the_waits_for_the_gpu_alone_are_a_column_only_when_recorded(tmp_path):
    doc = bench(wall_s=412.3)
    doc["stages"]["train"] = {"n": 50, "median_s": 0.9, "p90_s": 1.1, "max_s": 1.4, "total_s": 46.0,
                              "wait_total_s": 120.5}
    rc, _, part = render(tmp_path, doc)
    assert rc == 0, part
    assert "| stage | n | median, s | p90, s | max, s | total, s | waited for the GPU alone, s in all |" in part
    assert "| train | 50 | 0.90 | 1.10 | 1.40 | 46.0 | 120.5 |" in part
    assert "| entry | 50 | 3.10 | 4.80 | 6.00 | 160.2 | — |" in part
    rc, _, part = render(tmp_path / "without", bench(wall_s=412.3))
    assert rc == 0 and "waited for the GPU alone" not in part and "| entry | 50 | 3.10 | 4.80 | 6.00 | 160.2 |\n" in part


def test_a_run_over_the_line_misses_it(tmp_path):
    rc, _, part = render(tmp_path, bench(wall_s=600.0))
    assert rc == 0 and "**50 submissions gated in 600.0 s on one NVIDIA H200, 5.00 a minute**" in part
    assert "on one H200: **MISSED**; its goal, 100 in the same time: **MISSED**" in part
    assert "**MET**" not in part


def test_each_verdict_not_as_intended_is_named(tmp_path):
    rc, _, part = render(tmp_path, bench(flip=(3, 4)))
    assert rc == 0 and "Every verdict as the generator intended" not in part
    assert "**48 of 50 as intended**; not as intended (commit `abc1234`):" in part
    assert "| `sub-003.cu` | naive | `MUTANT_DB_WRONG_AXIS` | FAIL (4) | **PASS** | — |" in part
    assert "| `sub-004.cu` | tiled | none | PASS | **FAIL** (9) | epoch-check: epoch differs \\| from its steps |" in part
    assert part.count("| `sub-") == 2
    assert "| naive | 17 | 9 | 0 | 7 | 1 | 16 |" in part and "| tiled | 17 | 7 | 1 | 9 | 0 | 16 |" in part
    assert "| **all** | 50 | 24 | 1 | 24 | 1 | 48 |" in part


def test_two_gpus_or_another_gpu_are_not_evaluable(tmp_path):
    rc, _, part = render(tmp_path, bench(wall_s=200.0, gpus=("NVIDIA H200", "NVIDIA H200")))
    assert rc == 0 and "**50 submissions gated in 200.0 s on 2 × NVIDIA H200, 15.00 a minute**" in part
    assert part.count("**not evaluable** (the run used 2 GPUs, the line is for one)") == 2


@pytest.mark.parametrize("n, wall_s, gpus, need, met, why", [
    (50, 480.0, ["NVIDIA H200"], 50, True, None),           # at the line
    (50, 480.1, ["NVIDIA H200"], 50, False, None),
    (100, 470.0, ["NVIDIA H200"], 100, True, None),         # the goal
    (50, 470.0, ["NVIDIA H200"], 100, None, "fewer"),
    (30, 500.0, ["NVIDIA H200"], 50, False, None),          # fewer, already over
    (100, 600.0, ["NVIDIA H200"], 50, None, "more"),
    (50, 300.0, ["NVIDIA A100-SXM4-80GB"], 50, None, "device"),
    (50, 300.0, ["NVIDIA H200", "NVIDIA H200"], 50, None, "gpus"),
    (50, 300.0, [], 50, None, "gpus"),
])
def test_the_acceptance_is_judged_from_wall_time_size_and_gpus(n, wall_s, gpus, need, met, why):
    got = section.judge(n, wall_s, [{"name": g} for g in gpus], need)
    assert (got["met"], got["why"]) == (met, why) and got["limit_s"] == 480 and got["n"] == need


@pytest.mark.parametrize("change, words", [
    (lambda d: d.update(as_intended=49), "as_intended"),
    (lambda d: d.update(all_as_intended=False), "all_as_intended"),
    (lambda d: d["submissions"].pop(), "generator.n"),
    (lambda d: d.update(schema=2), "schema"),
    (lambda d: d["stages"]["entry"].update(p90_s=9.0), "stages.entry"),
    (lambda d: d["submissions"][0].update(verdict="maybe"), "verdict"),
])
def test_a_malformed_file_is_one_line_and_exit_2(tmp_path, capsys, change, words):
    doc = bench()
    change(doc)
    rc, _, _ = render(tmp_path, doc)
    err = capsys.readouterr().err.strip()
    assert rc == 2 and "gate_bench.json" in err and words in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "out" / "RESULTS.md").exists()


def test_the_committed_results_md_has_the_section():
    assert "\n## Gating a course\n" in (ROOT / "RESULTS.md").read_text()


def test_the_template_holds_no_numbers():
    text = (TEMPLATES_DIR / "results_gate_bench.md.j2").read_text()
    literal = re.sub(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", "", text, flags=re.S)
    literal = literal.replace("p90", "")
    assert not re.findall(r"\d", literal), re.findall(r".{20}\d.{20}", literal)[:3]
