"""CPU: the gate's hints, whose one owner is cuda/gate/hints.cpp, through `build/mlp_host hints` (what
harness/gate/hints.py asks for a merged, staged run.json): every failed case that decides the verdict
is explained, a stub names the entry point to write next and nothing else, the path failures and
the stage endings get theirs, and the stream-contract case's hint names what broke."""
from __future__ import annotations

import itertools

from harness.gate import hints
from spec import catalog


def rows(failed=(), detail="x", **details):
    return [{"id": c["id"], "name": c["name"], "passed": c["id"] not in failed,
             "detail": details.get(f"d{c['id']}", detail)} for c in catalog.cases()]


def test_every_failing_pattern_is_explained():
    """Every pattern of failures over the deciding cases gets at least one hint, and a hint per case
    that has none of its own (its row's detail)."""
    ids = [i for i in catalog.verdict_case_ids()]
    sets = []
    for k in (1, 2):
        for bad in itertools.combinations(ids, k):
            sets.append((rows(bad, detail=f"detail of {bad}"), [], []))
    got = hints.hints_for_sets(sets)
    assert len(got) == len(sets)
    for (cases, _, _), h in zip(sets, got):
        assert h, [c["id"] for c in cases if not c["passed"]]
    assert hints.hints_for(rows()) == []                      # nothing failed: nothing to say


def test_a_stub_names_the_entry_point_to_write_next_and_nothing_else():
    entry = {c["id"]: c["entry_point"] for c in catalog.cases() if c["entry_point"]}
    for cid, fn in entry.items():
        h = hints.hints_for(rows((cid,), **{f"d{cid}": "mlp_x returned not implemented"}))
        assert h == [f"case {cid} is not implemented yet: write {fn} next"], cid


def test_stream_contract_hints_name_what_broke():
    for tag, word in (("allocation", "cudaMalloc"), ("host synchronisation", "cudaStreamSynchronize"),
                      ("another stream", "`stream`"), ("memory growth", "allocated"), ("printed", "printed"),
                      ("capture", "captured")):
        h = hints.hints_for(rows((13,), d13=f"{tag}: mlp_train_epoch did something"))
        assert len(h) == 1 and word in h[0], (tag, h)


def test_racecheck_warnings_get_the_syncwarp_hint():
    h = hints.hints_for(rows((12,), d12="25 hazard(s) (0 errors, 25 warnings); first: ..."))
    assert any("__syncwarp()" in x and "__syncthreads()" in x for x in h)


def test_path_failures_and_stage_endings_get_theirs():
    ok = rows()
    assert "parity" in hints.hints_for(ok, ["path submission: one-epoch parity vs fused 0.3 > 1e-02"])[0]
    assert "atomicAdd" in hints.hints_for(ok, ["path fused: a rerun of one epoch was not bitwise identical"])[0]
    assert "race" in hints.hints_for(ok, ["path submission: reruns of one epoch differ by 0.2 of the update > 1e-02"])[0]
    assert hints.hints_for(ok, [], ["timed out after 30 s"])[0].startswith("timeout:")
    assert hints.hints_for(ok, [], ["died: SIGSEGV"])[0] == hints.hints_for(ok, [], ["CUDA error: cudaErrorX"])[0]
    assert hints.hints_for(ok, [], ["exited 1"]) == []


def test_a_case_without_a_rule_of_its_own_gets_its_row():
    h = hints.hints_for(rows((10,), d10="3 call(s) wrote outside a buffer"))
    assert any(x.startswith("guard-bands") for x in h)
    # case 8 decides nothing: its failure alone is not explained as a failure
    assert hints.hints_for(rows((8,))) == []


def test_a_float32_forward_within_a_lower_precisions_rounding_gets_the_precision_hint():
    """Cases 1 and 2 at FP32 whose every error is within TF32's or bfloat16's limits say so in their row
    (cuda/gate/entry_cases.cu): the hint names mlp_precision() instead of the forward's defects."""
    within = ("...; every error over float32's limit is within tf32's (products' inputs rounded to a lower "
              "precision? declare it: mlp_precision(), submission.h)")
    h = hints.hints_for(rows((1, 2), d1=within, d2=within))
    assert len(h) == 1 and "declare it with mlp_precision()" in h[0], h
    h = hints.hints_for(rows((1, 2), d1="max_k ...; 784-256-10, batch 1: 0.5 (limit 6.21e-05) FAIL"))
    assert len(h) == 1 and h[0].startswith("forward: W1"), h


def test_a_case_held_to_a_declared_precision_gets_its_hint_after_the_cases_own():
    d4 = "200 coords ...u_p = 2^-8 (bf16, declared by mlp_precision()); ...; worst at W1[3]: 21"
    h = hints.hints_for(rows((4,), d4=d4))
    assert h[0].startswith("grad-check: a missing ReLU mask") and h[1].startswith("declared precision:"), h
    assert not any(x.startswith("declared precision:") for x in hints.hints_for(rows((4,), d4="200 coords ...")))
