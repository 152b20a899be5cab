"""harness/baseline/registry.py, the one list of PyTorch variants: a variant registered there (here
by monkeypatch, with no other edit) reaches the baseline's CLI, its default and --full sets,
pytorch.json's variants_run and variants_left_out, the sweep's variants and the trace study's
default set. And the registry's own facts: the two variants the report and the sweep read by role
(spec/torch_variants.py) are registered and swept; reading it imports no torch."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

from harness.baseline import pytorch_baseline as pb  # noqa: E402
from harness.baseline import registry  # noqa: E402
from harness.baseline import variant_traces as vt  # noqa: E402
from harness.studies import sweep  # noqa: E402
from spec import layout  # noqa: E402
from spec.files import ROOT  # noqa: E402
from spec.torch_variants import BF16, CUDA_GRAPH, EAGER, FP32  # noqa: E402

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sweep"
sys.path.insert(0, str(FIXTURES))
import fake  # noqa: E402  (tests/fixtures/sweep/fake.py)

sys.path.remove(str(FIXTURES))

COMPILED_STEP = "compiled-step"
EAGER_BUILD = registry.VARIANTS[EAGER].build
# Eager under another name: a variant that trains for real on the CPU.
FAKE = registry.Variant("a fake for the tests: eager under another name", EAGER_BUILD,
                        compiled=True, sweep=True, traced=True)


@pytest.fixture
def registered(monkeypatch):
    """FAKE added to the real registry as `fake-step`."""
    monkeypatch.setitem(registry.VARIANTS, "fake-step", FAKE)
    monkeypatch.setattr("spec.provenance.git_commit", lambda: "test-commit")
    monkeypatch.setattr("spec.provenance.driver_version", lambda: "test-driver")


def test_the_cli_offers_and_takes_a_registered_variant(registered, monkeypatch, capsys):
    with pytest.raises(SystemExit) as exc:
        pb.main(["--help"])
    assert exc.value.code == 0
    help_text = capsys.readouterr().out
    assert "fake-step" in help_text and FAKE.what in help_text
    calls = []
    monkeypatch.setattr(pb, "run_all", lambda *args, **kw: calls.append(args[1]))
    assert pb.main(["--variants", "eager,fake-step", "--device", "cpu"]) == 0
    assert calls == [["eager", "fake-step"]]
    with pytest.raises(SystemExit) as exc:
        pb.main(["--variants", "fake-stop", "--device", "cpu"])
    assert exc.value.code == 2 and "unknown variant(s) fake-stop" in capsys.readouterr().err


def test_default_and_full_sets_follow_the_flags(registered, monkeypatch):
    assert "fake-step" in registry.select()[0]
    monkeypatch.setitem(registry.VARIANTS, "fake-slow",
                        registry.Variant("slow", EAGER_BUILD, full_only="slow (test)"))
    chosen, left_out = registry.select()
    assert "fake-slow" not in chosen and left_out["fake-slow"] == "slow (test)"
    chosen, left_out = registry.select(full=True)
    assert chosen[-2:] == ["fake-step", "fake-slow"] and left_out == {}


def test_the_sweep_and_the_trace_study_run_a_registered_variant(registered, monkeypatch,
                                                                tmp_path):
    doc = sweep.sweep(widths=[64], batches=[], epochs=3, results_dir=tmp_path / "results",
                      data_dir=tmp_path, binary=fake.install_binary(tmp_path),
                      pytorch_cmd=[sys.executable, str(FIXTURES / "fake.py"), "pytorch"],
                      timeout_s=60, extra_points=())
    at_precision = ["cuda-graph-tf32", "compiled-step-tf32", "cuda-graph-bf16", "compiled-step-bf16"]
    assert doc["config"]["pytorch_variants"] == [EAGER, CUDA_GRAPH, COMPILED_STEP, *at_precision,
                                                 "fake-step"]
    point = doc["points"][0]
    assert (f"--variants {EAGER},{CUDA_GRAPH},{COMPILED_STEP},{','.join(at_precision)},fake-step"
            in point["pytorch_command"])
    assert point["pytorch"]["fake-step"]["passed"], point["errors"]

    traced, written = [], {}
    stub = {"steps": 4, "wall_ms": 2.0, "kernel_ms": 1.0, "gpu_busy_fraction": 0.5, "kernels": 4,
            "kernel_launches": 4, "graph_launches": 0, "compiled": True, "top_cpu_ops": []}
    monkeypatch.setattr(vt, "load_inputs", lambda: (None, None))
    monkeypatch.setattr(vt, "load_data", lambda: None)
    monkeypatch.setattr(vt, "load_recipe", lambda: None)
    monkeypatch.setattr(vt, "trace_variant", lambda name, *a: traced.append(name) or stub)
    monkeypatch.setattr(vt, "write_all", written.update)
    assert vt.main(["--device", "cpu"]) == 0
    assert traced == registry.traced_names() and "fake-step" in traced
    assert len(written) == 2


@pytest.fixture
def inputs(tmp_path):
    """A 512-image slice and the binary's two input files for it, in tmp_path."""
    rng = np.random.default_rng(24)
    shape = layout.Shape(784, 32, 10)
    data = {"train_images": rng.uniform(0, 1, (512, 784)).astype(np.float32),
            "train_labels": rng.integers(0, 10, 512).astype(np.int32),
            "test_images": rng.uniform(0, 1, (64, 784)).astype(np.float32),
            "test_labels": rng.integers(0, 10, 64).astype(np.int32)}
    np.save(tmp_path / "init_params.npy",
            (rng.uniform(-1, 1, layout.n_params(shape)) / 28).astype(np.float32))
    np.save(tmp_path / "order.npy", np.stack([rng.permutation(512) for _ in range(2)]).astype(np.int32))
    return tmp_path, data


def test_pytorch_json_lists_a_registered_variant(inputs, monkeypatch):
    """A registry of four (eager, the fake, one only --full runs, one needing CUDA): what a
    default and a --full run on the CPU write."""
    results, data = inputs
    monkeypatch.setattr(registry, "VARIANTS", {
        EAGER: registry.VARIANTS[EAGER], "fake-step": FAKE,
        "fake-slow": registry.Variant("slow", EAGER_BUILD, full_only="slow (test)"),
        "fake-gpu": registry.Variant("needs CUDA", EAGER_BUILD, cuda_only=True)})
    monkeypatch.setattr("spec.provenance.git_commit", lambda: "test-commit")
    pb.run_all(results, device="cpu", data=data)
    doc = json.loads((results / "pytorch.json").read_text())
    assert doc["variants_run"] == [EAGER, "fake-step", "fake-gpu"]
    assert doc["variants_left_out"] == {"fake-slow": "slow (test)"}
    assert "cudagraph_skips" in doc["variants"]["fake-step"]       # compiled=True
    assert "cudagraph_skips" not in doc["variants"][EAGER]
    assert doc["variants"]["fake-gpu"] == {"error": "skipped: fake-gpu needs a CUDA device",
                                          "precision": "fp32"}
    assert doc["tf32"] == {"matmul_allow_tf32": False, "cudnn_allow_tf32": False,
                           "float32_matmul_precision": "highest"}   # float32, TF32 off
    pb.run_all(results, device="cpu", data=data, full=True)
    doc = json.loads((results / "pytorch.json").read_text())
    assert doc["variants_run"] == [EAGER, "fake-step", "fake-slow", "fake-gpu"]
    assert doc["variants_left_out"] == {} and doc["full"] is True


# ----------------------------------------------------------------------------- the one owner

def test_the_variants_read_by_role_are_registered_and_swept():
    assert [n for n in registry.sweep_names() if n in (EAGER, CUDA_GRAPH)] == [EAGER, CUDA_GRAPH]


def test_the_sweep_runs_eager_cuda_graph_and_the_compiled_step():
    """Issue "FP32 at scale": every sweep point runs these three at fp32, and its ratio is
    against the fastest of them that passed; issue 30: cuda-graph and compiled-step also at tf32
    and bf16 (registry.SWEEP_AT_PRECISION), after the fp32 ones."""
    assert registry.sweep_names([FP32]) == [EAGER, CUDA_GRAPH, COMPILED_STEP]
    assert registry.SWEEP_AT_PRECISION == (CUDA_GRAPH, COMPILED_STEP)
    assert registry.sweep_names() == [EAGER, CUDA_GRAPH, COMPILED_STEP,
                                      "cuda-graph-tf32", "compiled-step-tf32",
                                      "cuda-graph-bf16", "compiled-step-bf16"]
    assert registry.sweep_names([FP32, BF16]) == [EAGER, CUDA_GRAPH, COMPILED_STEP,
                                                  "cuda-graph-bf16", "compiled-step-bf16"]
    assert registry.VARIANTS[COMPILED_STEP].compiled and not registry.VARIANTS[COMPILED_STEP].full_only


def test_every_entry_says_what_it_is_in_one_line():
    for name, v in registry.VARIANTS.items():
        assert v.what and "\n" not in v.what and callable(v.build), name
        assert v.full_only is None or v.full_only.strip(), name
    assert registry.listing().count("\n") == len(registry.VARIANTS) - 1


def test_reading_the_registry_imports_no_torch():
    code = "import sys, harness.studies.sweep; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
