"""How often does a correct float32 trainer leave a 2% band around the float64 loss curve?

Issue 4 asks the CUDA fused path's loss per epoch to stay within 2% of the float64 reference's
over the first 5 epochs. At lr 0.1 and momentum 0.9 the trajectory is chaotic: one pre-activation
that float32 rounds to the other side of the ReLU kink parts the two curves (docs/PERFLOG.md, "A
correctness scare that was rounding"). This study measures how often that happens to a trainer
with no bug at all: numpy in float32 against the same numpy code in float64, from each seed's own
initial weights and data order (written by build/mlp_host, exactly as mlp_train draws them), on
the shipped 6,000-image subset with the recipe's batch, lr and momentum.

    python -m harness.loss_band_study [--seeds 20] [--epochs 5] [--band 0.02]

CPU only (about a second per seed and epoch on two cores). Writes docs/loss_band_study.json and
docs/LOSS_BAND_STUDY.md atomically; prints progress per seed.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from harness import atomic
from harness.config import BUILD_DIR, DATA_DIR, ROOT, load_recipe
from harness.dataset import load_dataset

OUT_JSON = ROOT / "docs" / "loss_band_study.json"
OUT_MD = ROOT / "docs" / "LOSS_BAND_STUDY.md"
RECIPE_KEYS = ("input_dim", "hidden_dim", "output_dim", "batch", "lr", "momentum", "epochs", "seed",
               "train_size", "test_size")


def seed_inputs(recipe: dict, seed: int, epochs: int, host: Path) -> tuple[np.ndarray, np.ndarray]:
    """(initial parameters float32, orders int32 [epochs, n]) for `seed`, from build/mlp_host."""
    with tempfile.TemporaryDirectory() as tmp:
        r = Path(tmp) / "recipe.toml"
        r.write_text("".join(f"{k} = {recipe[k] if k != 'seed' else seed}\n" for k in RECIPE_KEYS))
        init, order = Path(tmp) / "init.npy", Path(tmp) / "order.npy"
        for cmd, out in (("init", init), ("order", order)):
            extra = ["--epochs", str(epochs)] if cmd == "order" else []
            res = subprocess.run([str(host), cmd, "--recipe", str(r), "--out", str(out), *extra],
                                 capture_output=True, text=True)
            if res.returncode != 0:
                raise SystemExit(f"error: mlp_host {cmd}: {res.stderr.strip() or res.stdout.strip()}")
        return np.load(init), np.load(order)


def train_losses(init: np.ndarray, orders: np.ndarray, X: np.ndarray, y: np.ndarray, recipe: dict,
                 dtype) -> list[float]:
    """Mean training loss per sample of each epoch; every operation in `dtype`. The equations are
    the CUDA kernels' (cuda/submission.h): H = ReLU(X·W1 + b1), Z = H·W2 + b2, stable softmax
    cross-entropy averaged over the batch, v = μv − lr·g, p += v on one flat buffer."""
    I, Hd, O = recipe["input_dim"], recipe["hidden_dim"], recipe["output_dim"]
    B, lr, mu = recipe["batch"], dtype(recipe["lr"]), dtype(recipe["momentum"])
    p = init.astype(dtype).copy()
    v = np.zeros_like(p)
    n1, n2, n3 = I * Hd, I * Hd + Hd, I * Hd + Hd + Hd * O
    W1, b1, W2, b2 = (p[:n1].reshape(I, Hd), p[n1:n2], p[n2:n3].reshape(Hd, O), p[n3:])  # views of p
    Xd = X.astype(dtype)
    losses = []
    for order in orders:
        total = 0.0
        for s in range(0, len(order), B):
            idx = order[s:s + B]
            xb, yb, nb = Xd[idx], y[idx], len(idx)
            H = np.maximum(xb @ W1 + b1, 0)
            Z = H @ W2 + b2
            Zs = Z - Z.max(axis=1, keepdims=True)
            E = np.exp(Zs)
            S = E.sum(axis=1, keepdims=True)
            total += float(np.sum(np.log(S[:, 0]) - Zs[np.arange(nb), yb], dtype=np.float64))
            dZ = E / S
            dZ[np.arange(nb), yb] -= 1
            dZ /= dtype(nb)
            dH = (dZ @ W2.T) * (H > 0)
            g = np.concatenate([(xb.T @ dH).ravel(), dH.sum(axis=0), (H.T @ dZ).ravel(), dZ.sum(axis=0)])
            v *= mu
            v -= lr * g
            p += v
        losses.append(total / len(orders[0]))
    return losses


def study(seeds: list[int], epochs: int, band: float, host: Path = BUILD_DIR / "mlp_host") -> dict:
    recipe = load_recipe()
    if not host.exists():
        raise SystemExit(f"error: {host} missing: run `invoke build` first")
    data = load_dataset(DATA_DIR)
    X, y = data["train_images"][:recipe["train_size"]], data["train_labels"][:recipe["train_size"]].astype(np.int64)
    rows = []
    for i, seed in enumerate(seeds, 1):
        init, orders = seed_inputs(recipe, seed, epochs, host)
        l32 = train_losses(init, orders, X, y, recipe, np.float32)
        l64 = train_losses(init, orders, X, y, recipe, np.float64)
        rel = [abs(a - b) / b for a, b in zip(l32, l64)]
        first_out = next((e + 1 for e, r in enumerate(rel) if r > band), None)
        rows.append({"seed": seed, "loss_float32": l32, "loss_float64": l64, "relative_difference": rel,
                     "max_relative_difference": max(rel), "first_epoch_outside_band": first_out})
        print(f"[study {i}/{len(seeds)}] seed {seed}: max |float32 - float64| / float64 over {epochs} epochs "
              f"= {max(rel):.3%}{'' if first_out is None else f', outside {band:.0%} from epoch {first_out}'}",
              flush=True)
    outside = sum(1 for r in rows if r["first_epoch_outside_band"] is not None)
    return {"schema": 1, "what": "numpy float32 vs numpy float64, same init and order per seed",
            "numpy": np.__version__, "cpu_count": os.cpu_count(),
            "recipe": {k: recipe[k] for k in RECIPE_KEYS}, "epochs": epochs, "band": band,
            "seeds": len(rows), "seeds_outside_band": outside, "rows": rows}


def pct(x: float) -> str:
    """A relative difference as a percentage; rounding-sized ones in scientific notation, so that
    none reads as an exact 0."""
    return f"{x:.3%}" if x >= 1e-5 else f"{x * 100:.1e}%"


def render_md(doc: dict) -> str:
    b, e = doc["band"], doc["epochs"]
    lines = [
        "# Loss-band study: float32 against float64 with no bug in either",
        "",
        "<!-- Generated by `python -m harness.loss_band_study` into docs/loss_band_study.json and",
        "     this file (CPU, numpy). Do not edit by hand. -->",
        "",
        f"Numpy trains the recipe's model in float32 and, with the same code, in float64, from each "
        f"seed's initial weights and data order (build/mlp_host, as mlp_train draws them), for {e} "
        f"epochs of the {doc['recipe']['train_size']:,}-image subset at batch {doc['recipe']['batch']}, "
        f"lr {doc['recipe']['lr']}, momentum {doc['recipe']['momentum']}. Neither has a defect; "
        f"they differ only in rounding. Run with numpy {doc['numpy']} on {doc['cpu_count']} CPU cores: "
        f"float32 rounding follows the BLAS's summation order, so another machine can give another "
        f"count, not another conclusion.",
        "",
        f"**{doc['seeds_outside_band']} of {doc['seeds']} seeds** leave a {b:.0%} band around the "
        f"float64 loss per epoch within {e} epochs. A per-epoch {b:.0%} band is therefore not a "
        f"correctness check at this learning rate: whether a correct float32 trainer stays inside "
        f"it depends on where rounding lands near a ReLU kink.",
        "",
        "| seed | " + " | ".join(f"epoch {k + 1}" for k in range(e)) + " | max | first epoch outside |",
        "|---|" + "---|" * e + "---|---|",
    ]
    for r in doc["rows"]:
        cells = [pct(d) for d in r["relative_difference"]]
        lines.append(f"| {r['seed']} | " + " | ".join(cells) + f" | {pct(r['max_relative_difference'])} | "
                     + (str(r["first_epoch_outside_band"]) if r["first_epoch_outside_band"] else "—") + " |")
    lines += ["", "Cells: |loss float32 − loss float64| / loss float64, the mean training loss per "
              "sample of the epoch.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m harness.loss_band_study", description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=20, help="how many seeds: the recipe's, then 1, 2, ...")
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--band", type=float, default=0.02)
    args = ap.parse_args(argv)
    if args.seeds < 1 or args.epochs < 1 or not 0 < args.band < 1:
        raise SystemExit("error: --seeds and --epochs must be >= 1 and --band in (0, 1)")
    seeds = [load_recipe()["seed"]] + list(range(1, args.seeds))
    doc = study(seeds, args.epochs, args.band)
    atomic.write_json(OUT_JSON, doc)
    atomic.write_text(OUT_MD, render_md(doc))
    print(f"wrote {OUT_JSON.relative_to(ROOT)} and {OUT_MD.relative_to(ROOT)}: "
          f"{doc['seeds_outside_band']} of {doc['seeds']} seeds outside the band")
    return 0


if __name__ == "__main__":
    sys.exit(main())
