"""Linear, ReLU and softmax cross-entropy as autograd Functions with hand-written backward passes.

The equations are cuda/contract/submission.h's (and harness/data/np_reference.py's), here in torch:
    Linear:   Y = X·W + b           dX = dY·Wᵀ   dW = Xᵀ·dY   db = colsum(dY)
    ReLU:     H = max(A, 0)         dA = dH ⊙ (H > 0)          (masked by the OUTPUT, as the CUDA
                                                               backward does with post-ReLU H)
    SoftmaxCrossEntropy: loss = mean_i(logsumexp(Z_i) - Z_i[y_i])
                         dZ = (softmax(Z) - onehot(y)) / B · grad_output
W is stored [in × out] (X·W, as in the flat parameter buffer), not nn.Linear's [out × in].
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

from spec import layout


class LinearFn(torch.autograd.Function):
    """Y = X·W + b with W [in × out]."""

    @staticmethod
    def forward(ctx, X, W, b):
        ctx.save_for_backward(X, W)
        return torch.addmm(b, X, W)

    @staticmethod
    def backward(ctx, dY):
        X, W = ctx.saved_tensors
        dX = dW = db = None
        if ctx.needs_input_grad[0]:
            dX = dY @ W.t()
        if ctx.needs_input_grad[1]:
            dW = X.t() @ dY
        if ctx.needs_input_grad[2]:
            db = dY.sum(dim=0)
        return dX, dW, db


class ReLUFn(torch.autograd.Function):
    """H = max(A, 0); backward masks by H > 0."""

    @staticmethod
    def forward(ctx, A):
        H = A.clamp_min(0)
        ctx.save_for_backward(H)
        return H

    @staticmethod
    def backward(ctx, dH):
        (H,) = ctx.saved_tensors
        return dH * (H > 0).to(dH.dtype)


class SoftmaxCrossEntropyFn(torch.autograd.Function):
    """Batch-mean softmax cross-entropy of logits Z [B × C] against integer labels [B]."""

    @staticmethod
    def forward(ctx, Z, labels):
        labels = labels.long()
        shifted = Z - Z.amax(dim=1, keepdim=True)          # stable for logits of ±60 and more
        log_sum = shifted.exp().sum(dim=1).log()
        picked = shifted.gather(1, labels.unsqueeze(1)).squeeze(1)
        loss = (log_sum - picked).mean()
        softmax = (shifted - log_sum.unsqueeze(1)).exp()
        ctx.save_for_backward(softmax, labels)
        return loss

    @staticmethod
    def backward(ctx, grad_output):
        softmax, labels = ctx.saved_tensors
        B = softmax.shape[0]
        dZ = softmax.clone()
        dZ[torch.arange(B, device=dZ.device), labels] -= 1
        dZ = dZ * (grad_output / B)
        return dZ, None


def linear(X, W, b):
    return LinearFn.apply(X, W, b)


def relu(A):
    return ReLUFn.apply(A)


def softmax_cross_entropy(Z, labels):
    return SoftmaxCrossEntropyFn.apply(Z, labels)


class ManualMLP(nn.Module):
    """784-256-10 MLP on the manual ops; parameters W1 [in×hidden], b1, W2 [hidden×out], b2."""

    def __init__(self, n_in: int = 784, n_hidden: int = 256, n_out: int = 10, device=None,
                 dtype=torch.float32):
        super().__init__()
        self.shape = (n_in, n_hidden, n_out)
        kw = {"device": device, "dtype": dtype}
        self.W1 = nn.Parameter(torch.zeros(n_in, n_hidden, **kw))
        self.b1 = nn.Parameter(torch.zeros(n_hidden, **kw))
        self.W2 = nn.Parameter(torch.zeros(n_hidden, n_out, **kw))
        self.b2 = nn.Parameter(torch.zeros(n_out, **kw))

    @torch.no_grad()
    def load_flat(self, flat) -> "ManualMLP":
        """Copy a flat [W1 | b1 | W2 | b2] buffer (numpy or tensor) into the parameters."""
        flat = flat.detach().cpu().numpy() if torch.is_tensor(flat) else np.asarray(flat)
        for name, value in layout.split(flat, self.shape).items():
            getattr(self, name).copy_(torch.as_tensor(np.ascontiguousarray(value)))
        return self

    def flat(self) -> torch.Tensor:
        return torch.cat([self.W1.detach().reshape(-1), self.b1.detach(),
                          self.W2.detach().reshape(-1), self.b2.detach()])

    def forward(self, X):
        return linear(relu(linear(X, self.W1, self.b1)), self.W2, self.b2)

    def loss(self, Z, labels):
        return softmax_cross_entropy(Z, labels)
