"""Synthetic gate documents for the CPU tests: a staged run.json of given case rows, path failures
and stage endings, and the hints its verdict carries (cuda/gate/verdict.h through spec/verdict.py,
the one owner of both the verdict and, through cuda/gate/hints.h, the hints every output shows)."""
from __future__ import annotations

from spec import catalog, verdict


def doc_of(cases, path_failures=(), endings=()) -> dict:
    """A staged run.json of these rows, path failures and stage endings (one stage of mlp_train's
    per ending, in the catalog's order; the others exited 0)."""
    names = [s["name"] for s in catalog.stages("mlp_train")]
    ended = list(endings) + ["exited 0"] * (len(names) - len(endings))
    return {"cases": list(cases), "paths": {}, "supervisor": {
        "staged": True, "path_failures": list(path_failures),
        "stages": [{"name": n, "ended": e} for n, e in zip(names, ended)]}}


def hints_for_sets(sets) -> list[list[str]]:
    """The verdict's hints of each (cases, path_failures, endings), in one mlp_host call."""
    return [list(v.hints) for v in verdict.decide_all(doc_of(*s) for s in sets)]


def hints_for(cases, path_failures=(), endings=()) -> list[str]:
    return hints_for_sets([(cases, path_failures, endings)])[0]
