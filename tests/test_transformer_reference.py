"""The float64 CPU reference (cuda/transformer/reference.cpp, through `vit_forward reference`) against an
independent implementation: PyTorch's modules in float64 on the CPU with the same weights and images
(our SDPA module step by step for every intermediate, and nn.TransformerEncoder for the logits), to
a relative 1e-12."""
from __future__ import annotations

import math
import subprocess

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (requirements-test.txt has its CPU build)")

import torch.nn.functional as F  # noqa: E402

from harness.data.dataset import load_dataset  # noqa: E402
from harness.transformer.model import EncoderViT, ViT, load_flat, patches  # noqa: E402
from harness.transformer.weights import random_flat, write_weights  # noqa: E402
from spec.files import BUILD_DIR, ROOT  # noqa: E402
from spec.transformer import load_config, shape  # noqa: E402

BIN = BUILD_DIR / "vit_forward"


@pytest.fixture(autouse=True, scope="module")
def _vit_forward_up_to_date(built):
    """BIN (build/vit_forward), made up to date by tests/conftest.py's `built` before this module's tests."""
    built("vit_forward")
N = 3
TOL = 1e-12


def torch_trace(model: ViT, x: torch.Tensor) -> dict[str, np.ndarray]:
    """Every intermediate the binary writes, computed with PyTorch's float64 modules and functions."""
    s = model.s
    out = {}
    h = model.patch(patches(x, s)) + model.pos
    out["x0"] = h
    for i, blk in enumerate(model.layers):
        p = f"L{i + 1}."
        ln1 = blk.ln1(h)
        qkv = blk.attn.qkv(ln1)
        b = x.shape[0]
        q, k, v = qkv.view(b, s.tokens, 3, s.heads, s.head_dim).permute(2, 0, 3, 1, 4)
        probs = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(s.head_dim), dim=-1)
        heads = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s.tokens, s.d)
        x_attn = h + blk.attn.proj(heads)
        ln2 = blk.ln2(x_attn)
        u = F.gelu(blk.mlp.fc1(ln2))
        h = x_attn + blk.mlp.fc2(u)
        out |= {p + "ln1": ln1, p + "qkv": qkv, p + "probs": probs, p + "heads": heads, p + "x_attn": x_attn,
                p + "ln2": ln2, p + "u": u, p + "x_out": h}
    lnf = model.norm(h)
    out |= {"lnf": lnf, "pooled": lnf.mean(1), "logits": model.head(lnf.mean(1))}
    return {k: v.detach().reshape(x.shape[0], -1).numpy() for k, v in out.items()}


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


@pytest.mark.parametrize("seed", [3, 11])
def test_reference_matches_pytorch_float64(tmp_path, seed):
    config = load_config()
    s = shape(config)
    flat = random_flat(s, seed)
    write_weights(tmp_path / "w", flat, s, config, {"kind": "random", "seed": seed})
    res = subprocess.run([str(BIN), "reference", "--weights", str(tmp_path / "w"), "--images", str(N),
                          "--out", str(tmp_path / "ref"), "--data", "data"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    x = torch.from_numpy(load_dataset()["test_images"][:N]).double()
    model = load_flat(ViT(s), flat).double().eval()
    with torch.no_grad():
        want = torch_trace(model, x)
        encoder = load_flat(EncoderViT(s), flat).double().eval()(x).numpy()
    for name, w in want.items():
        got = np.load(tmp_path / "ref" / f"{name}.npy")
        assert got.shape == w.shape, name
        assert _rel(got, w) < TOL, (name, _rel(got, w))
    assert _rel(np.load(tmp_path / "ref" / "logits.npy"), encoder) < TOL
