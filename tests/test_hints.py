"""CPU: harness/gate/hints.py's hints_for (the supervisor's hints for a merged, staged run.json) is
cuda/gate/hints.cpp's, case set by case set, through `build/mlp_host hints`."""
from __future__ import annotations

import itertools
import json
import subprocess

import pytest

from harness.gate import hints
from spec.files import BUILD_DIR

IDS = (1, 2, 3, 4, 5, 9, 6, 7, 8, 10)


def case_sets():
    """Every pattern of failures over cases 1-7, 9, 10 (8 passes), and "not implemented" stubs."""
    gated = (1, 2, 3, 4, 5, 6, 7, 9, 10)
    for fails in itertools.product((False, True), repeat=len(gated)):
        bad = {i for i, f in zip(gated, fails) if f}
        yield [{"id": i, "passed": i not in bad, "detail": "x"} for i in IDS]
    for stub in (1, 3, 4, 5, 6, 7, 9):
        yield [{"id": i, "passed": i < stub, "detail": "mlp_x returned not implemented" if i >= stub else "ok"}
               for i in IDS]
    yield [{"id": 4, "passed": False, "detail": "x"}]          # a partial set: absent cases count as passed


def test_the_port_matches_the_binary_on_every_case_set():
    host = BUILD_DIR / "mlp_host"
    if not host.exists():
        pytest.skip("build/mlp_host missing: `invoke build --arch sm_90` first")
    sets = list(case_sets())
    text = "\n\n".join("\n".join(f"{c['id']} {int(c['passed'])} {c['detail']}" for c in s) for s in sets) + "\n"
    res = subprocess.run([str(host), "hints"], input=text, capture_output=True, text=True, check=True)
    want = [json.loads(ln) for ln in res.stdout.splitlines()]
    assert len(want) == len(sets)
    got = [hints.hints_for(s) for s in sets]
    assert got == want
    assert sum(1 for w in want if len(w) > 1) > 100          # the patterns exercise the rules, not only one


def test_a_stages_ending_gives_its_hint():
    assert hints.for_ending("timed out after 30 s") == hints.TIMEOUT
    assert hints.for_ending("died: SIGSEGV") == hints.for_ending("CUDA error: cudaErrorIllegalAddress") == hints.FAULT
    assert hints.for_ending("exited 1") is None
