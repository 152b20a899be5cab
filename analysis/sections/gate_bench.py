"""RESULTS.md's "Gating a course" section (templates/results_gate_bench.md.j2): records from
results/gate_bench.json alone (harness/studies/gate_bench.py writes it; docs/formats.md), and issue
40's acceptance held against its wall time, course size and GPUs. Without the file, {"present":
False} and the acceptance, and the template says what is not measured yet."""
from __future__ import annotations

# Issue 40's acceptance: a course of ACCEPTANCE_N submissions gated within LIMIT_S seconds of wall
# time on one GPU of ACCEPTANCE_GPU's kind; its goal, GOAL_N submissions within the same time.
ACCEPTANCE_SOURCE = "issue 40"
LIMIT_S = 8 * 60
ACCEPTANCE_N = 50
GOAL_N = 100
ACCEPTANCE_GPU = "H200"

INTENTS = ("PASS", "FAIL")


def line(need: int) -> dict:
    """The line `need` submissions are held to: {"n", "limit_s", "limit_min", "gpu"}."""
    return {"n": need, "limit_s": LIMIT_S, "limit_min": LIMIT_S / 60, "gpu": ACCEPTANCE_GPU}


def judge(n: int, wall_s: float, gpus: list, need: int) -> dict:
    """Whether a course of `n` gated in `wall_s` on `gpus` shows that `need` submissions gate within
    LIMIT_S on one ACCEPTANCE_GPU: met (True) when at least `need` took at most LIMIT_S, missed
    (False) when at most `need` took longer; else None and `why`: "gpus" (not one GPU), "device"
    (not an ACCEPTANCE_GPU), "fewer" (fewer under the line), "more" (more over it)."""
    out = line(need) | {"met": None, "why": None}
    if len(gpus) != 1:
        return out | {"why": "gpus"}
    if ACCEPTANCE_GPU not in gpus[0]["name"]:
        return out | {"why": "device"}
    if wall_s <= LIMIT_S:
        return out | ({"met": True} if n >= need else {"why": "fewer"})
    return out | ({"met": False} if n <= need else {"why": "more"})


def acceptance(doc: dict | None) -> dict:
    """The acceptance and the goal, each judged against `doc` (unjudged without one)."""
    if doc is None:
        return {"source": ACCEPTANCE_SOURCE, "acceptance": line(ACCEPTANCE_N), "goal": line(GOAL_N)}
    n = len(doc["submissions"])
    return {"source": ACCEPTANCE_SOURCE, "acceptance": judge(n, doc["wall_s"], doc["gpus"], ACCEPTANCE_N),
            "goal": judge(n, doc["wall_s"], doc["gpus"], GOAL_N)}


def gpu_counts(doc: dict) -> list[dict]:
    """[{"name", "count"}] of the GPUs the course ran on, in their first appearance's order."""
    counts: dict[str, int] = {}
    for g in doc["gpus"]:
        counts[g["name"]] = counts.get(g["name"], 0) + 1
    return [{"name": k, "count": v} for k, v in counts.items()]


def verdict_counts(rows: list[dict]) -> list[dict]:
    """One record per base (sorted, then "all"): its files, the count of each (intent, verdict) pair
    as counts[intent][verdict], and how many are as intended."""
    def count(rs):
        return {"files": len(rs), "as_intended": sum(1 for r in rs if r["as_intended"]),
                "counts": {i: {v: sum(1 for r in rs if r["intent"] == i and r["verdict"] == v) for v in INTENTS}
                           for i in INTENTS}}
    bases = sorted({r["base"] for r in rows})
    return ([{"base": b, **count([r for r in rows if r["base"] == b])} for b in bases]
            + [{"base": None, **count(rows)}])


def miss(r: dict) -> dict:
    """A row whose verdict is not the one intended, with every field the template names."""
    return {"file": r["file"], "base": r["base"], "defect": r["defect"], "intent": r["intent"],
            "must_fail": r.get("must_fail") or [], "verdict": r["verdict"],
            "failed_cases": r.get("failed_cases") or [], "first_hint": r.get("first_hint") or ""}


def section(doc: dict | None) -> dict:
    """Everything the template shows; {"present": False, "acceptance"} without results/gate_bench.json."""
    if doc is None:
        return {"present": False, "acceptance": acceptance(None)}
    rows = doc["submissions"]
    gen = doc["generator"]
    return {"present": True, "commit": doc["commit"], "short": doc["commit"][:7], "date": doc["date_utc"], "n": len(rows),
            "seed": gen.get("seed"), "correct_share": gen.get("correct_share"),
            "wall_s": doc["wall_s"], "gate_s": doc["gate_s"], "build_s": doc["build_s"],
            "builds_ended_s": doc.get("builds_ended_s"),
            "per_minute": doc.get("submissions_per_minute"), "gpus": gpu_counts(doc), "n_gpus": len(doc["gpus"]),
            "jobs": doc["jobs"], "slots": [{"tool": k, "slots": v} for k, v in doc["sanitizer_slots"].items()],
            "as_intended": doc["as_intended"], "all_as_intended": doc["all_as_intended"],
            "misses": [miss(r) for r in rows if not r["as_intended"]],
            "stages": [{"stage": k, **v} for k, v in doc["stages"].items()],
            "bases": verdict_counts(rows), "acceptance": acceptance(doc)}
