"""Rewrite the absolute paths of the machines that made the committed evidence into paths that name
no machine, in the text files tests/test_evidence_paths.py reads (JSON, CSV, Markdown, text,
HTML and logs under results/ and profile/, and RESULTS.md, SWEEP.md, PROFILES.md). A mechanical rewrite of
path strings and nothing else: no number, no key, no other byte changes (a JSON file is checked to
parse to the same object with the rewrite applied to its strings).

    python dev/relativize_evidence.py [--check] [--checkout /work/main] [--map PREFIX=NAME]

The rules, in order, each a plain prefix (or the relative climb to /tmp):
  --checkout DIR     a checkout of this repository on the machine that ran it: DIR/x -> x, DIR -> .
                     (default /work/main, the GPU machine's and the build machine's)
  --map PREFIX=NAME  a folder of that machine shown by name (default /root/out=$OUT: the device
                     call's output folder of dev/*_device.sh)
  /tmp/..., ../../tmp/...  -> $TMPDIR/... (a temp folder)
--check lists what would change and exits 1 when anything would; nothing is written. The writers
record such paths as spec.files.repo_relative and shown_path give them since; this is for evidence
older than that, or made by dev/ scripts that pass absolute paths.
"""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT = (".json", ".csv", ".md", ".txt", ".html", ".log")
REPORTS = ("RESULTS.md", "SWEEP.md", "PROFILES.md")


def evidence_files(root: Path = ROOT) -> list[Path]:
    """The committed text files of results/ and profile/, and the rendered reports."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "results", "profile", *REPORTS],
                         capture_output=True, check=True).stdout.decode().split("\0")
    return [root / f for f in out if f and (f in REPORTS or f.endswith(TEXT))]


def rules(checkouts: list[str], maps: list[tuple[str, str]]) -> list[tuple[re.Pattern, str]]:
    out = []
    for d in checkouts:
        d = d.rstrip("/")
        out.append((re.compile(re.escape(d) + r"/"), ""))
        out.append((re.compile(re.escape(d) + r"(?![\w.-])"), "."))
    for prefix, name in maps:
        out.append((re.compile(re.escape(prefix.rstrip("/")) + r"(?=/|\b)"), name))
    out.append((re.compile(r"(?<![\w$~.-])(?:\.\./)+tmp/"), "$TMPDIR/"))
    out.append((re.compile(r"(?<![\w$~.:/-])/tmp/"), "$TMPDIR/"))
    return out


def rewrite(text: str, rs) -> str:
    for pattern, repl in rs:
        text = pattern.sub(lambda _m, r=repl: r, text)
    return text


def _strings(obj, rs):
    if isinstance(obj, str):
        return rewrite(obj, rs)
    if isinstance(obj, list):
        return [_strings(x, rs) for x in obj]
    if isinstance(obj, dict):
        return {rewrite(k, rs): _strings(v, rs) for k, v in obj.items()}
    return obj


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python dev/relativize_evidence.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="list what would change; write nothing")
    ap.add_argument("--checkout", action="append", help="a checkout of this repository (default /work/main)")
    ap.add_argument("--map", action="append", default=None, help="PREFIX=NAME (default /root/out=$OUT)")
    args = ap.parse_args(argv)
    maps = [tuple(m.split("=", 1)) for m in (args.map or ["/root/out=$OUT"])]
    if any(len(m) != 2 or not m[0].startswith("/") for m in maps):
        print("error: --map: expected /ABSOLUTE/PREFIX=NAME", file=sys.stderr)
        return 2
    rs = rules(args.checkout or ["/work/main"], maps)
    changed = []
    for path in evidence_files():
        text = path.read_text(encoding="utf-8")
        new = rewrite(text, rs)
        if new == text:
            continue
        if path.suffix == ".json" and json.loads(new) != _strings(json.loads(text), rs):
            print(f"error: {path.relative_to(ROOT)}: the rewrite changes more than path strings", file=sys.stderr)
            return 1
        changed.append(path)
        if not args.check:
            path.write_text(new, encoding="utf-8")
    print(f"{'would rewrite' if args.check else 'rewrote'} {len(changed)} file(s)"
          + "".join(f"\n  {p.relative_to(ROOT)}" for p in changed))
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    sys.exit(main())
