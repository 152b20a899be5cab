"""tasks.py and the GPU-session drivers it orchestrates (harness/gpu_session.py, ncu_counters.py,
accumulate_ab.py), run on the CPU with stand-in commands."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tarfile

import pytest

from harness.studies import accumulate_ab

from harness import gpu_session

from harness.studies import ncu_counters
from spec.files import ROOT

import tasks


def _invoke(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "invoke", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)


def _invoke_here(*args) -> subprocess.CompletedProcess:
    """`invoke ARGS` as invoke's own Program runs it, in this process (0.01 s against 0.2 s a
    subprocess): for the checks that stop before any work; exit status and both streams captured."""
    import contextlib
    import io

    from invoke import Collection, Program
    out, err, code = io.StringIO(), io.StringIO(), 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            Program(namespace=Collection.from_module(tasks)).run(["invoke", *args], exit=True)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
    return subprocess.CompletedProcess(["invoke", *args], code, out.getvalue(), err.getvalue())


def test_pytest_arguments_are_quoted():
    cmd = tasks.pytest_command(k="a and b", files=["tests/test_x.py::t[1 2]"])
    assert shlex.split(cmd)[-3:] == ["-k", "a and b", "tests/test_x.py::t[1 2]"]


def test_invoke_test_passes_a_k_expression_with_spaces():
    res = _invoke("--dry", "test", "-k", "a and b")
    assert res.returncode == 0, res.stderr
    assert "-k 'a and b'" in res.stdout


@pytest.mark.parametrize("args", [("test", "--file=--version"), ("test", "--file", "tests/test_spec.py", "--file=-x"),
                                  ("build", "--submission=-x.cu"), ("gate", "--aggregate", "a,-b"),
                                  ("gate", "--dir=-x"), ("data", "--deb=-x.deb")])
def test_a_file_argument_starting_with_a_dash_is_one_line_and_status_2(args):
    """A task argument that names a file never reaches a program as an option (spec.validate.file_arg):
    `invoke test --file=--version` once ran pytest --version and exited 0."""
    res = _invoke(*args)
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot start with '-'" in lines[0], res.stderr
    assert "pytest" not in res.stdout


def test_invoke_list_shows_every_step_and_no_shell_driver_is_left():
    out = _invoke("--list").stdout
    for name in ("build", "run", "profile", "report", "data", "test", "sanitize", "reference",
                 "sweep", "ceilings", "all", "gpu.session", "gpu.phases", "gpu.ncu",
                 "gpu.accumulate-ab"):
        assert f"  {name} " in out, name
    assert not list((ROOT / "harness").glob("*.sh"))


def test_unknown_stage_is_one_line_and_status_2():
    res = _invoke("gpu.session", "--stages", "build,nope")
    assert res.returncode == 2
    assert res.stderr.strip() == ("error: --stages: unknown stage 'nope' (stages: "
                                  + ", ".join(gpu_session.STAGE_NAMES) + ")")


def test_parse_stages_default_and_order():
    assert gpu_session.parse_stages(None) == list(gpu_session.DEFAULT_STAGES)
    assert gpu_session.parse_stages("run, build") == ["run", "build"]
    names = [s.name for s in gpu_session.all_stages()]
    assert names[:len(gpu_session.DEFAULT_STAGES)] == list(gpu_session.DEFAULT_STAGES)
    assert gpu_session.all_stages("fused")[2].argv[-2:] == ("--paths", "fused")


def _py(code: str) -> tuple[str, ...]:
    return (sys.executable, "-c", code)


def test_session_limits_logs_and_packs(tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_session, "KILL_GRACE_S", 1)
    results, profile, out = tmp_path / "results", tmp_path / "profile", tmp_path / "out"
    for d in (results, profile, out):
        d.mkdir()
    (results / "run.json").write_text("{}")
    (results / "init_params.npy").write_bytes(b"x" * 100)
    (profile / "fused.sqlite").write_bytes(b"x")
    (profile / "fused_cuda_gpu_kern_sum.csv").write_text("a,b\n")
    stages = [gpu_session.Stage("build", 30, _py("import os; print('built', os.environ['MLP_COMMIT'])")),
              gpu_session.Stage("run", 1, _py("import time; print('slow'); time.sleep(60)")),
              gpu_session.Stage("phases", 30, _py("import sys; print('phases'); sys.exit(3)")),
              gpu_session.Stage("sweep", 30, _py("print('not selected')"))]
    rc = gpu_session.session(["phases", "run", "build"], commit="abc123", out=str(out),
                             results_dir=results, profile_dir=profile, stages=stages, root=tmp_path)
    assert rc == 1
    logs = results / "logs"
    header, *lines = (logs / "stages.txt").read_text().splitlines()
    assert re.fullmatch(r"# session \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ, MLP_COMMIT=abc123, stages phases,run,build",
                        header), header
    assert lines == ["build: exit 0", "run: exit 124 (time limit)", "phases: exit 3"]
    assert (logs / "build.log").read_text() == "built abc123\n"
    assert (logs / "run.log").read_text() == "slow\n"
    assert not (logs / "sweep.log").exists()
    assert not (profile / "fused.sqlite").exists()
    with tarfile.open(out / "evidence.tgz") as tar:
        names = set(tar.getnames())
    assert {"results/run.json", "results/logs/stages.txt", "profile/fused_cuda_gpu_kern_sum.csv"} <= names
    assert not any(n.endswith((".npy", ".sqlite")) for n in names)


FAKE_NCU = """#!{python}
import sys
a = sys.argv[1:]
if "--import" in a:
    rep = open(a[a.index("--import") + 1]).read()
    # the fused target's kernel replay measures nothing (every value nan), like a cluster launch
    print("page," + a[a.index("--page") + 1] + ("\\n\\"Duration\\",\\"nan\\"" if "nan" in rep else "\\n\\"Duration\\",\\"7\\""))
    sys.exit(0)
if "--replay-mode" not in a and "persistent" in a[-1]:
    print("kernel replay unsupported"); sys.exit(1)
nan = "--replay-mode" not in a and "fused" in a[-1]
open(a[a.index("-o") + 1] + ".ncu-rep", "w").write("rep " + a[-1] + (" nan" if nan else ""))
"""


def test_ncu_retries_with_application_replay_and_writes_all_pages(tmp_path):
    fake = tmp_path / "bin" / "ncu"
    fake.parent.mkdir()
    fake.write_text(FAKE_NCU.format(python=sys.executable))
    fake.chmod(0o755)
    assert ncu_counters.main(build_dir=tmp_path, data_dir=tmp_path, results_dir=tmp_path, ncu=str(fake)) == 0
    out = tmp_path / "ncu"
    for name in ("persistent", "fused", "stationary"):
        assert (out / f"{name}.ncu-rep").read_text() == f"rep {name}"
        assert (out / f"{name}_raw.csv").read_text() == 'page,raw\n"Duration","7"\n'
        assert (out / f"{name}_details.csv").read_text() == 'page,details\n"Duration","7"\n'
    # persistent: kernel replay failed; fused: kernel replay measured only nan; stationary: straight
    # to application replay (kernel replay of its cluster launch measures nothing)
    logs = {n: (out / f"{n}.log").read_text() for n in ("persistent", "fused", "stationary")}
    assert logs["persistent"].count("$ ") == 2 and "--replay-mode application" in logs["persistent"]
    assert logs["fused"].count("$ ") == 2 and "no numbers" in logs["fused"]
    assert logs["stationary"].count("$ ") == 1 and "--replay-mode application" in logs["stationary"]
    assert not list(out.glob(".*"))


FAKE_TRAIN = """#!{python}
import json, sys
a = sys.argv[1:]
out = a[a.index("--out") + 1]
open(out + "/run.json", "w").write(json.dumps({{"argv": a, "bin": {name!r}}}))
open(out + "/order.npy", "w").write("x")
"""


def test_accumulate_ab_alternates_the_two_builds(tmp_path, monkeypatch):
    build = tmp_path / "build"
    (build / "f32acc").mkdir(parents=True)
    (build / "build_info.json").write_text(json.dumps({"arch": "sm_90"}))
    for acc, path in accumulate_ab.binaries(build).items():
        path.write_text(FAKE_TRAIN.format(python=sys.executable, name=acc))
        path.chmod(0o755)
    made = []
    monkeypatch.setattr(accumulate_ab, "make_command",
                        lambda *a: made.append(a) or [sys.executable, "-c", "print('made')"])
    out = tmp_path / "ab"
    monkeypatch.setenv("MLP_COMMIT", "abc1234")
    assert accumulate_ab.main(out_dir=out, build_dir=build, data_dir=tmp_path) == 0
    assert made[0][0] == "sm_90" and made[0][-1] == "float"
    for rnd in (1, 2):
        for acc in ("double", "float"):
            doc = json.loads((out / f"{acc}_{rnd}" / "run.json").read_text())
            assert doc["bin"] == acc and doc["argv"][-4:] == ["--paths", "unfused,fused,graph",
                                                              "--reference", "shipped"]
            assert doc["commit"] == "abc1234"   # the binary dates its run.json; the commit is added
            assert not list((out / f"{acc}_{rnd}").glob("*.npy"))
    monkeypatch.setattr(accumulate_ab, "make_command", lambda *a: [sys.executable, "-c", "raise SystemExit(1)"])
    assert accumulate_ab.main(out_dir=out, build_dir=build, data_dir=tmp_path) == 2


def test_gate_help_shows_the_task_help_not_the_module_usage():
    # invoke hands the positional DIR the --help flag; the task must still show its own help
    out = subprocess.run([sys.executable, "-m", "invoke", "gate", "--help"], cwd=ROOT, capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0 and "Docstring:" in out.stdout and "Gate every submission" in out.stdout


# ----------------------------------------------------------------------------- options (issue 28 items 6-8 and their siblings)

def _evidence_hashes() -> dict:
    import hashlib
    roots = [ROOT / "results" / "sweep", ROOT / "results" / "plots", ROOT / "results" / "logs"]
    files = [p for r in roots if r.is_dir() for p in sorted(r.rglob("*")) if p.is_file()]
    files += [ROOT / n for n in ("SWEEP.md", "RESULTS.md", "PROFILES.md", "results/sweep.json", "results/run.json",
                                 "build/build_info.json", "build/config.stamp") if (ROOT / n).is_file()]
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.mark.parametrize("args, words", [
    (["run", "--limit", "abc"], "error: --limit 'abc'"),
    (["run", "--limit", "-5"], "error: --limit '-5'"),
    (["run", "--limit", "nan"], "error: --limit 'nan'"),
    (["run", "--limit", "inf"], "error: --limit 'inf'"),
    (["run", "--limit", "0"], "error: --limit '0'"),
    (["run", "--epochs", "0"], "error: --epochs '0'"),
    (["run", "--epochs", "1001"], "error: --epochs '1001'"),
    (["gate", "tests/submissions", "--jobs", "abc"], "error: --jobs 'abc'"),
    (["gate", "tests/submissions", "--jobs", "0"], "error: --jobs '0'"),
    (["gate", "tests/submissions", "--limit", "-5"], "error: --limit '-5'"),
    (["gate", "tests/submissions", "--gpus", "x"], "error: --gpus 'x'"),
    (["sweep", "--epochs", "abc"], "error: --epochs"),
    (["sweep", "--epochs", "1"], "epoch 0 is a warm-up"),
    (["sweep", "--widths", "abc"], "error: --widths 'abc'"),
    (["sweep", "--widths", "0"], "error: --widths '0'"),
    (["sweep", "--batches", "99999999"], "error: --batches '99999999'"),
    (["sweep", "--widths", "none", "--batches", "none"], "no sweep point to run"),
    (["sweep", "--precisions", "tf32"], "error: --precisions 'tf32': must include fp32"),
    (["sweep", "--precisions", "fp32,fp16"], "error: --precisions 'fp32,fp16'"),
    (["build", "--arch", "sm_10"], "error: --arch 'sm_10'"),
    (["build", "--arch", "sm_٩٠"], "error: --arch 'sm_٩٠'"),
    (["build", "--arch", "sm_900"], "error: --arch 'sm_900'"),
    (["profile", "--paths", "fused,../../elsewhere/evil"], "error: --paths: name '../../elsewhere/evil'"),
    (["sanitize", "--paths", "a b"], "error: --paths: name 'a b'"),
    (["sanitize", "--tools", "memcheck,bogus"], "expected some of memcheck"),
    (["run", "--paths", "$(id)"], "error: --paths: name '$(id)'"),
])
def test_a_bad_option_is_one_line_exit_2_and_nothing_changes(args, words):
    before = _evidence_hashes()
    res = _invoke_here(*args)
    assert res.returncode == 2, (res.returncode, res.stderr[-2000:])
    assert res.stderr.count("\n") == 1 and words in res.stderr, res.stderr
    assert _evidence_hashes() == before


def test_a_bad_option_through_the_invoke_program_is_one_line_exit_2():
    """The table above runs invoke's Program in this process; this is the same through `invoke`."""
    for args, words in [(["run", "--limit", "abc"], "error: --limit 'abc'"),
                        (["run", "--paths", "$(id)"], "error: --paths: name '$(id)'")]:
        res = _invoke(*args)
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and words in res.stderr, (res.returncode, res.stderr)


def test_failed_ncu_and_accumulate_runs_keep_the_last_good_files(tmp_path, monkeypatch):
    """Issue 28 (a failed run destroys no evidence): an ncu target that fails leaves its committed
    log and CSVs; an A/B run that stops before run.json (no GPU: exit 3) leaves its folder."""
    out = tmp_path / "ncu"
    out.mkdir()
    for name in ("fused.log", "fused_details.csv", "fused_raw.csv", "fused.ncu-rep"):
        (out / name).write_text("committed " + name)
    failing = tmp_path / "bin" / "ncu"
    failing.parent.mkdir()
    failing.write_text(f"#!{sys.executable}\nimport sys\nprint('==ERROR== no CUDA device'); sys.exit(1)\n")
    failing.chmod(0o755)
    fused = next(t for t in ncu_counters.TARGETS if t.name == "fused")
    assert ncu_counters.main(build_dir=tmp_path, data_dir=tmp_path, results_dir=tmp_path, ncu=str(failing),
                             targets=[fused]) == 1
    assert all((out / n).read_text() == "committed " + n for n in ("fused.log", "fused_details.csv", "fused_raw.csv"))
    assert "no CUDA device" in (tmp_path / "failed" / "ncu" / "fused.log").read_text()   # git-ignored
    assert sorted(p.name for p in out.iterdir()) == ["fused.log", "fused.ncu-rep", "fused_details.csv", "fused_raw.csv"]

    build = tmp_path / "build"
    (build / "f32acc").mkdir(parents=True)
    (build / "build_info.json").write_text(json.dumps({"arch": "sm_90"}))
    for path in accumulate_ab.binaries(build).values():
        path.write_text("#!/bin/sh\necho 'mlp_train: CUDA error: no CUDA device found' >&2\nexit 3\n")
        path.chmod(0o755)
    ab = tmp_path / "ab"
    (ab / "double_1").mkdir(parents=True)
    (ab / "double_1" / "run.json").write_text("committed")
    (ab / "build_float.log").write_text("committed build log")
    monkeypatch.setattr(accumulate_ab, "make_command", lambda *a: [sys.executable, "-c", "print('made')"])
    assert accumulate_ab.main(out_dir=ab, build_dir=build, data_dir=tmp_path, rounds=1) == 0
    assert (ab / "double_1" / "run.json").read_text() == "committed"
    assert "no CUDA device" in (ab / "failed" / "double_1" / "run.log").read_text()
    assert not (ab / "double_1.failed").exists() and not (ab / "double_1.new").exists()
    monkeypatch.setattr(accumulate_ab, "make_command", lambda *a: [sys.executable, "-c", "raise SystemExit(1)"])
    assert accumulate_ab.main(out_dir=ab, build_dir=build, data_dir=tmp_path, rounds=1) == 2
    assert (ab / "build_float.log").read_text().startswith(sys.executable)   # the last good build's log
