"""Every input of the reports, read and checked (spec/schema.py) before anything is written, and
never changed: the loaders return what the files hold.

A missing required input, a malformed JSON, TOML or CSV file, or a field of the wrong type is an
InputError: one line naming the file (and the field), which the CLIs print before exiting 2. So is
a pytorch.json whose recipe differs from run.json's: the report does not compare two halves that
trained different recipes (a pytorch.json that records none, written before it did, is compared,
and the report says that the recipe is unverified).
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from analysis.ncu_csv import NcuCsvError, read_counters
from analysis.nsys_csv import read_api_sum, read_kern_sum, read_nvtx_sum
from spec import files, verdict
from spec.verdict import Verdict
from spec.recipe import differing_keys
from spec.schema import SchemaError, validate

# The optional inputs, relative to the results folder, and the profile CSVs of a path.
FILES = {"run": "run.json", "pytorch": "pytorch.json", "phases": "persistent_phases.json",
         "sanitize": "sanitize.json", "ceilings": "ceilings.json", "sweep": "sweep.json",
         "full_split": "full60k/sweep.json", "nvidia_smi": "logs/nvidia-smi.csv",
         "profile_log": "logs/profile.log", "sanitize_log": "logs/sanitize.log", "ncu": "ncu",
         "torch_memory": "torch_memory.json", "torch_batch": "torch_batch_steps.json",
         "torch_linear": "torch_linear_kernels.json",
         "stationary_phases": "stationary_phases.json",
         "ours_batch": "ours_batch_steps.json", "ours_linear": "ours_linear_kernels.json",
         "transformer": "transformer.json", "gate_bench": "gate_bench.json", "gemm": "gemm.json"}
SCHEMA_OF = {"run": "run", "pytorch": "pytorch", "phases": "persistent_phases",
             "sanitize": "sanitize", "ceilings": "ceilings", "sweep": "sweep",
             "full_split": "sweep", "torch_memory": "torch_memory",
             "torch_batch": "torch_batch_steps", "torch_linear": "torch_linear_kernels",
             "stationary_phases": "stationary_phases", "ours_batch": "ours_batch_steps",
             "ours_linear": "ours_linear_kernels", "gate_bench": "gate_bench", "gemm": "gemm"}
PROFILE_REPORTS = (("kern", "cuda_gpu_kern_sum", read_kern_sum),
                   ("api", "cuda_api_sum", read_api_sum),
                   ("nvtx", "nvtx_sum", read_nvtx_sum))
TORCH_TRACE_FILE = "pytorch_eager_trace.json"  # written by `invoke profile` (torch.profiler)
NCU_FIRST = ("persistent", "fused")  # the order of the counter tables; other names follow, sorted


class InputError(files.InputError):
    """A bad input: one line naming the file. The CLIs print it and exit 2 (spec.files.InputError,
    which write_all raises too, is what they catch)."""

    def __init__(self, path, what: str | None = None):
        super().__init__(f"error: {path}: {what}" if what is not None else f"error: {path}")


def _refuse_constant(name: str):
    raise ValueError(f"{name} is no JSON number")


def read_text(path, required: bool = True) -> str | None:
    """The UTF-8 text of the input `path` (spec.files.read_input: a folder, FIFO or device where
    the file should be is an InputError); None when it is absent and not required."""
    path = Path(path)
    if not required and not path.exists() and not path.is_symlink():
        return None
    try:
        return files.read_input_text(path)
    except files.InputError as exc:
        raise InputError(str(exc).removeprefix("error: ")) from None


def load_json(path, schema: str | None = None, required: bool = True):
    """The parsed JSON object of `path`, checked against spec.schema `schema`; None when absent
    and not required. NaN and Infinity (which Python's json would read) are malformed JSON."""
    path = Path(path)
    text = read_text(path, required)
    if text is None:
        return None
    try:
        doc = json.loads(text, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, ValueError) as exc:
        raise InputError(path, f"malformed JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError(path, "malformed JSON: the top level is not an object")
    if schema is not None:
        try:
            validate(doc, schema, path)
        except SchemaError as exc:
            raise InputError(exc) from None
    return doc


def load_toml(path) -> dict:
    """spec.files.load_toml's table, its one-line error raised as this module's InputError."""
    try:
        return files.load_toml(path)
    except files.InputError as exc:
        raise InputError(str(exc).removeprefix("error: ")) from None


def load_nvidia_smi(path) -> dict | None:
    """The `nvidia-smi --query-gpu=... --format=csv` text: {"header": [...], "rows": [[...]]}."""
    path = Path(path)
    text = read_text(path, required=False)
    if text is None:
        return None
    try:
        table = [row for row in csv.reader(text.splitlines(), skipinitialspace=True, strict=True)
                 if row]
    except csv.Error as exc:
        raise InputError(path, f"malformed CSV: {exc}") from None
    if len(table) < 2:
        raise InputError(path, "malformed CSV: no header and data row")
    header, rows = [c.strip() for c in table[0]], table[1:]
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise InputError(path, f"malformed CSV: row {i + 2} has {len(row)} cells, the "
                                   f"header {len(header)}")
    return {"header": header, "rows": [[c.strip() for c in row] for row in rows]}


def read_log(path) -> str | None:
    """A log's text (undecodable bytes replaced), None when absent; a special file is an InputError."""
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        return None
    try:
        return files.read_input(path).decode("utf-8", errors="replace")
    except files.InputError as exc:
        raise InputError(str(exc).removeprefix("error: ")) from None


def _strings(entries, path, what: str, keys) -> None:
    for e in entries:
        if not isinstance(e, dict):
            raise InputError(path, f"a [[{what}]] entry is not a table")
        for key in keys:
            if not isinstance(e.get(key), str):
                raise InputError(path, f"{what} {e.get('id', '?')!r}: missing string key {key!r}")


def load_predictions(path, measures) -> list[dict]:
    entries = load_toml(path).get("prediction")
    if not isinstance(entries, list) or not entries:
        raise InputError(path, "no [[prediction]] entries")
    _strings(entries, path, "prediction", ("id", "question", "measure", "predicted", "reason"))
    for e in entries:
        if e["measure"] not in measures:
            raise InputError(path, f"prediction {e['id']!r}: unknown measure {e['measure']!r}")
    return entries


def load_gaps(path) -> list[dict]:
    entries = load_toml(path).get("gap")
    if not isinstance(entries, list):
        raise InputError(path, "no [[gap]] entries")
    _strings(entries, path, "gap", ("id", "title", "status", "detail"))
    for e in entries:
        if e["status"] not in ("open", "closed"):
            raise InputError(path, f"gap {e['id']!r}: status must be 'open' or 'closed'")
    return entries


def profile_files(name: str, profile_dir) -> dict[str, Path]:
    """{kind: path} of the three CSVs of one path."""
    return {kind: Path(profile_dir) / f"{name}_{report}.csv" for kind, report, _ in PROFILE_REPORTS}


def load_profiles(path_names, profile_dir) -> dict[str, dict]:
    """{path: {"kern", "api", "nvtx": DataFrame, "files": {kind: file name}}} for every path with
    profile CSVs; a path with some but not all three is an error, and so is a malformed CSV."""
    out = {}
    for name in path_names:
        csvs = profile_files(name, profile_dir)
        if not any(f.exists() or f.is_symlink() for f in csvs.values()):
            continue
        entry = {"files": {k: f.name for k, f in csvs.items()}}
        for kind, _, reader in PROFILE_REPORTS:
            f = csvs[kind]
            if not f.exists():
                raise InputError(f, f"file not found (the other CSVs of path {name!r} exist)")
            try:
                entry[kind] = reader(f)
            except ValueError as exc:
                raise InputError(exc) from None
        out[name] = entry
    return out


def load_ncu(ncu_dir) -> list[dict]:
    """[{name, details, raw (path or None), kernels}] of every <name>_details.csv in ncu_dir."""
    details = sorted(Path(ncu_dir).glob("*_details.csv"))
    names = [d.name.removesuffix("_details.csv") for d in details]
    names = [n for n in NCU_FIRST if n in names] + sorted(n for n in names if n not in NCU_FIRST)
    out = []
    for name in names:
        d, r = Path(ncu_dir) / f"{name}_details.csv", Path(ncu_dir) / f"{name}_raw.csv"
        try:
            kernels = read_counters(d, r)
        except NcuCsvError as exc:
            raise InputError(d, str(exc).removeprefix(f"{d}: ")) from None
        out.append({"name": name, "details": d, "raw": r if r.exists() else None,
                    "kernels": kernels})
    return out


def load_torch_trace(path):
    """(kernel frame, runtime frame) of the torch.profiler trace, or None when absent."""
    from analysis.torch_trace import RUNTIME_CAT, read_trace, summarise
    path = Path(path)
    if not path.exists():
        return None
    try:
        trace = read_trace(path)
    except SystemExit as exc:
        raise InputError(str(exc.code).removeprefix("error: ")) from None
    return summarise(trace), summarise(trace, RUNTIME_CAT)


def check_same_recipe(run: dict, torch: dict | None, run_path, torch_path) -> None:
    """InputError naming every differing key when pytorch.json records a recipe other than
    run.json's; nothing to check without pytorch.json or without its recipe."""
    if torch is None or "recipe" not in torch:
        return
    ours, theirs = run["recipe"], torch["recipe"]
    keys = differing_keys(ours, theirs)
    if keys:
        raise InputError(torch_path, f"recipe differs from {run_path}'s: " + ", ".join(
            f"{k} {theirs.get(k, 'absent')} vs {ours.get(k, 'absent')}" for k in keys)
            + " (the report compares only halves that trained the same recipe)")


@dataclass
class Inputs:
    """Everything RESULTS.md and PROFILES.md are rendered from; None where an optional input is
    absent. `paths` holds each file's path (for the names the report shows)."""
    run: dict
    pytorch: dict | None
    phases: dict | None
    sanitize: dict | None
    ceilings: dict | None
    sweep: dict | None
    full_split: dict | None
    nvidia_smi: dict | None
    profile_log: str | None
    sanitize_log: str | None
    profiles: dict
    torch_trace: tuple | None
    ncu: list
    predictions: list
    gaps: list
    paths: dict = field(default_factory=dict)
    torch_memory: dict | None = None
    torch_batch: dict | None = None
    torch_linear: dict | None = None
    stationary_phases: dict | None = None
    ours_batch: dict | None = None
    ours_linear: dict | None = None
    transformer: dict | None = None
    gate_bench: dict | None = None   # the course benchmark (issue 40), schema 1
    gemm: dict | None = None         # our GEMMs against cuBLAS (issue 38), schema 1
    sanitize_reruns: list = field(default_factory=list)   # [(path, doc, committed_in)] of sanitize_*.json
    verdict: Verdict | None = None   # the gate's verdict of run.json, from its one owner (spec/verdict.py)


def load_inputs(results_dir, profile_dir, predictions_path, gaps_path, measures) -> Inputs:
    """Read and check every input; raises InputError on the first bad one."""
    results_dir, profile_dir = Path(results_dir), Path(profile_dir)
    paths = {k: results_dir / v for k, v in FILES.items()}
    paths |= {"profile_dir": profile_dir, "torch_trace": profile_dir / TORCH_TRACE_FILE}
    docs = {k: load_json(paths[k], SCHEMA_OF[k], required=(k == "run")) for k in SCHEMA_OF}
    check_same_recipe(docs["run"], docs["pytorch"], paths["run"], paths["pytorch"])
    return Inputs(
        verdict=run_verdict(docs["run"], paths["run"]),
        **docs,
        nvidia_smi=load_nvidia_smi(paths["nvidia_smi"]),
        profile_log=read_log(paths["profile_log"]),
        sanitize_log=read_log(paths["sanitize_log"]),
        profiles=load_profiles(docs["run"]["paths"], profile_dir),
        torch_trace=load_torch_trace(paths["torch_trace"]),
        ncu=load_ncu(paths["ncu"]),
        predictions=load_predictions(predictions_path, measures),
        gaps=load_gaps(gaps_path),
        transformer=load_transformer(paths["transformer"]),
        sanitize_reruns=load_sanitize_reruns(results_dir),
        paths=paths)


def run_verdict(run: dict, path) -> Verdict:
    """The gate's verdict of `run` (read from `path`), from its one owner; an InputError when the
    verdict block the run.json records disagrees with the evidence it holds."""
    return verdict.of_run(run, str(path))


def load_sanitize_reruns(results_dir) -> list:
    """results/sanitize_*.json: `invoke sanitize --paths X` runs of some targets alone, each checked
    as sanitize.json is, with the commit that last changed it (git: such files record none)."""
    from spec.provenance import committed_in
    out = []
    for path in sorted(Path(results_dir).glob("sanitize_*.json")):
        doc = load_json(path, SCHEMA_OF["sanitize"], required=False)
        if doc is not None:
            out.append((path, doc, doc.get("commit") or committed_in(path)))
    return out


def load_transformer(path) -> dict | None:
    """results/transformer.json (harness/transformer/results.py), checked against
    spec/transformer_schema.py; None when absent."""
    from spec.transformer_schema import validate_transformer
    doc = load_json(path, required=False)
    if doc is not None:
        try:
            validate_transformer(doc, path)
        except SchemaError as exc:
            raise InputError(exc) from None
    return doc
