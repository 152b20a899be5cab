"""The GEMM shapes issue 38's benchmark times (harness/studies/gemm_bench.py): every matrix product
the sweep's training steps and the transformer's timed forwards run, and two large squares. The one
list; each shape is derived from the configuration its owner reads, never retyped:

- the sweep: every point of harness.studies.sweep.sweep_points() (its WIDTHS, BATCHES and
  EXTRA_POINTS), with the recipe's input and output widths (spec.recipe, recipe.toml) and its
  train_size, whose short last batch (train_size mod batch, when not 0) is a step of its own;
- the transformer: spec.transformer's shape of transformer.toml at each batch of
  spec.transformer.TIME_BATCHES, the batches `invoke transformer.time` times (M = batch x tokens);
- LARGE: 4096^3 and 8192^3.

A shape is C[M x N] = op(A)·op(B), row-major, in OUR model's layout (cuda/contract/model.h: W1 is
[in x hidden], W2 [hidden x out]); "n" an operand as used, "t" stored transposed. One step of the
MLP at hidden h, batch b, in i, out o:
    forward  H = X·W1             b x h x i   nn   (ours: the tiled forward, bias + ReLU epilogue)
    logits   Z = H·W2             b x o x h   nn   (ours: k_tiled_logits_loss, not a tiled GEMM)
    dH       dZ·W2ᵀ               b x h x o   nt   (ours: k_tiled_head_backward)
    dW2      Hᵀ·dZ                h x o x b   tn   (ours: k_tiled_head_backward)
    dW1      Xᵀ·dH                i x h x b   tn   (ours: the tiled dW1 GEMM, momentum epilogue)
PyTorch's Linear stores its weights [out x in], so its baseline runs the same products with other
transpositions; this list times each product in our layout on both sides (torch.matmul on
transposed views). The transformer's four GEMMs a layer (qkv, attention projection, fc1, fc2) are nn
in its kernels (cuda/transformer/gemm.h: W [K x N]), as are its patch embedding and head written
as GEMMs; its attention products (49 x 49 x 32 per image and head) are batched GEMMs, not plain
ones, and are left out, as are its check runs' batches (32 and 256: correctness, not timing).

    python -m harness.studies.gemm_shapes      prints the list (no GPU needed)
"""
from __future__ import annotations

import sys
from typing import Sequence

from harness.studies import sweep
from spec import transformer, validate
from spec.files import InputError
from spec.transformer import TIME_BATCHES
from spec.recipe import load_recipe

LAYOUTS = ("nn", "tn", "nt")
LARGE = ((4096, 4096, 4096), (8192, 8192, 8192))


def mlp_gemms(hidden: int, batch: int, inputs: int, outputs: int) -> list[tuple[int, int, int, str, str]]:
    """The five products of one MLP step: (M, N, K, layout, what)."""
    h, b, i, o = hidden, batch, inputs, outputs
    return [(b, h, i, "nn", "forward"), (b, o, h, "nn", "logits"), (b, h, o, "nt", "dH"),
            (h, o, b, "tn", "dW2"), (i, h, b, "tn", "dW1")]


def transformer_gemms(s: transformer.Shape, batch: int) -> list[tuple[int, int, int, str, str]]:
    """The plain GEMMs of one forward of `batch` images: (M, N, K, layout, what)."""
    rows = batch * s.tokens
    return [(rows, s.d, s.patch_dim, "nn", "patch-embed"), (rows, 3 * s.d, s.d, "nn", "qkv"),
            (rows, s.d, s.d, "nn", "attn-proj"), (rows, s.mlp, s.d, "nn", "fc1"), (rows, s.d, s.mlp, "nn", "fc2"),
            (batch, s.classes, s.d, "nn", "head")]


def _add(table: dict, m: int, n: int, k: int, layout: str, source: str) -> None:
    key = (int(m), int(n), int(k), layout)
    table.setdefault(key, {"m": key[0], "n": key[1], "k": key[2], "layout": layout, "sources": []})
    if source not in table[key]["sources"]:
        table[key]["sources"].append(source)


def shapes(points: Sequence[dict] | None = None, recipe: dict | None = None, vit_config: dict | None = None,
           vit_batches: Sequence[int] = TIME_BATCHES, large: Sequence[Sequence[int]] = LARGE) -> list[dict]:
    """Every shape once, in derivation order: {"m", "n", "k", "layout", "sources": ["sweep h256_b128
    forward", "transformer b1024 fc1", ...]}. The arguments default to the owners' configuration
    (sweep.sweep_points(), recipe.toml, transformer.toml, TIME_BATCHES, LARGE)."""
    points = sweep.sweep_points() if points is None else points
    recipe = load_recipe() if recipe is None else recipe
    vit = transformer.shape(transformer.load_config() if vit_config is None else vit_config)
    table: dict = {}
    for p in points:
        hidden, batch = int(p["hidden"]), int(p["batch"])
        tail = recipe["train_size"] % batch if batch <= recipe["train_size"] else 0
        for rows, tag in ((batch, ""), (tail, f" tail {tail}")):
            if rows:
                for m, n, k, layout, what in mlp_gemms(hidden, rows, recipe["input_dim"], recipe["output_dim"]):
                    _add(table, m, n, k, layout, f"sweep {sweep.label(hidden, batch)}{tag} {what}")
    for b in vit_batches:
        for m, n, k, layout, what in transformer_gemms(vit, int(b)):
            _add(table, m, n, k, layout, f"transformer b{int(b)} {what}")
    for m, n, k in large:
        _add(table, m, n, k, "nn", f"large {m}x{n}x{k}")
    return list(table.values())


MAX_DIM = 1 << 20            # each of M, N, K (build/gemm_bench's kMaxDim)
MAX_OPERAND = 2 ** 31 - 1    # elements of one operand (its kMaxOperand)


def parse_shape(item: str, flag: str = "--shapes") -> tuple[int, int, int]:
    """"MxNxK" -> (M, N, K), each a plain decimal integer in [1, MAX_DIM], no operand over
    MAX_OPERAND elements (build/gemm_bench refuses the same); else InputError, one line."""
    dims = str(item).split("x")
    if len(dims) != 3:
        raise InputError(f"error: {flag}: {item!r} is not MxNxK")
    m, n, k = (validate.count(d, f"{flag} {item}: {what}", 1, MAX_DIM) for d, what in zip(dims, "MNK"))
    if max(m * k, k * n, m * n) > MAX_OPERAND:
        raise InputError(f"error: {flag} {item}: an operand of more than 2^31 - 1 elements")
    return m, n, k


def parse_shapes(text: str, flag: str = "--shapes", layouts: bool = False) -> list[dict]:
    """A comma-separated list of "MxNxK" (layouts=True: "MxNxK:LAYOUT", LAYOUT one of LAYOUTS), none
    twice -> [{"m", "n", "k", "layout" (None without layouts), "sources": [flag]}]."""
    out, seen = [], set()
    for item in str(text).split(","):
        dims, layout = item, None
        if layouts:
            dims, colon, layout = item.partition(":")
            if not colon or layout not in LAYOUTS:
                raise InputError(f"error: {flag}: {item!r} is not MxNxK:LAYOUT with LAYOUT one of {', '.join(LAYOUTS)}")
        m, n, k = parse_shape(dims, flag)
        if (m, n, k, layout) in seen:
            raise InputError(f"error: {flag}: {item!r} given twice")
        seen.add((m, n, k, layout))
        out.append({"m": m, "n": n, "k": k, "layout": layout, "sources": [flag]})
    return out


def by_layout(rows: Sequence[dict]) -> dict[str, list[dict]]:
    """The shapes of each layout, in LAYOUTS order (a layout without shapes left out)."""
    return {lay: [r for r in rows if r["layout"] == lay] for lay in LAYOUTS if any(r["layout"] == lay for r in rows)}


def shapes_arg(rows: Sequence[dict]) -> str:
    """gemm_bench's --shapes value: "MxNxK,MxNxK"."""
    return ",".join(f"{r['m']}x{r['n']}x{r['k']}" for r in rows)


def flop(r: dict) -> int:
    return 2 * r["m"] * r["n"] * r["k"]


def main(argv: Sequence[str] | None = None) -> int:
    rows = shapes()
    for r in rows:
        print(f"{r['layout']} {r['m']:>7} x {r['n']:>5} x {r['k']:>5}  {flop(r) / 1e9:10.3f} GFLOP  "
              f"{'; '.join(r['sources'])}")
    total = sum(flop(r) for r in rows)
    print(f"{len(rows)} shapes ({', '.join(f'{k} {len(v)}' for k, v in by_layout(rows).items())}), "
          f"{total / 1e12:.2f} TFLOP once each", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
