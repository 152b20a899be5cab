"""The vision transformer's config (transformer.toml) as the harness reads it, its derived shape
and its weight layout: the Python owner of what cuda/transformer/config.cpp and model.h hold on
the binary's side (`build/vit_forward limits` / `config` / `layout` print theirs as JSON and
tests/test_transformer_config.py checks that the two agree).

A config holds exactly the keys of BOUNDS, each once: an integer key an integer, a real key an
integer or a finite float, a string key one of its listed strings, each inside its bound; and the
relations (image_size divisible by patch, d_model by heads, batch <= train_size). Every bad key
is one line ("error: FILE: KEY ..."); validate() collects them all and raises one ConfigError
whose message holds those lines (the CLI and the invoke tasks exit 2 with them).

    python -m spec.transformer [transformer.toml]     prints the config and its shape, or the errors
"""
from __future__ import annotations

import math
import re
import sys
from pathlib import Path
from typing import NamedTuple

from spec.files import ROOT, InputError, load_toml

CONFIG_PATH = ROOT / "transformer.toml"
# The batches `invoke transformer.time` times our forward at (harness/transformer/run.py's default;
# harness/studies/gemm_shapes.py derives the transformer's GEMM shapes from them).
TIME_BATCHES = (128, 1024, 10000)

# The GEMM engines of `build/vit_forward --gemm` and the precision each is checked, timed and compared
# at (cuda/transformer/gemm.h engine_precision says the same; `vit_forward check` records it as
# "precision"): fp32 runs the GEMMs as FFMA on the CUDA cores, tf32x3 on the tensor cores with each
# float32 operand split into two TF32 parts (float32-accurate), bf16 on the tensor cores with every
# operand rounded to bfloat16 and the products summed in float32 (LayerNorm, softmax, GELU and the
# residual stream stay float32).
ENGINE_PRECISION = {"fp32": "fp32", "tf32x3": "fp32", "bf16": "bf16"}
ENGINES = tuple(ENGINE_PRECISION)
# Our precisions, in the report's order; each is compared with PyTorch's at the same precision.
PRECISIONS = ("fp32", "bf16")

# PyTorch's timed precisions (harness/transformer/torch_time.py --precisions): fp32 and bf16 are
# compared with ours; tf32 (float32 tensors, TF32 matmuls) is a reference row only: none of our
# engines computes at TF32's precision (tf32x3 is float32-accurate, so it is compared at fp32).
TORCH_PRECISIONS = ("fp32", "tf32", "bf16")
REFERENCE_PRECISIONS = tuple(p for p in TORCH_PRECISIONS if p not in PRECISIONS)   # timed for information
# PyTorch's variant families -> the precision each computes at: fp32 (TF32 off), bf16 (torch.autocast
# to bfloat16), bf16-model (model and images cast to bfloat16) and tf32 (TF32 on for matmuls and
# cuDNN); the compared precisions first, the reference last (the order torch_time.py runs them in).
# A variant's key in torch_time.json is "<family>/<variant>", the fp32 family's the bare variant name
# (as before the other families existed).
TORCH_FAMILIES = {"fp32": "fp32", "bf16": "bf16", "bf16-model": "bf16", "tf32": "tf32"}
# PyTorch's variants of each family, in the report's order: eager nn.TransformerEncoder, eager with
# F.scaled_dot_product_attention under each backend, a CUDA graph of each eager module, torch.compile.
TORCH_SDPA_BACKENDS = ("auto", "efficient", "math", "flash", "cudnn")
TORCH_VARIANTS = (("eager-encoder",) + tuple(f"eager-sdpa-{k}" for k in TORCH_SDPA_BACKENDS)
                  + ("cuda-graph-encoder", "cuda-graph-sdpa", "compiled-default", "compiled-reduce-overhead"))


class PrecisionError(InputError):
    """An engine, precision or PyTorch family that is not one of the known ones (one line)."""


def engine_precision(engine: str) -> str:
    """The precision `engine` computes at (PrecisionError for an unknown engine)."""
    try:
        return ENGINE_PRECISION[engine]
    except KeyError:
        raise PrecisionError(f"error: unknown GEMM engine {engine!r}: want one of {', '.join(ENGINES)}") from None


def precision_engines(precision: str, engines=ENGINES) -> tuple[str, ...]:
    """The engines among `engines` that compute at `precision`, in ENGINES' order."""
    return tuple(e for e in ENGINES if e in engines and ENGINE_PRECISION[e] == precision)


def precision_name(stem: str, precision: str) -> str:
    """The name of a per-precision part: `stem` itself at fp32 (the name before bf16 existed),
    `stem`_<precision> otherwise (accuracy -> accuracy_bf16, torch_logits -> torch_logits_bf16)."""
    return stem if precision == "fp32" else f"{stem}_{precision}"


def precision_path(path, precision: str) -> Path:
    """`path` with its stem named by precision_name (results/transformer/accuracy.json ->
    results/transformer/accuracy_bf16.json at bf16)."""
    path = Path(path)
    return path.with_name(precision_name(path.stem, precision) + path.suffix)


def torch_key(family: str, variant: str) -> str:
    """A PyTorch variant's key in torch_time.json: the bare variant for the fp32 family, else
    "<family>/<variant>"."""
    return variant if family == "fp32" else f"{family}/{variant}"


def torch_key_parts(key: str) -> tuple[str, str]:
    """(family, variant) of a torch_time.json key (a bare name is the fp32 family's)."""
    family, _, variant = key.rpartition("/")
    return (family or "fp32"), variant


def torch_key_precision(key: str) -> str:
    """The precision a torch_time.json key's variant computes at (fp32, tf32 or bf16; an unknown
    family is its own name)."""
    family = torch_key_parts(key)[0]
    return TORCH_FAMILIES.get(family, family)


def parse_torch_precisions(text: str) -> tuple[str, ...]:
    """"fp32,tf32,bf16" -> the precisions in TORCH_PRECISIONS' order (PrecisionError naming an unknown
    one, or none given)."""
    got = [p.strip() for p in text.split(",") if p.strip()]
    bad = [p for p in got if p not in TORCH_PRECISIONS]
    if bad or not got:
        raise PrecisionError(f"error: --precisions {text!r}: want a comma-separated subset of "
                             f"{','.join(TORCH_PRECISIONS)}")
    return tuple(p for p in TORCH_PRECISIONS if p in got)


class Bound(NamedTuple):
    kind: str            # "int", "real" or "str"
    lo: float = 0
    hi: float = 0
    choices: tuple = ()


# key -> bound, in file order (cuda/transformer/config.cpp's kKeys holds the same table).
BOUNDS = {
    "image_size": Bound("int", 4, 64),
    "patch": Bound("int", 1, 16),
    "d_model": Bound("int", 8, 1024),
    "heads": Bound("int", 1, 32),
    "mlp_dim": Bound("int", 1, 8192),
    "layers": Bound("int", 1, 24),
    "classes": Bound("int", 2, 256),
    "ln_eps": Bound("real", 1e-12, 1e-2),
    "gelu": Bound("str", choices=("erf",)),
    "pool": Bound("str", choices=("mean",)),
    "seed": Bound("int", 0, 2**53 - 1),
    "epochs": Bound("int", 1, 100),
    "batch": Bound("int", 1, 6000),
    "optimizer": Bound("str", choices=("adamw",)),
    "lr": Bound("real", 1e-6, 1.0),
    "weight_decay": Bound("real", 0.0, 1.0),
    "train_size": Bound("int", 32, 6000),
    "test_size": Bound("int", 1, 10000),
}
MODEL_KEYS = ("image_size", "patch", "d_model", "heads", "mlp_dim", "layers", "classes", "ln_eps",
              "gelu", "pool")


class ConfigError(InputError):
    """A config the binary would refuse; str() is one line per bad key."""


def _interval(b: Bound) -> str:
    return f"[{int(b.lo)}, {int(b.hi)}]" if b.kind == "int" else f"[{b.lo:g}, {b.hi:g}]"


def key_errors(config: dict) -> dict[str, str]:
    """{key: what is wrong} for every bad key (unknown, missing, wrong type, out of bounds) and
    every broken relation (named by its second key); empty when the config is valid."""
    bad: dict[str, str] = {}
    if not isinstance(config, dict):
        return {"": "expected a table of key = value"}
    for key in config:
        if key not in BOUNDS:
            bad[key] = f"unknown key {key}"
    for key, b in BOUNDS.items():
        if key not in config:
            bad[key] = f"missing key {key}"
            continue
        v = config[key]
        if b.kind == "str":
            if not isinstance(v, str):
                bad[key] = f"{key} = {v!r} is not a string"
            elif v not in b.choices:
                bad[key] = f"{key} = {v!r} is not one of {', '.join(map(repr, b.choices))}"
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (b.kind == "int" and not isinstance(v, int)):
            bad[key] = f"{key} = {v!r} is not {'an integer' if b.kind == 'int' else 'a number'}"
        elif not (math.isfinite(v) and b.lo <= v <= b.hi):
            bad[key] = f"{key} = {v!r} is out of range {_interval(b)}"
    if not bad:
        if config["image_size"] % config["patch"]:
            bad["patch"] = f"image_size {config['image_size']} is not a multiple of patch {config['patch']}"
        if config["d_model"] % config["heads"]:
            bad["heads"] = f"d_model {config['d_model']} is not a multiple of heads {config['heads']}"
        if config["batch"] > config["train_size"]:
            bad["batch"] = f"batch {config['batch']} is larger than train_size {config['train_size']}"
    return bad


def validate(config: dict, where: str = "transformer.toml") -> dict:
    """`config` itself when valid, else ConfigError: one line "error: WHERE: ..." per bad key."""
    bad = key_errors(config)
    if bad:
        raise ConfigError("\n".join(f"error: {where}: {what}" for what in bad.values()))
    return config


def load_config(path=CONFIG_PATH) -> dict:
    """The validated config of `path` (a dict of the BOUNDS keys)."""
    return validate(load_toml(path), str(path))


class Shape(NamedTuple):
    image: int
    patch: int
    grid: int          # patches per side
    tokens: int        # grid²
    patch_dim: int     # patch²
    d: int             # d_model
    heads: int
    head_dim: int
    mlp: int
    layers: int
    classes: int
    eps: float


def shape(config: dict) -> Shape:
    grid = config["image_size"] // config["patch"]
    return Shape(config["image_size"], config["patch"], grid, grid * grid, config["patch"] ** 2,
                 config["d_model"], config["heads"], config["d_model"] // config["heads"],
                 config["mlp_dim"], config["layers"], config["classes"], float(config["ln_eps"]))


def kernel_support(s: Shape) -> list[str]:
    """Why our CUDA kernels cannot run this shape (empty: they can); the binary refuses the same
    (cuda/transformer/model.h unsupported_reason). The PyTorch side runs any valid shape."""
    out = []
    if s.head_dim != 32:
        out.append(f"head dim d_model/heads = {s.head_dim}: the attention kernel holds one dim per lane (32)")
    if s.tokens > 64:
        out.append(f"{s.tokens} tokens: the attention kernel holds at most 64 keys per row (two per lane)")
    if s.d % 128 or s.d > 512:
        out.append(f"d_model {s.d}: the LayerNorm prologues take 128, 256, 384 or 512 (a float4 per lane per 128)")
    if s.mlp % 128:
        out.append(f"mlp_dim {s.mlp}: the GEMM tiles need a multiple of 128")
    return out


def layout(s: Shape) -> list[tuple[str, tuple[int, ...]]]:
    """The weight tensors in file order, with PyTorch's shapes (a Linear's weight is [out, in]):
    the flat params.npy holds them back to back (cuda/transformer/model.h weight_layout)."""
    d, m = s.d, s.mlp
    out = [("patch.weight", (d, s.patch_dim)), ("patch.bias", (d,)), ("pos", (s.tokens, d))]
    for layer in range(s.layers):
        p = f"layers.{layer}."
        out += [(p + "ln1.weight", (d,)), (p + "ln1.bias", (d,)),
                (p + "attn.qkv.weight", (3 * d, d)), (p + "attn.qkv.bias", (3 * d,)),
                (p + "attn.proj.weight", (d, d)), (p + "attn.proj.bias", (d,)),
                (p + "ln2.weight", (d,)), (p + "ln2.bias", (d,)),
                (p + "mlp.fc1.weight", (m, d)), (p + "mlp.fc1.bias", (m,)),
                (p + "mlp.fc2.weight", (d, m)), (p + "mlp.fc2.bias", (d,))]
    out += [("norm.weight", (d,)), ("norm.bias", (d,)), ("head.weight", (s.classes, d)),
            ("head.bias", (s.classes,))]
    return out


def layout_table(s: Shape) -> list[dict]:
    """[{name, shape, offset, count}] in file order (offsets and counts in float32 elements)."""
    rows, offset = [], 0
    for name, shp in layout(s):
        count = math.prod(shp)
        rows.append({"name": name, "shape": list(shp), "offset": offset, "count": count})
        offset += count
    return rows


def n_params(s: Shape) -> int:
    return sum(math.prod(shp) for _, shp in layout(s))


def forward_flop(s: Shape) -> int:
    """Multiply-adds × 2 of one image's forward: the GEMMs and the two attention products (the
    LayerNorms, softmax, GELU and pooling are left out: they are O(tokens·d), not O(tokens·d²))."""
    t, d = s.tokens, s.d
    per_layer = 2 * t * d * 3 * d + 2 * 2 * s.heads * t * t * s.head_dim + 2 * t * d * d + 2 * 2 * t * d * s.mlp
    return 2 * t * s.patch_dim * d + s.layers * per_layer + 2 * d * s.classes


# The kernels of one forward (cuda/transformer/kernels.cuh, gemm_kernel.cuh): an nsys name's marker ->
# its operation. The GEMM engine's kernels (cuda/kernels/gemm/, the 3xTF32 flow) are named by their
# epilogue, `(mlp::gemm::sm90::Epilogue)N` with N the value in sm90_engine.h's `enum class Epilogue`
# (tests/test_transformer_config.py reads the enum): the projection and fc2 share BiasResidual, so
# their launches share one nsys row, whose costs are the two operations' mean.
KERNEL_OPS = (("patch_embed_kernel", "patch-embed"), ("LnQkv", "ln1+qkv"), ("attention_kernel", "attention"),
              ("attention_bf16_kernel", "attention"),
              ("AttnProjResidual", "attn-proj+residual"), ("LnFc1Gelu", "ln2+fc1+gelu"),
              ("Fc2Residual", "fc2+residual"), ("final_ln_pool_kernel", "final-ln+pool"), ("head_kernel", "head"),
              ("ln_split_kernel", "layernorm"), ("ln_operand_kernel", "layernorm"),
              ("join_split_kernel", "join (checks' taps)"), ("join_operand_kernel", "join (checks' taps)"))
ENGINE_EPILOGUE_OPS = {"Bias": "qkv", "BiasResidual": "attn-proj|fc2+residual", "BiasGeluSplit": "fc1+gelu",
                       "BiasGeluBf16": "fc1+gelu"}
ENGINE_EPILOGUES = ("Store", "BiasRelu", "Momentum", "Bias", "BiasResidual", "BiasGeluSplit", "BiasGeluBf16")  # enum order


def kernel_op(name: str) -> str | None:
    """The operation an nsys kernel name belongs to (None: not one of ours)."""
    for marker, op in KERNEL_OPS:
        if marker in name:
            return op
    m = re.search(r"k_sm90_gemm<.*\(mlp::gemm::sm90::Epilogue\)(\d+)>", name)
    if m and int(m.group(1)) < len(ENGINE_EPILOGUES):
        return ENGINE_EPILOGUE_OPS.get(ENGINE_EPILOGUES[int(m.group(1))])
    return None


def op_costs(s: Shape) -> dict[str, dict]:
    """Per image and per launch: each operation's FLOP (2 per multiply-add) and the bytes it must move
    at least (its float32 activations in and out once; the weights, read from L2, left out)."""
    t, d, m, pd = s.tokens, s.d, s.mlp, s.patch_dim
    f = 4  # bytes per float
    costs = {
        "patch-embed": {"flop": 2 * t * pd * d, "bytes": f * (s.image ** 2 + t * d)},
        "ln1+qkv": {"flop": 2 * t * d * 3 * d, "bytes": f * (t * d + 3 * t * d)},
        "attention": {"flop": 4 * s.heads * t * t * s.head_dim, "bytes": f * (3 * t * d + t * d)},
        "attn-proj+residual": {"flop": 2 * t * d * d, "bytes": f * 3 * t * d},
        "ln2+fc1+gelu": {"flop": 2 * t * d * m, "bytes": f * (t * d + t * m)},
        "fc2+residual": {"flop": 2 * t * m * d, "bytes": f * (t * m + 2 * t * d)},
        "final-ln+pool": {"flop": 0, "bytes": f * (t * d + d)},
        "layernorm": {"flop": 0, "bytes": f * 2 * t * d},
        "head": {"flop": 2 * d * s.classes, "bytes": f * (d + s.classes)},
    }
    # The engine's rows (the 3xTF32 flow: LayerNorm its own kernel; model FLOP, not the 3 products').
    costs["qkv"] = {"flop": costs["ln1+qkv"]["flop"], "bytes": costs["ln1+qkv"]["bytes"]}
    costs["fc1+gelu"] = {"flop": costs["ln2+fc1+gelu"]["flop"], "bytes": costs["ln2+fc1+gelu"]["bytes"]}
    costs["attn-proj|fc2+residual"] = {k: (costs["attn-proj+residual"][k] + costs["fc2+residual"][k]) / 2
                                       for k in ("flop", "bytes")}
    return costs


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    path = Path(argv[0]) if argv else CONFIG_PATH
    try:
        cfg = load_config(path)
    except InputError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    s = shape(cfg)
    print(f"{path}: valid; {s.tokens} tokens of {s.patch_dim}, d_model {s.d}, {s.heads} heads of "
          f"{s.head_dim}, MLP {s.mlp}, {s.layers} layers, {n_params(s)} parameters, "
          f"{forward_flop(s) / 1e6:.1f} MFLOP per image")
    for why in kernel_support(s):
        print(f"note: our CUDA kernels cannot run it: {why}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
