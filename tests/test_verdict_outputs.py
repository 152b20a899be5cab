"""CPU: one verdict, one owner (issue 42). The gate's PASS or FAIL is decided by cuda/gate/verdict.h
alone (`mlp_host verdict`, spec/verdict.py); every output reads it. Each document below is rendered
through every output that states a verdict (RESULTS.md's headline, a submission's RESULTS.md, the
leaderboard's row, CSV and Markdown) and each must say the owner's word, with the owner's first
hint on a FAIL. The documents cover both directions: every case passing with a path check failing,
a stage timed out, a sanitizer inconclusive or failing, a missing case, the gated path skipped; and
clean passes. A second implementation anywhere in these outputs disagrees with the owner on one of
them (docs/MUTATIONS.md lists the ones tried)."""
from __future__ import annotations

import copy
import csv
import json

import pytest

from analysis import report
from harness.gate import course
from spec import verdict
from spec.files import ROOT

FIX = ROOT / "tests" / "fixtures"
BASE = json.loads((FIX / "supervised" / "naive" / "run.json").read_text())   # a real gate run of naive.cu
CONTRACT_ROW = {"id": 13, "name": "stream-contract", "passed": True, "value": 0, "limit": 0,
                "detail": "every entry point captured into a CUDA graph on the caller's stream"}
STAGES = ("entry", "epoch-check", "contract", "overfit", "train", "guard-bands")


def passing() -> dict:
    """The naive run, with the case 13 row of a gate of today and a staged supervisor block."""
    doc = copy.deepcopy(BASE)
    doc["cases"].insert(6, dict(CONTRACT_ROW))
    doc["supervisor"] = {"staged": True, "limit_s": 300.0, "seconds": 20.0, "ended": "exited 0",
                         "stages": [{"name": n, "cases": [], "limit_s": 30.0, "seconds": 1.0, "ended": "exited 0"}
                                    for n in STAGES], "path_failures": [], "stage_failures": []}
    doc["hints"] = []
    return doc


def with_sanitizers(doc: dict, racecheck: dict | None = None) -> dict:
    doc["cases"] += [{"id": 11, "name": "memcheck", "passed": True, "value": 0, "limit": 0, "detail": "0 errors"},
                     racecheck or {"id": 12, "name": "racecheck", "passed": True, "value": 0, "limit": 0,
                                   "detail": "0 hazards"}]
    doc["supervisor"]["stages"] += [{"name": "memcheck", "cases": [11], "ended": "exited 0"},
                                    {"name": "racecheck", "cases": [12], "ended": "exited 0"}]
    return doc


def set_case(doc: dict, cid: int, **fields) -> dict:
    doc["cases"] = [dict(c, **fields) if c["id"] == cid else c for c in doc["cases"]]
    return doc


def documents() -> dict[str, tuple[dict, str]]:
    """{name: (run.json, the word the owner must give)}."""
    docs: dict[str, tuple[dict, str]] = {"pass": (passing(), "PASS"),
                                         "pass-with-sanitizers": (with_sanitizers(passing()), "PASS")}
    d = passing()   # every case passes; the path's rerun fails, its own flag still true (the old bug)
    d["supervisor"]["path_failures"] = ["path submission: a rerun of one epoch was not bitwise identical"]
    docs["path-failure-listed"] = (d, "FAIL")
    d = passing()   # every case passes; the path's own flag fails, nothing listed
    d["paths"]["submission"]["passed"] = False
    d["paths"]["submission"]["failure"] = "path submission: one-epoch parity vs fused 0.3 > 0.01"
    docs["path-flag-false"] = (d, "FAIL")
    d = passing()   # every row passed, but a stage timed out after printing them
    d["supervisor"]["stages"][3]["ended"] = "timed out after 30 s"
    docs["stage-timed-out"] = (d, "FAIL")
    d = passing()   # only the stage_failures list says it
    d["supervisor"]["stage_failures"] = ["guard-bands: died: SIGSEGV"]
    docs["stage-failure-listed"] = (d, "FAIL")
    docs["sanitizer-inconclusive"] = (with_sanitizers(passing(), {
        "id": 12, "name": "racecheck", "passed": False, "value": None, "limit": 0,
        "detail": "inconclusive: racecheck did not finish within its 300 s limit"}), "FAIL")
    docs["sanitizer-failed"] = (with_sanitizers(passing(), {
        "id": 12, "name": "racecheck", "passed": False, "value": 3, "limit": 0,
        "detail": "3 hazard(s) (3 errors, 0 warnings); first: Error: Race reported"}), "FAIL")
    d = passing()
    d["cases"] = [c for c in d["cases"] if c["id"] != 10]
    docs["case-missing"] = (d, "FAIL")
    docs["case-failed"] = (set_case(passing(), 4, passed=False, detail="200 coords: worst at W1[3]: 21"), "FAIL")
    docs["case-not-run"] = (set_case(passing(), 6, passed=None, detail="not run"), "FAIL")
    d = passing()
    d["paths"]["submission"] = {"skipped": "needs compute capability 9.0, device has 7.5"}
    docs["gated-path-skipped"] = (d, "FAIL")
    d = passing()
    d["paths"]["fused"] = {"skipped": "needs a cluster launch"}   # another path skipped: not a failure
    docs["other-path-skipped"] = (d, "PASS")
    docs["perf-only-failed"] = (set_case(passing(), 8, passed=False), "PASS")   # case 8 (perf) decides nothing
    docs["short-supervised"] = (json.loads((FIX / "supervised" / "run.json").read_text()), "FAIL")
    return docs


DOCS = documents()


@pytest.fixture(scope="module")
def owner() -> dict:
    names = list(DOCS)
    return dict(zip(names, verdict.decide_all(DOCS[n][0] for n in names)))


def test_the_owner_gives_each_document_its_word(owner):
    for name, (_, word) in DOCS.items():
        v = owner[name]
        assert v.word == word, (name, v.reasons)
        assert (v.first_hint == "") == (word == "PASS"), name   # a FAIL is never without its hint
        assert bool(v.reasons) == (word == "FAIL"), name


def test_the_reasons_name_what_failed(owner):
    assert owner["path-failure-listed"].failed_paths == ("submission",)
    assert owner["path-flag-false"].reasons == ("path submission: one-epoch parity vs fused 0.3 > 0.01",)
    assert owner["stage-timed-out"].failed_stages == ("overfit",)
    assert owner["stage-timed-out"].first_hint.startswith("timeout:")
    assert owner["stage-failure-listed"].failed_stages == ("guard-bands",)
    assert owner["sanitizer-inconclusive"].failed_cases == (12,)
    assert owner["case-missing"].reasons == ("case 10 guard-bands: no row in run.json",)
    assert owner["case-failed"].failed_cases == (4,) and owner["case-failed"].first_hint.startswith("grad-check:")
    assert owner["case-not-run"].failed_cases == (6,)
    assert owner["gated-path-skipped"].failed_paths == ("submission",)
    assert 11 in owner["pass-with-sanitizers"].required_cases and 11 not in owner["pass"].required_cases


def headline(md: str) -> str:
    line = next(ln for ln in md.splitlines() if "**Gate: " in ln)
    return line


@pytest.mark.parametrize("name", list(DOCS))
def test_results_md_says_the_owners_verdict(name, owner, tmp_path):
    doc, _ = DOCS[name]
    (tmp_path / "run.json").write_text(json.dumps(doc))
    assert report.main(["--results", str(tmp_path), "--out", str(tmp_path / "RESULTS.md")]) == 0
    line = headline((tmp_path / "RESULTS.md").read_text())
    v = owner[name]
    assert f"**Gate: {v.word}.**" in line, (name, line)
    if not v.passed:
        assert f"First hint: {v.first_hint.replace('|', chr(92) + '|')}" in line or \
            f"First hint: {v.first_hint[:60]}" in line, (name, line)


def test_the_leaderboard_and_each_submissions_report_say_the_owners_verdict(owner, tmp_path):
    gated = tmp_path / "gate"
    for name, (doc, _) in DOCS.items():
        (gated / name).mkdir(parents=True)
        (gated / name / "run.json").write_text(json.dumps(doc))
    assert course.main(["--aggregate", str(gated), "--out", str(gated)]) == 0
    rows = {r["submission"]: r for r in csv.DictReader((gated / "leaderboard.csv").open())}
    md = (gated / "leaderboard.md").read_text()
    for name, v in owner.items():
        assert rows[name]["verdict"] == v.word, (name, rows[name])
        assert rows[name]["first_hint"] == v.first_hint, name
        cell = f"| {name} | {'**FAIL**' if not v.passed else 'PASS'} |"
        assert cell in md, (name, cell)
        assert f"**Gate: {v.word}.**" in headline((gated / name / "RESULTS.md").read_text()), name


def test_a_run_json_whose_recorded_verdict_disagrees_is_refused(tmp_path, capsys):
    """A run.json edited after its verdict was written: the report refuses it (exit 2, one line),
    and the leaderboard shows FAIL naming why, never the recorded PASS."""
    doc, _ = DOCS["path-failure-listed"]
    forged = dict(doc, verdict=verdict.decide(DOCS["pass"][0]).record())
    (tmp_path / "run.json").write_text(json.dumps(forged))
    assert report.main(["--results", str(tmp_path), "--out", str(tmp_path / "RESULTS.md")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "changed after its verdict" in err, err
    assert not (tmp_path / "RESULTS.md").exists()
    gated = tmp_path / "gate" / "forged"
    gated.mkdir(parents=True)
    (gated / "run.json").write_text(json.dumps(forged))
    row = course.row_of(gated, None)
    assert row["verdict"] == "FAIL" and "changed after its verdict" in row["first_hint"]


def test_a_document_stamped_by_the_owner_is_read_back_unchanged(owner):
    for name, (doc, _) in DOCS.items():
        stamped, v = verdict.stamped(doc)
        assert v == owner[name] and stamped["verdict"] == v.record() and stamped["hints"] == list(v.hints)
        assert verdict.of_run(stamped, name) == v


def test_the_committed_run_of_record_and_leaderboard_agree_with_the_owner():
    """results/run.json's headline, and every committed gate folder's leaderboard row."""
    run = json.loads((ROOT / "results" / "run.json").read_text())
    v = verdict.of_run(run, "results/run.json")
    assert f"**Gate: {v.word}.**" in headline((ROOT / "RESULTS.md").read_text())
    board = ROOT / "results" / "gate" / "leaderboard.csv"
    rows = list(csv.DictReader(board.open()))
    folders = [ROOT / "results" / "gate" / r["submission"] for r in rows]
    verdicts = course.verdicts_of(folders)
    for r, f in zip(rows, folders):
        want = verdicts.get(f)
        word = "FAIL" if want is None or isinstance(want, str) else want.word
        assert r["verdict"] == word, (r["submission"], r["verdict"], word)


def test_a_document_the_owner_cannot_read_is_named_and_the_others_still_decided():
    from spec.files import InputError
    docs = [{"cases": 3}, DOCS["pass"][0], {"cases": [{"name": "no id"}]}]
    got = verdict.decide_all(docs, errors="return")
    assert isinstance(got[0], str) and '"cases" is missing or not an array' in got[0]
    assert got[1].word == "PASS" and isinstance(got[2], str) and "numeric \"id\"" in got[2]
    with pytest.raises(InputError, match="not an array"):
        verdict.decide_all(docs)
