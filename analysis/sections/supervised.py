"""A run under the supervisor (harness/gate/supervisor.py): how it ended, its stages, and whether the
whole report can be rendered from it or only a short one (a supervised failure doc written
without the binary's run.json: no recipe, no GPU, no timed path)."""
from __future__ import annotations

SHORT_REPORT_NEEDS = ("recipe", "gpu")


def is_short(run: dict) -> bool:
    """True for a run.json the full report cannot be built from: the supervisor's own doc (the
    binary wrote none) or a merge of stages none of which said what GPU or recipe it ran."""
    return isinstance(run.get("supervisor"), dict) and any(k not in run for k in SHORT_REPORT_NEEDS)


def section(run: dict) -> dict | None:
    """The supervisor block as rows, or None for an unsupervised run."""
    sup = run.get("supervisor")
    if not isinstance(sup, dict):
        return None
    stages = [{"name": st.get("name", "?"), "cases": ", ".join(str(c) for c in st.get("cases", [])),
               "limit_s": st.get("limit_s"), "limit_why": st.get("limit_why", ""), "seconds": st.get("seconds"),
               "ended": st.get("ended", ""), "ok": st.get("ended") in ("exited 0", "exited 1", "exited 99")}
              for st in sup.get("stages", []) if isinstance(st, dict)]
    tail = [ln for ln in str(sup.get("stderr_tail", "")).splitlines() if ln.strip()][-12:]
    ended = str(sup.get("ended", ""))
    return {"ended": ended, "finished": ended.startswith(("exited 0", "exited 1")),
            "limit_s": sup.get("limit_s"), "seconds": sup.get("seconds"), "stages": stages,
            "stderr_tail": tail, "path_failures": [str(f) for f in sup.get("path_failures", [])]}


def short(run: dict, verdict) -> dict:
    """Everything the short report shows: what happened, the cases, the hints (the verdict's:
    spec/verdict.py)."""
    cases = [{"id": c.get("id"), "name": c.get("name"), "value": c.get("value"), "limit": c.get("limit"),
              "passed": c.get("passed"), "detail": c.get("detail", "")} for c in run.get("cases", [])]
    return {"supervised": section(run), "cases": cases,
            "passed": sum(1 for c in cases if c["passed"] is True),
            "failed": [c["name"] for c in cases if c["passed"] is False],
            "hints": list(verdict.hints),
            "notes": [n for n in run.get("notes", []) if isinstance(n, str)],
            "run_command": run.get("run_command", ""), "commit": run.get("commit"),
            "submission": (run.get("build") or {}).get("submission") or run.get("submission"),
            "date_utc": run.get("date_utc")}
