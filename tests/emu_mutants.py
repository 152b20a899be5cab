"""The CPU emulation checks' broken copies (tests/test_tiled_emulated.py,
tests/test_persistent_emulated.py, tests/test_transformer_binary.py): a copy of one header under cuda/ with one text replaced, put on
the include path before cuda/ through the Makefile variable of the check's target, built in the
test's own folder, and run: the check must exit 1 with a FAIL line."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from spec.files import ROOT

CUDA = ROOT / "cuda"


def build(target: Path, includes_var: str, includes: str = "") -> None:
    """make TARGET (build/NAME under another BUILD folder), with INCLUDES_VAR=-I<includes> when given."""
    args = ["make", "-s", f"BUILD={target.parent}", str(target)]
    if includes:
        args.append(f"{includes_var}=-I{includes}")
    subprocess.run(args, cwd=ROOT, check=True, capture_output=True, text=True, timeout=600)   # its own folder: no lock


def assert_broken_copy_fails(tmp_path: Path, target: str, includes_var: str,
                             what: str, name: str, old: str, new: str,
                             args: tuple[str, ...] = (), env: dict[str, str] | None = None) -> None:
    """cuda/NAME with OLD replaced by NEW (OLD must occur exactly once), TARGET built against it and run
    with ARGS (and ENV added to the environment): its check must fail (exit 1, a FAIL verdict), else
    WHAT was not caught."""
    src = (CUDA / name).read_text()
    assert src.count(old) == 1, f"the mutant's text is gone from {name}: {old!r}"
    (tmp_path / "inc" / name).parent.mkdir(parents=True)
    (tmp_path / "inc" / name).write_text(src.replace(old, new))
    exe = tmp_path / "build" / target
    build(exe, includes_var, str(tmp_path / "inc"))
    out = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=300,
                         env=None if env is None else dict(os.environ, **env))
    assert out.returncode == 1 and re.search(r" FAIL(?: |$)", out.stdout, re.M), f"{what}: not caught\n{out.stdout}"


def assert_emulated_checks_pass(exe: Path, expected: int) -> None:
    """EXE's float64 checks (no arguments): exit 0, EXPECTED check lines, every one "ok"."""
    out = subprocess.run([str(exe)], capture_output=True, text=True, timeout=300)
    print(out.stdout)
    lines = [ln for ln in out.stdout.splitlines() if " ok " in ln or " FAIL " in ln]
    assert out.returncode == 0 and len(lines) == expected and all(" ok " in ln for ln in lines), out.stdout
