"""Property test of analysis/nsys_csv.py: generated nsys-like kernel summaries (names with commas,
quotes and brackets; CRLF or LF; a byte-order mark; trailing blank lines) read back exactly, and
each kind of malformed table (a missing cell, an unquoted comma, a stray quote, a blank line
inside the table, a header alone) is one NsysCsvError line naming the file and the right line."""
from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from analysis.nsys_csv import NsysCsvError, read_kern_sum

HEADER = ["Time (%)", "Total Time (ns)", "Instances", "Avg (ns)", "Med (ns)", "Min (ns)",
          "Max (ns)", "StdDev (ns)", "Name"]
NUMERIC = ["time_pct", "total_ns", "instances", "avg_ns", "med_ns", "min_ns", "max_ns",
           "stddev_ns"]
# Characters real demangled names hold, commas and quotes included; no line breaks.
NAME_CHARS = st.sampled_from(list("abcxyz_019 ,\"'<>()*&:[]#-+."))
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow])


@st.composite
def tables(draw):
    n = draw(st.integers(1, 6))
    rows = []
    for _ in range(n):
        numbers = [draw(st.one_of(st.integers(0, 10**9).map(float),
                                  st.floats(0, 1e6, allow_nan=False).map(lambda x: round(x, 1))))
                   for _ in NUMERIC]
        name = draw(st.text(NAME_CHARS, min_size=1, max_size=30).filter(lambda t: t.strip()))
        rows.append((numbers, name))
    return {"rows": rows, "crlf": draw(st.booleans()), "bom": draw(st.booleans()),
            "trailing_blank": draw(st.integers(0, 2)),
            "thousands": draw(st.booleans())}


def cell(x: float, thousands: bool) -> str:
    if x.is_integer():
        return f"{int(x):,}" if thousands else str(int(x))
    return repr(x)


def serialise(t, cells=None) -> list[str]:
    """The table's lines, each a CSV row as csv.writer quotes it (minimal quoting)."""
    out = []
    for row in [HEADER] + (cells if cells is not None else
                           [[cell(x, t["thousands"]) for x in nums] + [name]
                            for nums, name in t["rows"]]):
        buf = io.StringIO()
        csv.writer(buf, lineterminator="").writerow(row)
        out.append(buf.getvalue())
    return out


def write(tmp_path, t, lines) -> "Path":
    end = "\r\n" if t["crlf"] else "\n"
    text = end.join(lines) + end + end * t["trailing_blank"]
    path = tmp_path / "gen_cuda_gpu_kern_sum.csv"
    path.write_bytes((b"\xef\xbb\xbf" if t["bom"] else b"") + text.encode("utf-8"))
    return path


def expect_error(path, line: int, words: str):
    with pytest.raises(NsysCsvError) as info:
        read_kern_sum(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(f"{path}: line {line}: "), msg
    assert words in msg, msg


@SETTINGS
@given(t=tables())
def test_well_formed_tables_read_back_exactly(tmp_path_factory, t):
    path = write(tmp_path_factory.mktemp("ok"), t, serialise(t))
    kern = read_kern_sum(path)
    assert len(kern) == len(t["rows"])
    for i, (nums, name) in enumerate(t["rows"]):
        assert kern.loc[i, "name"] == name.strip()
        for col, x in zip(NUMERIC, nums):
            assert math.isclose(kern.loc[i, col], x, rel_tol=1e-12), (col, x)


@SETTINGS
@given(t=tables(), data=st.data())
def test_malformed_tables_name_the_file_and_line(tmp_path_factory, t, data):
    cells = [[cell(x, False) for x in nums] + [name] for nums, name in t["rows"]]
    i = data.draw(st.integers(0, len(cells) - 1))
    kind = data.draw(st.sampled_from(["missing cell", "unquoted comma", "stray quote",
                                      "blank line", "header only"]))
    lines = serialise(t, cells)
    line = i + 2  # 1-based: the header is line 1
    if kind == "missing cell":
        del cells[i][data.draw(st.integers(0, len(NUMERIC) - 1))]
        lines, words = serialise(t, cells), "cells, the header (line 1) has 9"
    elif kind == "unquoted comma":
        lines[i + 1] = ",".join(cells[i][:-1]) + ",k_gemm(int, float)"
        words = "cells, the header (line 1) has 9"
    elif kind == "stray quote":
        j = data.draw(st.integers(0, len(NUMERIC) - 1))
        cells[i][j] = cells[i][j][:1] + '"' + cells[i][j][1:]
        lines[i + 1] = ",".join(cells[i][:-1]) + ",k"
        words = "quote"
    elif kind == "blank line":
        if i == 0:
            i = 1
            cells.append(list(cells[0]))
            lines = serialise(t, cells)
            line = 3
        lines.insert(i + 1, "")
        line, words = i + 2, "blank line inside the table"
    else:
        lines, line, words = lines[:1], 1, "a header without data rows"
    expect_error(write(tmp_path_factory.mktemp("bad"), t, lines), line, words)
