"""RESULTS.md's "GEMMs against cuBLAS" section (templates/results_gemm.md.j2): records from
results/gemm.json alone (harness/studies/gemm_bench.py writes it; docs/formats.md), and issue 38's
GEMM acceptance held against it. Without the file, {"present": False} and the lines, and the
template says what is not measured yet."""
from __future__ import annotations

# Issue 38's GEMM lines: ours at least LINE_SQUARE of cuBLAS at 4096³ in bf16 and tf32 (goal
# GOAL_SQUARE), and at least LINE_POINT at the 4,096 x 2,048 sweep point's GEMMs (goal GOAL_POINT),
# on an ACCEPTANCE_GPU. The point's products are the five of an MLP step at hidden 4,096, batch 2,048
# (harness/studies/gemm_shapes.py); the judged ones are those whose M, N and K are all at least
# POINT_MIN (the forward and dW1): the three head products have N or K = 10, not a GEMM that a
# tensor-core tile can fill, and are shown beside them unjudged.
SOURCE = "issue 38"
ACCEPTANCE_GPU = "H200"
LINE_SQUARE, GOAL_SQUARE = 70.0, 95.0
LINE_POINT, GOAL_POINT = 60.0, 90.0
SQUARE = (4096, 4096, 4096, "nn")
POINT = "h4096_b2048"
POINT_MIN = 64
JUDGED_PRECISIONS = ("tf32", "bf16")


def _row(r: dict) -> dict:
    ours = r.get("ours") or {}
    return {"M": r["M"], "N": r["N"], "K": r["K"], "layout": r["layout"], "precision": r["precision"],
            "sources": r.get("sources") or [], "kernel": ours.get("kernel"), "plan": ours.get("plan"),
            "status": ours.get("status"), "ours": r.get("ours_tflops"), "cublas": r.get("cublas_tflops"),
            "pct": r.get("pct_of_cublas"), "check": r.get("check_passed")}


def _judge(pct: float | None, line: float, goal: float) -> str:
    """"goal", "met", "missed", or "none" (no rate of ours or of cuBLAS)."""
    if pct is None:
        return "none"
    return "goal" if pct >= goal else "met" if pct >= line else "missed"


def section(doc: dict | None) -> dict:
    """Everything the template shows; {"present": False, "lines"} without results/gemm.json."""
    lines = {"source": SOURCE, "gpu": ACCEPTANCE_GPU, "square": LINE_SQUARE, "square_goal": GOAL_SQUARE,
             "point": LINE_POINT, "point_goal": GOAL_POINT}
    if doc is None:
        return {"present": False, "lines": lines}
    rows = [_row(r) for r in doc["rows"]]
    square = [r | {"judged": _judge(r["pct"], LINE_SQUARE, GOAL_SQUARE)} for r in rows
              if (r["M"], r["N"], r["K"], r["layout"]) == SQUARE and r["precision"] in JUDGED_PRECISIONS]
    at_point = [r for r in rows if any(s.startswith(f"sweep {POINT} ") for s in r["sources"])
                and not any("tail" in s for s in r["sources"] if s.startswith(f"sweep {POINT} "))]
    point = []
    for r in at_point:
        judged = r["precision"] in JUDGED_PRECISIONS and min(r["M"], r["N"], r["K"]) >= POINT_MIN
        point.append(r | {"judged": _judge(r["pct"], LINE_POINT, GOAL_POINT) if judged else None})
    point.sort(key=lambda r: (r["judged"] is None, r["layout"], r["M"], r["N"], r["K"], r["precision"]))
    judged = [r["judged"] for r in square + point if r["judged"] is not None]
    large = [r for r in rows if r["M"] * r["N"] * r["K"] >= 4096 ** 3]
    on_gpu = ACCEPTANCE_GPU in (doc.get("gpu") or "")
    return {"present": True, "lines": lines, "commit": doc["commit"], "short": doc["commit"][:7],
            "date": doc["date_utc"], "gpu": doc.get("gpu"), "on_acceptance_gpu": on_gpu,
            "passed": doc["passed"], "n_rows": len(rows),
            "n_failed_checks": sum(1 for r in rows if r["check"] is False),
            "square": square, "point": point, "large": sorted(large, key=lambda r: (r["M"], r["layout"], r["precision"])),
            "all_met": bool(judged) and on_gpu and all(j in ("met", "goal") for j in judged),
            "missed": [r for r in square + point if r["judged"] in ("missed", "none")]}
