"""transformer.toml's two readers agree (spec/transformer.py and build/vit_forward's config.cpp): the
bounds table, the values, which keys a bad file names (one line each, exit 2), the weight layout, the
FLOP count and which shapes our kernels refuse."""
from __future__ import annotations

import json
import subprocess

import pytest

from spec.files import BUILD_DIR, ROOT
from spec.transformer import (BOUNDS, CONFIG_PATH, ConfigError, forward_flop, kernel_support, layout_table,
                              load_config, main as spec_main, n_params, shape, validate)
from spec.files import load_toml

BIN = BUILD_DIR / "vit_forward"


@pytest.fixture(autouse=True, scope="module")
def _vit_forward_up_to_date(built):
    """BIN (build/vit_forward), made up to date by tests/conftest.py's `built` before this module's tests."""
    built("vit_forward")


def _bin(*args):
    return subprocess.run([str(BIN), *map(str, args)], capture_output=True, text=True, timeout=60, cwd=ROOT)


def _with(tmp_path, **over) -> tuple[dict, object]:
    """A copy of transformer.toml with keys replaced (None: removed), as a dict and a file."""
    lines, seen = [], set()
    for line in CONFIG_PATH.read_text().splitlines():
        key = line.split("=")[0].strip() if "=" in line and not line.lstrip().startswith("#") else None
        if key in over:
            seen.add(key)
            if over[key] is not None:
                lines.append(f"{key} = {over[key]}")
            continue
        lines.append(line)
    lines += [f"{k} = {v}" for k, v in over.items() if k not in seen and v is not None]
    path = tmp_path / "t.toml"
    path.write_text("\n".join(lines) + "\n")
    return load_toml(path), path


def test_the_shipped_config_and_its_shape():
    c = load_config()
    s = shape(c)
    assert (s.tokens, s.patch_dim, s.d, s.heads, s.head_dim, s.mlp, s.layers, s.classes) == (49, 16, 128, 4, 32, 512, 2, 10)
    assert c["gelu"] == "erf" and s.eps == 1e-5 and kernel_support(s) == []
    assert n_params(s) == 406_538 and forward_flop(s) == 41_197_056


def test_the_two_bounds_tables_are_the_same():
    got = json.loads(_bin("limits").stdout)
    assert list(got) == list(BOUNDS)
    for key, b in BOUNDS.items():
        if b.kind == "str":
            assert got[key] == {"kind": "str", "choices": list(b.choices)}, key
        else:
            assert got[key]["kind"] == b.kind and got[key]["lo"] == b.lo and got[key]["hi"] == b.hi, key


def test_the_two_readers_read_the_same_values():
    assert json.loads(_bin("config").stdout) == load_config()


BAD = [
    ({"patch": "4.0"}, {"patch"}),
    ({"heads": 3}, {"heads"}),                          # 128 % 3: a relation
    ({"image_size": 30}, {"patch"}),                    # 30 % 4
    ({"gelu": '"tanh"'}, {"gelu"}),
    ({"lr": "2"}, {"lr"}),
    ({"seed": None}, {"seed"}),
    ({"epochs": 0, "batch": 7000, "optimizer": '"sgd"'}, {"epochs", "batch", "optimizer"}),
    ({"dropout": "0.1"}, {"dropout"}),
    ({"train_size": 100, "batch": 128}, {"batch"}),
]


@pytest.mark.parametrize("over, keys", BAD)
def test_bad_configs_name_each_bad_key_on_one_line_in_both_readers(tmp_path, over, keys):
    cfg, path = _with(tmp_path, **over)
    with pytest.raises(ConfigError) as exc:
        validate(cfg, str(path))
    py_lines = str(exc.value).splitlines()
    assert len(py_lines) == len(keys) and all(ln.startswith(f"error: {path}: ") for ln in py_lines)
    assert all(any(k in ln for ln in py_lines) for k in keys)
    res = _bin("config", "--config", path)
    assert res.returncode == 2 and res.stdout == ""
    c_lines = res.stderr.strip().splitlines()
    assert len(c_lines) == len(keys), res.stderr
    assert all(ln.startswith("vit_forward: error: ") and str(path) in ln for ln in c_lines)
    assert all(any(k in ln for ln in c_lines) for k in keys)


def test_the_spec_cli_exits_2_with_the_lines(tmp_path, capsys):
    _, path = _with(tmp_path, heads=40, gelu='"none"')
    assert spec_main([str(path)]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 2
    assert spec_main([str(CONFIG_PATH)]) == 0


def test_the_weight_layout_flop_and_kernel_support_agree(tmp_path):
    got = json.loads(_bin("layout").stdout)
    s = shape(load_config())
    assert got["layout"]["tensors"] == layout_table(s) and got["layout"]["n_params"] == n_params(s)
    assert got["forward_flop"] == forward_flop(s) and got["unsupported"] == ""
    _, path = _with(tmp_path, d_model=96, heads=4, patch=2)   # head dim 24, 196 tokens, d 96
    got = json.loads(_bin("layout", "--config", path).stdout)
    want = kernel_support(shape(load_config(path)))
    assert len(want) == 3 and got["unsupported"] == "; ".join(want)
    assert got["layout"]["tensors"] == layout_table(shape(load_config(path)))


def test_engine_epilogue_names_follow_the_enum():
    """spec/transformer.py names the engine's kernels by the value of `enum class Epilogue` in
    sm90_engine.h: its order there must be ENGINE_EPILOGUES'."""
    import re
    from spec.transformer import ENGINE_EPILOGUES
    src = (ROOT / "cuda/kernels/gemm/sm90_engine.h").read_text()
    body = re.search(r"enum class Epilogue \{(.*?)\};", src, re.S).group(1)
    names = re.findall(r"^\s*([A-Z]\w*),", re.sub(r"//[^\n]*", "", body), re.M)
    assert tuple(names) == ENGINE_EPILOGUES


def test_every_kernel_of_a_measured_forward_has_its_operation():
    """The kernel names of run T5's nsys summary (the 3xTF32 flow on the engine) each map to an
    operation with costs; an unknown name maps to None."""
    import csv
    from spec.transformer import kernel_op, load_config, op_costs, shape
    path = ROOT / "results/experiments/transformer_t5/device_run/profile/transformer_cuda_gpu_kern_sum.csv"
    names = [r["Name"] for r in csv.DictReader(path.open())]
    costs = op_costs(shape(load_config(ROOT / "transformer.toml")))
    ops = {n: kernel_op(n) for n in names}
    assert all(op in costs for op in ops.values()), ops
    assert {"qkv", "fc1+gelu", "attn-proj|fc2+residual", "layernorm", "attention"} <= set(ops.values())
    assert kernel_op("void other_kernel<(mlp::gemm::sm90::Epilogue)9>()") is None
