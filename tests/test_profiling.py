"""harness.profiling with a fake `nsys` (a Python script on PATH): outputs appear only when every
step succeeded, stale files are removed first, and a missing nsys gives one line."""
from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from harness import profiling
from spec import catalog

FAKE_NSYS = """#!{python}
import json, os, sys
args = sys.argv[1:]
mode = os.environ.get("FAKE_NSYS_MODE", "ok")
with open(os.environ["FAKE_NSYS_LOG"], "a") as log:
    log.write(json.dumps({{"args": args,
        "register_only": os.environ.get("NSYS_NVTX_PROFILER_REGISTER_ONLY")}}) + "\\n")
def value(flag):
    return args[args.index(flag) + 1]
if args[0] == "profile":
    out = value("-o")
    with open(out + ".nsys-rep", "wb") as fh:
        fh.write(b"" if mode == "empty-rep" else b"fake report")
    if mode == "fail-profile":
        sys.exit(3)
    if mode == "no-rep":
        os.unlink(out + ".nsys-rep")
    # As nsys 2025.3.1 did on the H200: the report written, then exit 143 (128 + SIGTERM).
    sys.exit(int(os.environ.get("FAKE_NSYS_PROFILE_EXIT", "0")))
if args[0] == "stats":
    out = value("--output")
    reports = [args[i + 1] for i, a in enumerate(args) if a == "--report"]
    for n, report in enumerate(reports):
        if mode == "skip-nvtx" and report == "nvtx_sum":
            print("SKIPPED: does not contain NV Tools Extension (NVTX) data.")
            continue
        with open(f"{{out}}_{{report}}.csv", "w") as fh:
            fh.write("" if mode == "empty-csv" and report == "cuda_api_sum"
                     else f"Time (%),Total Time (ns),Name\\n100.0,{{n}},{{report}}\\n")
        if mode == "fail-stats":
            sys.exit(5)
    sys.exit(0)
sys.exit(64)
"""


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A fake nsys on PATH, a fake binary, an out dir; returns a namespace-like dict."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nsys = bin_dir / "nsys"
    nsys.write_text(FAKE_NSYS.format(python=sys.executable))
    nsys.chmod(nsys.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    binary = tmp_path / "mlp_train"
    binary.write_text("#!/bin/sh\nexit 0\n")
    out = tmp_path / "profile"
    out.mkdir()
    log = tmp_path / "nsys.log"
    monkeypatch.delenv("NSYS", raising=False)
    monkeypatch.setenv("PATH", str(bin_dir) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.setenv("FAKE_NSYS_LOG", str(log))
    monkeypatch.delenv("NSYS_NVTX_PROFILER_REGISTER_ONLY", raising=False)
    return {"nsys": nsys, "binary": binary, "out": out, "log": log, "tmp": tmp_path}


def run(env, path="fused", **kw):
    return profiling.profile_path(path, binary=str(env["binary"]), data_dir="data",
                                  out_dir=env["out"], **kw)


def plant_stale(out: Path, path="fused") -> list[Path]:
    files = [out / n for n in profiling.output_names(path)] + [out / f"{path}_gpukernsum.csv"]
    for f in files:
        f.write_text("stale from an older run\n")
    return files


def calls(env) -> list[dict]:
    return [json.loads(line) for line in env["log"].read_text().splitlines()]


def listing(out: Path) -> list[str]:
    return sorted(p.name for p in out.iterdir())


def test_success_moves_the_report_and_three_csvs(env, capsys):
    plant_stale(env["out"])
    other = env["out"] / "fused_tf32_cuda_gpu_kern_sum.csv"  # another path's file: kept
    other.write_text("keep\n")
    moved = run(env, extra_args=["--epochs", "1"])
    assert set(moved) == {"cuda_gpu_kern_sum", "nvtx_sum", "cuda_api_sum", "nsys-rep"}
    assert listing(env["out"]) == sorted(profiling.output_names("fused")
                                         + ["fused_tf32_cuda_gpu_kern_sum.csv"])
    assert (env["out"] / "fused.nsys-rep").read_bytes() == b"fake report"
    assert "cuda_api_sum" in (env["out"] / "fused_cuda_api_sum.csv").read_text()
    assert other.read_text() == "keep\n"
    profile_call, stats_call = calls(env)
    args = profile_call["args"]
    assert args[:9] == ["profile", "--trace", "cuda,nvtx", "--capture-range=nvtx",
                        "--nvtx-capture=profile-epoch", "--force-overwrite", "true", "-o",
                        args[8]]
    assert args[9:] == [str(env["binary"]), "--data", "data", "--profile", "fused",
                        "--epochs", "1"]
    assert profile_call["register_only"] == "0"
    assert stats_call["args"][:2] == ["stats", "--force-export=true"]
    assert [a for i, a in enumerate(stats_call["args"]) if stats_call["args"][i - 1] == "--report"] \
        == ["cuda_gpu_kern_sum", "nvtx_sum", "cuda_api_sum"]
    assert stats_call["args"][-4:-1] == ["csv", "--output", args[8]]
    printed = capsys.readouterr().out
    assert "+ " in printed and " profile --trace cuda,nvtx" in printed and " stats " in printed


@pytest.mark.parametrize("mode,step", [
    ("fail-profile", "nsys profile of path fused failed (exit status 3)"),
    ("no-rep", "wrote no report fused.nsys-rep"),
    ("empty-rep", "wrote no report fused.nsys-rep"),
    ("fail-stats", "nsys stats of path fused failed (exit status 5)"),
    ("skip-nvtx", "wrote no fused_nvtx_sum.csv"),
    ("empty-csv", "wrote no fused_cuda_api_sum.csv"),
])
def test_a_failure_leaves_the_last_outputs_as_they_were(env, monkeypatch, mode, step):
    """Issue 28: a capture that fails (no GPU, nsys refusing) destroys no evidence: the last
    run's files stay, byte for byte, and no temporary folder is left."""
    stale = plant_stale(env["out"])
    before = {f: f.read_bytes() for f in stale}
    monkeypatch.setenv("FAKE_NSYS_MODE", mode)
    with pytest.raises(SystemExit) as info:
        run(env)
    msg = str(info.value)
    assert step in msg and "\n" not in msg, msg
    assert {f: f.read_bytes() for f in stale} == before
    assert listing(env["out"]) == sorted(f.name for f in stale)


def test_missing_binary_exits(env):
    env["binary"].unlink()
    with pytest.raises(SystemExit, match="not found: build it first"):
        run(env)


def test_no_nsys_gives_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("NSYS", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SystemExit) as info:
        profiling.find_nsys()
    msg = str(info.value)
    assert "\n" not in msg
    assert "Nsight Systems" in msg and "NSYS=/path/to/nsys" in msg and "CUDA toolkit" in msg
    with pytest.raises(SystemExit):
        profiling.profile_path("fused", binary="x", out_dir=tmp_path / "p")


def test_nsys_env_var_wins(env, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    monkeypatch.setenv("NSYS", str(env["nsys"]))
    assert profiling.find_nsys() == str(env["nsys"])
    monkeypatch.setenv("NSYS", str(tmp_path / "no-such-nsys"))
    with pytest.raises(SystemExit) as info:
        profiling.find_nsys()
    assert "NSYS=" in str(info.value) and "\n" not in str(info.value)


def test_remove_stale_only_touches_this_paths_reports(tmp_path):
    keep = ["unfused_cuda_api_sum.csv", "fused_tf32_nvtx_sum.csv", "fused_notes.csv",
            "fusedx_cuda_api_sum.csv"]
    gone = ["fused.nsys-rep", "fused_cuda_api_sum.csv", "fused_nvtx_sum.csv",
            "fused_cuda_gpu_kern_sum.csv", "fused_cudaapisum.csv"]
    for n in keep + gone:
        (tmp_path / n).write_text("x")
    removed = profiling.remove_stale("fused", tmp_path)
    assert sorted(p.name for p in removed) == sorted(gone)
    assert listing(tmp_path) == sorted(keep)


def test_profile_all_runs_every_path_from_the_root_with_node_graph_trace(env):
    results = env["tmp"] / "results"
    results.mkdir()
    (results / "run.json").write_text(json.dumps({"paths": {"fused": {}, "graph": {}}}))
    assert profiling.default_paths(results) == ["fused", "graph"]
    assert profiling.default_paths(env["tmp"] / "nowhere") == list(catalog.default_path_names())
    done = profiling.profile_all(None, pytorch=False, binary=env["binary"],
                                 data_dir=env["tmp"] / "data", out_dir=env["out"],
                                 results_dir=results)
    assert set(done) == {"fused", "graph"}
    assert listing(env["out"]) == sorted(profiling.output_names("fused")
                                         + profiling.output_names("graph"))
    profile_calls = [c["args"] for c in calls(env) if c["args"][0] == "profile"]
    assert len(profile_calls) == 2
    for args in profile_calls:
        assert "--cuda-graph-trace=node" in args
        assert args.index("--cuda-graph-trace=node") < args.index("-o")
        binary_arg = args[args.index("-o") + 2]
        assert not os.path.isabs(binary_arg)  # relative to the repository root, where it runs
        assert (profiling.ROOT / binary_arg).resolve() == env["binary"].resolve()


def test_profile_exit_143_with_a_complete_report_counts_as_success(env, monkeypatch):
    # nsys ends the target with SIGTERM when the capture range closes and exits 143 itself,
    # the report written (results/logs/profile.log of the H200 evidence run).
    monkeypatch.setenv("FAKE_NSYS_PROFILE_EXIT", "143")
    moved = run(env)
    assert set(moved) == {"cuda_gpu_kern_sum", "nvtx_sum", "cuda_api_sum", "nsys-rep"}
    assert listing(env["out"]) == sorted(profiling.output_names("fused"))
    assert (env["out"] / "fused.nsys-rep").read_bytes() == b"fake report"
    assert [c["args"][0] for c in calls(env)] == ["profile", "stats"]


def test_profile_exit_1_fails_even_with_a_report(env, monkeypatch):
    stale = plant_stale(env["out"])
    monkeypatch.setenv("FAKE_NSYS_PROFILE_EXIT", "1")
    with pytest.raises(SystemExit) as info:
        run(env)
    msg = str(info.value)
    assert "nsys profile of path fused failed (exit status 1)" in msg and "\n" not in msg, msg
    assert all(f.read_text() == "stale from an older run\n" for f in stale)   # the last run's, kept
    assert listing(env["out"]) == sorted(f.name for f in stale)
    assert [c["args"][0] for c in calls(env)] == ["profile"]  # no stats after a failed profile
