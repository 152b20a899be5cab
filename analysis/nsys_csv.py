"""Readers for the CSV summaries that `nsys stats --format csv` writes (or prints).

Three reports are read, each into a pandas DataFrame with normalised columns:

    read_kern_sum  cuda_gpu_kern_sum (older: gpukernsum)
        time_pct, total_ns, instances, avg_ns, med_ns, min_ns, max_ns, stddev_ns, name
    read_api_sum   cuda_api_sum (older: cudaapisum)
        time_pct, total_ns, num_calls, avg_ns, med_ns, min_ns, max_ns, stddev_ns, name
    read_nvtx_sum  nvtx_sum (older: nvtxsum)
        time_pct, total_ns, instances, avg_ns, med_ns, min_ns, max_ns, stddev_ns, name,
        raw_name, style

What survives: a file or the captured stdout of `nsys stats` (notice and progress lines such as
"Generating SQLite file ..." or "Processing [...] with [...]..." before the header, blank lines,
several reports in one text: the table after the matching "Processing [...] with [.../R.py]"
line is preferred); quoted names with commas ("void gemm<(Op)0>(int, int, const float *)");
time units in the headers ("Total Time (ns)", "(us)", "(ms)", "(s)": every time column comes back
in ns; a header without a unit, as older releases wrote, is taken as ns, their documented
default); older releases' column names ("Time(%)", "Total Time", "Average", "Minimum",
"Maximum", "StdDev", "Calls", ...); a leading "Row#" column and trailing empty columns; numbers
with thousands separators. NVTX range names may carry a domain prefix ("mlp:profile-epoch",
":profile-epoch"): `name` drops it, `raw_name` keeps what nsys wrote.

A text without a recognisable header for the report raises ValueError with one line that names the
file (or "<text>").
"""
from __future__ import annotations

import csv
import io
import math
import re
from pathlib import Path
from typing import Iterable

import pandas as pd

# Column order of the returned frames.
KERN_COLUMNS = ["time_pct", "total_ns", "instances", "avg_ns", "med_ns", "min_ns", "max_ns",
                "stddev_ns", "name"]
API_COLUMNS = ["time_pct", "total_ns", "num_calls", "avg_ns", "med_ns", "min_ns", "max_ns",
               "stddev_ns", "name"]
NVTX_COLUMNS = KERN_COLUMNS + ["raw_name", "style"]

# Report names, current (2022.x and later) and older, as they appear in "Processing [...] with
# [.../NAME.py]" lines and "Executing 'NAME' stats report" lines.
REPORT_NAMES = {
    "kern": ("cuda_gpu_kern_sum", "gpukernsum"),
    "api": ("cuda_api_sum", "cudaapisum"),
    "nvtx": ("nvtx_sum", "nvtxsum", "nvtx_pushpop_sum", "nvtxppsum"),
}

_UNIT_NS = {"ns": 1.0, "nsec": 1.0, "us": 1e3, "usec": 1e3, "\u00b5s": 1e3, "\u03bcs": 1e3,
            "ms": 1e6, "msec": 1e6, "s": 1e9, "sec": 1e9}

# Base header name (lower case, spaces removed) -> canonical field. "count" is instances for
# the kernel and NVTX summaries and num_calls for the API summary.
_BASE = {
    "time": "time_pct", "time(%)": "time_pct", "timepct": "time_pct",
    "totaltime": "total", "total": "total",
    "instances": "count", "numcalls": "count", "calls": "count", "count": "count",
    "avg": "avg", "average": "avg", "mean": "avg",
    "med": "med", "median": "med",
    "min": "min", "minimum": "min",
    "max": "max", "maximum": "max",
    "stddev": "stddev", "stdev": "stddev", "std": "stddev",
    "name": "name", "range": "range",
    "style": "style",
}
_TIME_FIELDS = ("total", "avg", "med", "min", "max", "stddev")

_HEADER_RE = re.compile(r"^(?P<base>.*?)\s*(?:\((?P<unit>[^()]*)\))?\s*$")
_REPORT_MARK_RE = re.compile(r"with \[(?P<script>[^\]]*)\]|Executing '(?P<exec>[^']+)'")


class _Source:
    """The text to parse and the label used in error messages."""

    def __init__(self, path_or_text, label: str | None = None):
        if isinstance(path_or_text, Path) or (isinstance(path_or_text, str)
                                              and "\n" not in path_or_text
                                              and "," not in path_or_text):
            path = Path(path_or_text)
            self.label = label or str(path)
            try:
                self.text = path.read_text(encoding="utf-8", errors="replace")
            except FileNotFoundError:
                raise ValueError(f"{self.label}: file not found") from None
        else:
            self.label = label or "<text>"
            self.text = str(path_or_text)


def _parse_header(fields: list[str]) -> dict[int, tuple[str, float | None]] | None:
    """Map column index -> (canonical field, ns factor or None); None if not a summary header."""
    out: dict[int, tuple[str, float | None]] = {}
    for i, raw in enumerate(fields):
        cell = raw.strip().lstrip("\ufeff")
        if not cell or cell.lower().startswith("row#"):
            continue
        compact = cell.lower().replace(" ", "")
        if compact in ("time(%)", "time%"):
            out[i] = ("time_pct", None)
            continue
        m = _HEADER_RE.match(cell)
        base = m.group("base").lower().replace(" ", "") if m else compact
        unit = (m.group("unit") or "").strip() if m else ""
        field = _BASE.get(base)
        if field is None:
            continue
        if field in _TIME_FIELDS:
            if unit and unit.lower() not in _UNIT_NS and unit not in _UNIT_NS:
                return None  # a time column in a unit we do not know: not a header we read
            factor = _UNIT_NS.get(unit, _UNIT_NS.get(unit.lower(), 1.0)) if unit else 1.0
            out[i] = (field, factor)
        elif field == "time_pct":
            out[i] = ("time_pct", None)
        else:
            out[i] = (field, None)
    return out


def _kind_accepts(kind: str, header: dict[int, tuple[str, float | None]], fields: list[str]) -> bool:
    names = {f for f, _ in header.values()}
    if "total" not in names or "count" not in names:
        return False
    count_headers = {fields[i].strip().lower().replace(" ", "") for i, (f, _) in header.items()
                     if f == "count"}
    if kind == "nvtx":
        return "range" in names or ("name" in names and "style" in names)
    if "name" not in names or "range" in names or "style" in names:
        return False
    if kind == "kern":
        return bool(count_headers & {"instances", "count"})
    if kind == "api":
        return bool(count_headers & {"numcalls", "calls"})
    raise AssertionError(kind)


def _report_of_marker(line: str) -> str | None:
    m = _REPORT_MARK_RE.search(line)
    if not m:
        return None
    if m.group("exec"):
        return m.group("exec")
    script = m.group("script").replace("\\", "/").rsplit("/", 1)[-1]
    return script[:-3] if script.endswith(".py") else script


def _split(line: str) -> list[str]:
    return next(csv.reader([line], skipinitialspace=False))


def _find_table(src: _Source, kind: str) -> tuple[list[str], list[list[str]]]:
    """The header fields and data rows of the best-matching table in the text."""
    lines = src.text.splitlines()
    candidates = []  # (preferred, header line index)
    current_report = None
    for idx, line in enumerate(lines):
        report = _report_of_marker(line)
        if report is not None:
            current_report = report
            continue
        if "," not in line:
            continue
        try:
            fields = _split(line)
        except csv.Error:
            continue
        header = _parse_header(fields)
        if header and _kind_accepts(kind, header, fields):
            candidates.append((current_report in REPORT_NAMES[kind], idx))
    if not candidates:
        wanted = "/".join(REPORT_NAMES[kind][:2])
        raise ValueError(f"{src.label}: no recognisable nsys {wanted} CSV header")
    preferred = [idx for pref, idx in candidates if pref]
    start = preferred[0] if preferred else candidates[0][1]
    header_fields = _split(lines[start])
    width = len(_strip_trailing_empty(header_fields))
    rows = []
    for line in lines[start + 1:]:
        if not line.strip():
            break
        try:
            fields = _strip_trailing_empty(_split(line))
        except csv.Error:
            break
        if len(fields) != width:
            break
        rows.append(fields)
    return header_fields, rows


def _strip_trailing_empty(fields: list[str]) -> list[str]:
    out = list(fields)
    while out and not out[-1].strip():
        out.pop()
    return out


def _number(text: str, src: _Source, column: str) -> float:
    cell = text.strip().replace(",", "").replace("\u202f", "").replace("%", "")
    if cell in ("", "-", "N/A", "nan", "NaN"):
        return math.nan
    try:
        return float(cell)
    except ValueError:
        raise ValueError(f"{src.label}: non-numeric value {text!r} in column {column!r}") from None


def _strip_domain(raw: str) -> str:
    """'mlp:profile-epoch' -> 'profile-epoch'; ':profile-epoch' -> 'profile-epoch'."""
    name = raw.strip()
    if ":" in name:
        name = name.rsplit(":", 1)[1].strip()
    return name


def _frame(src: _Source, kind: str) -> pd.DataFrame:
    header_fields, rows = _find_table(src, kind)
    header = _parse_header(header_fields)
    assert header is not None
    # The block of CSV text of this table, read by pandas (every cell as a string).
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    width = len(_strip_trailing_empty(header_fields))
    writer.writerow([f"c{i}" for i in range(width)])
    writer.writerows(rows)
    buf.seek(0)
    raw = pd.read_csv(buf, dtype=str, keep_default_na=False)
    count_col = "num_calls" if kind == "api" else "instances"
    data: dict[str, list] = {}
    for i, (field, factor) in header.items():
        if i >= width:
            continue
        cells = raw[f"c{i}"].tolist() if len(raw) else []
        column = header_fields[i].strip()
        if field in ("name", "range"):
            data["raw_name"] = [c.strip() for c in cells]
        elif field == "style":
            data["style"] = [c.strip() for c in cells]
        elif field == "count":
            data[count_col] = [_number(c, src, column) for c in cells]
        elif field == "time_pct":
            data["time_pct"] = [_number(c, src, column) for c in cells]
        else:
            data[f"{field}_ns"] = [_number(c, src, column) * factor for c in cells]
    n = len(raw)
    columns = NVTX_COLUMNS if kind == "nvtx" else (API_COLUMNS if kind == "api" else KERN_COLUMNS)
    raw_names = data.pop("raw_name", [""] * n)
    if kind == "nvtx":
        data["name"] = [_strip_domain(r) for r in raw_names]
        data["raw_name"] = raw_names
        data.setdefault("style", [""] * n)
    else:
        data["name"] = raw_names
    for col in columns:
        data.setdefault(col, [math.nan] * n)
    frame = pd.DataFrame({col: data[col] for col in columns})
    for col in columns:
        if col not in ("name", "raw_name", "style"):
            frame[col] = frame[col].astype("float64")
    frame.attrs["source"] = src.label
    return frame


def read_kern_sum(path_or_text, label: str | None = None) -> pd.DataFrame:
    """cuda_gpu_kern_sum (gpukernsum) as a DataFrame; `label` names the input in errors."""
    return _frame(_Source(path_or_text, label), "kern")


def read_api_sum(path_or_text, label: str | None = None) -> pd.DataFrame:
    """cuda_api_sum (cudaapisum) as a DataFrame; `label` names the input in errors."""
    return _frame(_Source(path_or_text, label), "api")


def read_nvtx_sum(path_or_text, label: str | None = None) -> pd.DataFrame:
    """nvtx_sum (nvtxsum) as a DataFrame; `label` names the input in errors."""
    return _frame(_Source(path_or_text, label), "nvtx")


# Longest template-argument text kept in a label; longer ones are cut with "...".
LABEL_TEMPLATE_MAX = 40
_QUALIFIER_RE = re.compile(r"\b[A-Za-z_]\w*::")


def _split_signature(text: str) -> str:
    """The name part of a demangled signature: the text before the first '(' outside '<...>'
    (template arguments may hold parentheses: "k<(mlp::Col)0>(int)")."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "<":
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
        elif ch == "(" and depth == 0 and i > 0:
            return text[:i]
    return text


def _last_component(text: str) -> str:
    """'mlp::k_colsum<(mlp::Col)0>' -> 'k_colsum<(mlp::Col)0>': the last '::' part outside '<>'."""
    depth, start = 0, 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "<":
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
        elif depth == 0 and text.startswith("::", i):
            start = i + 2
            i += 1
        i += 1
    return text[start:]


def kernel_base_name(name: str) -> str:
    """A short label for one kernel row: the function name without namespace, return type or
    parameter list, with its template arguments kept (namespace qualifiers dropped inside them),
    so two instances of one template stay apart:

        'mlp::k_dW1(int, int, const float *, float *)'                 -> 'k_dW1'
        'void mlp::k_colsum<(mlp::Col)1>(int, int, const float *, ...)' -> 'k_colsum<(Col)1>'

    Template arguments longer than LABEL_TEMPLATE_MAX characters are cut with '...'."""
    text = name.strip()
    if text.startswith("void "):
        text = text[5:]
    text = _last_component(_split_signature(text).strip()).strip()
    lt = text.find("<")
    if lt > 0 and text.endswith(">"):
        args = _QUALIFIER_RE.sub("", text[lt + 1:-1]).strip()
        if len(args) > LABEL_TEMPLATE_MAX:
            args = args[:LABEL_TEMPLATE_MAX - 3].rstrip() + "..."
        text = f"{text[:lt]}<{args}>"
    return text or name.strip()


def kernel_labels(names: Iterable[str]) -> list[str]:
    """kernel_base_name of each name, made unique: where two rows still share a label (overloads,
    or template arguments cut to the same text), each gets ' #1', ' #2', ... in the given order."""
    names = list(names)
    labels = [kernel_base_name(n) for n in names]
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        if counts[label] > 1:
            seen[label] = seen.get(label, 0) + 1
            label = f"{label} #{seen[label]}"
        out.append(label)
    return out


def report_csv_names(path_name: str, reports: Iterable[str]) -> list[str]:
    """File names that `nsys stats --output <dir>/<path_name>` writes for these reports."""
    return [f"{path_name}_{r}.csv" for r in reports]
