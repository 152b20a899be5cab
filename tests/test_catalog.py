"""CPU: the binary's catalog of cases, stages and paths (`build/mlp_host catalog`, cuda/gate/catalog.cpp
and cuda/paths/registry.h) holds together, and the code that must follow it does: each case is in
exactly the stage it names, the table order is the stages' order, every stage `mlp_train --stage`
runs is dispatched in cuda/cli/mode_stage.cpp, every entry point a case names is submission.h's,
and every path has a host side that make_path builds. These are the mistakes docs/CONTRIBUTING.md's
recipes name."""
from __future__ import annotations

import re
import subprocess

from spec import catalog
from spec.files import BUILD_DIR, ROOT

CUDA = ROOT / "cuda"


def test_each_case_is_in_the_stage_it_names_and_the_table_follows_the_stages():
    cases, stages = catalog.cases(), catalog.stages()
    ids = [c["id"] for c in cases]
    assert len(set(ids)) == len(ids) and len({c["name"] for c in cases}) == len(cases)
    listed = [i for s in stages for i in s["cases"]]
    assert sorted(listed) == sorted(ids), "every case in exactly one stage"
    where = {i: s["name"] for s in stages for i in s["cases"]}
    assert {c["id"]: c["stage"] for c in cases} == where
    assert ids == listed, "the table order is the stages' order"
    assert all(c["checks"] for c in cases)


def test_every_binary_stage_is_dispatched_and_accepted():
    source = (CUDA / "cli" / "mode_stage.cpp").read_text()
    dispatched = set(re.findall(r'stage == "([\w-]+)"', source))
    names = [s["name"] for s in catalog.stages("mlp_train")]
    assert set(names) == dispatched, "cuda/cli/mode_stage.cpp's run_stage dispatches every mlp_train stage"
    res = subprocess.run([str(BUILD_DIR / "mlp_host"), "parse-args", "--stage", ",".join(names)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_entry_points_are_submission_h_s():
    header = (CUDA / "contract" / "submission.h").read_text()
    declared = set(re.findall(r"^int (mlp_\w+)\(", header, re.M))
    for c in catalog.cases():
        if c["entry_point"]:
            m = re.fullmatch(r"(mlp_\w+) \(stage \d+\)", c["entry_point"])
            assert m and m.group(1) in declared, c


def test_every_path_has_a_host_side_make_path_builds():
    source = (CUDA / "paths" / "stepwise_path.cu").read_text()
    make_path = source[source.index("make_path(const std::string& name)"):]
    for name in catalog.path_names():
        assert f'"{name}"' in make_path, f"make_path (cuda/paths/stepwise_path.cu) does not build {name!r}"


def test_the_lists_of_paths_kept_elsewhere_follow_the_registry(tmp_path):
    """build/mlp_fit's output (the one copy left: it instantiates each path's fit) and what reads
    the registry instead of a list: the paths `invoke profile` falls back to."""
    import json

    from harness import profiling
    fit = subprocess.run([str(BUILD_DIR / "mlp_fit"), "--cc", "90", "--sms", "132", "--smem-per-block", "232448",
                          "--smem-per-sm", "233472", "--threads-per-sm", "2048", "--clusters", "1"],
                         capture_output=True, text=True, check=True)
    assert [k for k in json.loads(fit.stdout) if k != "device_limits"] == list(catalog.path_names())
    assert profiling.default_paths(tmp_path) == list(catalog.default_path_names())
