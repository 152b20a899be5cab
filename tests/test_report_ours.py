"""RESULTS.md's sections on our binary's side of the PyTorch studies (harness/studies/ours_studies.py):
our step time against batch beside PyTorch eager's, with the computed comparison, and the fused
path's kernels by layer and phase beside PyTorch's; 'Not measured' without the files; a bad field
is one line and exit 2. Fixtures: tests/fixtures/studies/ours_*.json (SYNTHETIC: ours 10, 10,
20, 40 µs a step at 32-2048, GPU busy 80-95%, host 1 µs; PyTorch 1000-1200 µs)."""
from __future__ import annotations

import shutil

import pytest

from analysis import report
from tests.test_report_studies import FIXTURES, STUDIES, context, edit, render

OURS = ("ours_batch_steps.json", "ours_linear_kernels.json")


@pytest.fixture
def results(tmp_path):
    res = tmp_path / "results"
    shutil.copytree(FIXTURES / "results", res)
    for name in STUDIES + OURS:
        shutil.copy(FIXTURES / "studies" / name, res / name)
    return res


def section(text: str, head: str) -> str:
    return text.split(head, 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]


def test_our_rows_sit_beside_pytorchs_and_the_sentence_is_computed(results):
    ob = context(results)["ours_batch"]
    assert [r["path"] for r in ob["rows"]] == ["stationary", "stationary", "persistent",
                                               "persistent"]
    assert [r["vs_torch"] for r in ob["rows"]] == pytest.approx([0.01, 0.01, 20 / 1100, 40 / 1200])
    assert ob["time"] == 4.0 and ob["torch_time"] == pytest.approx(1.2)
    assert ob["kernel"] == pytest.approx(38 / 8) and ob["host_share_max"] == pytest.approx(0.08)
    assert not ob["host_bound"]
    text = section(render(results), "### Our binary at the same batch sizes")
    row = next(ln for ln in text.splitlines() if ln.startswith("| 2,048 |"))
    assert "| `persistent` | 64.00× | 40.00 | 4.00× |" in row and row.endswith("| 1200.0 | 0.0333× |")
    assert ("from batch 32 to 2,048 (64.00× the work) our step goes 4.00× (10.00 → 40.00 µs) and "
            "its summed kernel time 4.75×, against PyTorch eager's 1.20× (1000.0 → 1200.0 µs); "
            "ours is 0.01× PyTorch's step at batch 32 and 0.0333× at 2,048") in text
    assert "busy 80.0%–95.0% of the wall time (PyTorch's 2.5%–10.0%)" in text
    assert "our step is the GPU's time" in text
    assert "batch 512: `stationary` skipped: needs batch <= 128, got 512, `graph` 50.00 µs" in text


def test_a_host_bound_binary_is_said_so(results):
    edit(results / "ours_batch_steps.json",
         lambda d: [r.update(host_us_per_step=r["wall_us_per_step"] * 0.9) for r in d["batches"]])
    assert "our step, too, is the host's issue time" in render(results)


def test_without_pytorchs_file_our_rows_stand_alone(results):
    (results / "torch_batch_steps.json").unlink()
    ob = context(results)["ours_batch"]
    assert not ob["torch"] and ob["rows"][0]["torch_us"] is None
    text = section(render(results), "### Our binary at the same batch sizes")
    assert "against PyTorch" not in text and "our step goes 4.00×" in text


def test_our_linear_kernels_sit_beside_pytorchs(results):
    ol = context(results)["ours_linear"]
    grp = next(g for g in ol["groups"] if (g["batch"], g["layer"], g["phase"]) == (1024, "fc1", "forward"))
    assert grp["gpu_us"] == 20.0 and grp["torch_us"] == 3.0 and grp["torch_count"] == 1
    assert grp["vs_torch"] == pytest.approx(20 / 3)
    assert [k["name"] for k in grp["kernels"]] == ["k_fwd_hidden_bias_relu"]
    back = next(g for g in ol["groups"] if (g["batch"], g["layer"], g["phase"]) == (32, "fc1", "backward"))
    assert [k["name"] for k in back["kernels"]] == ["k_dW1", "k_colsum<(mlp::Col)0>"]
    text = section(render(results), "### Our kernels beside PyTorch's")
    assert ("| 32 | fc2 (256→10) | backward | 1 | 2.50 | `k_dW2`, `k_dH_relu_mask`, "
            "`k_colsum<(mlp::Col)1>` | 4.00 | 1.6× |") in text
    assert "| 1,024 | — | loss | `k_softmax_xent` | loss, dZ = softmax(Z) − onehot | 1 | 1.50 | 1.50 |" in text


def test_ours_absent_render_not_measured_lines(results):
    for name in OURS:
        (results / name).unlink()
    text = render(results)
    assert section(text, "### Our binary at the same batch sizes").strip().startswith(
        "Not measured: there is no `")
    assert section(text, "### Our kernels beside PyTorch's").strip().startswith(
        "Not measured: there is no `")


def test_a_bad_ours_field_is_one_line_exit_2(results, capsys):
    edit(results / "ours_batch_steps.json", lambda d: d["batches"][0].update(path=3))
    out = results.parent / "out"
    rc = report.main(["--results", str(results), "--out", str(out / "RESULTS.md")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "ours_batch_steps.json" in err and "'path'" in err
    assert not (out / "RESULTS.md").exists()
