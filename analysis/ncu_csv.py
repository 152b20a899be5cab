"""Readers for Nsight Compute's CSV pages, as harness/studies/ncu_counters.py (`invoke gpu.ncu`)
writes them (`ncu --import R.ncu-rep --csv --page details` and `--page raw`).

details page: one row per (kernel launch ID, section, metric) with "Metric Unit" and "Metric Value"
              (values as ncu prints them: "2,335,294", "12.50").
raw page:     one row per kernel launch ID, one column per metric; the first data row holds the
              units. The warp-state sampling counters smsp__pcsamp_warps_issue_stalled_<reason>
              count the samples in which a warp was stalled for <reason> ("selected": it issued);
              the *_not_issued twins repeat them restricted to cycles without an issue and are left
              out so that each sample counts once.
"""
from __future__ import annotations

import io
from pathlib import Path

import pandas as pd

from spec.files import InputError, read_input

# (section, metric, label) of the details page that the report quotes, in its column order.
DETAIL_METRICS = (
    ("GPU Speed Of Light Throughput", "Duration", "duration"),
    ("GPU Speed Of Light Throughput", "Compute (SM) Throughput", "SM throughput"),
    ("GPU Speed Of Light Throughput", "Memory Throughput", "memory throughput"),
    ("GPU Speed Of Light Throughput", "L2 Cache Throughput", "L2 throughput"),
    ("GPU Speed Of Light Throughput", "DRAM Throughput", "DRAM throughput"),
    ("Memory Workload Analysis", "L2 Hit Rate", "L2 hit rate"),
    ("Launch Statistics", "Grid Size", "grid"),
    ("Launch Statistics", "Block Size", "block"),
    ("Launch Statistics", "Registers Per Thread", "registers/thread"),
    ("Occupancy", "Theoretical Occupancy", "theoretical occupancy"),
    ("Occupancy", "Achieved Occupancy", "achieved occupancy"),
    ("Warp State Statistics", "Warp Cycles Per Issued Instruction", "cycles per issued instruction"),
)
DETAIL_COLUMNS = ("ID", "Kernel Name", "Section Name", "Metric Name", "Metric Unit", "Metric Value")
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"


class NcuCsvError(ValueError):
    """A CSV that is not the ncu page it should be."""


def parse_number(text) -> float:
    """ncu's printed number ("2,335,294", "12.50") as a float; NaN when it is not a number."""
    try:
        return float(str(text).replace(",", ""))
    except ValueError:
        return float("nan")


def short_kernel_name(name: str) -> str:
    """'k_dW1(int, int, ...)' -> 'k_dW1' (ncu demangles without the namespace)."""
    return str(name).split("(", 1)[0].strip()


def _read(path: Path) -> bytes:
    """The file's bytes (spec.files.read_input: a folder, FIFO or device is an NcuCsvError)."""
    try:
        return read_input(path)
    except InputError as exc:
        raise NcuCsvError(f"{path}" + str(exc).removeprefix(f"error: {path}")) from None


def read_details(path: Path) -> list[dict]:
    """One dict per kernel launch, in ID order: {"id", "kernel" (short), "kernel_full", "metrics":
    {label: "value unit"}} for DETAIL_METRICS (a metric the page lacks is left out)."""
    try:
        df = pd.read_csv(io.BytesIO(_read(path)), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise NcuCsvError(f"{path}: not an ncu details CSV: {e}") from None
    missing = [c for c in DETAIL_COLUMNS if c not in df.columns]
    if missing:
        raise NcuCsvError(f"{path}: not an ncu details CSV (no column {', '.join(missing)})")
    wanted = {(s, m): label for s, m, label in DETAIL_METRICS}
    kernels: dict[int, dict] = {}
    for row in df.itertuples(index=False, name=None):
        rec = dict(zip(df.columns, row))
        try:
            kid = int(rec["ID"])
        except ValueError:
            raise NcuCsvError(f"{path}: kernel ID {rec['ID']!r} is not an integer") from None
        k = kernels.setdefault(kid, {"id": kid, "kernel": short_kernel_name(rec["Kernel Name"]),
                                     "kernel_full": rec["Kernel Name"], "metrics": {}})
        label = wanted.get((rec["Section Name"], rec["Metric Name"]))
        if label:
            unit = rec["Metric Unit"].strip()
            k["metrics"][label] = rec["Metric Value"] + (f" {unit}" if unit else "")
    return [kernels[i] for i in sorted(kernels)]


def read_stalls(path: Path) -> dict[int, list[tuple[str, float, float]]]:
    """{kernel launch ID: [(reason, samples, share of all samples), ...] largest first} from the
    raw page's smsp__pcsamp_warps_issue_stalled_<reason> counters."""
    try:
        df = pd.read_csv(io.BytesIO(_read(path)), dtype=str, keep_default_na=False, low_memory=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise NcuCsvError(f"{path}: not an ncu raw CSV: {e}") from None
    reasons = [c for c in df.columns if c.startswith(STALL_PREFIX) and not c.endswith("_not_issued")]
    if "ID" not in df.columns or not reasons:
        raise NcuCsvError(f"{path}: not an ncu raw CSV with warp-state samples "
                          f"(no ID column or no {STALL_PREFIX}* columns; was it collected with --set full?)")
    out: dict[int, list[tuple[str, float, float]]] = {}
    for _, row in df.iterrows():
        try:
            kid = int(row["ID"])
        except ValueError:
            continue  # the units row
        counts = [(c.removeprefix(STALL_PREFIX), parse_number(row[c])) for c in reasons]
        counts = [(r, n) for r, n in counts if n == n and n > 0]
        total = sum(n for _, n in counts)
        out[kid] = sorted(((r, n, n / total) for r, n in counts), key=lambda t: -t[1]) if total else []
    return out


def read_counters(details_csv: Path, raw_csv: Path | None) -> list[dict]:
    """read_details, each kernel with "stalls" from read_stalls (empty when there is no raw page)."""
    kernels = read_details(details_csv)
    stalls = read_stalls(raw_csv) if raw_csv is not None and Path(raw_csv).exists() else {}
    for k in kernels:
        k["stalls"] = stalls.get(k["id"], [])
    return kernels
