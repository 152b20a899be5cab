"""The training recipe (recipe.toml) as the harness reads it.

The derived values the harness uses are added: steps_per_epoch and n_params (spec/layout.py)."""
from __future__ import annotations

from pathlib import Path

from spec import layout
from spec.files import RECIPE_PATH, load_toml


def load_recipe(path: Path = RECIPE_PATH) -> dict:
    """The training recipe as a dict, with steps_per_epoch and n_params added."""
    recipe = load_toml(path)
    n, b = recipe["train_size"], recipe["batch"]
    recipe["steps_per_epoch"] = (n + b - 1) // b
    recipe["n_params"] = layout.n_params(shape(recipe))
    return recipe


def shape(recipe: dict) -> layout.Shape:
    """The recipe's (input_dim, hidden_dim, output_dim)."""
    return layout.Shape(recipe["input_dim"], recipe["hidden_dim"], recipe["output_dim"])
