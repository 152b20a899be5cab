"""Every results file records its commit and date, and a fact in two outputs has one owner.

- The results files at the top of results/ record "commit" and "date_utc" (spec.provenance.stamp,
  docs/formats.md), but for LEGACY: files written before their writer stamped both, each to be
  measured again on the GPU (then it leaves the list: the test fails while a listed file already
  records both, so the list only shrinks). A file the binary writes is stamped by its driver
  (harness/run.py for run.json, harness/transformer/run.py for vit_forward's).
- The gate leaderboard's "our fastest" and each "x ours" are results/run.json's fastest path, read
  when the leaderboard is rendered (`invoke report` renders it again from the gate folders).
"""
from __future__ import annotations

import csv
import json
import re

from harness.gate.child import fastest_ms, ours_gpu
from spec.files import RESULTS_DIR

# Written before their writer recorded both (harness/studies/sanitize.py, phases, ours_studies,
# baseline/profiles.py stamp them now): `invoke sanitize` (and --paths stationary), `invoke gpu.phases`,
# `invoke gpu.ours-studies`, `invoke gpu.torch-profiles` on the GPU replace them.
LEGACY = {
    "sanitize.json": ("commit", "date_utc"),
    "sanitize_stationary.json": ("commit", "date_utc"),
    "persistent_phases.json": ("commit",),
    "stationary_phases.json": ("date_utc",),
    "ours_batch_steps.json": ("date_utc",),
    "ours_linear_kernels.json": ("date_utc",),
    "torch_batch_steps.json": ("date_utc",),
    "torch_linear_kernels.json": ("date_utc",),
    "torch_memory.json": ("date_utc",),
}


def _lacks(doc) -> tuple[str, ...]:
    return tuple(k for k in ("commit", "date_utc") if not (isinstance(doc, dict) and doc.get(k)))


def test_every_results_file_records_its_commit_and_date_but_the_listed_legacy_ones():
    lacking = {p.name: _lacks(json.loads(p.read_text(encoding="utf-8"))) for p in sorted(RESULTS_DIR.glob("*.json"))}
    lacking = {name: keys for name, keys in lacking.items() if keys}
    new = {n: k for n, k in lacking.items() if n not in LEGACY or set(k) - set(LEGACY[n])}
    assert not new, f"results files that record no commit or date (spec.provenance.stamp): {new}"
    done = sorted(set(LEGACY) - set(lacking))
    assert not done, f"{done} record their commit and date now: take them out of LEGACY"


def test_the_transformer_driver_stamps_what_the_binary_writes(tmp_path, monkeypatch):
    from harness.transformer import run as vit
    monkeypatch.setattr("spec.provenance.git_commit", lambda: "abc1234")
    out = tmp_path / "check_trained_fp32.json"
    out.write_text(json.dumps({"schema": 1, "mode": "check", "passed": True}))
    vit._stamped(out)
    doc = json.loads(out.read_text())
    assert doc["commit"] == "abc1234" and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", doc["date_utc"])
    assert doc["mode"] == "check" and doc["passed"] is True
    vit._stamped(tmp_path / "absent.json")               # nothing written, nothing made
    assert not (tmp_path / "absent.json").exists()


def test_the_leaderboards_our_fastest_is_run_jsons():
    ours, ours_on = fastest_ms(RESULTS_DIR), ours_gpu(RESULTS_DIR)
    board = RESULTS_DIR / "gate" / "leaderboard.md"
    m = re.search(r"^Our fastest path: ([0-9.]+) ms an epoch(?: on ([^(]+))? \(results/run\.json\)", board.read_text(), re.M)
    assert m and ours is not None and m.group(1) == f"{ours:.3f}" and (m.group(2) or "").strip() == ours_on, \
        f"{board}: our fastest {m.group(1) if m else None}, results/run.json {ours} on {ours_on}: run `invoke report`"
    rows = list(csv.DictReader((RESULTS_DIR / "gate" / "leaderboard.csv").open()))
    timed = [r for r in rows if r["median_ms"]]
    assert timed
    for r in timed:
        their_gpu = r["gpu"].split(": ", 1)[-1]
        if their_gpu == ours_on:   # each "x ours" over the same fastest path (the median is shown to 3 decimals)
            assert abs(float(r["ratio"]) - float(r["median_ms"]) / ours) <= 0.006, r["submission"]
        else:                      # another card: no ratio, and the row says why
            assert r["ratio"] == "" and f"no x ours: ours ran on {ours_on}" in r["notes"], r["submission"]