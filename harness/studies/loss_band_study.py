"""How often does a correct float32 trainer leave a 2% band around the float64 loss curve?

Issue 4 asks the CUDA fused path's loss per epoch to stay within 2% of the float64 reference's
over the first 5 epochs. At lr 0.1 and momentum 0.9 the trajectory is chaotic: one pre-activation
that float32 rounds to the other side of the ReLU kink parts the two curves (docs/PERFLOG.md, "A
correctness scare that was rounding"). This study measures how often that happens to a trainer
with no bug at all: numpy against the same numpy code in float64, from each seed's own initial
weights and data order (written by build/mlp_host, exactly as mlp_train draws them), on the
shipped 6,000-image subset with the recipe's batch, lr and momentum. Two float32 trainers:

  float32              every operation in float32 (matrix products in the BLAS's float32 order);
  float32, f64 accum.  float32 parameters, activations and gradients, but every matrix product and
                       column sum accumulated in float64 and rounded once to float32 (bias added
                       before the rounding): what the CUDA stepwise kernels do (cuda/kernels/stepwise.cuh).

    python -m harness.studies.loss_band_study [--seeds 20] [--epochs 5] [--band 0.02]

CPU only (about a second per seed and epoch on two cores). Writes docs/loss_band_study.json and
docs/LOSS_BAND_STUDY.md atomically; prints progress per seed.
"""
from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from spec import files, validate
from spec.files import BUILD_DIR, DATA_DIR, ROOT, InputError, write_json, write_text
from spec.recipe import load_recipe
from harness.data import np_reference
from harness.data.dataset import load_dataset

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


# The trainers the study compares: (storage dtype, accumulation dtype) of each.
MODES = {"float32": (np.float32, np.float32), "float32_f64_accumulate": (np.float32, np.float64),
         "float64": (np.float64, np.float64)}
MODE_TITLES = {"float32": "float32", "float32_f64_accumulate": "float32, float64 accumulation"}


def train_losses(init: np.ndarray, orders: np.ndarray, X: np.ndarray, y: np.ndarray, recipe: dict,
                 dtype, accumulate=None) -> list[float]:
    """Mean training loss per sample of each epoch: harness/data/np_reference.py's trainer with the
    recipe's shape, batch, lr and momentum, values stored in `dtype`, matrix products and column
    sums accumulated in `accumulate` (default: `dtype`)."""
    shape = (recipe["input_dim"], recipe["hidden_dim"], recipe["output_dim"])
    return np_reference.train_losses(init, orders, X, y, recipe["batch"], recipe["lr"],
                                     recipe["momentum"], shape, dtype, accumulate)


def study(seeds: list[int], epochs: int, band: float, host: Path = BUILD_DIR / "mlp_host") -> dict:
    recipe = load_recipe()
    if not host.exists():
        raise SystemExit(f"error: {host} missing: run `invoke build` first")
    data = load_dataset(DATA_DIR)
    X, y = data["train_images"][:recipe["train_size"]], data["train_labels"][:recipe["train_size"]].astype(np.int64)
    rows = []
    for i, seed in enumerate(seeds, 1):
        init, orders = seed_inputs(recipe, seed, epochs, host)
        loss = {m: train_losses(init, orders, X, y, recipe, st, ac) for m, (st, ac) in MODES.items()}
        row = {"seed": seed, **{f"loss_{m}": l for m, l in loss.items()}}
        for m in MODE_TITLES:
            rel = [abs(a - b) / b for a, b in zip(loss[m], loss["float64"])]
            row[m] = {"relative_difference": rel, "max_relative_difference": max(rel),
                      "first_epoch_outside_band": next((e + 1 for e, r in enumerate(rel) if r > band), None)}
        rows.append(row)
        print(f"[study {i}/{len(seeds)}] seed {seed}: max |float32 - float64| / float64 over {epochs} epochs: "
              + ", ".join(f"{MODE_TITLES[m]} {row[m]['max_relative_difference']:.3%}" for m in MODE_TITLES),
              flush=True)
    outside = {m: sum(1 for r in rows if r[m]["first_epoch_outside_band"] is not None) for m in MODE_TITLES}
    return {"schema": 2, "what": "numpy float32 (two accumulations) vs numpy float64, same init and order per seed",
            "numpy": np.__version__, "cpu_count": os.cpu_count(),
            "recipe": {k: recipe[k] for k in RECIPE_KEYS}, "epochs": epochs, "band": band,
            "seeds": len(rows), "seeds_outside_band": outside, "rows": rows}


def pct(x: float) -> str:
    """A relative difference as a percentage; rounding-sized ones in scientific notation, so that
    none reads as an exact 0."""
    return f"{x:.3%}" if x >= 1e-5 else f"{x * 100:.1e}%"


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of a proportion k/n."""
    ph = k / n
    c = (ph + z * z / (2 * n)) / (1 + z * z / n)
    h = z * ((ph * (1 - ph) + z * z / (4 * n)) / n) ** 0.5 / (1 + z * z / n)
    return max(0.0, c - h), min(1.0, c + h)


def effect(doc: dict) -> str:
    """What float64 accumulation did to the count of seeds outside the band, in words."""
    k32, k64 = (doc["seeds_outside_band"][m] for m in MODE_TITLES)
    if k64 < k32:
        return f"lowers the count from {k32} to {k64} of {doc['seeds']} seeds; it does not remove it"
    return f"does not lower the count ({k32} with float32 accumulation, {k64} with float64)"


def render_md(doc: dict) -> str:
    b, e, n = doc["band"], doc["epochs"], doc["seeds"]
    lines = [
        "# Loss-band study: float32 against float64 with no bug in either",
        "",
        "<!-- Generated by `python -m harness.studies.loss_band_study` into docs/loss_band_study.json and",
        "     this file (CPU, numpy). Do not edit by hand. -->",
        "",
        f"Numpy trains the recipe's model in float64 and, with the same code, in two float32 ways, "
        f"from each seed's initial weights and data order (build/mlp_host, as mlp_train draws them), "
        f"for {e} epochs of the {doc['recipe']['train_size']:,}-image subset at batch "
        f"{doc['recipe']['batch']}, lr {doc['recipe']['lr']}, momentum {doc['recipe']['momentum']}: "
        f"**float32** (every operation in float32, the BLAS's summation order) and **float32, float64 "
        f"accumulation** (float32 parameters, activations and gradients; every matrix product and "
        f"column sum accumulated in float64 and rounded once, as the CUDA stepwise kernels do). None "
        f"has a defect; they differ only in rounding. Run with numpy {doc['numpy']} on "
        f"{doc['cpu_count']} CPU cores: float32 rounding follows the BLAS's summation order, so "
        f"another machine can give another count, not another conclusion.",
        "",
        f"| trainer | seeds leaving the {b:.0%} band within {e} epochs | share (95% interval) |",
        "|---|---|---|",
    ]
    for m, title in MODE_TITLES.items():
        k = doc["seeds_outside_band"][m]
        lo, hi = wilson(k, n)
        lines.append(f"| {title} | **{k} of {n}** | {k / n:.0%} ({lo:.0%}–{hi:.0%}) |")
    lines += [
        "",
        f"A per-epoch {b:.0%} band is therefore not a correctness check at this learning rate: whether "
        f"a correct float32 trainer stays inside it depends on where rounding lands near a ReLU kink. "
        f"Accumulating in float64 makes each product's rounding error one half-ulp of its result "
        f"instead of a sum over the inner dimension, but the parameters are still rounded to float32 "
        f"at every update: here it {effect(doc)}.",
        "",
        "| seed | " + " | ".join(f"{t}: max, first epoch outside" for t in MODE_TITLES.values()) + " |",
        "|---|" + "---|" * len(MODE_TITLES),
    ]
    for r in doc["rows"]:
        cells = [f"{pct(r[m]['max_relative_difference'])}, "
                 + (str(r[m]["first_epoch_outside_band"]) if r[m]["first_epoch_outside_band"] else "—")
                 for m in MODE_TITLES]
        lines.append(f"| {r['seed']} | " + " | ".join(cells) + " |")
    lines += ["", "Cells: the largest over the epochs of |loss float32 − loss float64| / loss float64, the "
              "mean training loss per sample of each epoch, and the first epoch outside the band (— none). "
              "Per-epoch values are in docs/loss_band_study.json.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = validate.ArgParser(prog="python -m harness.studies.loss_band_study", description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=lambda t: validate.count(t, "--seeds", 1, 1000), default=20,
                    help="how many seeds, 1-1000: the recipe's, then 1, 2, ...")
    ap.add_argument("--epochs", type=lambda t: validate.count(t, "--epochs", 1, 1000), default=5)
    ap.add_argument("--band", type=lambda t: validate.real(t, "--band", 0, 1), default=0.02,
                    help="the relative loss band, in (0, 1)")
    args = ap.parse_args(argv)
    if not 0 < args.band < 1:
        raise InputError(f"error: --band {args.band!r}: expected a number in (0, 1)")
    seeds = [load_recipe()["seed"]] + list(range(1, args.seeds))
    doc = study(seeds, args.epochs, args.band)
    write_json(OUT_JSON, doc)
    write_text(OUT_MD, render_md(doc))
    print(f"wrote {OUT_JSON.relative_to(ROOT)} and {OUT_MD.relative_to(ROOT)}: seeds outside the band: "
          + ", ".join(f"{t} {doc['seeds_outside_band'][m]} of {doc['seeds']}" for m, t in MODE_TITLES.items()))
    return 0


if __name__ == "__main__":
    files.run_main(main)
