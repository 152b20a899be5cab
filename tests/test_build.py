"""harness/build.py: a --submission that compiles but lacks an entry point stops before the build
is touched, names what is missing in one line and exits 2 (issue 17); a bad --arch leaves the build
folder as it was, and a hostile submission name reaches make only as a safe copy (issue 28).
Needs nvcc (no GPU)."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness import build as hb
from spec.files import ROOT

pytestmark = pytest.mark.skipif(not (shutil.which("nvcc") and shutil.which("nm")),
                                reason="nvcc or nm not on PATH")


def test_entry_points_are_submission_h_s():
    header = (ROOT / "cuda" / "contract" / "submission.h").read_text()
    assert tuple(re.findall(r"^int (mlp_\w+)\(", header, re.M)) == hb.ENTRY_POINTS + hb.OPTIONAL_ENTRY_POINTS


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


# ----------------------------------------------------------------------------- issue 28: --arch, submission names

def _build_dir_with_a_good_build(tmp_path):
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    good = {"build_info.json": json.dumps({"arch": "sm_90", "submission": hb.DEFAULT_SUBMISSION}).encode(),
            "config.stamp": b"ARCH=sm_90 SUBMISSION=cuda/contract/submission_ref.cu ACCUM=double\n",
            "mlp_train": b"old binary"}
    for name, data in good.items():
        (build_dir / name).write_bytes(data)
    return build_dir, good


def _build_in_a_child(arch, build_dir, submission=None) -> subprocess.CompletedProcess:
    code = ("from pathlib import Path; from harness.build import build; "
            f"build(arch={arch!r}, submission={submission!r}, build_dir=Path({str(build_dir)!r}))")
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize("arch", ["sm_10", "sm_900", "sm_٩٠", "sm_⁹⁰", "sm_9", "sm_90;id", "SM_90", "compute_90"])
def test_a_bad_arch_is_one_line_exit_2_and_the_build_folder_is_untouched(tmp_path, arch):
    build_dir, good = _build_dir_with_a_good_build(tmp_path)
    res = _build_in_a_child(arch, build_dir)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and res.stderr.startswith(f"error: --arch {arch!r}: "), res.stderr
    assert sorted(p.name for p in build_dir.iterdir()) == sorted(good)
    assert all((build_dir / n).read_bytes() == data for n, data in good.items())


def test_every_arch_nvcc_compiles_for_is_accepted():
    assert "sm_90" in hb.nvcc_archs()
    assert all(hb.validate_arch(a) == a for a in hb.nvcc_archs())


HOSTILE_NAMES = ["x`id>PWNED`", "a b", "it's", "a;touch PWNED2", "$(HOME)", "-x", "..."]


def test_hostile_submission_names_compile_through_a_safe_copy_and_no_shell_sees_them(tmp_path, monkeypatch):
    """Each name reaches make only as a copy under a safe name, in the check step and in the full
    build; no command it holds runs (no PWNED file anywhere). The first name's check step compiles
    for real (make's recipe runs nvcc through a shell: the safe copy is what it sees); the later
    names' check steps, with the same starter bytes, reuse its object once their make command is
    shown to hold no part of the name. The full build's make is stood in for."""
    starter = (ROOT / "cuda" / "contract" / "submission_starter.cu").read_bytes()
    real_run = subprocess.run
    made, checked, compiled = [], [], {}

    def run(cmd, *a, **kw):
        if cmd[0] == "make" and cmd[-1] == "all":
            made.append(cmd)
            return subprocess.CompletedProcess(cmd, 0)
        if cmd[0] == "make" and cmd[-1].endswith("submission.o"):
            checked.append(cmd)
            if compiled:
                target = ROOT / cmd[-1]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(compiled["obj"])
                return subprocess.CompletedProcess(cmd, 0)
            res = real_run(cmd, *a, **kw)
            compiled["obj"] = (ROOT / cmd[-1]).read_bytes()
            return res
        return real_run(cmd, *a, **kw)
    monkeypatch.setattr(hb.subprocess, "run", run)
    monkeypatch.chdir(tmp_path)
    for i, stem in enumerate(HOSTILE_NAMES):
        src = tmp_path / "in" / f"{stem}.cu"
        src.parent.mkdir(exist_ok=True)
        src.write_bytes(starter)
        build_dir = tmp_path / f"build{i}"
        info = hb.build(arch="sm_90", submission=str(src), build_dir=build_dir)
        assert len(checked) == i + 1 and not any(stem in arg for arg in checked[-1] if stem not in ("-x", "...")), \
            checked[-1]                                   # the check's make: only the safe copy
        check_arg = next(a for a in checked[-1] if a.startswith("SUBMISSION="))
        assert hb.MAKE_SAFE_PATH.fullmatch(check_arg.removeprefix("SUBMISSION=")), check_arg
        sub_arg = next(a for a in made[-1] if a.startswith("SUBMISSION="))
        assert hb.MAKE_SAFE_PATH.fullmatch(sub_arg.removeprefix("SUBMISSION=")), sub_arg
        copy = (ROOT / sub_arg.removeprefix("SUBMISSION=")).resolve()
        assert copy.read_bytes() == starter and copy.parent == (build_dir / hb.SUBMISSION_DIR).resolve()
        assert info["submission"].endswith(f"{stem}.cu") and info["make_submission"] == sub_arg.split("=", 1)[1]
        assert not (build_dir / hb.CHECK_DIR).exists()
    for where in (tmp_path, ROOT, Path.home()):
        assert not list(Path(where).glob("PWNED*")), where


def test_a_submission_that_is_not_a_file_or_not_cu_is_one_line(tmp_path):
    build_dir, good = _build_dir_with_a_good_build(tmp_path)
    (tmp_path / "d.cu").mkdir()
    (tmp_path / "x.cpp").write_text("int main() {}\n")
    for sub, words in ((tmp_path / "d.cu", "a folder"), (tmp_path / "none.cu", "file not found"),
                       (tmp_path / "x.cpp", "not a .cu file")):
        res = _build_in_a_child("sm_90", build_dir, str(sub))
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and words in res.stderr, res.stderr
    assert all((build_dir / n).read_bytes() == data for n, data in good.items())
