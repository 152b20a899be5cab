"""Facts about our kernels that the profiles' names do not carry.

nsys prints a scoped-enum template argument as its value ("k_colsum<(mlp::Col)0>"), not as its
enumerator, and nothing the binary writes names the enumerators, so the order of each enum is
stated here once; tests/test_roofline.py checks it against the `enum class` declarations in
cuda/.
"""
from __future__ import annotations

# kernel function -> (enum type, enumerators in declaration order): "(mlp::Col)0" is db1.
ENUMS = {
    "k_colsum": ("Col", ("db1", "db2")),
    "k_add_bias": ("Layer", ("hidden", "logits")),
    "k_momentum_tensor": ("Tensor", ("W1", "b1", "W2", "b2")),
}
