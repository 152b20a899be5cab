"""RESULTS.md's precision table (issue 30, "Mixed precision with measured parity"): at the recipe
point, for each precision (fp32, tf32, bf16; spec.torch_variants.PRECISIONS) our fastest passing
path of that precision (run.json's `precision` of each path, fp32 where a run.json predates it)
beside PyTorch's fastest passing variant of the same precision (pytorch.json's), the speed-up,
and each one's deviation from the float64 reference of the same run (run.json
`reference_fp64`):

- loss: the final epoch's mean training loss over float64's of that epoch, less one (signed),
  and the mean over every epoch of |loss / float64 loss − 1| (the loss deviation plot's points);
- test accuracy, in percentage points less float64's: the last epoch, and the mean of the last
  LAST_N_ACCURACY epochs (case 7's measure);
- our path's one-epoch parity with the fused fp32 path (run.json `parity_vs_fused`, the gate's
  distance, and its `parity_limit`); PyTorch's variants have none.

"Fastest" is common.fastest's rule, the one every other RESULTS.md ratio uses (the passing
record of that precision with the lowest median); for pytorch.json it names the variant the
baseline's `fastest_by_precision` names (tests/test_report_precision.py holds them equal on the
committed tf32/bf16 run). A value that is not there (no path or variant of that precision, no
float64 curve, a file that predates the field) is None, and the template says "not measured".
"""
from __future__ import annotations

from analysis.fmt import finite
from analysis.sections import common as c
from analysis.sections.gate import last_n_accuracy, relative_losses
from spec.torch_variants import FP32, PRECISIONS, precision_of, precision_of_path


def _gap_pp(x, ref):
    return 100.0 * (x - ref) if finite(x) and finite(ref) else None


def deviation(rec: dict, ref: dict) -> dict:
    """One path's or variant's deviation from the float64 reference `ref` (module docstring)."""
    losses = rec.get("loss_per_epoch") or []
    rel = relative_losses(losses, ref.get("loss_per_epoch") or [])
    # the final epoch against float64's of the same epoch, only when float64 has that epoch
    final = rel[-1][1] if rel and rel[-1][0] == len(losses) else None
    return {"epochs": len(losses),
            "loss_final_rel": final,
            "loss_mean_abs_rel": (sum(abs(d) for _, d in rel) / len(rel)
                                  if rel and len(rel) == len(losses) else None),
            "acc_last_gap": _gap_pp(rec.get("test_accuracy"), ref.get("test_accuracy")),
            "acc_last5_gap": _gap_pp(last_n_accuracy(rec), last_n_accuracy(ref))}


def _side(name: str | None, rec: dict | None, ref: dict, candidates: list[str]) -> dict:
    """{"name", "median", "cv", the deviations, "parity_fused", "parity_limit", "candidates"}
    of the fastest record of a precision; name None (no record passed) keeps the candidates:
    the records of that precision that did not pass, or none at all."""
    out = {"name": name, "candidates": candidates, "median": None, "cv": None,
           "parity_fused": None, "parity_limit": None, "epochs": None, "loss_final_rel": None,
           "loss_mean_abs_rel": None, "acc_last_gap": None, "acc_last5_gap": None}
    if name is None or rec is None:
        return out
    return out | deviation(rec, ref) | {
        "median": c.passed_median(rec), "cv": rec.get("cv_pct"),
        "parity_fused": rec.get("parity_vs_fused"), "parity_limit": rec.get("parity_limit")}


def table(run: dict, torch: dict | None) -> dict:
    """{"rows": one per precision, "torch_run", "reference", "last_n", "labels"}. A row:
    {"precision", "label", "ours": _side, "theirs": _side, "speedup" (PyTorch's median over
    ours), "ratio" (ours over PyTorch's)}."""
    ref = run.get("reference_fp64") or {}
    paths = run["paths"]
    variants = (torch or {}).get("variants") or {}
    rows = []
    for prec in PRECISIONS:
        mine = {n: r for n, r in paths.items() if precision_of_path(r) == prec}
        theirs = {n: r for n, r in variants.items() if precision_of(r, torch) == prec}
        # common.fastest reads a record's "precision" (absent: fp32), as precision_of_path and
        # precision_of do for every file the schema lets through
        best, top = c.fastest(mine, prec), c.fastest(theirs, prec)
        ours = _side(best, paths.get(best), ref, list(mine))
        them = _side(top, variants.get(top), ref, list(theirs))
        ratio = (ours["median"] / them["median"] if finite(ours["median"])
                 and finite(them["median"]) and them["median"] > 0 else None)
        rows.append({"precision": prec, "label": c.PRECISION_LABELS[prec], "ours": ours,
                     "theirs": them, "ratio": ratio,
                     "speedup": 1.0 / ratio if ratio else None})
    return {"rows": rows, "torch_run": torch is not None,
            "reference": bool(ref.get("loss_per_epoch") or ref.get("test_accuracy_per_epoch")),
            "reference_epochs": len(ref.get("loss_per_epoch") or []),
            "fp32_label": c.PRECISION_LABELS[FP32],
            "last_n": c.LAST_N_ACCURACY, "words": [{"key": k, "label": c.PRECISION_LABELS[k],
                                                     "what": w} for k, w in PRECISIONS.items()]}


def plot_rows(tab: dict) -> list[dict]:
    """The accuracy plot's rows: per precision, a bar per side that has a last-N gap."""
    return [{"label": r["label"],
             "bars": [{"side": side, "name": r[key]["name"], "last5": r[key]["acc_last5_gap"],
                       "last": r[key]["acc_last_gap"]}
                      for side, key in (("ours", "ours"), ("PyTorch", "theirs"))
                      if r[key]["name"] is not None and finite(r[key]["acc_last5_gap"])]}
            for r in tab["rows"]]
