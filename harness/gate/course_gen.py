"""A generated course: N submissions built from tests/submissions/' bases, each with one defect from
their mutant library or none, and a manifest of what the gate must say of each (issue 40: gating a
course at scale with submissions written the way learners write them).

    python -m harness.gate.course_gen --n N --seed S --out DIR [--correct-share 0.5] [--max-timeouts 0] [--force]

The bases (BASES): `naive` (naive_base.cuh: one thread per output, no parameters), `tiled`
(tiled_base.cuh: shared-memory tiled GEMMs, TILE 16 or 32) and `regtile` (regtile_base.cuh:
register-tiled GEMMs, block tile, slab depth and thread tile drawn); the last two also draw
learner_common.cuh's block sizes and whether the short last batch's forward runs one row at a time
(VARIANT_ROWWISE_TAIL, correct). A correct file's base is drawn uniformly, a failing file's comes
with its defect (below); then each parameter is drawn uniformly from its choices.

The defects are the MUTANT_* macros the bases' headers document: each header's leading comment has
one entry per macro, `//   MUTANT_NAME  what it breaks -> case 4` (more lines may follow, deeper
indented), and the gate cases named after the entry's last "->" are the ones that must fail it.
Those comments are the one table (defects_of); this module keeps no copy. A base supports the
defects of its own header and of the headers it includes (learner_common.cuh for tiled and
regtile). The failing files take the (base, defect) pairs in a shuffled order, so every pair comes
once before any comes twice (a pair whose file would repeat an earlier one's code is passed over).

Bounded: a defect whose entry says "time limit" ends only when a stage's time limit kills it
(naive_base.cuh's MUTANT_SPIN_EPOCH: the epoch waits forever), so a course with it takes that limit
for every such file. None is drawn unless --max-timeouts K allows up to K of them.

DIR gets the N files (sub-000.cu, ...: names that say nothing of the intent), the headers they
include (the course builds each *.cu with the headers beside it: harness/gate/course.py
copy_sources), and manifest.json: the arguments, the defects left out and why, and for each file
its base, parameters, defect (or null), the header that owns the defect, and its intent: "PASS", or
"FAIL" with `must_fail`, the gate case ids that must fail. Every file is written or none. The same
arguments give the same bytes; no two files hold the same code (their #defines differ). DIR must be
missing or empty, or --force: then its *.cu, *.cuh and manifest.json are removed first (nothing else
in it is touched). A bad argument is one line and exit status 2.
"""
from __future__ import annotations

import json
import random
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from spec import validate
from spec.files import ROOT, InputError, write_all

SUBMISSIONS = ROOT / "tests" / "submissions"
MANIFEST = "manifest.json"
MAX_FILES = 1000
MAX_ATTEMPTS = 200   # draws for one file before the space of distinct files counts as spent
EXIT_BAD_INPUT = 2

ENTRY = re.compile(r"^//   (MUTANT_[A-Z0-9_]+)\s+(.*)$")   # an entry's first line: three spaces in
CONTINUED = re.compile(r"^//\s{4,}(\S.*)$")                 # its next lines: deeper
CASES = re.compile(r"\bcases? (\d+(?:\s*(?:,|and)\s*\d+)*)")


@dataclass(frozen=True)
class Defect:
    macro: str
    owner: str                   # the header whose comment documents it
    must_fail: tuple[int, ...]   # the gate cases that must fail it
    time_limited: bool           # ends only by a stage's time limit
    text: str                    # the entry, its lines joined


def defects_of(header: str, folder: Path = SUBMISSIONS) -> dict[str, Defect]:
    """The MUTANT_* entries of `header`'s leading comment, by macro. InputError for an entry that
    names no case, or a macro documented twice."""
    out: dict[str, Defect] = {}
    entries: list[list[str]] = []
    current: list[str] | None = None
    for line in (Path(folder) / header).read_text(encoding="utf-8").splitlines():
        if not line.startswith("//"):
            break   # the leading comment ends
        m = ENTRY.match(line)
        if m:
            current = [m.group(1), m.group(2)]
            entries.append(current)
        elif current is not None and CONTINUED.match(line):
            current.append(CONTINUED.match(line).group(1))
        else:
            current = None
    for macro, *lines in entries:
        text = " ".join(lines)
        tail = text.rsplit("->", 1)[1] if "->" in text else ""
        ids = tuple(sorted({int(x) for group in CASES.findall(tail) for x in re.findall(r"\d+", group)}))
        if not ids:
            raise InputError(f"error: {header}: {macro} names no gate case after its '->'")
        if macro in out:
            raise InputError(f"error: {header}: {macro} documented twice")
        out[macro] = Defect(macro, header, ids, "time limit" in tail, text)
    return out


@dataclass(frozen=True)
class Base:
    name: str
    header: str                      # what a file of it includes
    owners: tuple[str, ...]          # the headers whose defects it supports (its own first)
    params: dict = field(default_factory=dict)   # macro -> its choices (True/False: defined or not)

    def valid(self, p: dict) -> bool:
        if self.name != "regtile":
            return True
        threads = (p["RT_BM"] // p["RT_TM"]) * (p["RT_BN"] // p["RT_TN"])
        return 32 <= threads <= 1024

    def defects(self, folder: Path = SUBMISSIONS) -> dict[str, Defect]:
        out: dict[str, Defect] = {}
        for h in self.owners:
            for macro, d in defects_of(h, folder).items():
                if macro in out:
                    raise InputError(f"error: {macro} documented in both {out[macro].owner} and {h}")
                out[macro] = d
        return out


# learner_common.cuh's parameters, shared by both learner-style bases. LC_REDUCE_THREADS >= 128:
# MUTANT_REDUCE_NO_SYNC's missing barriers then join different warps (racecheck errors, not only
# the warnings of a race inside one warp).
_LEARNER = {"LC_REDUCE_THREADS": (128, 256), "LC_STEP_THREADS": (128, 256, 512),
            "VARIANT_ROWWISE_TAIL": (False, True)}
BASES = {
    "naive": Base("naive", "naive_base.cuh", ("naive_base.cuh",)),
    "tiled": Base("tiled", "tiled_base.cuh", ("tiled_base.cuh", "learner_common.cuh"),
                  {"TILE": (16, 32), **_LEARNER}),
    "regtile": Base("regtile", "regtile_base.cuh", ("regtile_base.cuh", "learner_common.cuh"),
                    {"RT_BM": (32, 64), "RT_BN": (32, 64), "RT_BK": (8, 16), "RT_TM": (2, 4), "RT_TN": (2, 4),
                     **_LEARNER}),
}


def includes_of(header: str, folder: Path = SUBMISSIONS) -> list[str]:
    """`header` and the headers of `folder` it includes, transitively (what a file of it needs beside it)."""
    seen: list[str] = []
    todo = [header]
    while todo:
        h = todo.pop()
        if h in seen:
            continue
        seen.append(h)
        text = (Path(folder) / h).read_text(encoding="utf-8")
        todo += [inc for inc in re.findall(r'^#include "([^"]+)"', text, re.M) if (Path(folder) / inc).is_file()]
    return sorted(seen)


def source_of(name: str, base: Base, params: dict, defect: str | None, note: str) -> str:
    """A course file: a comment (its name, base and `note`), its #defines and the base's #include."""
    lines = [f"// {name}.cu: generated by harness/gate/course_gen.py from {base.header}; {note}"]
    for macro, value in params.items():
        if value is True:
            lines.append(f"#define {macro}")
        elif value is not False:
            lines.append(f"#define {macro} {value}")
    if defect:
        lines.append(f"#define {defect}")
    lines.append(f'#include "{base.header}"')
    return "\n".join(lines) + "\n"


def _code(text: str) -> str:
    """A file's code: its lines but the comments (what makes two files the same submission)."""
    return "\n".join(ln for ln in text.splitlines() if not ln.startswith("//"))


def _draw_params(base: Base, rng: random.Random) -> dict:
    while True:
        p = {k: rng.choice(v) for k, v in base.params.items()}
        if base.valid(p):
            return p


def excluded(max_timeouts: int, folder: Path = SUBMISSIONS) -> list[dict]:
    """The defects left out of every course: those ending only by a time limit when none is allowed."""
    if max_timeouts:
        return []
    return [{"base": b.name, "defect": d.macro, "why": "ends only by a stage's time limit (a spin)"}
            for b in BASES.values() for d in b.defects(folder).values() if d.time_limited]


def generate(n: int, seed: int, correct_share: float = 0.5, max_timeouts: int = 0,
             folder: Path = SUBMISSIONS) -> tuple[dict[str, str], dict]:
    """({file name: text} of the course, its manifest). InputError when the bases cannot give n
    distinct files with that share correct."""
    n = validate.count(n, "--n", 1, MAX_FILES)
    seed = validate.count(seed, "--seed", 0, (1 << 63) - 1)
    correct_share = validate.real(correct_share, "--correct-share", 0.0, 1.0)
    max_timeouts = validate.count(max_timeouts, "--max-timeouts", 0, MAX_FILES)
    rng = random.Random(seed)
    n_correct = int(n * correct_share + 0.5)
    intents = ["PASS"] * n_correct + ["FAIL"] * (n - n_correct)
    rng.shuffle(intents)
    pairs = [(b, d) for b in BASES.values() for d in b.defects(folder).values()
             if max_timeouts or not d.time_limited]
    rng.shuffle(pairs)
    order = list(pairs)
    timeouts, files, entries, codes = 0, {}, [], set()
    for i, intent in enumerate(intents):
        name = validate.safe_name(f"sub-{i:03d}", "submission")
        for _ in range(MAX_ATTEMPTS):
            if intent == "PASS":
                base, defect = BASES[rng.choice(sorted(BASES))], None
            else:
                if not order:
                    order = list(pairs)
                    rng.shuffle(order)
                base, defect = order.pop(0)
                if defect.time_limited and timeouts >= max_timeouts:
                    continue
            params = _draw_params(base, rng)
            text = source_of(name, base, params, defect.macro if defect else None,
                             f"seed {seed}; {MANIFEST} says what the gate must say of it.")
            if _code(text) not in codes:
                break
        else:
            raise InputError(f"error: --n {n}: the bases give no further distinct {intent} file after {i} "
                             f"(lower --n or change --correct-share)")
        codes.add(_code(text))
        timeouts += bool(defect and defect.time_limited)
        files[f"{name}.cu"] = text
        entries.append({"file": f"{name}.cu", "base": base.name, "header": base.header, "parameters": params,
                        "defect": defect.macro if defect else None, "defect_owner": defect.owner if defect else None,
                        "intent": intent, "must_fail": list(defect.must_fail) if defect else []})
    headers = sorted({h for e in entries for h in includes_of(BASES[e["base"]].header, folder)})
    manifest = {"generator": "harness/gate/course_gen.py", "seed": seed, "n": n, "correct_share": correct_share,
                "max_timeouts": max_timeouts, "excluded_defects": excluded(max_timeouts, folder),
                "headers": headers, "submissions": entries}
    return files, manifest


def _removable(p: Path) -> bool:
    return p.is_file() and not p.is_symlink() and (p.suffix in (".cu", ".cuh") or p.name == MANIFEST)


def write_course(out: Path, n: int, seed: int, correct_share: float = 0.5, max_timeouts: int = 0,
                 force: bool = False, folder: Path = SUBMISSIONS) -> dict:
    """Generate the course into `out` (see the module's docstring); its manifest."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(f"error: --out {str(out)!r}: not a folder")
    if out.resolve() == Path(folder).resolve():
        raise InputError(f"error: --out {str(out)!r}: the bases' own folder")
    files, manifest = generate(n, seed, correct_share, max_timeouts, folder)
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise InputError(f"error: --out {str(out)!r}: not empty (--force replaces its *.cu, *.cuh and {MANIFEST})")
        for p in sorted(out.iterdir()):
            if _removable(p):
                p.unlink()
    contents = {out / name: text for name, text in files.items()}
    contents.update({out / h: (Path(folder) / h).read_bytes() for h in manifest["headers"]})
    contents[out / MANIFEST] = json.dumps(manifest, indent=2) + "\n"
    write_all(contents)
    return manifest


def main(argv=None) -> int:
    ap = validate.ArgParser(prog="python -m harness.gate.course_gen", description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", required=True, help=f"files in the course, 1-{MAX_FILES}")
    ap.add_argument("--seed", required=True, help="the draw's seed, a non-negative integer")
    ap.add_argument("--out", required=True, help="the course's folder: missing or empty, unless --force")
    ap.add_argument("--correct-share", default="0.5", help="the share of files with no defect (default 0.5)")
    ap.add_argument("--max-timeouts", default="0",
                    help="at most this many files whose defect ends only by a time limit (default 0: none)")
    ap.add_argument("--force", action="store_true", help=f"replace the *.cu, *.cuh and {MANIFEST} of a non-empty --out")
    try:
        a = ap.parse_args(argv)
        manifest = write_course(Path(a.out), a.n, a.seed, a.correct_share, a.max_timeouts, a.force)
    except InputError as exc:
        print(str(exc), file=sys.stderr)
        return EXIT_BAD_INPUT
    subs = manifest["submissions"]
    passing = sum(s["intent"] == "PASS" for s in subs)
    print(f"{a.out}: {len(subs)} submissions ({passing} PASS, {len(subs) - passing} FAIL), "
          f"{len(manifest['headers'])} headers, {MANIFEST}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
