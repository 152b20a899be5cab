"""PyTorch's forward of the transformer on the GPU, same weights, same images, timed like ours (a pair of
CUDA events around each forward, warm-up excluded, a synchronisation after each), at each precision,
and its test-set predictions (for the accuracy comparisons).

The variants (spec/transformer.py TORCH_VARIANTS): eager nn.TransformerEncoder (EncoderViT: its fused
inference fast path under inference_mode), eager with our own modules and F.scaled_dot_product_attention
under each backend (auto, efficient, math, flash, cudnn; flash and cuDNN attention take no float32 and
are recorded as errors there), a CUDA graph of each eager module's forward, and torch.compile of the
SDPA module in mode "default" and "reduce-overhead" (dynamic=False: one compile per batch size, timed
apart as setup). Each variant runs in every family of the precisions asked for (TORCH_FAMILIES):
fp32 (TF32 off), tf32 (TF32 on for matmuls and cuDNN: a reference, compared with none of our engines),
bf16 (the float32 model under torch.autocast to bfloat16) and bf16-model (model and images cast to
bfloat16). Keys in torch_time.json: the bare variant at fp32, "<family>/<variant>" otherwise. The
order (torch_plan.py): every family's cheap variants, then the compiles; `--deadline-s` cuts the
work left once that many seconds have passed (recorded as errors, listed in the log and in "cut").

    python -m harness.transformer.torch_time --weights DIR [--batches 128,1024,10000] [--repeats 30]
                                             [--precisions fp32,tf32,bf16] [--variants V,...]
                                             [--out results/transformer/torch_time.json]
                                             [--logits results/transformer/torch_logits.npy]
                                             [--deadline-s S]

The test-set logits: --logits the fp32 SDPA module's, and beside it (spec/transformer.py
precision_path: torch_logits_bf16.npy) the same module's under bf16 autocast, cast to float32.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import sys
import time
from pathlib import Path

import numpy as np
import torch

from harness.data.dataset import load_dataset
from harness.transformer.model import EncoderViT, ViT, load_flat
from harness.transformer.torch_plan import check_variants, cut_lines, families, plan
from harness.transformer.train import set_float32_exact
from harness.transformer.weights import read_weights
from spec import provenance, stats
from spec.files import DATA_DIR, RESULTS_DIR, InputError, shown_path, write_bytes, write_json
from spec.transformer import (CONFIG_PATH, TIME_BATCHES, TORCH_PRECISIONS, TORCH_SDPA_BACKENDS, TORCH_VARIANTS,
                              forward_flop, load_config, parse_torch_precisions, precision_path, shape)

PART = RESULTS_DIR / "transformer" / "torch_time.json"
LOGITS = RESULTS_DIR / "transformer" / "torch_logits.npy"
SDPA = dict(zip(TORCH_SDPA_BACKENDS, (None, "EFFICIENT_ATTENTION", "MATH", "FLASH_ATTENTION", "CUDNN_ATTENTION")))
VARIANTS = list(TORCH_VARIANTS)
# What each family runs as (recorded in torch_time.json "families").
FAMILY_WORDS = {"fp32": "float32, TF32 off", "bf16": "the float32 model under torch.autocast(dtype=torch.bfloat16)",
                "bf16-model": "model and images cast to bfloat16", "tf32": "float32 with TF32 on (matmul and cuDNN)"}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


_SDPA_FLAGS = {"FLASH_ATTENTION": "flash", "EFFICIENT_ATTENTION": "mem_efficient", "MATH": "math",
               "CUDNN_ATTENTION": "cudnn"}


@contextlib.contextmanager
def sdpa_only(backend: str | None):
    """Only `backend` enabled for F.scaled_dot_product_attention while inside (None: PyTorch's own
    choice among all); the flags are set once, outside the timed calls, and restored after."""
    if backend is None:
        yield
        return
    cuda = torch.backends.cuda
    before = {f: getattr(cuda, f"{f}_sdp_enabled")() for f in _SDPA_FLAGS.values()}
    try:
        for key, flag in _SDPA_FLAGS.items():
            getattr(cuda, f"enable_{flag}_sdp")(key == backend)
        yield
    finally:
        for flag, on in before.items():
            getattr(cuda, f"enable_{flag}_sdp")(on)


@contextlib.contextmanager
def family_mode(family: str, device_type: str, capture: bool = False):
    """The precision setting of `family` while inside: tf32 turns TF32 on for matmuls and cuDNN (and
    restores the flags after), bf16 enters torch.autocast to bfloat16 (its cast cache off while a
    CUDA graph is captured, as PyTorch requires), fp32 and bf16-model change nothing (the model's and
    the images' dtypes say it)."""
    if family == "tf32":
        before = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32,
                  torch.get_float32_matmul_precision())
        try:
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
            yield
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before[:2]
            torch.set_float32_matmul_precision(before[2])
    elif family == "bf16":
        with torch.autocast(device_type, dtype=torch.bfloat16, cache_enabled=not capture):
            yield
    else:
        yield


def time_calls(fn, warmup: int, repeats: int) -> list[float]:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(repeats):
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        out.append(start.elapsed_time(stop))
    return out


def graph_of(model, x: torch.Tensor):
    """A CUDA graph of model(x) on a side stream (x static); returns a replay function."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            model(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        model(x)
    return g.replay


def run_variant(name: str, family: str, models: dict, x: torch.Tensor, warmup: int, repeats: int) -> dict:
    """{median_ms, ..., setup_s} of one variant of one family at one batch, or {"error": one line}.
    `models` are the family's modules ("sdpa", "encoder"; its compiled copies are added as made)."""
    t0 = time.perf_counter()
    try:
        with family_mode(family, x.device.type, capture=name.startswith("cuda-graph-")):
            if name.startswith("eager-sdpa-"):
                model = models["sdpa"]

                def fn():
                    model(x)
                with torch.inference_mode(), sdpa_only(SDPA[name.removeprefix("eager-sdpa-")]):
                    fn()                           # a backend that cannot run raises here
                    torch.cuda.synchronize()
                    setup = time.perf_counter() - t0
                    times = time_calls(fn, warmup, repeats)
            elif name == "eager-encoder":
                with torch.inference_mode():
                    models["encoder"](x)
                    torch.cuda.synchronize()
                    setup = time.perf_counter() - t0
                    times = time_calls(lambda: models["encoder"](x), warmup, repeats)
            elif name.startswith("cuda-graph-"):
                with torch.inference_mode():
                    replay = graph_of(models["encoder" if name.endswith("encoder") else "sdpa"], x)
                    torch.cuda.synchronize()
                    setup = time.perf_counter() - t0
                    times = time_calls(replay, warmup, repeats)
            else:
                if name not in models:  # a copy of the module per family and mode: no compile's cache serves another
                    mode = name.removeprefix("compiled-")
                    models[name] = torch.compile(copy.deepcopy(models["sdpa"]), mode=mode, dynamic=False)
                compiled = models[name]

                def fn():
                    if name.endswith("reduce-overhead"):
                        torch.compiler.cudagraph_mark_step_begin()
                    compiled(x)
                with torch.no_grad():
                    fn()                           # the compile (one per batch size: dynamic=False)
                    torch.cuda.synchronize()
                    setup = time.perf_counter() - t0
                    times = time_calls(fn, warmup, repeats)
    except Exception as exc:  # noqa: BLE001 - a variant that cannot run is a recorded error, not a crash
        line = " ".join(f"{type(exc).__name__}: {exc}".split())
        return {"error": line[:300]}
    return stats.summary(times) | {"times_ms": times, "setup_s": setup}


def _family_models(base: dict, family: str) -> dict:
    """The modules a family runs: the float32 ones (shared; the compiled copies each family's own),
    or bfloat16 copies for bf16-model."""
    if family == "bf16-model":
        return {k: copy.deepcopy(m).to(torch.bfloat16) for k, m in base.items()}
    return dict(base)


def _test_logits(model, images, family: str = "fp32", chunk: int = 2000) -> np.ndarray:
    """The model's logits over `images` (in chunks) in the family's mode, as float32."""
    with torch.inference_mode(), family_mode(family, images.device.type):
        z = torch.cat([model(images[i:i + chunk]) for i in range(0, images.shape[0], chunk)])
    return z.float().cpu().numpy()


def run(weights_dir, batches=TIME_BATCHES, warmup=5, repeats=30, variants=VARIANTS, precisions=TORCH_PRECISIONS,
        data_dir=DATA_DIR, config_path=CONFIG_PATH, out=PART, logits_out=LOGITS, deadline_s=None,
        device: str = "cuda") -> dict:
    """Time every variant of every family of `precisions` at every batch (torch_plan.plan's order),
    rewriting `out` after each one (a run cut short keeps what it measured); the test-set logits
    first (`logits_out`, and its bf16 sibling when bf16 is asked for). Returns the document."""
    variants = check_variants(variants)
    set_float32_exact()
    config = load_config(config_path)
    s = shape(config)
    flat, manifest = read_weights(weights_dir, s, config)
    dev = torch.device(device)
    base = {"sdpa": load_flat(ViT(s), flat).to(dev).eval(),
            "encoder": load_flat(EncoderViT(s), flat).to(dev).eval()}
    data = load_dataset(data_dir)
    images = torch.from_numpy(data["test_images"]).to(dev)
    labels = data["test_labels"]

    preds = {key: _test_logits(base[key], images) for key in ("sdpa", "encoder")}
    write_bytes(logits_out, _npy(preds["sdpa"]))
    acc = {k: float((v.argmax(1) == labels).mean()) for k, v in preds.items()}
    log(f"pytorch: test accuracy {100 * acc['sdpa']:.2f}% (sdpa module), {100 * acc['encoder']:.2f}% "
        f"(nn.TransformerEncoder); their predictions differ on "
        f"{int((preds['sdpa'].argmax(1) != preds['encoder'].argmax(1)).sum())} images")
    acc_bf16, logits_bf16 = None, None
    if "bf16" in precisions:
        z = _test_logits(base["sdpa"], images, "bf16")
        logits_bf16 = precision_path(logits_out, "bf16")
        write_bytes(logits_bf16, _npy(z))
        acc_bf16 = {"sdpa": float((z.argmax(1) == labels).mean())}
        log(f"pytorch: test accuracy {100 * acc_bf16['sdpa']:.2f}% (sdpa module under bf16 autocast); its predictions "
            f"differ from float32's on {int((z.argmax(1) != preds['sdpa'].argmax(1)).sum())} images")

    fams = families(precisions)
    doc = {"schema": 1, **provenance.stamp(), "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
           "gpu": torch.cuda.get_device_name(), "tf32": False, "precisions": list(precisions),
           "families": {f: FAMILY_WORDS[f] for f in fams}, "warmup": warmup, "repeats": repeats,
           "flop_per_image": forward_flop(s), "weights_sha256": manifest["files"][0]["sha256"],
           "compile_modes": {v: v.removeprefix("compiled-") for v in variants if v.startswith("compiled-")},
           "test_accuracy": acc, "logits": shown_path(logits_out), "test_accuracy_bf16": acc_bf16,
           "logits_bf16": shown_path(logits_bf16) if logits_bf16 else None, "deadline_s": deadline_s,
           "cut": [], "rows": [{"batch": b, "variants": {}} for b in batches]}
    rows = {r["batch"]: r for r in doc["rows"]}
    inputs = {b: (images[:b] if b <= images.shape[0] else
                  images.repeat((b + images.shape[0] - 1) // images.shape[0], 1)[:b]).contiguous() for b in batches}
    models = {f: _family_models(base, f) for f in fams}
    family_inputs = {f: ({b: x.to(torch.bfloat16) for b, x in inputs.items()} if f == "bf16-model" else inputs)
                     for f in fams}
    work = plan(variants, precisions, batches)
    cut = []
    t_start = time.perf_counter()
    for i, w in enumerate(work):
        if deadline_s is not None and time.perf_counter() - t_start > deadline_s:
            r = {"error": f"not run: the {deadline_s:g} s budget of this timing run was spent"}
            cut.append(w)
            doc["cut"].append({"key": w.key, "batch": w.batch})
        else:
            r = run_variant(w.variant, w.family, models[w.family], family_inputs[w.family][w.batch], warmup, repeats)
        rows[w.batch]["variants"][w.key] = r
        log(f"pytorch  batch {w.batch:6d}  {w.key:37s} " + (f"{r['median']:9.4f} ms (cv {r['cv_pct']:4.1f}%)"
                                                            if "error" not in r else "error: " + r["error"][:100]))
        write_json(out, doc)
        if i + 1 == len(work) or work[i + 1][:2] != w[:2]:
            torch.cuda.empty_cache()
    if cut:
        log(f"pytorch: the {deadline_s:g} s deadline cut {len(cut)} of {len(work)} runs:")
        for line in cut_lines(cut):
            log(f"  cut: {line}")
    return doc


def _npy(a: np.ndarray) -> bytes:
    import io
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a, dtype="<f4"), allow_pickle=False)
    return buf.getvalue()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--batches", default=",".join(map(str, TIME_BATCHES)))
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--precisions", default=",".join(TORCH_PRECISIONS),
                    help="PyTorch's precisions to time: fp32 (TF32 off), tf32, bf16 (autocast and a bfloat16 model)")
    ap.add_argument("--out", default=str(PART))
    ap.add_argument("--logits", default=str(LOGITS))
    ap.add_argument("--deadline-s", type=float, help="skip the variants left once this many seconds have passed")
    a = ap.parse_args(argv)
    try:
        precisions = parse_torch_precisions(a.precisions)
        variants = check_variants(v for v in a.variants.split(",") if v)
        batches = [int(b) for b in a.batches.split(",")]
        if not batches or min(batches) < 1:
            raise ValueError
    except InputError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except ValueError:
        print(f"error: --batches {a.batches!r}: want a comma-separated list of positive integers", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("error: no CUDA device: the PyTorch timing runs on the GPU", file=sys.stderr)
        return 3
    run(a.weights, batches, a.warmup, a.repeats, variants, precisions,
        out=Path(a.out), logits_out=Path(a.logits), deadline_s=a.deadline_s)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
