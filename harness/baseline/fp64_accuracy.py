"""The PyTorch baseline's accuracy against float64, on case 7's terms
(harness/baseline/pytorch_baseline.py): the last-N mean test accuracy each variant records, its gap
to the float64 reference of the same run (run.json's reference_fp64) or of the shipped
data/reference when the run is exactly its recipe, and the note of a variant past case 7's line."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from analysis.sections.common import LAST_N_ACCURACY
from harness.data.reference import REFERENCE_DIR
from spec import stats
from spec.files import DATA_DIR, ROOT

# Case 7's line (cuda/gate/cases.cu, case_train: limit 1 pp): a path whose last-5 mean is further
# than this from float64's fails the gate; a variant further off gets an accuracy_note.
ACCURACY_LINE_PP = 1.0
FP64_FROM_RUN = "run.json reference_fp64"
FP64_SHIPPED = "data/reference (shipped)"
# The recipe keys fp64_reference.json must state (cuda/gate/shipped_reference.cpp's recipe_json).
SHIPPED_RECIPE_KEYS = ("input_dim", "hidden_dim", "output_dim", "batch", "lr", "momentum",
                       "epochs", "seed", "train_size")


def last_mean(per_epoch) -> float | None:
    """test_accuracy_last5_mean: the mean of the last min(LAST_N_ACCURACY, epochs) values, as
    the binary's last5_mean (cuda/common/run_stats.cpp) computes it for run.json; None for none."""
    values = list(per_epoch or [])
    return stats.last_n_mean(values, min(LAST_N_ACCURACY, len(values))) if values else None


def gap_pp(last: float | None, fp64_last: float | None) -> float | None:
    """accuracy_gap_pp_vs_fp64: 100 × (variant's last-N mean − float64's), percentage points,
    signed (run.json's accuracy_gap_pp is case 7's |…|); None when either is unknown."""
    return None if last is None or fp64_last is None else 100.0 * (last - fp64_last)


def first_difference(per_epoch, fp64_per_epoch, test_size: int) -> int | None:
    """The first epoch (from 1) whose count of correct test images differs from float64's;
    None when every epoch both have agrees."""
    for e, (a, r) in enumerate(zip(per_epoch, fp64_per_epoch)):
        if round(a * test_size) != round(r * test_size):
            return e + 1
    return None


def accuracy_note(per_epoch, fp64_per_epoch, test_size: int, numerics: str = "") -> str | None:
    """The note of a variant whose |gap| is over ACCURACY_LINE_PP (None otherwise): its last-N
    mean against float64's, the gap, the first epoch it leaves float64's accuracies, and what its
    registry entry declares of its arithmetic (Variant.numerics), or that it declares nothing."""
    last, ref = last_mean(per_epoch), last_mean(fp64_per_epoch)
    gap = gap_pp(last, ref)
    if gap is None or abs(gap) <= ACCURACY_LINE_PP:
        return None
    n = min(LAST_N_ACCURACY, len(per_epoch))
    note = (f"last-{n} mean {100 * last:.2f}% against float64's {100 * ref:.2f}% "
            f"(gap {gap:+.2f} pp, over the {ACCURACY_LINE_PP:g} pp line)")
    first = first_difference(per_epoch, fp64_per_epoch, test_size)
    if first is not None:
        note += (f"; its test accuracy first differs from float64's at epoch {first} of "
                 f"{len(per_epoch)}")
    if numerics:
        note += f"; known difference in its arithmetic: {numerics}"
    else:
        note += "; no known mechanism (harness/baseline/registry.py declares no numerics for it)"
    return note


def accuracy_fields(entry: dict, fp64_per_epoch, test_size: int, numerics: str = "") -> dict:
    """accuracy_gap_pp_vs_fp64 (None without float64) and, over the line, accuracy_note, of a
    variant entry that trained (one with test_accuracy_per_epoch)."""
    per = entry["test_accuracy_per_epoch"]
    out = {"accuracy_gap_pp_vs_fp64": gap_pp(last_mean(per), last_mean(fp64_per_epoch))}
    note = accuracy_note(per, fp64_per_epoch, test_size, numerics) if fp64_per_epoch else None
    if note is not None:
        out["accuracy_note"] = note
    return out


def _shown(path) -> str:
    """A path as pytorch.json's fp64_source prints it: from the repository root when inside it."""
    try:
        return Path(path).resolve().relative_to(ROOT).as_posix()
    except (ValueError, OSError):
        return str(path)


def _accuracies(values, where: str) -> list[float]:
    """values as test accuracies (fractions in [0, 1]); ValueError naming `where` otherwise."""
    if not isinstance(values, list) or not all(isinstance(a, (int, float))
                                               and not isinstance(a, bool) and 0 <= a <= 1
                                               for a in values):
        raise ValueError(f"{where} is not a list of accuracies")
    return [float(a) for a in values]


def _from_run_json(path: Path, recipe: dict) -> tuple[list[float] | None, str]:
    """(float64's accuracies over recipe's epochs from run.json's reference_fp64, "") or (None,
    why not). The same run: the recipe it records must be this run's but for epochs, and its
    reference must cover this run's epochs (a shorter baseline run takes the first ones)."""
    shown = _shown(path)
    if not path.is_file():
        return None, f"no {shown}"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"{shown} unreadable ({type(exc).__name__})"
    ref = doc.get("reference_fp64") if isinstance(doc, dict) else None
    if not isinstance(ref, dict) or "test_accuracy_per_epoch" not in ref:
        return None, f"{shown} has no reference_fp64 with its test_accuracy_per_epoch"
    theirs = doc.get("recipe")
    if not isinstance(theirs, dict):
        return None, f"{shown} records no recipe to match this run's"
    differ = [f"{k} {theirs[k]}, this run's {v}" for k, v in recipe.items()
              if k not in ("epochs", "steps_per_epoch") and k in theirs and theirs[k] != v]
    if differ:
        return None, f"{shown} is of another recipe ({'; '.join(differ)})"
    try:
        per = _accuracies(ref["test_accuracy_per_epoch"],
                          f"{shown} reference_fp64.test_accuracy_per_epoch")
    except ValueError as exc:
        return None, str(exc)
    if len(per) < recipe["epochs"]:
        return None, (f"{shown}'s reference_fp64 has {len(per)} epochs, this run trains "
                      f"{recipe['epochs']}")
    return per[:recipe["epochs"]], ""


def _from_shipped(reference_dir: Path, recipe: dict, init_params: np.ndarray, order: np.ndarray,
                  data_dir) -> tuple[list[float] | None, str]:
    """(the shipped float64 accuracies, "") when this run is exactly data/reference's: the data
    folder data/, every recipe key fp64_reference.json states equal to this run's (epochs
    included), its SHA256SUMS holding and its init_params.npy and order.npy this run's; else
    (None, why not)."""
    from harness.data.dataset import DataError, verify_sha256
    shown = _shown(reference_dir)
    if data_dir is not None and Path(data_dir).resolve() != DATA_DIR.resolve():
        return None, f"{shown} was trained on {_shown(DATA_DIR)}/, this run read {_shown(data_dir)}"
    meta_path = reference_dir / "fp64_reference.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"{_shown(meta_path)} unreadable ({type(exc).__name__})"
    theirs = meta.get("recipe") if isinstance(meta, dict) else None
    if not isinstance(theirs, dict) or any(k not in theirs for k in SHIPPED_RECIPE_KEYS):
        return None, (f"{_shown(meta_path)} does not state its recipe "
                      f"({', '.join(SHIPPED_RECIPE_KEYS)})")
    differ = [f"{k} {v}, this run's {recipe.get(k)}" for k, v in theirs.items()
              if recipe.get(k) != v]
    if differ:
        return None, f"{shown} is of another recipe ({'; '.join(differ)})"
    try:
        verify_sha256(reference_dir, read=())
        init_ref = np.load(reference_dir / "init_params.npy")
        order_ref = np.load(reference_dir / "order.npy")
        per = np.load(reference_dir / "fp64_test_accuracy_per_epoch.npy")
    except (DataError, OSError, ValueError) as exc:
        return None, f"{shown}: {exc}"
    for name, ours, ref in (("init_params.npy", init_params, init_ref),
                            ("order.npy", order[:recipe["epochs"]], order_ref)):
        if ours.shape != ref.shape or not np.array_equal(ours, ref):
            return None, f"this run's {name} is not {shown}'s"
    try:
        per = _accuracies(per.tolist(), f"{shown}/fp64_test_accuracy_per_epoch.npy")
    except ValueError as exc:
        return None, str(exc)
    if len(per) != recipe["epochs"]:
        return None, (f"{shown}/fp64_test_accuracy_per_epoch.npy has {len(per)} epochs, not "
                      f"{recipe['epochs']}")
    return per, ""


def fp64_reference(results_dir: Path, recipe: dict, init_params: np.ndarray, order: np.ndarray,
                   data_dir=None,
                   reference_dir: Path = REFERENCE_DIR) -> tuple[list[float] | None, str]:
    """(float64's test accuracy per epoch over the epochs this run trains, pytorch.json's
    fp64_source): results_dir/run.json's reference_fp64 (FP64_FROM_RUN: the same run, its
    recipe this run's); else data/reference's (FP64_SHIPPED) when this run is exactly its recipe
    on its init and order; else (None, "none: " and why neither)."""
    per, why_run = _from_run_json(Path(results_dir) / "run.json", recipe)
    if per is not None:
        return per, FP64_FROM_RUN
    per, why_shipped = _from_shipped(Path(reference_dir), recipe, init_params, order, data_dir)
    if per is not None:
        return per, FP64_SHIPPED
    return None, f"none: {why_run}; {why_shipped}"
