"""The transformer's weights folder (docs/formats.md "Transformer weights"), written here and read by
build/vit_forward (cuda/transformer/weights.cpp) and by read_weights:

    DIR/params.npy      float32, 1-D, every tensor of spec/transformer.py's layout back to back
    DIR/manifest.json   {"format": "mlp-gate/vit-weights", "version": 1, "dtype": "float32",
                         "file": "params.npy", "n_params": N,
                         "files": [{"path": "params.npy", "bytes": B, "sha256": HEX}],
                         "config": {the model keys of transformer.toml},
                         "tensors": [{"name", "shape", "offset", "count", "sha256"}, ...],
                         "origin": {"kind": "trained" | "random", ...}}

Each tensor's SHA-256 is of its little-endian float32 bytes; each file's of its bytes. Both readers
check every hash before using anything: a changed byte is one line naming the file (WeightsError,
an InputError: exit 2)."""
from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np

from spec.files import InputError, write_all
from spec.transformer import MODEL_KEYS, Shape, layout_table

FORMAT, VERSION = "mlp-gate/vit-weights", 1
PARAMS, MANIFEST = "params.npy", "manifest.json"


class WeightsError(InputError):
    """A weights folder that is missing, changed or made for another model: one line."""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def npy_bytes(flat: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(flat, dtype="<f4"), allow_pickle=False)
    return buf.getvalue()


def manifest(flat: np.ndarray, s: Shape, config: dict, origin: dict, data: bytes) -> dict:
    tensors = []
    for row in layout_table(s):
        piece = np.ascontiguousarray(flat[row["offset"]:row["offset"] + row["count"]], dtype="<f4")
        tensors.append(row | {"sha256": _sha(piece.tobytes())})
    return {"format": FORMAT, "version": VERSION, "dtype": "float32", "file": PARAMS,
            "n_params": int(flat.size),
            "files": [{"path": PARAMS, "bytes": len(data), "sha256": _sha(data)}],
            "config": {k: config[k] for k in MODEL_KEYS}, "tensors": tensors, "origin": origin}


def write_weights(folder, flat: np.ndarray, s: Shape, config: dict, origin: dict) -> dict:
    """params.npy and manifest.json into `folder` together (temp files, then the renames); returns
    the manifest."""
    flat = np.asarray(flat, dtype=np.float32).reshape(-1)
    expected = layout_table(s)[-1]
    if flat.size != expected["offset"] + expected["count"]:
        raise ValueError(f"{flat.size} parameters, the layout holds {expected['offset'] + expected['count']}")
    data = npy_bytes(flat)
    doc = manifest(flat, s, config, origin, data)
    folder = Path(folder)
    write_all({folder / PARAMS: data, folder / MANIFEST: json.dumps(doc, indent=2) + "\n"})
    return doc


def read_weights(folder, s: Shape, config: dict) -> tuple[np.ndarray, dict]:
    """(flat float32 params, manifest) after every check the binary makes: format, each file's hash,
    the model keys against `config`, the tensor table against the layout, each tensor's hash."""
    folder = Path(folder)
    mpath = folder / MANIFEST
    try:
        doc = json.loads(mpath.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WeightsError(f"error: {mpath}: file not found") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise WeightsError(f"error: {mpath}: malformed JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
        raise WeightsError(f"error: {mpath}: not a {FORMAT} version {VERSION} manifest")
    blobs = {}
    for f in doc.get("files", []):
        path = folder / str(f.get("path"))
        if "/" in str(f.get("path")) or not path.is_file():
            raise WeightsError(f"error: {path}: file not found (listed in {mpath})")
        data = path.read_bytes()
        if _sha(data) != f.get("sha256"):
            raise WeightsError(f"error: {path}: SHA-256 {_sha(data)} does not match the manifest's "
                               f"{f.get('sha256')}: the file was changed after it was written")
        blobs[f["path"]] = data
    if doc.get("file") not in blobs:
        raise WeightsError(f"error: {mpath}: \"file\" is not among the hashed \"files\"")
    diffs = [f"{k} {doc.get('config', {}).get(k, 'absent')} vs {config[k]}" for k in MODEL_KEYS
             if doc.get("config", {}).get(k) != config[k]]
    if diffs:
        raise WeightsError(f"error: {mpath}: made for another model (manifest vs config): " + ", ".join(diffs))
    want = layout_table(s)
    got = [{k: t.get(k) for k in ("name", "shape", "offset", "count")} for t in doc.get("tensors", [])]
    if got != want:
        raise WeightsError(f"error: {mpath}: its tensor table is not spec/transformer.py's layout")
    flat = np.load(io.BytesIO(blobs[doc["file"]]), allow_pickle=False)
    if flat.dtype != np.dtype("<f4") or flat.shape != (want[-1]["offset"] + want[-1]["count"],):
        raise WeightsError(f"error: {folder / doc['file']}: not a flat float32 array of the layout's size")
    for t in doc["tensors"]:
        if _sha(flat[t["offset"]:t["offset"] + t["count"]].tobytes()) != t["sha256"]:
            raise WeightsError(f"error: {folder / doc['file']}: tensor {t['name']} does not match its SHA-256")
    return flat, doc


def random_flat(s: Shape, seed: int) -> np.ndarray:
    """Seeded random weights in the layout (numpy's generator; not the binary's --random draw):
    Linear weights U(±1/√in), biases and β U(±0.1), pos U(±0.5), LayerNorm γ 1 + U(±0.25)."""
    rng = np.random.default_rng(seed)
    parts = []
    for name, shape in ((r["name"], r["shape"]) for r in layout_table(s)):
        if len(shape) == 2 and name != "pos":
            parts.append(rng.uniform(-1, 1, shape) / np.sqrt(shape[1]))
        elif name == "pos":
            parts.append(rng.uniform(-0.5, 0.5, shape))
        elif name.endswith("weight"):                      # LayerNorm γ
            parts.append(1 + rng.uniform(-0.25, 0.25, shape))
        else:
            parts.append(rng.uniform(-0.1, 0.1, shape))
    return np.concatenate([np.asarray(p, dtype=np.float32).reshape(-1) for p in parts])
