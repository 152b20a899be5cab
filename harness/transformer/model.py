"""The vision transformer of transformer.toml in PyTorch, twice: ViT (our own modules, attention through
F.scaled_dot_product_attention; what the training uses) and EncoderViT (the same weights in
nn.TransformerEncoder's layers, norm_first, batch_first, exact GELU: PyTorch's own module, whose eval
forward under inference_mode takes its fused fast path). Both take float32 pixels p/255 as [B × 784]
and return logits [B × C]; their parameter names are spec/transformer.py's layout, so a flat params
vector (the weights folder's params.npy) loads into either (load_flat)."""
from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from spec.transformer import Shape, layout


def patches(x: torch.Tensor, s: Shape) -> torch.Tensor:
    """[B × image²] -> [B × T × Pd]: token t = (py, px) on the grid, pixel p = (dy, dx) in the patch."""
    b = x.shape[0]
    return (x.reshape(b, s.grid, s.patch, s.grid, s.patch).permute(0, 1, 3, 2, 4)
            .reshape(b, s.tokens, s.patch_dim))


class Attention(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.s = s
        self.qkv = nn.Linear(s.d, 3 * s.d)
        self.proj = nn.Linear(s.d, s.d)

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.qkv(x).view(b, t, 3, self.s.heads, self.s.head_dim).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])       # [B, H, T, dh]
        return self.proj(o.transpose(1, 2).reshape(b, t, d))


class Mlp(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.fc1 = nn.Linear(s.d, s.mlp)
        self.fc2 = nn.Linear(s.mlp, s.d)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))                                # exact (erf) GELU


class Block(nn.Module):
    def __init__(self, s: Shape):
        super().__init__()
        self.ln1 = nn.LayerNorm(s.d, eps=s.eps)
        self.attn = Attention(s)
        self.ln2 = nn.LayerNorm(s.d, eps=s.eps)
        self.mlp = Mlp(s)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class ViT(nn.Module):
    """model.h's equations with our own modules."""

    def __init__(self, s: Shape):
        super().__init__()
        self.s = s
        self.patch = nn.Linear(s.patch_dim, s.d)
        self.pos = nn.Parameter(torch.randn(s.tokens, s.d) * 0.02)
        self.layers = nn.ModuleList(Block(s) for _ in range(s.layers))
        self.norm = nn.LayerNorm(s.d, eps=s.eps)
        self.head = nn.Linear(s.d, s.classes)

    def forward(self, x):
        h = self.patch(patches(x, self.s)) + self.pos
        for blk in self.layers:
            h = blk(h)
        return self.head(self.norm(h).mean(dim=1))


class EncoderViT(nn.Module):
    """The same model through nn.TransformerEncoder (PyTorch's module: in_proj = our qkv, linear1/2 =
    fc1/fc2, norm1/2 = ln1/ln2)."""

    def __init__(self, s: Shape):
        super().__init__()
        self.s = s
        self.patch = nn.Linear(s.patch_dim, s.d)
        self.pos = nn.Parameter(torch.zeros(s.tokens, s.d))
        layer = nn.TransformerEncoderLayer(s.d, s.heads, s.mlp, dropout=0.0, activation="gelu",
                                           layer_norm_eps=s.eps, batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, s.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(s.d, eps=s.eps)
        self.head = nn.Linear(s.d, s.classes)

    def forward(self, x):
        h = self.patch(patches(x, self.s)) + self.pos
        return self.head(self.norm(self.encoder(h)).mean(dim=1))

    def names(self) -> dict[str, nn.Parameter]:
        """Our layout's name -> this module's parameter."""
        out = {"patch.weight": self.patch.weight, "patch.bias": self.patch.bias, "pos": self.pos,
               "norm.weight": self.norm.weight, "norm.bias": self.norm.bias,
               "head.weight": self.head.weight, "head.bias": self.head.bias}
        for i, lay in enumerate(self.encoder.layers):
            p = f"layers.{i}."
            out |= {p + "ln1.weight": lay.norm1.weight, p + "ln1.bias": lay.norm1.bias,
                    p + "attn.qkv.weight": lay.self_attn.in_proj_weight,
                    p + "attn.qkv.bias": lay.self_attn.in_proj_bias,
                    p + "attn.proj.weight": lay.self_attn.out_proj.weight,
                    p + "attn.proj.bias": lay.self_attn.out_proj.bias,
                    p + "ln2.weight": lay.norm2.weight, p + "ln2.bias": lay.norm2.bias,
                    p + "mlp.fc1.weight": lay.linear1.weight, p + "mlp.fc1.bias": lay.linear1.bias,
                    p + "mlp.fc2.weight": lay.linear2.weight, p + "mlp.fc2.bias": lay.linear2.bias}
        return out


def named_params(model: nn.Module) -> dict[str, nn.Parameter]:
    return model.names() if isinstance(model, EncoderViT) else dict(model.named_parameters())


def to_flat(model: nn.Module) -> np.ndarray:
    """The model's parameters as the weights folder's flat float32 params (spec layout order)."""
    params = named_params(model)
    return np.concatenate([params[name].detach().to("cpu", torch.float32).reshape(-1).numpy()
                           for name, _ in layout(model.s)])


@torch.no_grad()
def load_flat(model: nn.Module, flat: np.ndarray) -> nn.Module:
    """Copy a flat params vector (spec layout order and shapes) into the model; returns it."""
    params = named_params(model)
    offset = 0
    for name, shape in layout(model.s):
        n = int(np.prod(shape))
        params[name].copy_(torch.from_numpy(np.asarray(flat[offset:offset + n]).reshape(shape)))
        offset += n
    if offset != len(flat):
        raise ValueError(f"params: {len(flat)} values, the layout holds {offset}")
    return model
