"""The test suite without its optional packages: no test module errors at collection when one is
absent; the tests that need it skip, each saying why (pytest.importorskip at the top of the module,
or in the test or fixture that needs it, where the module's other tests run without it).

OPTIONAL are the packages requirements.txt leaves out: PyTorch, whose build depends on the
machine (requirements-test.txt brings the CPU build for the tests). The check hides each by a
package of that name, first on PYTHONPATH, whose import raises ModuleNotFoundError as an absent
package's does, and collects every test module in a fresh process."""
from __future__ import annotations

import os
import subprocess
import sys

from spec.files import ROOT

OPTIONAL = ("torch",)


def _hidden(tmp_path) -> dict:
    for name in OPTIONAL:
        pkg = tmp_path / name
        pkg.mkdir()
        (pkg / "__init__.py").write_text(
            f"raise ModuleNotFoundError(\"No module named '{name}' (hidden by tests/test_optional_packages.py)\", "
            f"name={name!r})\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}


def test_every_test_module_collects_without_the_optional_packages(tmp_path):
    env = _hidden(tmp_path)
    for name in OPTIONAL:   # the hiding works: the package cannot be imported in that environment
        probe = subprocess.run([sys.executable, "-c", f"import {name}"], env=env, capture_output=True, text=True,
                               timeout=60)
        assert probe.returncode != 0 and "ModuleNotFoundError" in probe.stderr, probe.stderr
    res = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          str(ROOT / "tests")], env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    errors = [ln for ln in res.stdout.splitlines() if ln.startswith("ERROR ")]
    assert res.returncode == 0 and not errors, (errors or res.stdout[-3000:], res.stderr[-2000:])
    assert " collected" in res.stdout.splitlines()[-1], res.stdout[-500:]
