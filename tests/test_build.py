"""harness/build.py: a --submission that compiles but lacks an entry point stops before the build
is touched, names what is missing in one line and exits 2 (issue 17). Needs nvcc (no GPU)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from harness import build as hb
from spec.files import ROOT

pytestmark = pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("nm")),
                                reason="nvcc or nm not on PATH")


def test_entry_points_are_submission_h_s():
    header = (ROOT / "cuda" / "contract" / "submission.h").read_text()
    assert tuple(re.findall(r"^int (mlp_\w+)\(", header, re.M)) == hb.ENTRY_POINTS


def test_submission_lacking_an_entry_point_keeps_the_last_good_build(tmp_path):
    starter = (ROOT / "cuda" / "contract" / "submission_starter.cu").read_text()
    start = starter.index('extern "C" int mlp_step(')
    end = starter.index('extern "C" int mlp_train_epoch(')
    lacking = tmp_path / "lacking.cu"
    lacking.write_text(starter[:start] + starter[end:])
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    good = {"mlp_train": b"old binary", "libmlp.so": b"old library",
            "build_info.json": json.dumps({"submission": "cuda/contract/submission_ref.cu"}).encode()}
    for name, data in good.items():
        (build_dir / name).write_bytes(data)
    res = subprocess.run([sys.executable, "-c",
                          "import sys; from harness.build import build; "
                          f"build(arch='sm_90', submission={str(lacking)!r}, build_dir=__import__('pathlib').Path({str(build_dir)!r}))"],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 2, res.stderr
    line = res.stderr.strip().splitlines()[-1]
    assert re.match(r"error: --submission \S*lacking\.cu lacks mlp_step \(cuda/contract/submission\.h", line), line
    assert line.endswith("keeps its last good build")
    assert sorted(p.name for p in build_dir.iterdir()) == sorted(good)
    for name, data in good.items():
        assert (build_dir / name).read_bytes() == data, name
