"""README.md's generated blocks: every count and measurement README shows, rendered from their
owners instead of typed by hand, and the check that README still holds what they render.

    python -m analysis.readme_blocks            exit 1 naming each block that differs from its render
    python -m analysis.readme_blocks --write    rewrite those blocks in README.md (nothing else)

A block is the text between `<!-- NAME:start -->` and `<!-- NAME:end -->`. Its owners:
  recipe         recipe.toml (spec.recipe)
  counts         the binary's catalog (cases, stages, paths: `build/mlp_host catalog`, spec/catalog.py)
                 and the files of tests/submissions/ (mutant_*.cu and the others)
  gate-cases     the catalog's cases, in table order: id, name, stage, what it checks, whether it
                 decides the verdict
  gate-stages    the catalog's stages: their cases, who runs them, their time-limit floor and work
  entry-points   the catalog's entry point of each case, in the order a learner writes them
  kernel-paths   the catalog's paths (cuda/paths/registry.h)
  headline       results/run.json and results/pytorch.json: the run of record's fastest passing
                 path and PyTorch's fastest passing variant
The `paths-table` block is harness/studies/arch_resources.py --paths-table's (it needs build/mlp_fit
and the harness's device limits; tests/test_portability.py keeps it equal); it is left alone here.
tests/test_readme_blocks.py fails when a block differs from its render.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Sequence

from analysis import fmt
from analysis.loaders import load_json
from analysis.sections import common
from spec import catalog
from spec.files import BUILD_DIR, RESULTS_DIR, ROOT, write_text
from spec.recipe import load_recipe

README = ROOT / "README.md"
SUBMISSIONS = ROOT / "tests" / "submissions"
MARK = re.compile(r"<!-- ([a-z-]+):start -->(.*?)<!-- \1:end -->", re.S)
NOT_OURS = ("paths-table",)


def _cell(text) -> str:
    return fmt.cell(str(text))


def _ids(ids) -> str:
    return ", ".join(str(i) for i in ids)


def recipe_words(r: dict) -> str:
    return (f"a {r['input_dim']}-{r['hidden_dim']}-{r['output_dim']} ReLU MLP on real Fashion-MNIST "
            f"(batch {r['batch']}, SGD with lr {r['lr']:g} and momentum {r['momentum']:g}, "
            f"{r['epochs']} epochs, seed {r['seed']}, a fixed {r['train_size']:,}-image train subset, "
            f"the {r['test_size']:,}-image test split)")


def counts(cat: dict, submissions: Path) -> str:
    cases, stages, paths = cat["gate"]["cases"], cat["gate"]["stages"], cat["paths"]
    timing = [c["name"] for c in cases if not c["decides"]]
    binary = [s for s in stages if s["runner"] == "mlp_train"]
    tools = [s for s in stages if s["runner"] != "mlp_train"]
    plain = [i for s in binary for i in s["cases"]]
    opt_in = [p["name"] for p in paths if not p["default"]]
    mutants = sorted(submissions.glob("mutant_*.cu"))
    others = sorted(f.name for f in submissions.glob("*.cu") if not f.name.startswith("mutant_"))
    names = lambda xs: ", ".join(f"`{x}`" for x in xs)  # noqa: E731
    return (f"The gate has **{len(cases)} cases** ({len(cases) - len(timing)} decide the verdict"
            + (f"; {names(timing)} only times" if timing else "") + ") "
            f"in **{len(stages)} stages**: {len(binary)} run by `mlp_train --stage` "
            f"({len(plain)} cases, what `invoke run` gates), {len(tools)} by "
            f"{names(sorted({s['runner'] for s in tools}))} around it ({names(s['name'] for s in tools)}: "
            f"`invoke run --strict`, `invoke gate`); **{len(paths)} kernel paths** "
            f"({len(paths) - len(opt_in)} in a plain run" + (f"; opt-in: {names(opt_in)}" if opt_in else "")
            + f"); and in `tests/submissions/`, **{len(mutants)} mutants** (`mutant_*.cu`, each a defect the "
            f"GPU tests require the gate to catch) beside {len(others)} correct submissions "
            f"({names(others)})")


def case_table(cat: dict) -> str:
    rows = ["| # | case | stage | checks | decides the verdict |", "|---|---|---|---|---|"]
    rows += [f"| {c['id']} | {c['name']} | `{c['stage']}` | {_cell(c['checks'])} | "
             f"{'yes' if c['decides'] else 'no'} |" for c in cat["gate"]["cases"]]
    return "\n" + "\n".join(rows) + "\n"


def stage_table(cat: dict) -> str:
    rows = ["| stage | cases | run by | time-limit floor | work, in our fastest path's epochs | "
            "alone on the GPU |", "|---|---|---|---|---|---|"]
    for s in cat["gate"]["stages"]:
        work = f"{s['epochs']:g}" if s["epochs"] else "—"
        rows.append(f"| `{s['name']}` | {_ids(s['cases'])} | {s['runner']} | {s['floor_s']:g} s | {work} | "
                    f"{'yes' if s['exclusive'] else 'no'} |")
    return "\n" + "\n".join(rows) + "\n"


def entry_points(cat: dict) -> str:
    """`mlp_forward` (cases 1, 2), ...: each entry point and the cases that ask for it, in the
    order of its stage number ("mlp_forward (stage 1)")."""
    by_point: dict[str, list[int]] = {}
    order: dict[str, int] = {}
    for c in cat["gate"]["cases"]:
        m = re.fullmatch(r"(\w+) \(stage (\d+)\)", c["entry_point"])
        if m:
            by_point.setdefault(m.group(1), []).append(c["id"])
            order[m.group(1)] = int(m.group(2))
    return ", ".join(f"`{p}` (case{'s' if len(ids) > 1 else ''} {_ids(ids)})"
                     for p, ids in sorted(by_point.items(), key=lambda kv: order[kv[0]]))


def path_table(cat: dict) -> str:
    rows = ["| path | runs | what it is |", "|---|---|---|"]
    rows += [f"| `{p['name']}` | {'in a plain run' if p['default'] else '`--paths ' + p['name'] + '` only'} | "
             f"{_cell(p['what'])} |" for p in cat["paths"]]
    return "\n" + "\n".join(rows) + "\n"


def _commit(c) -> str:
    return c[:7] if isinstance(c, str) and re.fullmatch(r"[0-9a-f]{8,40}", c) else str(c)


def headline(results_dir: Path) -> str:
    run = load_json(Path(results_dir) / "run.json", "run")
    torch = load_json(Path(results_dir) / "pytorch.json", "pytorch", required=False)
    where = (f"commit `{_commit(run.get('commit', '—'))}`, {run.get('date_utc', '—')}, "
             f"{(run.get('gpu') or {}).get('name', '—')}")
    best = common.fastest(run["paths"])
    if best is None:
        return f"At the run of record ({where}) no kernel path passed."
    text = (f"At the run of record ({where}) the fastest passing path is `{best}`, "
            f"**{fmt.ms(common.passed_median(run['paths'][best]))} ms an epoch**")
    variants = (torch or {}).get("variants", {})
    best_torch = common.fastest(variants)
    if best_torch is not None:
        text += (f"; PyTorch's fastest passing variant, `{best_torch}`, takes "
                 f"{fmt.ms(common.passed_median(variants[best_torch]))} ms")
    return text + " (`results/run.json`" + (", `results/pytorch.json`)" if torch else ")")


def render(build_dir: Path = BUILD_DIR, results_dir: Path = RESULTS_DIR,
           submissions: Path = SUBMISSIONS) -> dict[str, str]:
    """{block name: its text} of every block this module owns."""
    cat = catalog.load(build_dir)
    return {"recipe": recipe_words(load_recipe()), "counts": counts(cat, submissions),
            "gate-cases": case_table(cat), "gate-stages": stage_table(cat),
            "entry-points": entry_points(cat), "kernel-paths": path_table(cat),
            "headline": headline(results_dir)}


def stale(text: str, rendered: dict[str, str]) -> list[str]:
    """The blocks whose text differs from their render, and those README lacks ("NAME (missing)")."""
    held: dict[str, list[str]] = {}
    for m in MARK.finditer(text):
        held.setdefault(m.group(1), []).append(m.group(2))
    out = [f"{n} (missing)" for n in rendered if n not in held]
    out += [n for n, body in held.items() if n in rendered and any(b != rendered[n] for b in body)]
    out += [f"{n} (no renderer)" for n in held if n not in rendered and n not in NOT_OURS]
    return out


def rewrite(text: str, rendered: dict[str, str]) -> str:
    """text with every block it holds replaced by its render (the others left as they are)."""
    return MARK.sub(lambda m: (f"<!-- {m.group(1)}:start -->{rendered[m.group(1)]}<!-- {m.group(1)}:end -->"
                               if m.group(1) in rendered else m.group(0)), text)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.readme_blocks",
                                 description="Check (or --write) README.md's generated blocks.")
    ap.add_argument("--write", action="store_true", help="rewrite the blocks in README.md")
    ap.add_argument("--readme", default=str(README))
    args = ap.parse_args(argv)
    path = Path(args.readme)
    text, rendered = path.read_text(encoding="utf-8"), render()
    if args.write:
        new = rewrite(text, rendered)
        if new != text:
            write_text(path, new)
        missing = [n for n in stale(new, rendered)]
        print(f"wrote {path}" if new != text else f"{path}: every block current")
        if missing:
            print("error: README.md lacks the markers of: " + ", ".join(missing), file=sys.stderr)
            return 1
        return 0
    bad = stale(text, rendered)
    if bad:
        print(f"error: {path}: blocks that differ from their render: {', '.join(bad)} "
              f"(python -m analysis.readme_blocks --write)", file=sys.stderr)
        return 1
    print(f"{path}: every block current")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
