"""Readers for the CSV summaries that `nsys stats --format csv` writes (or prints).

Three reports are read, each into a pandas DataFrame with normalised columns:

    read_kern_sum  cuda_gpu_kern_sum (older: gpukernsum)
        time_pct, total_ns, instances, avg_ns, med_ns, min_ns, max_ns, stddev_ns, name
    read_api_sum   cuda_api_sum (older: cudaapisum)
        time_pct, total_ns, num_calls, avg_ns, med_ns, min_ns, max_ns, stddev_ns, name
    read_nvtx_sum  nvtx_sum (older: nvtxsum)
        time_pct, total_ns, instances, avg_ns, med_ns, min_ns, max_ns, stddev_ns, name,
        raw_name, style

What is read: a file or the captured stdout of `nsys stats` (notice and progress lines such as
"Generating SQLite file ..." or "Processing [...] with [...]..." before the header, blank lines,
several reports in one text: the table after the matching "Processing [...] with [.../R.py]"
line is preferred); quoted names with commas ("void gemm<(Op)0>(int, int, const float *)");
time units in the headers ("Total Time (ns)", "(us)", "(ms)", "(s)": every time column comes back
in ns; a header without a unit, as older releases wrote, is taken as ns, their documented
default); older releases' column names ("Time(%)", "Total Time", "Average", "Minimum",
"Maximum", "StdDev", "Calls", ...); a leading "Row#" column and trailing empty columns; numbers
with thousands separators. NVTX range names may carry a domain prefix ("mlp:profile-epoch",
":profile-epoch"): `name` drops it, `raw_name` keeps what nsys wrote.

Everything else is an error, raised as NsysCsvError (a ValueError) with one line naming the file (or
"<text>") and the line: no recognisable header for the report; a header without data rows; a row
whose cell count differs from the header's (a missing cell, an unquoted comma in a name); a stray
quote (RFC 4180: a quote only around a whole cell, doubled inside it); a blank line followed by
more rows of the table; a non-numeric number cell; a file that is not UTF-8. A UTF-8 byte-order
mark and CRLF line ends are accepted. Rows are split by the csv module (strict) and checked cell
by cell against the RFC 4180 grammar, then mapped to the columns above: nothing is dropped.
"""
from __future__ import annotations

import csv
import math
import re
from pathlib import Path

import pandas as pd

from spec.files import InputError, read_input

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
# "Processing [x.sqlite] with [.../cuda_api_sum.py]..." and "Executing 'cuda_api_sum' stats report":
# anchored, so a kernel name holding "with [" is never taken for one.
_REPORT_MARK_RE = re.compile(r"^\s*(?:Processing \[.*?\] with \[(?P<script>[^\]]*)\]"
                             r"|Executing '(?P<exec>[^']+)')")



class NsysCsvError(ValueError):
    """A malformed nsys stats CSV: one line naming the file and the line."""


class _Source:
    """The lines to parse and the label used in error messages."""

    def __init__(self, path_or_text, label: str | None = None):
        if isinstance(path_or_text, Path) or (isinstance(path_or_text, str)
                                              and "\n" not in path_or_text
                                              and "," not in path_or_text):
            path = Path(path_or_text)
            self.label = label or str(path)
            try:
                data = read_input(path)
            except InputError as exc:
                raise NsysCsvError(self.label + str(exc).removeprefix(f"error: {path}")) from None
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                line = data[:exc.start].count(b"\n") + 1
                raise NsysCsvError(f"{self.label}: line {line}: not UTF-8") from None
        else:
            self.label = label or "<text>"
            text = str(path_or_text)
        # str.splitlines would also split at \x0b, \x1c, U+2028 ...: only CR, LF and CRLF end a line.
        self.lines = re.split(r"\r\n|\r|\n", text.removeprefix("\ufeff"))

    def fail(self, index: int, what: str) -> NsysCsvError:
        return NsysCsvError(f"{self.label}: line {index + 1}: {what}")


# One RFC 4180 cell: quoted (quotes doubled inside) or unquoted (no quote at all).
_CELL = r'(?:"(?:[^"]|"")*"|[^",]*)'
_ROW_RE = re.compile(rf"^{_CELL}(?:,{_CELL})*$")


def _split(line: str) -> list[str] | None:
    """The cells of one CSV line, or None when it is not RFC 4180 (a stray quote)."""
    if not _ROW_RE.match(line):
        return None
    return next(csv.reader([line], strict=True))


def _parse_header(fields: list[str]) -> dict[int, tuple[str, float | None]] | None:
    """Map column index -> (canonical field, ns factor or None); None if not a summary header."""
    out: dict[int, tuple[str, float | None]] = {}
    for i, raw in enumerate(fields):
        cell = raw.strip()
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


def _is_header(fields: list[str] | None) -> bool:
    return bool(fields) and any(_kind_accepts(k, h, fields) for k in REPORT_NAMES
                                if (h := _parse_header(fields)))


def _strip_trailing_empty(fields: list[str]) -> list[str]:
    out = list(fields)
    while out and not out[-1].strip():
        out.pop()
    return out


def _find_table(src: _Source, kind: str) -> tuple[int, list[str], list[tuple[int, list[str]]]]:
    """(header line index, header cells, [(line index, cells)] of the data rows) of the table
    of this kind: the one after a matching "Processing [...] with [.../R.py]" line if any, else
    the first. A malformed row is an error, never the table's end."""
    lines = src.lines
    candidates = []  # (preferred, header line index)
    current_report = None
    for idx, line in enumerate(lines):
        report = _report_of_marker(line)
        if report is not None:
            current_report = report
            continue
        if "," not in line:
            continue
        fields = _split(line)
        if fields is None:
            continue
        header = _parse_header(fields)
        if header and _kind_accepts(kind, header, fields):
            candidates.append((current_report in REPORT_NAMES[kind], idx))
    if not candidates:
        wanted = "/".join(REPORT_NAMES[kind][:2])
        raise NsysCsvError(f"{src.label}: no recognisable nsys {wanted} CSV header")
    preferred = [idx for pref, idx in candidates if pref]
    start = preferred[0] if preferred else candidates[0][1]
    header = _strip_trailing_empty(_split(lines[start]))
    rows: list[tuple[int, list[str]]] = []
    idx = start + 1
    while idx < len(lines):
        line = lines[idx]
        if not line.strip():
            _check_after_blank(src, lines, idx, len(header))
            break
        if _report_of_marker(line) is not None:
            break  # the next report of a captured stdout
        fields = _split(line)
        if fields is None:
            raise src.fail(idx, "malformed CSV row (a quote that does not enclose a whole cell)")
        fields = _strip_trailing_empty(fields)
        if len(fields) != len(header):
            raise src.fail(idx, f"{len(fields)} cells, the header (line {start + 1}) has "
                                f"{len(header)}")
        rows.append((idx, fields))
        idx += 1
    if not rows:
        raise src.fail(start, "a header without data rows")
    return start, header, rows


def _check_after_blank(src: _Source, lines: list[str], blank: int, width: int) -> None:
    """After a blank line the table has ended: a further row of the same width (not a header or
    report marker) means rows were cut off by a blank line."""
    for idx in range(blank + 1, len(lines)):
        line = lines[idx]
        if not line.strip():
            continue
        if _report_of_marker(line) is not None or "," not in line:
            return
        fields = _split(line)
        if fields is not None and _is_header(fields):
            return
        if fields is None or len(_strip_trailing_empty(fields)) == width:
            raise src.fail(blank, f"a blank line inside the table (line {idx + 1} continues it)")
        return


def _number(text: str, src: _Source, idx: int, column: str) -> float:
    cell = text.strip().replace(",", "").replace("\u202f", "").replace("%", "")
    if cell in ("", "-", "N/A", "nan", "NaN"):
        return math.nan
    try:
        return float(cell)
    except ValueError:
        raise src.fail(idx, f"non-numeric value {text!r} in column {column!r}") from None


def _strip_domain(raw: str) -> str:
    """'mlp:profile-epoch' -> 'profile-epoch'; ':profile-epoch' -> 'profile-epoch'."""
    name = raw.strip()
    if ":" in name:
        name = name.rsplit(":", 1)[1].strip()
    return name


def _frame(src: _Source, kind: str) -> pd.DataFrame:
    _, header_fields, rows = _find_table(src, kind)
    header = _parse_header(header_fields)
    count_col = "num_calls" if kind == "api" else "instances"
    columns = NVTX_COLUMNS if kind == "nvtx" else (API_COLUMNS if kind == "api" else KERN_COLUMNS)
    data: dict[str, list] = {}
    for i, (field, factor) in header.items():
        column = header_fields[i].strip()
        cells = [(idx, fields[i]) for idx, fields in rows]
        if field in ("name", "range"):
            data["raw_name"] = [c.strip() for _, c in cells]
        elif field == "style":
            data["style"] = [c.strip() for _, c in cells]
        else:
            key = {"count": count_col, "time_pct": "time_pct"}.get(field, f"{field}_ns")
            scale = factor if factor is not None else 1.0
            data[key] = [_number(c, src, idx, column) * scale for idx, c in cells]
    n = len(rows)
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
