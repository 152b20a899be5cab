"""What every PyTorch variant trains on (harness/baseline/pytorch_baseline.py): the initial
parameters and data order the CUDA binary wrote (loaded, never re-drawn), the data folder it read,
the Workload over them, and the recipe a run trains as run.json records it."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

from harness.baseline.variants import Workload
from spec import layout
from spec.files import RESULTS_DIR
from spec.recipe import BOUNDS, complete


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def load_inputs(results_dir: Path = RESULTS_DIR):
    """(init_params float32 (n_params,), order int32 (epochs, train_size)) written by the binary."""
    results_dir = Path(results_dir)
    out = []
    for name, dtype in (("init_params.npy", np.float32), ("order.npy", np.int32)):
        path = results_dir / name
        if not path.exists():
            raise SystemExit(f"error: {path}: file not found (run build/mlp_train first)")
        arr = np.load(path)
        if arr.dtype != dtype:
            raise SystemExit(f"error: {path}: dtype {arr.dtype}, expected {np.dtype(dtype)}")
        out.append(arr)
    init_params, order = out
    if init_params.ndim != 1 or order.ndim != 2:
        raise SystemExit(f"error: {results_dir}: init_params must be 1-D and order 2-D, got "
                         f"{init_params.shape} and {order.shape}")
    return init_params, order


def load_data(data_dir=None):
    """The dataset dict of harness.data.dataset.load_dataset() (imported lazily).

    data_dir: the folder the binary read with --data; by default data/ (the shipped subset). A
    folder holding the official 60,000-image split instead (data/full/, `invoke data --full`) is
    read the same way the binary reads it: its own SHA256SUMS checked, then its four IDX files.
    """
    from harness.data import dataset as ds
    if data_dir is None:
        return ds.load_dataset()
    data_dir = Path(data_dir)
    if (data_dir / ds.TRAIN_IMAGES).exists() or not (data_dir / ds.FULL_TRAIN_IMAGES).exists():
        return ds.load_dataset(data_dir)
    ds.verify_sha256(data_dir)
    out = {}
    for split, img, lab in (("train", ds.FULL_TRAIN_IMAGES, ds.FULL_TRAIN_LABELS),
                            ("test", ds.TEST_IMAGES, ds.TEST_LABELS)):
        images = ds.read_idx(data_dir / img, ndim=3)
        labels = ds.read_idx(data_dir / lab, ndim=1)
        if images.shape[0] != labels.shape[0]:
            raise ds.DataError(f"{data_dir / lab}: {labels.shape[0]} labels for"
                               f" {images.shape[0]} images")
        out[f"{split}_images"] = ds.to_float(images)
        out[f"{split}_labels"] = labels.astype(np.int32)
    return out


def workload_for(init_params: np.ndarray, order: np.ndarray, data: dict, recipe: dict, device: str):
    """What every variant trains on: (the Workload over `order`'s epochs, the float32 initial
    parameters, the shape they imply, a device buffer of one loss per step)."""
    init_flat = np.ascontiguousarray(init_params, dtype=np.float32)
    w = Workload(data, order, recipe["batch"], recipe["lr"], recipe["momentum"], device,
                 n_out=recipe.get("output_dim", 10))
    shape = layout.infer_shape(init_flat.shape[0], w.n_in, w.n_out)
    step_losses = torch.zeros(w.steps, dtype=torch.float32, device=w.device)
    return w, init_flat, shape, step_losses


def recipe_ran(recipe: dict, init_params: np.ndarray, order: np.ndarray, data: dict,
               epochs: int | None = None) -> dict:
    """The recipe a run of `epochs` epochs (default: every row of `order`) trains, in the shape
    run.json records it: `recipe`'s batch, lr, momentum, output_dim and seed, with the sizes the
    inputs fix (input_dim and test_size from the data, hidden_dim from init_params, train_size
    from order). The seed is the recipe's: the baseline draws nothing, it trains from the
    binary's init_params and order. Out-of-range epochs, parameters that fit no MLP or a value no
    recipe allows: SystemExit with one line."""
    rows, n = order.shape
    epochs = rows if epochs is None else int(epochs)
    if not 1 <= epochs <= rows:
        raise SystemExit(f"error: --epochs must be in 1..{rows} (the rows of order.npy), got {epochs}")
    n_in = int(np.asarray(data["train_images"]).shape[1])
    try:
        hidden = layout.infer_shape(init_params.shape[0], n_in, recipe["output_dim"]).hidden
    except ValueError as exc:
        raise SystemExit(f"error: init_params.npy: {exc}") from None
    ran = {k: recipe[k] for k in BOUNDS} | {
        "input_dim": n_in, "hidden_dim": hidden, "epochs": epochs, "train_size": int(n),
        "test_size": int(np.asarray(data["test_images"]).shape[0])}
    return complete(ran, "the baseline's recipe")
