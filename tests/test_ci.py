"""CI runs the README's set-up and test commands, exactly as written there, and nothing of its own:
the commands of `.ci/run` (its lines but the shebang, comments, `set` and the `cd` to the
repository) are README's "Anywhere" block, line for line."""
from __future__ import annotations

import re

from spec.files import ROOT


def readme_block() -> list[str]:
    """The indented command block under README's "Anywhere (no GPU needed ...):" line."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^Anywhere \(no GPU needed[^\n]*:\n\n((?: {4}\S[^\n]*\n)+)", text, re.M)
    assert m, "README.md: no indented command block under its 'Anywhere (no GPU needed ...):' line"
    return [line.strip() for line in m.group(1).splitlines()]


def ci_commands() -> list[str]:
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")
            and not ln.startswith(("set ", "cd "))]


def test_ci_runs_the_readme_commands_and_nothing_else():
    assert ci_commands() == readme_block()


def test_the_readme_block_sets_up_and_tests():
    block = readme_block()
    assert block[0] == "pip install -r requirements-test.txt" and block[-1].endswith("invoke test")
    assert "invoke setup" in block
    req = (ROOT / "requirements-test.txt").read_text(encoding="utf-8").splitlines()
    assert "-r requirements.txt" in req and any(re.fullmatch(r"torch==[0-9.]+", ln) for ln in req)
