"""PyTorch's forward of the transformer on the GPU, same weights, same images, timed like ours (a pair of
CUDA events around each forward, warm-up excluded, a synchronisation after each), and its test-set
predictions (for the accuracy comparison).

The variants (VARIANTS): eager nn.TransformerEncoder (EncoderViT: its fused inference fast path under
inference_mode), eager with our own modules and F.scaled_dot_product_attention under each backend
(auto, efficient, math; flash and cuDNN attention take no float32 and are recorded as errors), a CUDA
graph of each eager module's forward, and torch.compile of the SDPA module in mode "default" and
"reduce-overhead" (dynamic=False: one compile per batch size, timed apart as setup). TF32 is off.

    python -m harness.transformer.torch_time --weights DIR [--batches 128,1024,10000] [--repeats 30]
                                             [--out results/transformer/torch_time.json]
                                             [--logits results/transformer/torch_logits.npy]
                                             [--deadline-s S]
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
from harness.transformer.train import set_float32_exact
from harness.transformer.weights import read_weights
from spec import provenance, stats
from spec.files import DATA_DIR, RESULTS_DIR, shown_path, write_bytes, write_json
from spec.transformer import CONFIG_PATH, forward_flop, load_config, shape

PART = RESULTS_DIR / "transformer" / "torch_time.json"
LOGITS = RESULTS_DIR / "transformer" / "torch_logits.npy"
SDPA = {"auto": None, "efficient": "EFFICIENT_ATTENTION", "math": "MATH", "flash": "FLASH_ATTENTION",
        "cudnn": "CUDNN_ATTENTION"}
VARIANTS = (["eager-encoder"] + [f"eager-sdpa-{k}" for k in SDPA]
            + ["cuda-graph-encoder", "cuda-graph-sdpa", "compiled-default", "compiled-reduce-overhead"])


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


def run_variant(name: str, models: dict, x: torch.Tensor, warmup: int, repeats: int) -> dict:
    """{median_ms, ..., setup_s} of one variant at one batch, or {"error": one line}."""
    t0 = time.perf_counter()
    try:
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
            if name not in models:  # a copy of the module per mode, so that neither compile's cache serves the other
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


def run(weights_dir, batches=(128, 1024, 10000), warmup=5, repeats=30, variants=VARIANTS,
        data_dir=DATA_DIR, config_path=CONFIG_PATH, out=PART, logits_out=LOGITS, deadline_s=None,
        device: str = "cuda") -> dict:
    set_float32_exact()
    config = load_config(config_path)
    s = shape(config)
    flat, manifest = read_weights(weights_dir, s, config)
    dev = torch.device(device)
    models = {"sdpa": load_flat(ViT(s), flat).to(dev).eval(),
              "encoder": load_flat(EncoderViT(s), flat).to(dev).eval()}
    data = load_dataset(data_dir)
    images = torch.from_numpy(data["test_images"]).to(dev)
    labels = data["test_labels"]

    preds = {}
    with torch.inference_mode():
        for key in ("sdpa", "encoder"):
            z = torch.cat([models[key](images[i:i + 2000]) for i in range(0, images.shape[0], 2000)])
            preds[key] = z.float().cpu().numpy()
    write_bytes(logits_out, _npy(preds["sdpa"]))
    acc = {k: float((v.argmax(1) == labels).mean()) for k, v in preds.items()}
    log(f"pytorch: test accuracy {100 * acc['sdpa']:.2f}% (sdpa module), {100 * acc['encoder']:.2f}% "
        f"(nn.TransformerEncoder); their predictions differ on "
        f"{int((preds['sdpa'].argmax(1) != preds['encoder'].argmax(1)).sum())} images")

    doc = {"schema": 1, **provenance.stamp(), "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
           "gpu": torch.cuda.get_device_name(), "tf32": False, "warmup": warmup, "repeats": repeats,
           "flop_per_image": forward_flop(s), "weights_sha256": manifest["files"][0]["sha256"],
           "compile_modes": {"compiled-default": "default", "compiled-reduce-overhead": "reduce-overhead"},
           "test_accuracy": acc, "logits": shown_path(logits_out), "deadline_s": deadline_s,
           "rows": [{"batch": b, "variants": {}} for b in batches]}
    inputs = {b: (images[:b] if b <= images.shape[0] else
                  images.repeat((b + images.shape[0] - 1) // images.shape[0], 1)[:b]).contiguous() for b in batches}
    t_start = time.perf_counter()
    # Variant by variant (the compiles last), every batch each; the file is rewritten after each one, so
    # a run cut short keeps what it measured.
    for name in variants:
        for row in doc["rows"]:
            b = row["batch"]
            if deadline_s is not None and time.perf_counter() - t_start > deadline_s:
                r = {"error": f"not run: the {deadline_s:g} s budget of this timing run was spent"}
            else:
                r = run_variant(name, models, inputs[b], warmup, repeats)
            row["variants"][name] = r
            log(f"pytorch  batch {b:6d}  {name:26s} " + (f"{r['median']:9.4f} ms (cv {r['cv_pct']:4.1f}%)"
                                                         if "error" not in r else "error: " + r["error"][:100]))
            write_json(out, doc)
        torch.cuda.empty_cache()
    return doc


def _npy(a: np.ndarray) -> bytes:
    import io
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a, dtype="<f4"), allow_pickle=False)
    return buf.getvalue()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--batches", default="128,1024,10000")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--out", default=str(PART))
    ap.add_argument("--logits", default=str(LOGITS))
    ap.add_argument("--deadline-s", type=float, help="skip the variants left once this many seconds have passed")
    a = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("error: no CUDA device: the PyTorch timing runs on the GPU", file=sys.stderr)
        return 3
    run(a.weights, [int(b) for b in a.batches.split(",")], a.warmup, a.repeats, a.variants.split(","),
        out=Path(a.out), logits_out=Path(a.logits), deadline_s=a.deadline_s)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
