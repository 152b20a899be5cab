"""The report's formatters: a number (or None) in, the text a table cell shows out ("—" for a
missing value). Templates use them as jinja filters (FILTERS); nothing else formats numbers."""
from __future__ import annotations

import math


def missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def finite(x) -> bool:
    return is_number(x) and math.isfinite(x)


def ms(x, digits: int = 3) -> str:
    return "—" if missing(x) else f"{float(x):.{digits}f}"


def ns_as_ms(x) -> str:
    return "—" if missing(x) else f"{float(x) / 1e6:.3f}"


def ns_as_us(x) -> str:
    return "—" if missing(x) else f"{float(x) / 1e3:.2f}"


def pct(x, digits: int = 1) -> str:
    """x is a fraction (0.25 -> '25.0%')."""
    return "—" if missing(x) else f"{100.0 * float(x):.{digits}f}%"


def cv(x, digits: int = 2) -> str:
    """cv_pct is already a percentage."""
    return "—" if missing(x) else f"{float(x):.{digits}f}%"


def ratio(x) -> str:
    return "—" if missing(x) else f"{float(x):.2f}×"


def ratio3(x) -> str:
    """Three significant digits, for ratios set against limits like 0.01×."""
    return "—" if missing(x) else f"{float(x):.3g}×"


def g(x) -> str:
    return "—" if missing(x) else f"{float(x):.3g}"


def num(x) -> str:
    """A CSV cell: integers as integers with thousands separators, else one decimal."""
    if missing(x):
        return "—"
    x = float(x)
    return f"{int(x):,}" if x.is_integer() else f"{x:,.1f}"


def integer(x) -> str:
    return "—" if missing(x) else f"{int(round(float(x))):,}"


def us(x) -> str:
    return f"{float(x):.2f}" if finite(x) else "—"


def mib(x) -> str:
    return f"{float(x) / (1 << 20):,.2f}" if finite(x) else "—"


def speedup(x) -> str:
    return f"{float(x):.2f}×" if finite(x) else "—"


def rel_pct(rel) -> str:
    """A relative difference (fraction) as a signed percentage, small ones in e-notation."""
    if missing(rel):
        return "—"
    p = 100.0 * float(rel)
    if p == 0:
        return "0%"
    return f"{p:+.2f}%" if abs(p) >= 0.01 else f"{p:+.2g}%"


def abs_pct(rel) -> str:
    """A relative size (fraction, >= 0: a mean absolute deviation) as a percentage, small ones
    in e-notation; rel_pct without the sign."""
    if missing(rel):
        return "—"
    p = 100.0 * abs(float(rel))
    if p == 0:
        return "0%"
    return f"{p:.2f}%" if p >= 0.01 else f"{p:.2g}%"


def signed(x, digits: int = 2) -> str:
    return "—" if missing(x) else f"{float(x):+.{digits}f}"


def fixed(x, digits: int = 2) -> str:
    return "—" if missing(x) else f"{float(x):.{digits}f}"


def sig3(x) -> str:
    """Three significant digits without e-notation ('994', '35.6', '0.480'); '0' for zero."""
    if missing(x):
        return "—"
    x = float(x)
    if x == 0:
        return "0"
    digits = min(6, max(0, 2 - math.floor(math.log10(abs(x)))))
    return f"{x:,.{digits}f}"


def frac3(x) -> str:
    """A fraction as a percentage of three significant digits (0.0199 -> '1.99%')."""
    return "—" if missing(x) else f"{sig3(100.0 * float(x))}%"


def launches(lps, steps: int) -> str:
    """launches_per_step in words; a fraction below 1 as launches per epoch (the persistent
    path's 1/47 -> '1 per epoch (1/47 per step)')."""
    if missing(lps):
        return "—"
    lps = float(lps)
    if 0 < lps < 1 and steps:
        per_epoch = lps * steps
        k = round(per_epoch)
        if k >= 1 and abs(per_epoch - k) <= 1e-6 * k:
            return f"{k} per epoch ({k}/{steps} per step)"
        return f"{lps:.4g} per step"
    return f"{int(lps)} per step" if lps.is_integer() else f"{lps:.4g} per step"


def code(text) -> str:
    """Inline code for a table cell (kernel names hold '*', '<', '|')."""
    text = str(text).replace("|", "\\|").replace("`", "'")
    return f"`{text}`"


def cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def first_line(text, limit: int | None = None) -> str:
    lines = str(text or "").strip().splitlines()
    line = lines[0] if lines else ""
    if limit and len(line) > limit:
        line = line[:limit - 3] + "..."
    return line


def cuda_version(v) -> str:
    """13000 -> '13.0' (cudaRuntimeGetVersion / cudaDriverGetVersion encoding)."""
    if not isinstance(v, int):
        return "—" if v is None else str(v)
    return f"{v // 1000}.{(v % 1000) // 10}"


def names(items) -> str:
    """`a`, `b` (or 'none')."""
    return ", ".join(f"`{n}`" for n in items) or "none"


def plural(n, one: str = "", many: str = "s") -> str:
    return one if n == 1 else many


FILTERS = {f.__name__: f for f in (
    ms, ns_as_ms, ns_as_us, pct, cv, ratio, ratio3, g, num, integer, us, mib, speedup, rel_pct, abs_pct,
    signed, fixed, sig3, frac3, launches, code, cell, first_line, cuda_version, names, plural)}
