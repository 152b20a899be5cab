"""Issue 38's GEMM benchmark on the CPU: build/gemm_bench's argument checks (all made before a GPU is
touched), the shape list's derivation from the sweep's and transformer's configuration, the harness
(harness/studies/gemm_bench.py) with a fake binary and a fake cuBLAS side (tests/fakes/gemm_side.py),
the cuBLAS side's loops through a host stand-in for torch.cuda, the schemas, and the BF16 ceiling.
The GPU tests at the end run the real binary (skipped without a device). Every number the fakes
write is invented; no test here has run on a GPU yet."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.studies import gemm_bench, gemm_shapes, gemm_torch, sweep
from spec import schema
from spec.files import ROOT, InputError
from spec.recipe import load_recipe
from spec.transformer import TIME_BATCHES, load_config, shape

FAKE = ROOT / "tests" / "fakes" / "gemm_side.py"
SOURCE = ROOT / "cuda" / "tools" / "gemm_bench.cu"


def run_bin(exe, *args):
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=60)


# ----------------------------------------------------------------------------- the binary's arguments

@pytest.mark.parametrize("args, words", [
    ([], "--shapes is required"),
    (["--shapes", "12x3", "--out", "X"], "12x3 is not MxNxK"),
    (["--shapes", "0x1x1", "--out", "X"], "M: 0 is out of range [1, 1048576]"),
    (["--shapes", "1x-1x1", "--out", "X"], "N: -1 is out of range"),
    (["--shapes", "1x1x1048577", "--out", "X"], "K: 1048577 is out of range"),
    (["--shapes", "1x1x1,1x1x1", "--out", "X"], "1x1x1 given twice"),
    (["--shapes", "65536x65536x1", "--out", "X"], "more than 2^31 - 1 elements"),
    (["--shapes", "1x1x1", "--precisions", "fp16", "--out", "X"], "fp16 is not fp32, tf32 or bf16"),
    (["--shapes", "1x1x1", "--precisions", "bf16,bf16", "--out", "X"], "bf16 given twice"),
    (["--shapes", "1x1x1", "--layout", "tt", "--out", "X"], "tt is not nn, tn or nt"),
    (["--shapes", "1x1x1", "--repeats", "2", "--out", "X"], "--repeats: 2 is out of range [3, 10000]"),
    (["--shapes", "1x1x1", "--warmup", "x", "--out", "X"], "--warmup: 'x' is not an integer"),
    (["--shapes", "1x1x1"], "--out FILE.json is required"),
    (["--shapes", "1x1x1", "--out", "/nonexistent/g.json"], "its folder /nonexistent does not exist"),
    (["--shapes", "1x1x1", "--bogus", "3", "--out", "X"], "unknown argument --bogus"),
    (["--shapes"], "--shapes: missing its value"),
])
def test_bad_arguments_are_one_line_and_exit_2(built, tmp_path, args, words):
    args = [str(tmp_path / "g.json") if a == "X" else a for a in args]
    res = run_bin(built("gemm_bench"), *args)
    assert res.returncode == 2, (res.returncode, res.stderr)
    assert res.stderr.startswith("gemm_bench: error: ") and res.stderr.count("\n") == 1, res.stderr
    assert words in res.stderr and res.stdout == ""
    assert not list(tmp_path.iterdir())


def test_out_that_is_a_folder_is_refused(built, tmp_path):
    res = run_bin(built("gemm_bench"), "--shapes", "1x1x1", "--out", tmp_path)
    assert res.returncode == 2 and "not a regular file" in res.stderr


def test_parse_only_prints_the_request_and_accepts_the_whole_shape_list(built):
    rows = gemm_shapes.shapes()
    for layout, group in gemm_shapes.by_layout(rows).items():
        res = run_bin(built("gemm_bench"), "--shapes", gemm_shapes.shapes_arg(group), "--layout", layout,
                      "--precisions", "bf16,fp32", "--repeats", "7", "--parse-only")
        assert res.returncode == 0, res.stderr
        got = json.loads(res.stdout)
        assert got["shapes"] == [[r["m"], r["n"], r["k"]] for r in group]
        assert got == {**got, "layout": layout, "precisions": ["bf16", "fp32"], "repeats": 7, "warmup": 5,
                       "seed": 20260829, "out": None}


def test_a_valid_request_without_a_gpu_is_exit_3_and_writes_nothing(built, tmp_path):
    from conftest import have_gpu
    if have_gpu():
        pytest.skip("a CUDA device is present")
    res = run_bin(built("gemm_bench"), "--shapes", "64x64x64", "--out", tmp_path / "g.json")
    assert res.returncode == 3 and res.stderr == "gemm_bench: error: no CUDA device\n"
    assert not list(tmp_path.iterdir())


# ----------------------------------------------------------------------------- the engine's plans

def plans(exe, shapes, layout, sms=132):
    res = run_bin(exe, "--shapes", shapes, "--layout", layout, "--precisions", "tf32,bf16", "--plans", sms)
    assert res.returncode == 0, res.stderr
    return [json.loads(line) for line in res.stdout.splitlines()]


def test_plans_split_k_only_where_the_tiles_leave_sms_idle(built):
    """A batch-128 forward (32 or fewer output tiles for 132 SMs) splits K; the large squares and the
    4,096 x 2,048 point's forward, whose tiles fill the SMs, do not; one SM never splits."""
    exe = built("gemm_bench")
    by = {(p["M"], p["N"], p["K"], p["precision"]): p
          for p in plans(exe, "128x4096x784,128x256x784,4096x4096x4096,2048x4096x784,8192x8192x8192", "nn")}
    for prec in ("tf32", "bf16"):
        assert by[(128, 4096, 784, prec)]["splits"] > 1 and by[(128, 256, 784, prec)]["splits"] > 1
        for big in ((4096, 4096, 4096), (2048, 4096, 784), (8192, 8192, 8192)):
            assert by[(*big, prec)]["splits"] == 1 and by[(*big, prec)]["bn"] == 256, by[(*big, prec)]
    assert all(p["splits"] == 1 for p in plans(exe, "128x4096x784,128x256x784", "nn", sms=1))


@pytest.mark.parametrize("layout", ["nn", "tn", "nt"])
def test_every_plan_covers_k_without_an_empty_split_and_its_workspace_parts_do_not_overlap(built, layout):
    shapes = "128x4096x784,784x4096x128,128x256x784,200x136x1000,37x19x129,300x200x136,784x256x2048,4096x4096x4096"
    for p in plans(built("gemm_bench"), shapes, layout):
        es = 2 if p["precision"] == "bf16" else 4
        k_steps = -(-p["K"] // (128 // es))
        s, sps = p["splits"], p["steps_per_split"]
        assert 1 <= s <= 16 and s * sps >= k_steps and (s - 1) * sps < k_steps, p
        assert p["tiles"] == -(-p["M"] // 128) * -(-p["N"] // p["bn"]), p
        ld = -(-p["K"] // 8) * 8   # a copy's row pitch
        a_bytes = p["M"] * ld * es if p["transpose_a"] else 0
        b_end = p["b_offset"] + (p["N"] * ld * es if p["transpose_b"] else 0)
        assert p["b_offset"] >= a_bytes and b_end <= p["workspace_bytes"], p
        if s > 1:
            assert p["partials_offset"] >= b_end, p
            assert p["tickets_offset"] >= p["partials_offset"] + s * p["tiles"] * 128 * p["bn"] * 4, p
            assert p["workspace_bytes"] >= p["tickets_offset"] + 4 * p["tiles"], p
        for key in ("b_offset", "partials_offset", "tickets_offset", "workspace_bytes"):
            assert p[key] % 256 == 0, (key, p)
        # tf32 wgmma reads K-major operands only: every MN-major one is copied first
        if p["precision"] == "tf32":
            assert p["transpose_a"] == (layout == "tn") and p["transpose_b"] == (layout in ("nn", "tn")), p
        assert ("split-K %d" % s in p["describe"]) == (s > 1), p


def test_plans_is_checked_like_every_flag(built):
    res = run_bin(built("gemm_bench"), "--shapes", "8x8x8", "--plans", "0")
    assert res.returncode == 2 and "--plans: 0 is out of range [1, 1024]" in res.stderr


def test_the_two_sides_share_their_bounds_and_rotation_cap():
    src = SOURCE.read_text()
    assert int(re.search(r"kMaxSets = (\d+)", src).group(1)) == gemm_torch.MAX_SETS
    assert "kMaxDim = 1 << 20;" in src and gemm_shapes.MAX_DIM == 1 << 20
    assert "kMaxOperand = (1LL << 31) - 1;" in src and gemm_shapes.MAX_OPERAND == 2 ** 31 - 1
    assert gemm_torch.n_sets(10, 50) == 10 and gemm_torch.n_sets(1, 10 ** 9) == 64
    assert gemm_torch.n_sets(100, 50) == 1 and gemm_torch.n_sets(99, 50) == 2


# ----------------------------------------------------------------------------- the shape list

def test_shapes_of_a_small_configuration():
    recipe = {"input_dim": 784, "output_dim": 10, "train_size": 300}
    vit = dict(load_config(), d_model=128, mlp_dim=256)
    rows = gemm_shapes.shapes(points=[{"hidden": 64, "batch": 128}, {"hidden": 64, "batch": 100}],
                              recipe=recipe, vit_config=vit, vit_batches=(2,), large=((8, 8, 8),))
    got = {(r["m"], r["n"], r["k"], r["layout"]): r["sources"] for r in rows}
    assert got[(128, 64, 784, "nn")] == ["sweep h64_b128 forward"]
    assert got[(44, 64, 784, "nn")] == ["sweep h64_b128 tail 44 forward"]     # 300 = 2 x 128 + 44
    assert got[(784, 64, 128, "tn")] == ["sweep h64_b128 dW1"]
    assert got[(128, 64, 10, "nt")] == ["sweep h64_b128 dH"]
    assert got[(64, 10, 100, "tn")] == ["sweep h64_b100 dW2"]                 # 300 = 3 x 100: no tail
    assert not any("h64_b100 tail" in s for ss in got.values() for s in ss)
    tokens = shape(vit).tokens
    assert got[(2 * tokens, 256, 128, "nn")] == ["transformer b2 fc1"]
    assert got[(2 * tokens, 128, 256, "nn")] == ["transformer b2 fc2"]
    assert got[(2, 10, 128, "nn")] == ["transformer b2 head"]
    assert got[(8, 8, 8, "nn")] == ["large 8x8x8"]
    assert len(rows) == len(got) == 2 * 5 + 5 + 6 + 1


def test_the_default_list_covers_every_sweep_point_and_transformer_batch():
    rows = gemm_shapes.shapes()
    keys = [(r["m"], r["n"], r["k"], r["layout"]) for r in rows]
    assert len(keys) == len(set(keys))
    recipe, s = load_recipe(), shape(load_config())
    for p in sweep.sweep_points():
        h, b = p["hidden"], p["batch"]
        for m, n, k, lay, _ in gemm_shapes.mlp_gemms(h, b, recipe["input_dim"], recipe["output_dim"]):
            assert (m, n, k, lay) in keys
        assert (b, h, recipe["input_dim"], "nn") in keys and (recipe["input_dim"], h, b, "tn") in keys
    for b in TIME_BATCHES:
        for m, n, k, lay, _ in gemm_shapes.transformer_gemms(s, b):
            assert (m, n, k, lay) in keys
    assert (4096, 4096, 4096, "nn") in keys and (8192, 8192, 8192, "nn") in keys
    assert (2048, 4096, 784, "nn") in keys     # PERFLOG's 4,096 x 2,048 forward
    both = next(r for r in rows if (r["m"], r["n"], r["k"]) == (128, 256, 784))
    assert "sweep h256_b128 forward" in both["sources"]


def test_shape_arguments_round_trip_and_bad_ones_are_one_line():
    rows = gemm_shapes.shapes()
    for group in gemm_shapes.by_layout(rows).values():
        back = gemm_shapes.parse_shapes(gemm_shapes.shapes_arg(group))
        assert [(r["m"], r["n"], r["k"]) for r in back] == [(r["m"], r["n"], r["k"]) for r in group]
    for bad, words in (("1x2", "is not MxNxK"), ("1x1x1,1x1x1", "given twice"), ("1x0x1", "N '0'"),
                       ("65536x65536x1", "more than 2^31 - 1")):
        with pytest.raises(InputError, match=re.escape(words)):
            gemm_shapes.parse_shapes(bad)
    with pytest.raises(InputError, match="MxNxK:LAYOUT"):
        gemm_shapes.parse_shapes("1x1x1:tt", layouts=True)


# ----------------------------------------------------------------------------- the harness, faked

@pytest.fixture
def fakes(tmp_path, monkeypatch):
    """GEMM_BENCH and GEMM_TORCH pointed at the fake (under the names that pick its side), a
    synthetic ceilings.json (round invented rates) and the call log."""
    (tmp_path / "gemm_bench").symlink_to(FAKE)
    (tmp_path / "gemm_torch_fake.py").symlink_to(FAKE)
    monkeypatch.setenv("GEMM_BENCH", str(tmp_path / "gemm_bench"))
    monkeypatch.setenv("GEMM_TORCH", str(tmp_path / "gemm_torch_fake.py"))
    monkeypatch.setenv("FAKE_GEMM_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.delenv("FAKE_GEMM", raising=False)
    ceilings = {"schema": 1, "commit": "abc1234", "date_utc": "2026-12-01T00:00:00Z", "gpu": "FAKE GPU",
                "copy": {"gb_per_s": 4000.0}, "fp32_matmul": {"tflops": 50.0}, "tf32_matmul": {"tflops": 400.0},
                "bf16_matmul": {"tflops": 1000.0}}
    (tmp_path / "ceilings.json").write_text(json.dumps(ceilings))
    return tmp_path


SMALL = "64x64x64:nn,128x32x16:tn,32x64x8:nt"


def bench_main(tmp, *extra):
    return gemm_bench.main(["--shapes", SMALL, "--out", str(tmp / "r" / "gemm.json"), "--ceilings",
                            str(tmp / "ceilings.json"), "--repeats", "5", *extra])


def test_the_harness_joins_both_sides_into_gemm_json(fakes, capsys):
    assert bench_main(fakes) == 0
    doc = json.loads((fakes / "r" / "gemm.json").read_text())
    schema.validate(doc, "gemm", "gemm.json")
    calls = [json.loads(ln) for ln in (fakes / "calls.jsonl").read_text().splitlines()]
    assert [(c["side"], c["argv"][c["argv"].index("--layout") + 1]) for c in calls] == [
        ("ours", "nn"), ("ours", "tn"), ("ours", "nt"), ("cublas", "nn"), ("cublas", "tn"), ("cublas", "nt")]
    assert all(c["argv"][c["argv"].index("--repeats") + 1] == "5" for c in calls)
    assert len(doc["rows"]) == 3 * 3 and doc["passed"] is True and doc["gpu"] == "FAKE GPU"
    assert re.fullmatch(r"[0-9a-f]{7,}(-dirty)?|unknown", doc["commit"]) and doc["date_utc"].endswith("Z")
    nn_bf16 = next(r for r in doc["rows"] if r["layout"] == "nn" and r["precision"] == "bf16")
    assert nn_bf16["ours_tflops"] == 100 and nn_bf16["cublas_tflops"] == 500
    assert nn_bf16["pct_of_cublas"] == pytest.approx(20.0) and nn_bf16["ours_pct_of_ceiling"] == pytest.approx(10.0)
    assert nn_bf16["cublas_pct_of_ceiling"] == pytest.approx(50.0) and nn_bf16["ceiling_tflops"] == 1000.0
    fp32 = next(r for r in doc["rows"] if r["layout"] == "tn" and r["precision"] == "fp32")
    assert fp32["ours_pct_of_ceiling"] == pytest.approx(200.0) and fp32["ours"]["plan"] == "fake plan"
    nt = [r for r in doc["rows"] if r["layout"] == "nt"]
    assert all(r["ours"]["status"] == "unsupported" and r["ours_tflops"] is None and r["pct_of_cublas"] is None
               and r["cublas_tflops"] == 500 for r in nt)
    assert sorted(p.name for p in (fakes / "r" / "gemm").iterdir()) == sorted(
        f"{s}_{lay}.log" for s in ("ours", "cublas") for lay in ("nn", "tn", "nt"))
    assert "% cuBLAS" in capsys.readouterr().out


def test_nothing_of_ours_measured_writes_only_the_logs(fakes, monkeypatch, capsys):
    monkeypatch.setenv("FAKE_GEMM", json.dumps({"ours": "nodevice"}))
    assert bench_main(fakes) == 3
    assert not (fakes / "r" / "gemm.json").exists() and not (fakes / "r" / "gemm").exists()
    log = (fakes / "r" / "gemm.failed" / "ours_nn.log").read_text()
    assert log.startswith("$ ") and "no CUDA device" in log
    assert "no GEMM of ours was measured" in capsys.readouterr().err


def test_a_failed_cublas_side_is_recorded_and_exit_1(fakes, monkeypatch):
    monkeypatch.setenv("FAKE_GEMM", json.dumps({"cublas": "garbage"}))
    assert bench_main(fakes, "--precisions", "fp32") == 1
    doc = json.loads((fakes / "r" / "gemm.json").read_text())
    assert doc["passed"] is False and all(r["cublas"] is None and r["pct_of_cublas"] is None for r in doc["rows"])
    bad = [s for s in doc["sides"] if s["side"] == "cublas"]
    assert len(bad) == 3 and all("not JSON" in s["error"] and s["exit_status"] == 0 for s in bad)


def test_a_failed_check_of_ours_counts_no_rate_and_exit_1(fakes, monkeypatch):
    monkeypatch.setenv("FAKE_GEMM", json.dumps({"ours": "checkfail"}))
    assert bench_main(fakes) == 1
    doc = json.loads((fakes / "r" / "gemm.json").read_text())
    bf16 = [r for r in doc["rows"] if r["precision"] == "bf16" and r["layout"] != "nt"]
    assert all(r["check_passed"] is False and r["ours_tflops"] is None and r["ours"]["status"] == "failed"
               for r in bf16)
    assert next(s for s in doc["sides"] if s["side"] == "ours" and s["layout"] == "nn")["exit_status"] == 1


def test_ceilings_without_bf16_or_absent_are_notes(fakes):
    c = json.loads((fakes / "ceilings.json").read_text())
    del c["bf16_matmul"]
    (fakes / "ceilings.json").write_text(json.dumps(c))
    assert bench_main(fakes, "--no-cublas") == 0
    doc = json.loads((fakes / "r" / "gemm.json").read_text())
    assert any("no bf16_matmul" in n for n in doc["notes"]) and doc["config"]["cublas"] is False
    assert all(r["ours_pct_of_ceiling"] is None for r in doc["rows"] if r["precision"] == "bf16")
    (fakes / "ceilings.json").unlink()
    assert bench_main(fakes, "--no-cublas") == 0
    doc = json.loads((fakes / "r" / "gemm.json").read_text())
    assert doc["ceilings"] is None and any("invoke ceilings" in n for n in doc["notes"])


def test_a_side_past_its_time_limit_is_recorded(fakes, monkeypatch):
    monkeypatch.setenv("FAKE_GEMM", json.dumps({"cublas": "hang"}))
    assert bench_main(fakes, "--layouts", "nn", "--timeout", "1") == 1
    doc = json.loads((fakes / "r" / "gemm.json").read_text())
    side = next(s for s in doc["sides"] if s["side"] == "cublas")
    assert side["exit_status"] is None and "time limit of 1 s" in side["error"]


@pytest.mark.parametrize("args, words", [
    (["--shapes", "1x1x1:tt"], "MxNxK:LAYOUT"), (["--layouts", "nn,xx"], "--layouts 'nn,xx'"),
    (["--precisions", "fp8"], "'fp8'"), (["--repeats", "1"], "--repeats '1'"), (["--timeout", "nan"], "'nan'"),
    (["--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_harness_arguments_are_one_line_exit_2(tmp_path, args, words):
    res = subprocess.run([sys.executable, "-m", "harness.studies.gemm_bench", *args, "--out", str(tmp_path / "g.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and words in res.stderr, res.stderr
    assert not list(tmp_path.iterdir())


def test_missing_binary_is_one_line(fakes, monkeypatch):
    monkeypatch.setenv("GEMM_BENCH", str(fakes / "absent"))
    with pytest.raises(InputError, match="not built"):
        bench_main(fakes)


def test_list_prints_the_shapes_without_a_gpu(capsys):
    assert gemm_bench.main(["--list", "--layouts", "tn"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(ln.startswith("tn ") for ln in lines)
    assert len(lines) == len(gemm_shapes.by_layout(gemm_shapes.shapes())["tn"])


def test_the_task_only_orchestrates():
    import tasks
    assert "gemm" in tasks.gpu.tasks and "harness/studies/gemm_bench.py" in tasks.gemm.__doc__
    from harness.gpu_session import STAGE_NAMES, all_stages
    stage = next(s for s in all_stages() if s.name == "gemm")
    assert "gemm" in STAGE_NAMES and stage.argv[-1] == "gpu.gemm"


# ----------------------------------------------------------------------------- schemas

def test_side_schema_catches_mixed_layouts_and_disordered_times():
    row = {"M": 1, "N": 1, "K": 1, "layout": "nn", "precision": "fp32", "status": "ok", "median_ms": 1.0,
           "min_ms": 0.5, "max_ms": 2.0, "tflops": 1.0}
    doc = {"schema": 1, "side": "ours", "layout": "nn", "repeats": 5, "warmup": 1, "rows": [row]}
    schema.validate(doc, "gemm_side", "s.json")
    for change, words in (({"layout": "tn"}, "rows[0].layout"), ({"min_ms": 1.5}, "expected min <= median"),
                          ({"status": "fine"}, "'status'"), ({"tflops": None}, "without median_ms and tflops")):
        with pytest.raises(schema.SchemaError, match=re.escape(words)):
            schema.validate({**doc, "rows": [{**row, **change}]}, "gemm_side", "s.json")


# ----------------------------------------------------------------------------- the cuBLAS side, on the CPU

def test_the_torch_side_loops_run_on_the_cpu():
    torch = pytest.importorskip("torch")
    from test_roofline import _CpuTorch
    fake = _CpuTorch(torch)
    before = torch.backends.cuda.matmul.allow_tf32
    for layout in ("nn", "tn", "nt"):
        for prec in ("fp32", "tf32", "bf16"):
            r = gemm_torch.time_shape(fake, 24, 20, 40, layout, prec, repeats=3, warmup=1, seed=5, l2_bytes=40_000,
                                      device="cpu")
            assert r["status"] == "ok" and r["tflops"] > 0 and r["repeats"] == 3 and r["check"]["nonfinite"] == 0
            assert r["sets"] == gemm_torch.n_sets(r["set_bytes"], 40_000) > 1
            assert r["check"]["sample_rel_err"] < (1e-6 if prec != "bf16" else 1e-2)
            assert r["dtype"] == ("bfloat16" if prec == "bf16" else "float32")
    assert torch.backends.cuda.matmul.allow_tf32 == before


def test_the_torch_side_without_cuda_is_exit_3_and_writes_nothing(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert gemm_torch.main(["--shapes", "8x8x8", "--out", str(tmp_path / "c.json")]) == 3
    assert "no CUDA device" in capsys.readouterr().err and not list(tmp_path.iterdir())
    with pytest.raises(InputError, match="'fp16'"):
        gemm_torch.main(["--shapes", "8x8x8", "--precisions", "fp16", "--out", str(tmp_path / "c.json")])


def test_the_bf16_ceiling_loop_runs_on_the_cpu():
    torch = pytest.importorskip("torch")
    from harness.studies import ceilings
    from test_roofline import _CpuTorch
    mm = ceilings.measure_matmul(_CpuTorch(torch), False, n=16, warmup=1, timed=3, device="cpu", bf16=True)
    assert mm["dtype"] == "bfloat16" and mm["flop"] == 2 * 16 ** 3 and mm["tflops"] > 0
    schema.validate({"schema": 1, "commit": "a", "date_utc": "d", "copy": {"gb_per_s": 1.0},
                     "fp32_matmul": {"tflops": 1.0}, "bf16_matmul": mm}, "ceilings", "c.json")


# ----------------------------------------------------------------------------- on a GPU

@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "tn", "nt"])
def test_gemm_bench_on_the_gpu(built, tmp_path, layout):
    """Every row of ours checked against float64; on a compute capability 9.0 device the tf32 and bf16
    rows whose K-major operands TMA can read run the wgmma engine, with M and N tails (300 x 200),
    split-K (200 x 136 x 1000 and the batch-128 forward) and MN-major operands copied K-major or read
    as they are; nt has no other kernel."""
    torch = pytest.importorskip("torch")
    hopper = torch.cuda.get_device_capability() == (9, 0)
    out = tmp_path / "g.json"
    res = run_bin(built("gemm_bench"), "--shapes", "128x256x784,784x256x128,37x19x129,300x200x136,200x136x1000",
                  "--layout", layout, "--repeats", "5", "--warmup", "1", "--out", out)
    print(res.stdout[-6000:], res.stderr[-2000:])
    assert res.returncode == 0, res.stderr
    assert "tolerance: |got - want| <= K*u*sum|a*b|" in res.stdout
    doc = json.loads(out.read_text())
    schema.validate(doc, "gemm_side", out)
    assert len(doc["rows"]) == 15 and doc["passed"] is True
    if hopper:  # split-K rows, M and N tails among them (the plans: test_plans_split_k_...)
        assert any("split-K" in r.get("plan", "") for r in doc["rows"] if r["M"] == 200), doc["rows"]
    for r in doc["rows"]:
        # TMA reads a K-major operand whose rows are a multiple of 16 bytes (nn's A, nt's both); tn's
        # operands are MN-major, copied K-major (or read as they are) whatever K is.
        engine = hopper and r["precision"] != "fp32" and (
            layout == "tn" or r["K"] % (8 if r["precision"] == "bf16" else 4) == 0)
        if layout == "nt" and not engine:
            assert r["status"] == "unsupported", r
            continue
        assert r["status"] == "ok" and r["check"]["passed"] and r["check"]["samples"] == 64, r
        assert r["check"]["worst_ratio"] <= 1 and r["tflops"] > 0 and r["min_ms"] <= r["median_ms"]
        assert (r["kernel"] == "k_sm90_gemm") == engine, r


@pytest.mark.gpu
def test_the_harness_on_the_gpu(built, tmp_path):
    built("gemm_bench")
    pytest.importorskip("torch")
    env = {k: v for k, v in os.environ.items() if k not in ("GEMM_BENCH", "GEMM_TORCH")}
    res = subprocess.run([sys.executable, "-m", "harness.studies.gemm_bench", "--shapes",
                          "256x512x784:nn,784x512x256:tn,256x512x10:nt", "--repeats", "5",
                          "--out", str(tmp_path / "gemm.json")], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    print(res.stdout[-6000:], res.stderr[-3000:])
    assert res.returncode == 0, res.stderr
    doc = json.loads((tmp_path / "gemm.json").read_text())
    schema.validate(doc, "gemm", "gemm.json")
    assert all(r["cublas_tflops"] for r in doc["rows"])
    assert all(r["pct_of_cublas"] for r in doc["rows"] if r["layout"] != "nt")
