"""spec/: the layout, the statistics, the atomic writes and the provenance every other module relies on."""
from __future__ import annotations

import os
import re
import statistics

import numpy as np
import pytest

from spec import files, layout, provenance, stats
from spec.layout import RECIPE_SHAPE, Shape


def test_offsets_of_the_recipe_shape():
    o = layout.offsets(RECIPE_SHAPE)
    assert o == layout.Offsets(0, 784 * 256, 784 * 256 + 256, 784 * 256 + 256 + 2560, 203_530)
    assert layout.n_params(RECIPE_SHAPE) == 203_530 == o.total


def test_infer_shape_inverts_n_params():
    assert layout.infer_shape(203_530, 784, 10) == RECIPE_SHAPE
    assert layout.infer_shape(layout.n_params((784, 4096, 10)), 784, 10).hidden == 4096
    with pytest.raises(ValueError, match="do not fit"):
        layout.infer_shape(203_531, 784, 10)


def test_split_gives_views_in_order_and_join_inverts_it():
    s = Shape(3, 4, 2)
    flat = np.arange(layout.n_params(s), dtype=np.float32)
    t = layout.split(flat, s)
    assert t["W1"].shape == (3, 4) and t["b1"].shape == (4,)
    assert t["W2"].shape == (4, 2) and t["b2"].shape == (2,)
    assert t["W1"][1, 2] == 1 * 4 + 2            # row-major: W1[i, j] joins input i to unit j
    assert t["b1"][0] == 12 and t["W2"][0, 1] == 17 and t["b2"][-1] == flat[-1]
    t["b2"][0] = -1                               # views, not copies
    assert flat[-2] == -1
    back = layout.join(t["W1"], t["b1"], t["W2"], t["b2"])
    assert back.dtype == np.float32 and np.array_equal(back, flat)


def test_split_and_join_reject_wrong_shapes():
    with pytest.raises(ValueError, match=r"expected \(26,\)"):
        layout.split(np.zeros(25), Shape(3, 4, 2))
    with pytest.raises(ValueError, match="do not form"):
        layout.join(np.zeros((3, 4)), np.zeros(5), np.zeros((4, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="at least 1"):
        layout.offsets((0, 4, 2))


def test_workspace_floats_is_submission_h_formula():
    # batch*in + batch + 2 batch*hidden + 2 batch*out + total, for 784-256-10 at batch 128
    assert layout.workspace_floats(RECIPE_SHAPE, 128) == 100_352 + 128 + 65_536 + 2_560 + 203_530


def test_status_names_follow_the_enum_of_submission_h():
    text = (files.ROOT / "cuda" / "contract" / "submission.h").read_text()
    enum = re.search(r"enum MlpStatus \{(.*?)\};", text, re.S).group(1)
    values = [int(v) for v in re.findall(r"MLP_\w+\s*=\s*(\d+)", enum)]
    assert values == list(range(len(layout.STATUS_NAMES)))
    assert layout.STATUS_NAMES[0] == "ok" and layout.STATUS_NAMES[4] == "CUDA error"


def test_memory_ledger_of_the_recipe():
    led = layout.memory_ledger(RECIPE_SHAPE, 128, 6000, 10_000, epochs=20)
    p = 203_530 * 4
    assert led["parameters_bytes"] == led["gradients_bytes"] == p == 814_120
    assert led["optimizer_state_bytes"] == {"sgd": 0, "sgd_momentum": p, "adam": 2 * p}
    assert led["activations_bytes"] == 128 * (784 + 512 + 20) * 4 == 673_792   # X, H, dH, Z, dZ
    assert led["data_images_bytes"] == 16_000 * 784 * 4 == 50_176_000
    assert led["data_labels_bytes"] == 6000 * 4
    assert led["data_bytes"] == 50_200_000
    assert led["order_bytes"] == 20 * 6000 * 4
    assert led["total_sgd_momentum_bytes"] == 3 * p + led["activations_bytes"] + led["data_bytes"] + 480_000
    assert layout.memory_ledger(RECIPE_SHAPE, 128, 6000, 10_000)["order_bytes"] == 0


def test_summary_matches_main_cu_definitions():
    t = [3.0, 1.0, 2.0, 10.0]
    s = stats.summary(t)
    assert s["median"] == 2.5 and s["mean"] == 4.0 and s["min"] == 1.0 and s["max"] == 10.0
    assert s["cv_pct"] == pytest.approx(100 * statistics.stdev(t) / 4.0)   # n - 1, not n
    assert s["cv_pct"] != pytest.approx(100 * statistics.pstdev(t) / 4.0)
    assert stats.summary([5.0, 1.0, 3.0])["median"] == 3.0
    assert stats.summary([2.0])["cv_pct"] == 0.0
    with pytest.raises(ValueError):
        stats.summary([])


def test_last_n_mean():
    assert stats.last_n_mean([0, 0, 1, 2, 3, 4, 5]) == 3.0
    assert stats.last_n_mean([1, 2, 3], n=2) == 2.5
    with pytest.raises(ValueError, match="at least 5"):
        stats.last_n_mean([1, 2, 3])


def test_write_text_replaces_atomically_with_open_mode(tmp_path):
    p = tmp_path / "sub" / "a.txt"
    files.write_text(p, "one")
    files.write_text(p, "two")
    assert p.read_text() == "two"
    assert os.stat(p).st_mode & 0o777 == files._default_mode()
    assert [q.name for q in p.parent.iterdir()] == ["a.txt"]


def test_write_all_writes_every_file_or_none(tmp_path):
    a, b = tmp_path / "a.txt", tmp_path / "b.bin"
    files.write_all({a: "A", b: b"B"})
    assert a.read_text() == "A" and b.read_bytes() == b"B"
    blocked = tmp_path / "file"
    blocked.write_text("x")
    with pytest.raises(files.InputError, match="file: not a folder"):   # the second target's folder is a file
        files.write_all({a: "new A", blocked / "c.txt": "C"})
    assert a.read_text() == "A"                   # the first target untouched
    assert sorted(q.name for q in tmp_path.iterdir()) == ["a.txt", "b.bin", "file"]


def test_load_toml_names_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("a = = 1\n")
    with pytest.raises(SystemExit, match="bad.toml: malformed TOML"):
        files.load_toml(bad)
    with pytest.raises(SystemExit, match="file not found"):
        files.load_toml(tmp_path / "none.toml")
    assert files.load_toml(files.RECIPE_PATH)["hidden_dim"] == 256


def test_git_commit_prefers_mlp_commit(monkeypatch):
    monkeypatch.setenv("MLP_COMMIT", "abc1234")
    assert provenance.git_commit() == "abc1234"
    monkeypatch.delenv("MLP_COMMIT")
    assert re.fullmatch(r"[0-9a-f]{4,40}(-dirty)?|unknown", provenance.git_commit())



def test_stamp_is_a_commit_and_a_utc_date(monkeypatch):
    monkeypatch.setenv("MLP_COMMIT", "abc1234")
    st = provenance.stamp()
    assert st["commit"] == "abc1234"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", st["date_utc"])


def _git(repo, *args):
    import subprocess
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@pytest.fixture
def history(tmp_path):
    """A repository: a -> b -> c on main, and d on a side branch from a."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    ids = {}
    for name in ("a", "b", "c"):
        _git(repo, "commit", "-q", "--allow-empty", "-m", name)
        ids[name] = _git(repo, "rev-parse", "--short", "HEAD")
    _git(repo, "checkout", "-q", "-b", "side", ids["a"])
    _git(repo, "commit", "-q", "--allow-empty", "-m", "d")
    ids["d"] = _git(repo, "rev-parse", "HEAD")
    return repo, ids


def test_age_counts_commits_between_two_recorded_commits(history):
    repo, ids = history
    assert provenance.age(ids["a"], ids["c"], repo) == {"state": "older", "commits": 2}
    assert provenance.age(ids["b"] + "-dirty", ids["c"], repo) == {"state": "older", "commits": 1}
    assert provenance.age(ids["c"], ids["a"], repo) == {"state": "newer", "commits": 2}
    assert provenance.age(ids["c"][:7], ids["c"], repo)["state"] == "same"
    assert provenance.age(ids["d"], ids["c"], repo) == {"state": "apart", "commits": 2, "ahead": 1}
    assert provenance.age("0123abc", ids["c"], repo)["state"] == "unknown"
    assert provenance.age(ids["a"], "0123abc", repo)["state"] == "unknown"
    assert provenance.age("--all", ids["c"], repo)["state"] == "unknown"
    for none in (None, "", "unknown"):
        assert provenance.age(none, ids["c"], repo) == {"state": "none", "commits": None}
    assert not provenance.is_shallow(repo)


def test_spec_imports_neither_harness_nor_analysis():
    for f in (files.ROOT / "spec").glob("*.py"):
        src = f.read_text()
        assert not re.search(r"^\s*(from|import)\s+(harness|analysis)\b", src, re.M), f.name


# ----------------------------------------------------------------------------- input files and outputs (issue 28)

@pytest.mark.parametrize("make, what", [
    (lambda p: p.mkdir(), "a folder"),
    (lambda p: os.mkfifo(p), "a FIFO, not a file"),
    (lambda p: p.symlink_to("/dev/zero"), "a character device, not a file"),
])
def test_read_input_refuses_what_is_not_a_regular_file_without_blocking(tmp_path, make, what):
    from spec.files import InputError, read_input
    p = tmp_path / "in.json"
    make(p)
    with pytest.raises(InputError) as exc:
        read_input(p)
    assert str(exc.value).startswith(f"error: {p}: ") and what in str(exc.value)


def test_read_input_reads_a_file_and_bounds_its_size(tmp_path):
    from spec.files import InputError, read_input
    p = tmp_path / "in.json"
    p.write_bytes(b"{}" * 10)
    assert read_input(p) == b"{}" * 10
    with pytest.raises(InputError, match="more than an input may hold"):
        read_input(p, max_bytes=5)


@pytest.mark.parametrize("block", ["folder_target", "file_parent", "file_grandparent"])
def test_write_all_finds_what_is_in_the_way_before_anything_is_written(tmp_path, block):
    from spec.files import InputError, write_all
    first, second = tmp_path / "A.md", tmp_path / "plots" / "sub" / "b.png"
    first.write_text("old")
    if block == "folder_target":
        second.mkdir(parents=True)
    elif block == "file_parent":
        (tmp_path / "plots").mkdir()
        (tmp_path / "plots" / "sub").write_text("a file")
    else:
        (tmp_path / "plots").write_text("a file")
    before = sorted((p, p.is_file() and p.read_bytes()) for p in tmp_path.rglob("*"))
    with pytest.raises(InputError) as exc:
        write_all({first: "new", second: b"png"})
    assert "\n" not in str(exc.value) and str(exc.value).startswith("error: ")
    assert sorted((p, p.is_file() and p.read_bytes()) for p in tmp_path.rglob("*")) == before


def test_the_precision_names_are_the_cpp_sides():
    """spec/torch_variants.PRECISIONS (the Python owner) against cuda/common/precision.h's
    precision_name (the C++ owner, which run.json's paths.*.precision comes from), in enum order.
    build/mlp_host prints no precision, so the header is read: its switch's `case Precision::X:
    return "name";` lines, between `precision_name(` and the function's closing brace."""
    from spec.files import ROOT
    from spec.torch_variants import PRECISIONS, precision_of_path
    header = (ROOT / "cuda" / "common" / "precision.h").read_text()
    enum = re.search(r"enum class Precision \{([^}]*)\}", header).group(1)
    order = re.findall(r"\b([A-Z][A-Z0-9]*)\s*=\s*(\d+)", enum)
    body = re.search(r"precision_name\(Precision p\)\s*\{(.*?)\n\}", header, re.S).group(1)
    names = dict(re.findall(r'case Precision::(\w+):\s*return "(\w+)";', body))
    assert [e for e, _ in sorted(order, key=lambda x: int(x[1]))] == list(names), (order, names)
    assert list(names.values()) == list(PRECISIONS)
    # a run.json path without "precision" (before b45c1cf) is fp32; a name of neither side, none
    assert precision_of_path({}) == "fp32" == precision_of_path({"precision": "fp32"})
    assert precision_of_path({"precision": "bf16"}) == "bf16"
    assert precision_of_path({"precision": "fp16"}) is None
