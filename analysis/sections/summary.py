"""RESULTS.md's opening summary, computed: the gate verdict (its one owner's, spec/verdict.py:
the headline says what the binary's exit status says); the fastest passing CUDA path
against PyTorch's fastest passing variant and against eager (both from pytorch.json, the same
`invoke run`, and whether it records the recipe it trained); what limits that path (its kernel's phase breakdown when the phase file has one,
else its own profile); and every evidence file whose commit is not run.json's (the run of record),
with its commit, its date and how many commits it is older (or newer) than the run:
spec.provenance.age, `git rev-list --count` in this repository when the report is rendered, so
the words depend on the inputs and the repository's history only. A file whose commit this
repository lacks says "commit not in this repository"; one that records none, "no commit
recorded"."""
from __future__ import annotations

from analysis.sections import common as c
from analysis.sections.floor import stationary, stationary_limit
from analysis.sections.phases import kernel_breakdown
from analysis.sections.profiles import limit
from spec.provenance import age as commit_age

# The evidence beside run.json, in the order the summary lists it: (key in the sources dict, the
# section that shows it). "pytorch" is the torch argument; "profiles" and "ncu" (CSV pages, which
# record no commit) are listed when present.
EVIDENCE = (("pytorch", "Epoch time (PyTorch's half)"),
            ("phases", "Where the persistent epoch's time goes"),
            ("stationary_phases", "Where the stationary epoch's time goes"),
            ("ceilings", "Roofline"), ("sanitize", "Sanitizers"), ("gate_bench", "Gating a course"),
            ("sweep", "Memory and cost"), ("full_split", "The full train split"),
            ("torch_memory", "PyTorch memory"),
            ("torch_batch", "PyTorch step time against batch size"),
            ("torch_linear", "PyTorch's Linear kernels"),
            ("ours_batch", "our step time against batch size"),
            ("ours_linear", "our kernels by Linear layer"),
            ("profiles", "Profiles"), ("ncu", "Hardware counters"))
CSV_EVIDENCE = ("profiles", "ncu")


def verdict_words(run: dict, v) -> dict:
    """What the headline says of the verdict `v` (spec/verdict.py's, of `run`): its word, its first
    hint, and the cases, paths and stages it failed on, by name."""
    names = {x.get("id"): x.get("name") for x in run.get("cases", [])}
    return {"verdict": v.word, "gate_passed": v.passed, "first_hint": v.first_hint,
            "failed_cases": [names.get(i) or f"case {i}" for i in v.failed_cases],
            "failed_paths": list(v.failed_paths), "failed_stages": list(v.failed_stages),
            "cases": len(v.required_cases)}


def summary(run: dict, torch: dict | None, phases: dict | None, profiles: dict,
            sources: dict, verdict, age=None) -> dict:
    """sources: {key: document or None} of the optional inputs (EVIDENCE's keys but pytorch);
    verdict: the gate's verdict of `run` (spec/verdict.py); age: how a file's commit stands to the
    run's (default spec.provenance.age in this repository)."""
    paths = run["paths"]
    best = c.fastest({n: r for n, r in paths.items() if n not in verdict.failed_paths})
    steps = run["recipe"]["steps_per_epoch"]
    variants = (torch or {}).get("variants", {})
    best_torch = c.fastest(variants)
    eager = c.passed_median(variants.get(c.EAGER_VARIANT))
    out = {**verdict_words(run, verdict),
           "skipped_paths": [{"path": n, "why": r["skipped"]} for n, r in paths.items()
                             if c.is_skipped(r)],
           "reduced": [{"path": n, "config": r["config"]} for n, r in paths.items()
                       if isinstance(r.get("config"), str)],
           "capped": ((run.get("device_limits") or {}).get("capped") or {}),
           "device_limits": run.get("device_limits"),
           "variants_run": (torch or {}).get("variants_run"),
           "variants_left_out": [{"name": n, "why": w} for n, w in
                                 ((torch or {}).get("variants_left_out") or {}).items()],
           "n_paths": len(paths), "fastest": None, "torch_run": torch is not None,
           # the loaders refuse a pytorch.json whose recipe differs; one without any is unverified
           "torch_recipe_recorded": "recipe" in (torch or {}),
           # pytorch.json's commit: another than run.json's means the two halves were not one run
           "torch_commit": (torch or {}).get("commit"),
           "limit": None, "evidence": []}
    if best is not None:
        m = c.passed_median(paths[best])
        bt = c.passed_median(variants.get(best_torch)) if best_torch else None
        out["fastest"] = {"path": best, "median": m, "us_step": m * 1000.0 / steps,
                          "cv": paths[best].get("cv_pct"),
                          "best_torch": best_torch, "best_torch_median": bt,
                          "vs_best_torch": m / bt if bt else None,
                          "eager": c.EAGER_VARIANT, "eager_median": eager,
                          "vs_eager": m / eager if eager else None}
        bd = kernel_breakdown(phases, best, steps) if phases is not None else None
        out["limit"] = (stationary_limit(stationary(sources.get("stationary_phases"), run), best)
                        or limit(best, profiles.get(best), bd))
    out["evidence"] = evidence(run, {"pytorch": torch, **sources}, age)
    return out


def evidence(run: dict, sources: dict, age=None) -> list[dict]:
    """[{key, section, commit, date, age}] of every present evidence file whose commit is not
    run.json's; age is spec.provenance.age's record ({"state": "none"} for a CSV page, and
    {"state": "no_run_commit"} for all when run.json records none)."""
    age = age or commit_age
    of_record = run.get("commit")
    out = []
    for key, section in EVIDENCE:
        doc = sources.get(key)
        if not doc:
            continue
        if key in CSV_EVIDENCE:
            commit, date, how = None, None, {"state": "none", "commits": None}
        else:
            commit, date = doc.get("commit"), doc.get("date_utc")
            how = (age(commit, of_record) if of_record else
                   {"state": "no_run_commit" if commit else "none", "commits": None})
        if how["state"] != "same":
            out.append({"key": key, "section": section, "commit": commit, "date": date, "age": how})
    return out
