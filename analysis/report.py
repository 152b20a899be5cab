"""Render RESULTS.md, its appendix PROFILES.md and results/plots/*.png from results/,
profile/, predictions.toml and GAPS.toml, through templates/RESULTS.md.j2 and PROFILES.md.j2.

    python -m analysis.report [--results results] [--profile profile] [--out RESULTS.md]
                              [--profiles-out PROFILES.md] [--plots DIR] [--sweep-md SWEEP.md]
    python -m analysis.report --results results/portability/t4 --out results/portability/t4/RESULTS.md

Another results folder (a device class of the portability runs, a gate submission) renders into
its own output: its profile folder defaults to <results>/profile (absent: no profiles shown), its
plots to <results>/plots, PROFILES.md beside --out; predictions.toml and GAPS.toml stay the
repository's.

Every number comes from an input file or is computed from those numbers (analysis/sections/);
the templates hold the words and no number. Deterministic: the only dates and commits shown are
those in the inputs, and the plots carry no timestamp.

Required: run.json, predictions.toml, GAPS.toml; every other input is optional and its section
says when it is absent (analysis/loaders.py lists them). A run.json the supervisor wrote for a run
that did not finish (harness/gate/supervisor.py: no GPU, no recipe) gets a short RESULTS.md alone: what
happened, its stages, the cases and the hints (templates/RESULTS_supervised.md.j2). Every input is read and checked
(spec/schema.py) before anything is written, and the outputs are written together or not at
all. Exit status: 0 written; 2 a bad input (one line naming the file and the field), a pytorch.json
whose recipe differs from run.json's among them (the line names each differing key).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

from analysis import render as renderer
from analysis.loaders import FILES, load_inputs, load_json
from analysis.sections import supervised
from analysis.sections.profiles import MEASURES
from spec import files, validate
from spec.files import PROFILE_DIR, RESULTS_DIR, ROOT, TEMPLATES_DIR


def render(results_dir=RESULTS_DIR, profile_dir=PROFILE_DIR,
           predictions_path=ROOT / "predictions.toml", gaps_path=ROOT / "GAPS.toml",
           out_path=ROOT / "RESULTS.md", profiles_path=None, plots_dir=None, sweep_md=None,
           templates_dir=TEMPLATES_DIR) -> list[Path]:
    """Render and write every output; returns their paths. Raises InputError (nothing
    written) on a bad input."""
    out_path = Path(out_path)
    profiles_path = Path(profiles_path) if profiles_path else out_path.parent / "PROFILES.md"
    plots_dir = Path(plots_dir) if plots_dir else Path(results_dir) / "plots"
    sweep_md = Path(sweep_md) if sweep_md else ROOT / "SWEEP.md"
    run_path = Path(results_dir) / FILES["run"]
    if supervised.is_short(load_json(run_path)):
        # The supervisor's doc of a run that did not finish: a short report, RESULTS.md alone.
        outputs = renderer.render_supervised(load_json(run_path, "run_supervised"), run_path, out_path,
                                             templates_dir)
        renderer.write(outputs)
        return list(outputs)
    inputs = load_inputs(results_dir, profile_dir, predictions_path, gaps_path, MEASURES)
    outputs, stale = renderer.render_results(inputs, out_path, profiles_path, plots_dir,
                                             sweep_md, templates_dir)
    renderer.write(outputs, stale)
    return list(outputs)


def default_profile_dir(results_dir) -> Path:
    """profile/ for the repository's results/, else the results folder's own profile/."""
    if Path(results_dir).resolve() == Path(RESULTS_DIR).resolve():
        return Path(PROFILE_DIR)
    return Path(results_dir) / "profile"


def main(argv: Sequence[str] | None = None) -> int:
    ap = validate.ArgParser(prog="python -m analysis.report",
                                 description="Render RESULTS.md and PROFILES.md from results/ "
                                             "and profile/.")
    ap.add_argument("--results", default=str(RESULTS_DIR))
    ap.add_argument("--profile", default=None,
                    help="default: profile/ for results/, else RESULTS/profile")
    ap.add_argument("--predictions", default=str(ROOT / "predictions.toml"))
    ap.add_argument("--gaps", default=str(ROOT / "GAPS.toml"))
    ap.add_argument("--out", default=str(ROOT / "RESULTS.md"))
    ap.add_argument("--profiles-out", default=None, help="default: PROFILES.md beside --out")
    ap.add_argument("--plots", default=None, help="plots folder (default: RESULTS/plots)")
    ap.add_argument("--sweep-md", default=None, help="SWEEP.md, for the link to it")
    args = ap.parse_args(argv)
    if args.profile is None:
        args.profile = str(default_profile_dir(args.results))
    try:
        written = render(args.results, args.profile, args.predictions, args.gaps, args.out,
                         args.profiles_out, args.plots, args.sweep_md)
    except files.InputError as exc:   # a bad input, or an output's place taken (write_all)
        print(exc, file=sys.stderr)
        return files.EXIT_BAD_INPUT
    if len(written) == 1:
        print(f"wrote {written[0]} (a supervised run that did not finish: the short report)")
    else:
        print(f"wrote {written[0]}, {written[1]} and {len(written) - 2} plots")
    return 0


if __name__ == "__main__":
    files.run_main(main)
