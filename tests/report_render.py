"""What the report-section tests share: RESULTS.md rendered from tests/fixtures/results with one study
file added, and the text of one section of it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from analysis import report

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def render_with(tmp_path, name: str, doc: dict | None, heading: str) -> tuple[int, str, str]:
    """(exit status, the whole RESULTS.md, the text under `heading`) from the fixture results with
    `doc` written as results/`name` (nothing added when None)."""
    results, out = tmp_path / "results", tmp_path / "out" / "RESULTS.md"
    shutil.copytree(FIXTURES / "results", results)
    if doc is not None:
        (results / name).write_text(json.dumps(doc))
    rc = report.main(["--results", str(results), "--profile", str(tmp_path / "none"), "--out", str(out),
                      "--plots", str(tmp_path / "out" / "plots")])
    text = out.read_text() if out.exists() else ""
    part = text.split(heading)[1].split("\n## ")[0] if heading in text else ""
    return rc, text, part
