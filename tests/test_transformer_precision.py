"""The precisions of the transformer's forward (spec/transformer.py, their one owner): each GEMM engine's
precision, agreeing with build/vit_forward's (cuda/transformer/forward.cu engine_of, engine_precision);
the names of per-precision parts; PyTorch's variant keys and precisions; and the order PyTorch's timing
runs its work in (harness/transformer/torch_plan.py, torch-free), which gives every precision its cheap
variants before any compile, so that a deadline cuts compiles only."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.transformer import torch_plan
from spec.files import ROOT, InputError
from spec.transformer import (ENGINE_PRECISION, ENGINES, PRECISIONS, REFERENCE_PRECISIONS, TORCH_FAMILIES,
                              TORCH_PRECISIONS, TORCH_VARIANTS, PrecisionError, engine_precision,
                              parse_torch_precisions, precision_engines, precision_name, precision_path, torch_key,
                              torch_key_parts, torch_key_precision)


def test_each_engine_has_its_precision():
    assert ENGINES == ("fp32", "tf32x3", "bf16") and PRECISIONS == ("fp32", "bf16")
    assert [engine_precision(e) for e in ENGINES] == ["fp32", "fp32", "bf16"]
    assert precision_engines("fp32") == ("fp32", "tf32x3") and precision_engines("bf16") == ("bf16",)
    assert precision_engines("fp32", ("tf32x3",)) == ("tf32x3",) and precision_engines("tf32") == ()
    with pytest.raises(PrecisionError) as exc:
        engine_precision("fp16")
    assert len(str(exc.value).splitlines()) == 1 and "fp16" in str(exc.value)


def test_the_binary_knows_the_same_engines_and_precisions():
    """forward.cu's engine_of takes exactly ENGINES; its engine_precision says bf16 for kBf16 alone."""
    src = (ROOT / "cuda/transformer/forward.cu").read_text()
    names = dict(re.findall(r'if \(name == "(\w+)"\) return GemmEngine::(k\w+);', src))
    assert tuple(names) == ENGINES
    m = re.search(r'engine_precision\(GemmEngine e\) \{ return e == GemmEngine::(k\w+) \? "(\w+)" : "(\w+)"; \}', src)
    assert m, "engine_precision's one-line form changed: read it anew"
    binary = {e: (m.group(2) if k == m.group(1) else m.group(3)) for e, k in names.items()}
    assert binary == ENGINE_PRECISION


def test_per_precision_parts_keep_their_fp32_names():
    assert precision_name("accuracy", "fp32") == "accuracy" and precision_name("accuracy", "bf16") == "accuracy_bf16"
    assert precision_path(Path("r/t/torch_logits.npy"), "bf16") == Path("r/t/torch_logits_bf16.npy")
    assert precision_path("r/t/time_ours.json", "fp32") == Path("r/t/time_ours.json")


def test_pytorch_variant_keys_carry_their_family():
    assert torch_key("fp32", "eager-encoder") == "eager-encoder"                 # as before bf16
    assert torch_key("bf16-model", "compiled-default") == "bf16-model/compiled-default"
    for family in TORCH_FAMILIES:
        for variant in TORCH_VARIANTS:
            assert torch_key_parts(torch_key(family, variant)) == (family, variant)
    assert [torch_key_precision(k) for k in ("eager-encoder", "tf32/eager-encoder", "bf16/cuda-graph-sdpa",
                                             "bf16-model/eager-sdpa-flash")] == ["fp32", "tf32", "bf16", "bf16"]
    assert set(TORCH_FAMILIES.values()) == set(TORCH_PRECISIONS) and REFERENCE_PRECISIONS == ("tf32",)


def test_the_precisions_flag():
    assert parse_torch_precisions("bf16,fp32") == ("fp32", "bf16")
    assert parse_torch_precisions("fp32, tf32 ,bf16") == TORCH_PRECISIONS
    for bad in ("fp16", "", "fp32,int8"):
        with pytest.raises(PrecisionError) as exc:
            parse_torch_precisions(bad)
        assert len(str(exc.value).splitlines()) == 1 and "--precisions" in str(exc.value)


def test_the_plan_runs_every_cheap_variant_of_every_precision_before_any_compile():
    work = torch_plan.plan(TORCH_VARIANTS, TORCH_PRECISIONS, (128, 1024, 10000))
    assert len(work) == len(TORCH_VARIANTS) * 4 * 3 and len(set(work)) == len(work)
    kinds = [torch_plan.compiles(w.variant) for w in work]
    first_compile = kinds.index(True)
    assert all(kinds[first_compile:]) and not any(kinds[:first_compile])
    cheap_families = {w.family for w in work[:first_compile]}
    assert cheap_families == {"fp32", "tf32", "bf16", "bf16-model"}
    # Within each tier: variant by variant, each across every family (the compared precisions first) and batch.
    assert [w.key for w in work[:12]] == (["eager-encoder"] * 3 + ["bf16/eager-encoder"] * 3
                                          + ["bf16-model/eager-encoder"] * 3 + ["tf32/eager-encoder"] * 3)
    assert [w.batch for w in work[:3]] == [128, 1024, 10000]
    compiles = [(w.family, w.variant) for w in work[first_compile:]]
    assert compiles[0] == ("fp32", "compiled-default") and compiles[3] == ("bf16", "compiled-default")
    assert compiles.index(("fp32", "compiled-reduce-overhead")) > compiles.index(("tf32", "compiled-default"))


@pytest.mark.parametrize("precisions, families", [(("fp32",), ["fp32"]), (("bf16",), ["bf16", "bf16-model"]),
                                                  (("fp32", "tf32"), ["fp32", "tf32"])])
def test_the_plan_times_only_the_precisions_asked_for(precisions, families):
    work = torch_plan.plan(["eager-sdpa-auto", "compiled-default"], precisions, (2,))
    assert torch_plan.families(precisions) == families
    assert [w.family for w in work] == families * 2 and [w.variant for w in work] == (
        ["eager-sdpa-auto"] * len(families) + ["compiled-default"] * len(families))


def _simulate(deadline_s: float) -> list:
    """The runs a deadline cuts, under costs like an H100's (cheap runs 0.5 s, the first compile 25 s,
    each later one 4 s): torch_time.run's rule, a run started only while the elapsed time is within it."""
    elapsed, compiled, cut = 0.0, False, []
    for w in torch_plan.plan(TORCH_VARIANTS, TORCH_PRECISIONS, (128, 1024, 10000)):
        if elapsed > deadline_s:
            cut.append(w)
            continue
        elapsed += (4.0 if compiled else 25.0) if torch_plan.compiles(w.variant) else 0.5
        compiled = compiled or torch_plan.compiles(w.variant)
    return cut


def test_a_deadline_cuts_compiles_only_and_the_log_names_them():
    cheap_s = 0.5 * 8 * 4 * 3
    cut = _simulate(cheap_s + 60)
    assert cut and all(torch_plan.compiles(w.variant) for w in cut)
    kept = {(w.family, w.variant) for w in torch_plan.plan(TORCH_VARIANTS, TORCH_PRECISIONS, (128, 1024, 10000))} \
        - {(w.family, w.variant) for w in cut}
    assert {("fp32", "compiled-default"), ("bf16", "compiled-default")} <= kept    # each compared precision's first
    lines = torch_plan.cut_lines(cut)
    assert len(lines) == len({w.key for w in cut}) and lines[-1] == "tf32/compiled-reduce-overhead at batch 128, 1024, 10000"
    assert not _simulate(1e9)


def test_unknown_variants_are_one_line():
    with pytest.raises(InputError) as exc:
        torch_plan.check_variants(["eager-encoder", "compiled-max"])
    assert len(str(exc.value).splitlines()) == 1 and "'compiled-max'" in str(exc.value)
    assert torch_plan.check_variants(iter(["eager-encoder"])) == ["eager-encoder"]


@pytest.mark.parametrize("args, words", [(["--precisions", "fp16"], "--precisions"),
                                         (["--variants", "eager-nope"], "--variants"),
                                         (["--batches", "128,x"], "--batches")])
def test_torch_time_refuses_bad_flags_in_one_line_exit_2(capsys, args, words):
    pytest.importorskip("torch", reason="PyTorch is not installed (requirements-test.txt has its CPU build)")
    from harness.transformer import torch_time
    assert torch_time.main(["--weights", "none", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0]
