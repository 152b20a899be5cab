"""The compute-sanitizer runs: sanitize.json, or the finished runs of its log when the JSON is
absent."""
from __future__ import annotations

import re
from pathlib import Path

_SAN_START = re.compile(r"^sanitize:\s+(\S+)\s+(.*\S)\s*$")
_SAN_RESULT = re.compile(r"^\s*->\s*(\S+)\s+errors?,\s*exit\s+(-?\d+)")
# harness/studies/sanitize.py prints each result on its own line when runs interleave:
# 'sanitize: TOOL TARGET -> N errors, exit E (S s)' (or '-> no result within S s').
_SAN_ONE_LINE = re.compile(r"^sanitize:\s+(\S+)\s+(.*?)\s+->\s*(?:(\S+)\s+errors?,\s*exit\s+(-?\d+)|(no result))")


def log_runs(text: str) -> tuple[list[dict], dict | None]:
    """(finished runs, a run the log ends inside or None) from harness/studies/sanitize.py's lines:
    'sanitize: TOOL TARGET' when a run starts, then 'sanitize: TOOL TARGET -> N errors, exit E'
    (runs interleave) or an indented '-> N errors, exit E' (the serial form of earlier logs)."""
    done, started, last = [], {}, None
    for line in text.splitlines():
        if line.startswith("sanitize: zero") or line.startswith("sanitize: ERRORS"):
            continue
        if m := _SAN_ONE_LINE.match(line):
            run = started.pop((m.group(1), m.group(2)), None) or {"tool": m.group(1),
                                                                   "target": m.group(2)}
            timed_out = m.group(5) is not None
            done.append(run | {"errors": None if timed_out else m.group(3),
                               "exit_code": None if timed_out else m.group(4),
                               "timed_out": timed_out})
        elif m := _SAN_START.match(line):
            last = (m.group(1), m.group(2))
            started[last] = {"tool": m.group(1), "target": m.group(2)}
        elif (m := _SAN_RESULT.match(line)) and last in started:
            done.append(started.pop(last) | {"errors": m.group(1), "exit_code": m.group(2),
                                             "timed_out": False})
    return done, next(iter(started.values()), None)


def _is_bad(r: dict) -> bool:
    return r["errors"] != 0 or r["exit_code"] != 0 or bool(r.get("timed_out"))


def section(san: dict | None, log_text: str | None, reruns=(), san_commit: str | None = None) -> dict:
    """{"present", "runs", "total", "unknown", "nonzero_exit", "complete", "planned", "clean",
    "tools", "targets", "reruns"}; the table shows only the runs that were not clean. `reruns`:
    (path, doc, commit) of `invoke sanitize --paths X` runs of some targets alone; a bad run of
    sanitize.json whose (tool, target) a rerun from a later commit ran clean is marked
    "superseded" by it (the order is git's: `san_commit`, the commit that last changed
    sanitize.json, an ancestor of the rerun's), and `clean` counts the later result."""
    from spec.provenance import age
    later = []
    for path, doc, commit in reruns:
        state = age(san_commit, commit)["state"] if san_commit and commit else "unknown"
        runs = doc["runs"]
        later.append({"file": Path(path).name, "runs": len(runs), "clean": not any(_is_bad(r) for r in runs)
                      and doc.get("complete", True), "commit": (commit or "")[:7],
                      "later": state == "older",
                      "targets": list(dict.fromkeys(r["target"] for r in runs)),
                      "pairs": {(r["tool"], r["target"]): r for r in runs}})
    if san is not None:
        runs = san["runs"]
        bad = [dict(r) for r in runs if _is_bad(r)]
        for r in bad:
            for rr in later:
                again = rr["pairs"].get((r["tool"], r["target"]))
                if rr["later"] and again is not None and not _is_bad(again):
                    r["superseded"] = rr["file"]
        complete = san.get("complete", True)
        return {"present": True, "runs": len(runs), "bad": bad,
                "total": sum(r["errors"] or 0 for r in runs),
                "unknown": sum(1 for r in runs if r["errors"] is None),
                "nonzero_exit": sum(1 for r in runs if r["exit_code"] != 0),
                "complete": complete, "planned": san.get("planned_runs"),
                "clean": all(r.get("superseded") for r in bad) and complete,
                "clean_as_run": not bad and complete,
                "tools": list(dict.fromkeys(r["tool"] for r in runs)),
                "targets": list(dict.fromkeys(r["target"] for r in runs)),
                "commit": (san_commit or "")[:7],
                "reruns": [{k: v for k, v in rr.items() if k != "pairs"} for rr in later]}
    out = {"present": False, "log": log_text is not None, "log_rows": [], "unfinished": None}
    if log_text is not None:
        out["log_rows"], out["unfinished"] = log_runs(log_text)
    return out
