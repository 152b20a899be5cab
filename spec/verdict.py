"""The gate's verdict of a run.json, asked of its one owner: cuda/gate/verdict.cpp, through
`build/mlp_host verdict` (mlp_train decides the run.json it writes with the same function). This
module decides nothing itself: it sends the documents and reads the answers.

    from spec import verdict
    v = verdict.decide(doc)          Verdict(passed, word, first_hint, reasons, failed_cases, ...)
    vs = verdict.decide_all(docs)    one mlp_host call for many documents (a leaderboard)
    v = verdict.of_run(doc, where)   decide(), and an InputError when the document's own "verdict"
                                     block says otherwise (a run.json changed after its verdict)
    doc = verdict.stamped(doc)       the document with its "verdict" and "hints" from the owner

Every output that says PASS or FAIL (the binary's exit status, run.json, RESULTS.md's headline,
each submission's RESULTS.md, the leaderboard, the supervisor's and the course's exit statuses)
reads it; tests/test_verdict_outputs.py renders each of them over every fixture and compares.
"""
from __future__ import annotations

import json
import math
import subprocess
from dataclasses import dataclass
from pathlib import Path

from spec.files import BUILD_DIR, InputError

# run.json's "verdict" block as the owner writes it (docs/formats.md): the fields compared by of_run.
COMPARED = ("passed", "reasons")


@dataclass(frozen=True)
class Verdict:
    passed: bool
    word: str                       # "PASS" or "FAIL"
    first_hint: str                 # "" on PASS
    reasons: tuple[str, ...]        # what failed: cases (table order), then paths, then stages
    failed_cases: tuple[int, ...]
    failed_paths: tuple[str, ...]
    failed_stages: tuple[str, ...]
    required_cases: tuple[int, ...]
    hints: tuple[str, ...]

    @classmethod
    def from_json(cls, d: dict) -> "Verdict":
        return cls(passed=d["passed"] is True, word=str(d["word"]), first_hint=str(d["first_hint"]),
                   reasons=tuple(d["reasons"]), failed_cases=tuple(d["failed_cases"]),
                   failed_paths=tuple(d["failed_paths"]), failed_stages=tuple(d["failed_stages"]),
                   required_cases=tuple(d["required_cases"]), hints=tuple(d["hints"]))

    def record(self) -> dict:
        """run.json's "verdict" block."""
        return {"passed": self.passed, "word": self.word, "first_hint": self.first_hint,
                "reasons": list(self.reasons), "failed_cases": list(self.failed_cases),
                "failed_paths": list(self.failed_paths), "failed_stages": list(self.failed_stages),
                "required_cases": list(self.required_cases), "hints": list(self.hints)}


def _finite(x):
    """The document as strict JSON: a non-finite number (Python writes NaN) becomes null."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_finite(v) for v in x]
    return x


def decide_all(docs, build_dir: Path = BUILD_DIR, errors: str = "raise") -> list:
    """The owner's verdict of each run.json document, in one mlp_host call. A document the owner cannot
    read (no "cases" list, a row without an id) is an InputError naming it, or with errors="return"
    the owner's one line of why, in its place (a leaderboard's FAIL row)."""
    docs = list(docs)
    if not docs:
        return []
    host = Path(build_dir) / "mlp_host"
    if not host.exists():
        raise InputError(f"error: {host} missing: run `invoke build` first (the gate's verdict comes from it)")
    text = "".join(json.dumps(_finite(d), allow_nan=False) + "\n" for d in docs)
    proc = subprocess.run([str(host), "verdict"], input=text, capture_output=True, text=True)
    if proc.returncode != 0:
        raise InputError(f"error: {host} verdict exited {proc.returncode}: {proc.stderr.strip()[:300]}")
    answers = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.strip()]
    if len(answers) != len(docs):
        raise InputError(f"error: {host} verdict answered {len(answers)} documents of {len(docs)}")
    out = []
    for a in answers:
        if "error" in a and errors != "return":
            raise InputError(f"error: run.json: {a['error']}")
        out.append(str(a["error"]) if "error" in a else Verdict.from_json(a))
    return out


def decide(doc: dict, build_dir: Path = BUILD_DIR) -> Verdict:
    return decide_all([doc], build_dir)[0]


def disagreement(doc: dict, v: Verdict) -> str | None:
    """Why the document's own "verdict" block is not the owner's `v` (None when it agrees or has none)."""
    held = doc.get("verdict")
    if held is None:
        return None
    if not isinstance(held, dict):
        return "its \"verdict\" is not an object"
    mine = v.record()
    for k in COMPARED:
        if held.get(k) != mine[k]:
            return f"its verdict's {k} is {held.get(k)!r}, the evidence's is {mine[k]!r}"
    return None


def of_run(doc: dict, where: str, build_dir: Path = BUILD_DIR) -> Verdict:
    """decide(doc), refusing a document whose recorded verdict disagrees with its own evidence."""
    v = decide(doc, build_dir)
    why = disagreement(doc, v)
    if why:
        raise InputError(f"error: {where}: {why} (the run.json was changed after its verdict was written)")
    return v


def stamped(doc: dict, build_dir: Path = BUILD_DIR) -> tuple[dict, Verdict]:
    """(the document with "hints" and "verdict" from the owner, that verdict): what every writer of a
    merged or amended run.json stores."""
    bare = {k: v for k, v in doc.items() if k != "verdict"}
    v = decide(bare, build_dir)
    return {**bare, "hints": list(v.hints), "verdict": v.record()}, v
