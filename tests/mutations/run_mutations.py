#!/usr/bin/env python3
"""Re-run the mutation table (tests/mutations/mutations.toml, docs/MUTATIONS.md): each mutation
applied alone to a scratch copy of the working tree, and its `expect` tests run there with pytest.

    python tests/mutations/run_mutations.py                  every mutation (minutes: C++ ones rebuild
                                                             build/mlp_host's objects in the copy)
    python tests/mutations/run_mutations.py --only NAME,...  those
    python tests/mutations/run_mutations.py --table          print docs/MUTATIONS.md's table and stop
    python tests/mutations/run_mutations.py --keep DIR       make the scratch copy in DIR and leave it

The scratch copy holds the files git tracks or would track (git ls-files -co --exclude-standard) and
build/ (copied with its times, so make rebuilds only what a mutation touches; build/'s course builds
and other architectures' trees are left out). First the expected tests of every selected mutation run
on the unmutated copy and must all pass: a test that fails without the mutation proves nothing. Then,
one mutation at a time: `old` must occur exactly once in `file` (else the table is stale), it is
replaced by `new`, the mutation's `expect` tests run, and the file is put back. A mutation is CAUGHT
when every one of its expected tests FAILED (an assertion; an error in a fixture or a build, such as
a mutation that does not compile, is not a catch). Exit status 0 when the baseline passed and every
mutation was caught, 1 otherwise, 2 for bad input.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = Path(__file__).resolve().parent / "mutations.toml"
BUILD_LEFT_OUT = ("gate", "f32acc", "emu-broken")   # course builds, other trees: not what the tests read
FIELDS = ("name", "description", "file", "old", "new", "expect")


@dataclass(frozen=True)
class Mutation:
    name: str
    description: str
    file: str
    old: str
    new: str
    expect: tuple[str, ...]


def load(path: Path = TABLE) -> list[Mutation]:
    """The table's entries, each with every field (a missing or extra one, or a name used twice, is a
    ValueError naming it)."""
    doc = tomllib.loads(path.read_text())
    out: list[Mutation] = []
    for i, entry in enumerate(doc.get("mutation", [])):
        if set(entry) != set(FIELDS):
            raise ValueError(f"{path}: mutation {i} ({entry.get('name', '?')}): fields {sorted(entry)}, "
                             f"want {sorted(FIELDS)}")
        if not entry["expect"] or not all(isinstance(e, str) and "::" in e for e in entry["expect"]):
            raise ValueError(f"{path}: mutation {entry['name']}: expect must list pytest node ids")
        out.append(Mutation(**{**entry, "expect": tuple(entry["expect"])}))
    names = [m.name for m in out]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: a mutation name is used twice: {names}")
    return out


def table(mutations: list[Mutation]) -> str:
    """docs/MUTATIONS.md's table: one row per mutation, the tests that catch it."""
    rows = ["| mutation | file | what it does | caught by |", "|---|---|---|---|"]
    for m in mutations:
        tests = "<br>".join(f"`{e.split('/')[-1]}`" for e in m.expect)
        rows.append(f"| `{m.name}` | `{m.file}` | {m.description} | {tests} |")
    return "\n".join(rows) + "\n"


def scratch_copy(dest: Path) -> None:
    """The working tree's files git tracks or would track, and build/ with its times, into dest."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    if (ROOT / "build").is_dir():
        shutil.copytree(ROOT / "build", dest / "build", symlinks=True,
                        ignore=lambda d, names: [n for n in names if Path(d) == ROOT / "build" and
                                                 (n in BUILD_LEFT_OUT or n.startswith("sm_"))])


def run_tests(repo: Path, nodes: list[str], tag: str) -> dict[str, str]:
    """{node id: "passed" | "failed" | "error" | "skipped" | "not run"} of pytest NODES in repo."""
    report = repo / f".mutation-{tag}.xml"
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "junit_family=xunit1",
           f"--junitxml={report}", *nodes]
    res = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env)
    outcome = {n: "not run" for n in nodes}
    if report.exists():
        for case in ET.parse(report).getroot().iter("testcase"):
            node = f"{case.get('file') or case.get('classname', '').replace('.', '/') + '.py'}::{case.get('name')}"
            kinds = {child.tag for child in case}
            outcome[node] = ("failed" if "failure" in kinds else "error" if "error" in kinds else
                             "skipped" if "skipped" in kinds else "passed")
        report.unlink()
    if any(v == "not run" for k, v in outcome.items() if k in nodes):
        print(res.stdout[-3000:], res.stderr[-2000:], sep="\n")
    return {n: outcome.get(n, "not run") for n in nodes}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated mutation names")
    ap.add_argument("--table", action="store_true", help="print docs/MUTATIONS.md's table and stop")
    ap.add_argument("--keep", type=Path, help="make the scratch copy in this (new) folder and leave it")
    args = ap.parse_args(argv)
    try:
        mutations = load()
    except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.table:
        sys.stdout.write(table(mutations))
        return 0
    if args.only:
        wanted = args.only.split(",")
        unknown = sorted(set(wanted) - {m.name for m in mutations})
        if unknown:
            print(f"error: --only: no mutation named {', '.join(unknown)}", file=sys.stderr)
            return 2
        mutations = [m for m in mutations if m.name in wanted]
    for m in mutations:
        count = (ROOT / m.file).read_text().count(m.old)
        if count != 1:
            print(f"error: {m.name}: its old text occurs {count} times in {m.file} (want exactly once): "
                  f"the table is stale", file=sys.stderr)
            return 2
    if args.keep:
        args.keep.mkdir(parents=True)
        repo = args.keep
    else:
        tmp = tempfile.TemporaryDirectory(prefix="mutations-")
        repo = Path(tmp.name)
    print(f"scratch copy: {repo}", flush=True)
    scratch_copy(repo)
    nodes = sorted({e for m in mutations for e in m.expect})
    base = run_tests(repo, nodes, "baseline")
    bad_base = {n: o for n, o in base.items() if o != "passed"}
    print(f"baseline (no mutation): {len(nodes) - len(bad_base)} of {len(nodes)} expected tests pass", flush=True)
    for n, o in bad_base.items():
        print(f"  {o}: {n}")
    missed = []
    for m in mutations:
        path = repo / m.file
        original = path.read_text()
        path.write_text(original.replace(m.old, m.new, 1))
        try:
            got = run_tests(repo, list(m.expect), m.name)
        finally:
            path.write_text(original)
        caught = all(o == "failed" for o in got.values())
        print(f"{'CAUGHT' if caught else 'MISSED'} {m.name}: {m.description}", flush=True)
        for n, o in got.items():
            print(f"  {o}: {n}")
        if not caught:
            missed.append(m.name)
    print(f"{len(mutations) - len(missed)} of {len(mutations)} mutations caught" +
          (f"; missed: {', '.join(missed)}" if missed else "") +
          ("" if not bad_base else f"; {len(bad_base)} expected tests do not pass without a mutation"))
    return 0 if not missed and not bad_base else 1


if __name__ == "__main__":
    sys.exit(main())
