"""Paths of the repository and the one recipe file, read with tomllib (tomli before 3.11)."""
from __future__ import annotations

import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised only on 3.10 and older
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = ROOT / "data"
BUILD_DIR = ROOT / "build"
RESULTS_DIR = ROOT / "results"
PROFILE_DIR = ROOT / "profile"
TEMPLATES_DIR = ROOT / "templates"
RECIPE_PATH = ROOT / "recipe.toml"


def load_toml(path: Path) -> dict:
    """Parse one TOML file; a missing or malformed file raises SystemExit with one line."""
    try:
        with open(path, "rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        raise SystemExit(f"error: {path}: file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise SystemExit(f"error: {path}: malformed TOML: {exc}") from None


def load_recipe(path: Path = RECIPE_PATH) -> dict:
    """The training recipe (recipe.toml) as a dict, with the derived step count added."""
    recipe = load_toml(path)
    n, b = recipe["train_size"], recipe["batch"]
    recipe["steps_per_epoch"] = (n + b - 1) // b
    recipe["n_params"] = (recipe["input_dim"] * recipe["hidden_dim"] + recipe["hidden_dim"]
                          + recipe["hidden_dim"] * recipe["output_dim"] + recipe["output_dim"])
    return recipe
