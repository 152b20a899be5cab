"""The brief PyTorch training that gives the transformer's weights meaning (transformer.toml's seed,
epochs, batch, optimizer, lr, weight_decay, train_size), then its weights folder (weights.py).

AdamW (betas 0.9/0.999, eps 1e-8) with a linear warm-up over the first epoch and a cosine decay to
zero over the rest; softmax cross-entropy; each epoch's order a torch.randperm of a generator seeded
once; the initial weights from torch.manual_seed(seed) (PyTorch's default Linear/LayerNorm inits,
pos N(0, 0.02²)). TF32 is off, so the float32 products are float32's.

    python -m harness.transformer.train [--device cuda] [--epochs N] [--train-size N]
                                        [--eval-size N] [--out results/transformer/weights]
"""
from __future__ import annotations

import argparse
import datetime as dt
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from harness.data.dataset import load_dataset
from harness.transformer.model import ViT, to_flat
from harness.transformer.weights import write_weights
from spec import provenance
from spec.files import DATA_DIR, RESULTS_DIR
from spec.transformer import CONFIG_PATH, load_config, shape

WEIGHTS_DIR = RESULTS_DIR / "transformer" / "weights"


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def set_float32_exact() -> None:
    """No TF32 in matrix products or convolutions: float32 means float32 (training and timing)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


@torch.no_grad()
def accuracy(model, x: torch.Tensor, y: torch.Tensor, batch: int = 1000) -> float:
    model.eval()
    correct = 0
    for i in range(0, x.shape[0], batch):
        correct += int((model(x[i:i + batch]).argmax(1) == y[i:i + batch]).sum())
    model.train()
    return correct / x.shape[0]


def train(config: dict, device: str = "cuda", epochs: int | None = None, train_size: int | None = None,
          eval_size: int | None = None, data_dir=DATA_DIR, out_dir=WEIGHTS_DIR) -> dict:
    """Train, write the weights folder, return its manifest's origin record."""
    set_float32_exact()
    s = shape(config)
    epochs = int(epochs or config["epochs"])
    n = int(train_size or config["train_size"])
    n_eval = int(eval_size or config["test_size"])
    batch = min(int(config["batch"]), n)
    data = load_dataset(data_dir)
    x = torch.from_numpy(data["train_images"][:n]).to(device)
    y = torch.from_numpy(data["train_labels"][:n].astype(np.int64)).to(device)
    xt = torch.from_numpy(data["test_images"][:n_eval]).to(device)
    yt = torch.from_numpy(data["test_labels"][:n_eval].astype(np.int64)).to(device)

    torch.manual_seed(config["seed"])
    gen = torch.Generator().manual_seed(config["seed"])
    model = ViT(s).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=config["lr"], betas=(0.9, 0.999), eps=1e-8,
                            weight_decay=config["weight_decay"])
    steps = (n + batch - 1) // batch
    total = epochs * steps

    def lr_factor(step: int) -> float:
        if step < steps:
            return (step + 1) / steps
        return 0.5 * (1 + math.cos(math.pi * (step - steps) / max(1, total - steps)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    t0 = time.perf_counter()
    losses, accs = [], []
    for epoch in range(epochs):
        order = torch.randperm(n, generator=gen).to(device)
        total_loss = torch.zeros((), device=device)
        for i in range(steps):
            idx = order[i * batch:(i + 1) * batch]
            loss = F.cross_entropy(model(x[idx]), y[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            total_loss += loss.detach() * idx.numel()
        losses.append(float(total_loss) / n)
        accs.append(accuracy(model, xt, yt))
        log(f"transformer train: epoch {epoch + 1}/{epochs}  loss {losses[-1]:.4f}  "
            f"test accuracy {100 * accs[-1]:.2f}% ({n_eval} images)  {time.perf_counter() - t0:.1f} s")
    origin = {"kind": "trained", "seed": config["seed"], "epochs": epochs, "batch": batch,
              "optimizer": config["optimizer"], "lr": config["lr"], "weight_decay": config["weight_decay"],
              "schedule": "linear warm-up over the first epoch, then cosine to zero",
              "train_size": n, "eval_size": n_eval, "device": str(device),
              "gpu": torch.cuda.get_device_name() if str(device).startswith("cuda") else None,
              "torch_version": torch.__version__, "loss_per_epoch": losses,
              "test_accuracy_per_epoch": accs, "train_seconds": time.perf_counter() - t0,
              "commit": provenance.git_commit(),
              "date_utc": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    write_weights(out_dir, to_flat(model), s, config, origin)
    log(f"transformer train: wrote {Path(out_dir)}/params.npy and manifest.json")
    return origin


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", default=str(CONFIG_PATH))
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--epochs", type=int)
    ap.add_argument("--train-size", type=int)
    ap.add_argument("--eval-size", type=int)
    ap.add_argument("--data", default=str(DATA_DIR))
    ap.add_argument("--out", default=str(WEIGHTS_DIR))
    a = ap.parse_args(argv)
    train(load_config(a.config), a.device, a.epochs, a.train_size, a.eval_size, a.data, a.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
