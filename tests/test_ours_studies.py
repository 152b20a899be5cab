"""harness/studies/ours_studies.py without a GPU: the kernel-role table against the fused path's kernel
list in cuda/paths/stepwise_path.cu and a real nsys kernel summary (tests/fixtures/ours/, copied from the H200
profile of the fused path at batch 128), the GPU-busy union, the choice of the fastest path that
ran, and both studies end to end with a stand-in binary run and nsys capture: the JSON fits its
schema, the numbers are the CSVs' per step, and a failed capture writes nothing."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from harness.studies import ours_studies as ours
from spec.files import ROOT
from spec.schema import validate

FIX = Path(__file__).resolve().parent / "fixtures" / "ours"
STEPS = {32: 188, 128: 47, 512: 12, 2048: 3, 1024: 6}


def fake_run(batch, paths=ours.CANDIDATES):
    """run.json of --perf-only: stationary only up to batch 128, graph failing, each path's
    epoch = steps · (µs a step) with persistent 10 µs and fused 20 µs a step."""
    per_step = {"stationary": 5.0, "persistent": 10.0, "graph": 15.0, "fused": 20.0}
    recs = {}
    for p in paths:
        if p == "stationary" and batch > 128:
            recs[p] = {"skipped": f"needs batch <= 128, got {batch}", "config": None,
                       "median_ms": None}
        elif p == "graph":
            recs[p] = {"passed": False, "error": "synthetic failure", "median_ms": 1.0}
        else:
            recs[p] = {"passed": True, "median_ms": per_step[p] * STEPS[batch] / 1e3}
    return {"recipe": {"steps_per_epoch": STEPS[batch], "input_dim": 784, "hidden_dim": 256,
                       "output_dim": 10, "batch": batch},
            "gpu": {"name": "Test GPU"}, "paths": recs}


TRACE = "Start (ns),Duration (ns),CorrId,Name\n0,100,1,k_a\n50,100,2,k_b\n300,100,3,[CUDA memset]\n"


def fake_capture(path, batch, out_dir, trace=False):
    """The fixture's summaries (nvtx range 2,680,379 ns, kernels 2,110,000 ns over 470
    instances, 470 launches), whatever the path and batch; a 250 ns busy trace."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True)
    files = {}
    for kind in ("cuda_gpu_kern_sum", "cuda_api_sum", "nvtx_sum"):
        files[kind] = out_dir / f"{path}_{kind}.csv"
        shutil.copy(FIX / f"fused_b128_{kind}.csv", files[kind])
    files["nsys-rep"] = out_dir / f"{path}.nsys-rep"
    files["nsys-rep"].write_bytes(b"report " + path.encode())
    if trace:
        files["cuda_gpu_trace"] = out_dir / f"{path}_cuda_gpu_trace.csv"
        files["cuda_gpu_trace"].write_text(TRACE)
    return files


def kern_frame():
    from analysis.nsys_csv import read_kern_sum
    return read_kern_sum(FIX / "fused_b128_cuda_gpu_kern_sum.csv")


# ----------------------------------------------------------------------------- kernel roles

def test_every_fused_kernel_of_paths_cu_has_a_layer_or_a_named_role():
    text = (ROOT / "cuda" / "paths" / "stepwise_path.cu").read_text()
    block = text.split("// ---- fused:", 1)[1].split("void fused_epoch", 1)[0]
    names = re.findall(r"^//\s+\d+\s+(k_\w+(?:<\w+>)?)", block, flags=re.M)
    assert len(names) == 10
    for n in names:
        assert ours.role(n)[1] != "other", n
    layered = {n: ours.role(n)[:2] for n in names if ours.role(n)[0]}
    assert layered == {"k_fwd_hidden_bias_relu": ("fc1", "forward"),
                       "k_fwd_logits_bias": ("fc2", "forward"), "k_dW2": ("fc2", "backward"),
                       "k_colsum<db2>": ("fc2", "backward"), "k_dH_relu_mask": ("fc2", "backward"),
                       "k_dW1": ("fc1", "backward"), "k_colsum<db1>": ("fc1", "backward")}


def test_nsys_names_map_as_the_source_names_do():
    """nsys writes k_colsum<(mlp::Col)0> for Col::db1 (cuda/kernels/stepwise.cuh: enum class Col { db1, db2 })."""
    enum = re.search(r"enum class Col \{([^}]*)\}", (ROOT / "cuda" / "kernels" / "stepwise.cuh").read_text())
    assert [x.strip() for x in enum.group(1).split(",")] == ["db1", "db2"]
    layers, other = ours.linear_layers(kern_frame(), 47, {"fc1": [784, 256], "fc2": [256, 10]})
    got = {(L["layer"], p): sorted(k["name"].split("(")[0].removeprefix("void ")
                                   for k in L[p]["kernels"])
           for L in layers for p in ("forward", "backward")}
    assert got == {("fc1", "forward"): ["mlp::k_fwd_hidden_bias_relu"],
                   ("fc1", "backward"): ["mlp::k_colsum<", "mlp::k_dW1"],
                   ("fc2", "forward"): ["mlp::k_fwd_logits_bias"],
                   ("fc2", "backward"): ["mlp::k_colsum<", "mlp::k_dH_relu_mask", "mlp::k_dW2"]}
    assert {k["phase"] for k in other["kernels"]} == {"data", "loss", "update"}
    fc1b = next(L for L in layers if L["layer"] == "fc1")["backward"]
    assert fc1b["gpu_us_per_step"] == pytest.approx((443553 + 78464) / 1e3 / 47)
    dw1 = next(k for k in fc1b["kernels"] if "k_dW1" in k["name"])
    assert dw1["instances_per_step"] == 1.0 and dw1["mean_us"] == pytest.approx(9.4373)


# ----------------------------------------------------------------------------- pieces

def test_busy_is_the_union_of_intervals_in_any_unit():
    assert ours.busy_ns(TRACE) == 250.0
    assert ours.busy_ns('"Start (us)","Duration (us)","Name"\n1,2,a\n1.5,0.5,b\n10,1,c\n') == 3000.0
    with pytest.raises(ValueError, match="no header"):
        ours.busy_ns("a,b\n1,2\n")


def test_the_fastest_path_that_ran_is_chosen_and_the_others_say_why():
    c = ours.candidates(fake_run(512))
    assert [x["path"] for x in c] == list(ours.CANDIDATES)
    assert c[0]["us_per_step"] is None and c[0]["why"].startswith("skipped: needs batch <= 128")
    assert c[2]["why"] == "failed: synthetic failure"
    assert ours.fastest(c)["path"] == "persistent"
    assert ours.fastest(ours.candidates(fake_run(32)))["path"] == "stationary"
    assert ours.fastest(ours.candidates(fake_run(32), ("graph",))) is None


def test_epoch_stats_are_the_summaries_per_step():
    from analysis.nsys_csv import read_api_sum, read_nvtx_sum
    st = ours.epoch_stats(kern_frame(), read_api_sum(FIX / "fused_b128_cuda_api_sum.csv"),
                          read_nvtx_sum(FIX / "fused_b128_nvtx_sum.csv"), 47, 2_000_000.0)
    assert st["wall_us_per_step"] == pytest.approx(2680.379 / 47)
    assert st["host_us_per_step"] == pytest.approx((2108748 + 38313) / 1e3 / 47)  # no sync
    assert st["launches_per_step"] == 10.0 and st["kernels_per_step"] == 10.0
    assert st["gpu_busy_fraction"] == pytest.approx(2000.0 / 2680.379)


def test_batches_agree_with_the_torch_study():
    pytest.importorskip("torch")
    from harness.baseline import profiles as torch_profiles
    assert ours.STEP_BATCHES == torch_profiles.STEP_BATCHES
    assert ours.LINEAR_BATCHES == torch_profiles.LINEAR_BATCHES


# ----------------------------------------------------------------------------- end to end

def test_batch_study_writes_a_valid_file_and_the_profiles(tmp_path):
    res, prof = tmp_path / "results", tmp_path / "profile"
    doc = ours.batch_study(res, prof, runner=fake_run, capturer=fake_capture)
    on_disk = json.loads((res / "ours_batch_steps.json").read_text())
    validate(on_disk, "ours_batch_steps", "ours_batch_steps.json")
    assert on_disk == json.loads(json.dumps(doc))
    assert on_disk["commit"] and on_disk["date_utc"].endswith("Z")   # spec.provenance.stamp
    rows = on_disk["batches"]
    assert [r["path"] for r in rows] == ["stationary", "stationary", "persistent", "persistent"]
    assert [r["untraced_us_per_step"] for r in rows] == pytest.approx([5.0, 5.0, 10.0, 10.0])
    assert rows[-1]["work_vs_first"] == 64 and rows[-1]["untraced_time_vs_first"] == 2.0
    assert rows[0]["wall_us_per_step"] == pytest.approx(2680.379 / 188)
    assert rows[0]["gpu_busy_us_per_step"] == pytest.approx(0.25 / 188)
    assert (prof / "steps_b2048_persistent.nsys-rep").read_bytes() == b"report persistent"
    assert (prof / "steps_b32_stationary_cuda_gpu_kern_sum.csv").is_file()
    assert rows[0]["profile"].endswith("steps_b32_stationary.nsys-rep")


def test_a_failed_capture_writes_nothing(tmp_path):
    res, prof = tmp_path / "results", tmp_path / "profile"

    def capture(path, batch, out_dir, trace=False):
        if batch == 512:
            raise SystemExit("error: nsys profile of path persistent failed (exit status 3)")
        return fake_capture(path, batch, out_dir, trace)
    with pytest.raises(SystemExit, match="exit status 3"):
        ours.batch_study(res, prof, runner=fake_run, capturer=capture)
    assert not res.exists() and not prof.exists()


def test_no_path_running_is_one_line(tmp_path):
    def run(batch, paths=ours.CANDIDATES):
        doc = fake_run(batch, paths)
        for rec in doc["paths"].values():
            rec.update(passed=False, error="boom")
        return doc
    with pytest.raises(SystemExit, match=r"^error: no path ran at batch 32: stationary failed: boom"):
        ours.batch_study(tmp_path, tmp_path, runner=run, capturer=fake_capture)


def test_linear_study_writes_a_valid_file(tmp_path):
    res, prof = tmp_path / "results", tmp_path / "profile"
    ours.linear_study(res, prof, runner=fake_run, capturer=fake_capture)
    doc = json.loads((res / "ours_linear_kernels.json").read_text())
    validate(doc, "ours_linear_kernels", "ours_linear_kernels.json")
    assert doc["path"] == "fused" and [b["batch"] for b in doc["batches"]] == [32, 1024]
    b = doc["batches"][1]
    assert b["steps"] == 6 and [L["in_out"] for L in b["layers"]] == [[784, 256], [256, 10]]
    fc1f = b["layers"][0]["forward"]
    assert fc1f["gpu_us_per_step"] == pytest.approx(674.176 / 6)
    assert (prof / "linear_b1024_fused.nsys-rep").is_file()


def test_cli_rejects_an_unknown_study():
    from spec.files import InputError
    with pytest.raises(InputError) as exc:   # one line; `python -m` exits 2 with it (spec.files.run_main)
        ours.main(["--only", "memory"])
    assert "unknown study memory" in str(exc.value) and "\n" not in str(exc.value)
