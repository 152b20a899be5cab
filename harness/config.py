"""Re-exports for the harness: the repository's paths and TOML reader (spec/files.py) and the
recipe reader (spec/recipe.py). New code imports spec directly."""
from __future__ import annotations

from spec.files import (BUILD_DIR, DATA_DIR, PROFILE_DIR, RECIPE_PATH, RESULTS_DIR,  # noqa: F401
                        ROOT, TEMPLATES_DIR, load_toml)
from spec.recipe import load_recipe  # noqa: F401
