"""CPU: the course generator (harness/gate/course_gen.py): the same arguments give the same bytes, the
manifest says of every file what its #defines are and what the gate must say, no two files hold the
same code, bad arguments are one line and exit 2, spins stay out unless allowed, the defect table
read from the headers agrees with their code and with tests/test_gpu_gate.py, and a sample of a
course compiles with the Makefile's nvcc flags."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from harness.gate import course_gen as cg
from spec import catalog
from spec.files import InputError, ROOT

DEFINE = re.compile(r"^#define (\w+)(?: (\S+))?$", re.M)


def gen(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.gate.course_gen", "--out", str(out), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def tree(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_the_same_arguments_give_the_same_bytes_and_another_seed_another_course(tmp_path):
    for name in ("a", "b"):
        res = gen(tmp_path / name, "--n", "24", "--seed", "11")
        assert res.returncode == 0 and res.stderr == "", res.stderr
    assert tree(tmp_path / "a") == tree(tmp_path / "b")
    assert gen(tmp_path / "c", "--n", "24", "--seed", "12").returncode == 0
    codes = lambda f: sorted(cg._code(t.decode()) for n, t in tree(f).items() if n.endswith(".cu"))  # noqa: E731
    assert codes(tmp_path / "a") != codes(tmp_path / "c")


@pytest.mark.parametrize("n, share", [(1, 0.5), (7, 0.5), (40, 0.25), (30, 1.0), (30, 0.0)])
def test_the_manifest_describes_every_file(tmp_path, n, share):
    out = tmp_path / "course"
    manifest = cg.write_course(out, n, 5, share)
    assert json.loads((out / cg.MANIFEST).read_text()) == manifest
    assert set(manifest) == {"generator", "seed", "n", "correct_share", "max_timeouts", "excluded_defects", "headers",
                             "submissions"}
    subs = manifest["submissions"]
    assert len(subs) == n and sum(s["intent"] == "PASS" for s in subs) == int(n * share + 0.5)
    files = sorted(p.name for p in out.glob("*.cu"))
    assert files == sorted(s["file"] for s in subs) and len(set(files)) == n
    headers = sorted(p.name for p in out.glob("*.cuh"))
    assert headers == manifest["headers"] and all((out / h).read_bytes() == (cg.SUBMISSIONS / h).read_bytes()
                                                  for h in headers)
    verdict_cases = set(catalog.verdict_case_ids())
    codes = set()
    for s in subs:
        assert set(s) == {"file", "base", "header", "parameters", "defect", "defect_owner", "intent", "must_fail"}
        base = cg.BASES[s["base"]]
        assert s["header"] == base.header and set(s["parameters"]) == set(base.params)
        assert all(v in base.params[k] for k, v in s["parameters"].items())
        text = (out / s["file"]).read_text()
        assert text.rstrip().endswith(f'#include "{base.header}"')
        defines = {m.group(1): m.group(2) for m in DEFINE.finditer(text)}
        want = {k: (None if v is True else str(v)) for k, v in s["parameters"].items() if v is not False}
        if s["defect"]:
            want[s["defect"]] = None
        assert defines == want, (s, text)
        if s["intent"] == "PASS":
            assert s["defect"] is None and s["defect_owner"] is None and s["must_fail"] == []
        else:
            d = base.defects()[s["defect"]]
            assert s["defect_owner"] == d.owner in base.owners and s["must_fail"] == list(d.must_fail)
            assert s["must_fail"] and set(s["must_fail"]) <= verdict_cases and not d.time_limited
        codes.add(cg._code(text))
    assert len(codes) == n   # no two files hold the same code


def test_a_course_of_failing_files_takes_every_defect_before_any_twice(tmp_path):
    pairs = {(b.name, d.macro) for b in cg.BASES.values() for d in b.defects().values() if not d.time_limited}
    manifest = cg.write_course(tmp_path / "c", len(pairs), 9, 0.0)
    got = [(s["base"], s["defect"]) for s in manifest["submissions"]]
    assert sorted(got) == sorted(pairs)


def test_spins_stay_out_unless_allowed_and_then_capped(tmp_path):
    spins = {(b.name, d.macro) for b in cg.BASES.values() for d in b.defects().values() if d.time_limited}
    assert ("naive", "MUTANT_SPIN_EPOCH") in spins
    manifest = cg.write_course(tmp_path / "none", 120, 1, 0.0)
    assert not [s for s in manifest["submissions"] if (s["base"], s["defect"]) in spins]
    assert {(e["base"], e["defect"]) for e in manifest["excluded_defects"]} == spins
    manifest = cg.write_course(tmp_path / "one", 120, 1, 0.0, max_timeouts=1)
    assert len([s for s in manifest["submissions"] if (s["base"], s["defect"]) in spins]) == 1
    assert manifest["excluded_defects"] == []


@pytest.mark.parametrize("args, words", [
    (["--n", "0", "--seed", "1"], "--n '0': expected an integer in [1, 1000]"),
    (["--n", "1001", "--seed", "1"], "--n '1001'"),
    (["--n", "3x", "--seed", "1"], "--n '3x'"),
    (["--n", "3", "--seed", "-2"], "--seed '-2'"),
    (["--n", "3", "--seed", "1", "--correct-share", "1.5"], "--correct-share '1.5'"),
    (["--n", "3", "--seed", "1", "--correct-share", "nan"], "--correct-share 'nan'"),
    (["--n", "3", "--seed", "1", "--max-timeouts", "-1"], "--max-timeouts '-1'"),
    (["--n", "3"], "the following arguments are required: --seed"),
    (["--n", "3", "--seed", "1", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_arguments_are_one_line_and_exit_2(tmp_path, args, words):
    res = gen(tmp_path / "out", *args)
    assert res.returncode == 2 and res.stdout == "" and len(res.stderr.splitlines()) == 1, res.stderr
    assert words in res.stderr and res.stderr.startswith("error: "), res.stderr
    assert not (tmp_path / "out").exists()


def test_the_out_folder_is_refused_when_not_empty_or_not_a_folder_or_the_bases(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("keep me")
    (full / "old.cu").write_text("// a submission of an earlier course")
    res = gen(full, "--n", "3", "--seed", "1")
    assert res.returncode == 2 and "not empty" in res.stderr and sorted(p.name for p in full.iterdir()) == [
        "notes.txt", "old.cu"]
    res = gen(full, "--n", "3", "--seed", "1", "--force")
    assert res.returncode == 0, res.stderr
    names = sorted(p.name for p in full.iterdir())
    assert "old.cu" not in names and "notes.txt" in names and (full / "notes.txt").read_text() == "keep me"
    assert len([n for n in names if n.endswith(".cu")]) == 3
    afile = tmp_path / "afile"
    afile.write_text("x")
    res = gen(afile, "--n", "3", "--seed", "1")
    assert res.returncode == 2 and "not a folder" in res.stderr
    with pytest.raises(InputError, match="the bases' own folder"):
        cg.write_course(cg.SUBMISSIONS, 3, 1, force=True)


def test_more_files_than_the_bases_can_make_distinct_is_refused(tmp_path):
    with pytest.raises(InputError, match="no further distinct"):
        cg.generate(1000, 1, 1.0)   # correct files: 1 naive, 24 tiled and 384 regtile parameter sets


# ------------------------------------------------------------------------------------ the defect table
def _code_macros(header: Path) -> set[str]:
    """The MUTANT_* macros a header's code (not its comments) tests."""
    code = "\n".join(ln.split("//")[0] for ln in header.read_text().splitlines())
    return set(re.findall(r"\bMUTANT_[A-Z0-9_]+", code))


@pytest.mark.parametrize("header", sorted({h for b in cg.BASES.values() for h in b.owners}))
def test_every_macro_of_a_header_is_documented_with_its_cases_and_every_entry_is_in_its_code(header):
    table = cg.defects_of(header)
    assert set(table) == _code_macros(cg.SUBMISSIONS / header), header
    verdict_cases = set(catalog.verdict_case_ids())
    for d in table.values():
        assert d.must_fail and set(d.must_fail) <= verdict_cases, d


def test_the_parser_reads_multi_line_entries_and_refuses_an_entry_without_a_case(tmp_path):
    (tmp_path / "h.cuh").write_text(
        "// h.cuh\n//   MUTANT_A     one line -> case 4 (grad-check)\n//   MUTANT_B     two lines, the\n"
        "//                cases below -> cases 1, 2 and 10\n//   VARIANT_C    not a defect -> case 3\n"
        "//                its second line -> case 5\n//   MUTANT_D     x -> case 5 (step), case 6\n"
        "//   MUTANT_E     y -> case 9, by its stage's time limit\n#include <x>\n//   MUTANT_F   after the comment -> case 1\n")
    t = cg.defects_of("h.cuh", tmp_path)
    assert {k: v.must_fail for k, v in t.items()} == {"MUTANT_A": (4,), "MUTANT_B": (1, 2, 10), "MUTANT_D": (5, 6),
                                                      "MUTANT_E": (9,)}
    assert [k for k, v in t.items() if v.time_limited] == ["MUTANT_E"]
    (tmp_path / "bad.cuh").write_text("//   MUTANT_X   breaks something -> a stage timeout\n")
    with pytest.raises(InputError, match="MUTANT_X names no gate case"):
        cg.defects_of("bad.cuh", tmp_path)


def test_the_gpu_tests_expectations_for_naive_mutants_agree_with_the_table():
    """tests/test_gpu_gate.py's EXPECTED names one failing case per mutant_*.cu: it must be one of
    the cases naive_base.cuh's entry for that file's macro names."""
    from tests.test_gpu_gate import EXPECTED
    table = cg.defects_of("naive_base.cuh")
    names = catalog.case_names()
    checked = 0
    for stem, case_name in EXPECTED.items():
        macros = re.findall(r"^#define (MUTANT_\w+)", (cg.SUBMISSIONS / f"{stem}.cu").read_text(), re.M)
        if len(macros) != 1:
            continue   # a precision file: VARIANT_* and NAIVE_PRECISION, not one of the table's defects
        assert case_name in {names[i] for i in table[macros[0]].must_fail}, (stem, case_name, table[macros[0]])
        checked += 1
    assert checked >= 10


# ---------------------------------------------------------------------------------- compiling a sample
SAMPLE = (12, 21)   # n, seed: every base, correct and failing files


@pytest.fixture(scope="session")
def compiled_sample(tmp_path_factory):
    """A sample course, each file compiled alone with the Makefile's nvcc flags (make print-nvcc):
    {file: (returncode, stderr)}."""
    nvcc = shutil.which("nvcc")
    if not nvcc:
        pytest.skip("no nvcc on PATH")
    flags = subprocess.run(["make", "-s", "--no-print-directory", "print-nvcc", "ARCH=sm_90"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    out = tmp_path_factory.mktemp("course")
    manifest = cg.write_course(out / "c", *SAMPLE)

    def one(s):
        res = subprocess.run([*flags, "-c", str(out / "c" / s["file"]), "-o", str(out / (s["file"] + ".o"))],
                             cwd=ROOT, capture_output=True, text=True, timeout=600)
        return s["file"], (res.returncode, res.stderr)
    with ThreadPoolExecutor(max_workers=2) as pool:
        return manifest, dict(pool.map(one, manifest["submissions"]))


@pytest.mark.slow
def test_every_file_of_a_sample_course_compiles(compiled_sample):
    manifest, results = compiled_sample
    assert {s["base"] for s in manifest["submissions"]} == set(cg.BASES)
    assert {s["intent"] for s in manifest["submissions"]} == {"PASS", "FAIL"}
    failed = {f: err[-2000:] for f, (rc, err) in results.items() if rc != 0}
    assert not failed, failed
