"""The renderer: the sections' records into templates/*.j2 (through analysis/fmt.py's filters),
the plots into PNG bytes, and every output of a report written together (spec.files.write_all:
all temp files first, then the renames) or, on any error before that, none."""
from __future__ import annotations

import functools
import os
from pathlib import Path

import jinja2

from analysis import fmt
from analysis.loaders import FILES, Inputs, InputError, profile_files
from spec.provenance import committed_in
from analysis.sections import common, floor, gate, memory, phases, precision, profiles, roofline
from analysis.sections import gate_bench, gemm, sanitize
from analysis.sections import ours_studies, supervised, torch_studies, transformer
from analysis.sections import summary as summary_mod
from analysis.sections import sweep as sweep_mod
from spec import verdict
from spec.files import ROOT, shown_path, write_all

RESULTS_TEMPLATE, PROFILES_TEMPLATE, SWEEP_TEMPLATE = "RESULTS.md.j2", "PROFILES.md.j2", "SWEEP.md.j2"
SUPERVISED_TEMPLATE = "RESULTS_supervised.md.j2"
PLOT_FILES = {"loss": "loss_per_epoch.png", "loss_deviation": "loss_deviation.png",
              "epoch_time": "epoch_time.png", "phases": "persistent_phases.png",
              "stationary_phases": "stationary_phases.png",
              "precision_accuracy": "precision_accuracy_vs_fp64.png"}
KERNEL_PLOT = "{path}_kernel_breakdown.png"   # one per profiled path
SWEEP_PLOT_FILES = {"speedup": "sweep_speedup_vs_width.png",
                    "step_time": "sweep_step_time_vs_batch.png",
                    "precision_speedup": "sweep_speedup_by_precision_vs_width.png"}


@functools.lru_cache(maxsize=None)
def _environment(folder: str) -> jinja2.Environment:
    """One jinja2 environment per template folder for the process: a template is compiled once and
    recompiled only when its file changes (jinja2's auto_reload), not at every render."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(folder),
                             undefined=jinja2.StrictUndefined, autoescape=False,
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update(fmt.FILTERS)
    return env


def load_template(path) -> jinja2.Template:
    """A jinja2 template with strict undefined names and the fmt filters; a missing or broken
    one is one line."""
    path = Path(path)
    env = _environment(os.path.abspath(path.parent))
    try:
        return env.get_template(path.name)
    except jinja2.TemplateNotFound:
        raise InputError(path, "file not found") from None
    except jinja2.TemplateSyntaxError as exc:
        raise InputError(path, f"template syntax error at line {exc.lineno}: {exc.message}") \
            from None


def shown_name(p, out_dir) -> str:
    """An input's name as a report shows it: relative to the repository root when inside it; else,
    for a report inside the repository (a committed one), as spec.files.shown_path names it ($TMPDIR/...,
    ~/...: never a path of the machine that rendered it), and for one outside it, relative to the
    report's folder."""
    absolute = Path(os.path.abspath(p))
    try:
        return absolute.relative_to(Path(os.path.abspath(ROOT))).as_posix()
    except ValueError:
        if Path(os.path.abspath(out_dir)).is_relative_to(Path(os.path.abspath(ROOT))):
            return shown_path(absolute)
        return link(p, out_dir)


def link(p, out_dir) -> str:
    return Path(os.path.relpath(os.path.abspath(p), os.path.abspath(out_dir))).as_posix()


def results_context(inp: Inputs) -> dict:
    """Every section of RESULTS.md and PROFILES.md, as records."""
    run, torch = inp.run, inp.pytorch
    profs = {n: profiles.profile(n, p, run) for n, p in inp.profiles.items()}
    missing_files = {n: {k: f.name for k, f in profile_files(n, inp.paths["profile_dir"]).items()}
                     for n in run["paths"] if n not in profs}
    phase = phases.breakdown(inp.phases, run) if inp.phases is not None else None
    steps = run["recipe"]["steps_per_epoch"]
    limits = []
    for name in profs:
        bd = (phases.kernel_breakdown(inp.phases, name, steps) if inp.phases is not None
              else None)
        limits.append(profiles.limit(name, profs[name], bd))
    return {
        "run": run, "recipe": run["recipe"], "gpu": run.get("gpu") or {},
        "build": run.get("build") or {}, "torch": torch, "steps": steps,
        "summary": summary_mod.summary(run, torch, inp.phases, profs,
                                       {k: getattr(inp, k) for k, _ in summary_mod.EVIDENCE
                                        if k != "pytorch"}, inp.verdict),
        "cases": gate.cases(run, inp.verdict), "path_checks": gate.path_checks(run), "sv": supervised.section(run),
        "timing": gate.timing(run, torch), "tiers": gate.tiers(run, torch),
        "goals": gate.goals(run, torch), "accuracy": gate.accuracy(run, torch),
        "precision": precision.table(run, torch),
        "loss_curve": gate.loss_curve(run, torch), "phases": phase,
        "sanitize": sanitize.section(inp.sanitize, inp.sanitize_log, inp.sanitize_reruns,
                                     (inp.sanitize or {}).get("commit") or committed_in(inp.paths["sanitize"])),
        "memory": memory.memory_cost(inp.sweep, run, torch),
        "full_split": memory.full_split(inp.full_split, inp.sweep, run),
        "profiles": list(profs.values()), "unprofiled": missing_files,
        "profile_log": inp.profile_log is not None,
        "profile_log_error": _profile_log_error(inp.profile_log),
        "limits": limits, "graph_evidence": profiles.graph_evidence(profs, run),
        "predictions": [profiles.prediction(p, run, profs, missing_files)
                        for p in inp.predictions],
        "roofline": roofline.section(inp.ceilings, inp.profiles, run),
        "ncu": profiles.ncu(inp.ncu), "torch_trace": profiles.torch_trace(inp.torch_trace),
        "nvidia_smi": inp.nvidia_smi,
        "open_gaps": [g | {"detail": " ".join(g["detail"].split())}
                      for g in inp.gaps if g["status"] == "open"],
        "headline": common.HEADLINE_PATH, "eager": common.EAGER_VARIANT,
        "torch_variants": torch_studies.variants(torch),
        "torch_accuracy": torch_studies.accuracy(torch),
        "torch_memory": torch_studies.memory(inp.torch_memory, run),
        "torch_batch": torch_studies.batch_steps(inp.torch_batch),
        "torch_linear": torch_studies.linear(inp.torch_linear),
        "ours_batch": ours_studies.batch_steps(inp.ours_batch, inp.torch_batch),
        "ours_linear": ours_studies.linear(inp.ours_linear, inp.torch_linear),
        "stationary": floor.stationary(inp.stationary_phases, run),
        "floor": floor.floor(run, inp.ceilings, inp.phases, inp.stationary_phases),
        "transformer": transformer.section(inp.transformer),
        "gate_bench": gate_bench.section(inp.gate_bench),
        "gemm": gemm.section(inp.gemm),
    }


def _repo_link(p, out_dir) -> str | None:
    """A link to a file a study names relative to the repository root (or absolute)."""
    if not p:
        return None
    p = Path(p)
    return link(p if p.is_absolute() else ROOT / p, out_dir)


def _study_links(ctx: dict, out_dir) -> dict:
    """Links from the report to the files the PyTorch studies name (timelines, HTML, plot)."""
    mem = ctx["torch_memory"]
    out = {"memory_html": {}, "memory_timeline": {}, "memory_plot": None}
    if mem is not None:
        for col in mem["cols"]:
            out["memory_html"][col["key"]] = _repo_link(col["html"], out_dir)
            out["memory_timeline"][col["key"]] = _repo_link(col["timeline"], out_dir)
        out["memory_plot"] = _repo_link(mem["plot"], out_dir)
    return out


def _profile_log_error(text: str | None) -> str | None:
    """The last 'error: ...' line of the profiling log, cut after '(exit status N)'."""
    import re
    if not text:
        return None
    lines = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("error:")]
    if not lines:
        return None
    m = re.match(r"^(error: .*?\(exit status -?\d+\))", lines[-1])
    line = m.group(1) if m else lines[-1]
    return line if len(line) <= 200 else line[:197] + "..."


def results_plots(ctx: dict) -> dict[str, bytes]:
    """{key: PNG bytes} of every plot RESULTS.md shows that has data."""
    from analysis import plots   # matplotlib: only when a plot is drawn, not for a run that stops at its inputs
    run, torch = ctx["run"], ctx["torch"]
    out = {}
    series = [(("CUDA " if s["kind"] == "cuda" else "PyTorch " if s["kind"] == "pytorch" else "")
               + s["name"], s["loss"]) for s in gate.loss_series(run, torch)]
    if series:
        out["loss"] = plots.loss_plot(series)
    dev = gate.loss_deviation(run, torch)
    if dev:
        out["loss_deviation"] = plots.loss_deviation_plot(
            [d | {"label": ("CUDA " if d["kind"] == "cuda" else "PyTorch ") + d["name"]}
             for d in dev])
    rows = [{"label": ("CUDA " if r["kind"] == "cuda" else "PyTorch ") + r["name"],
             "median_ms": float(r["median"]), "min_ms": float(r["min"]),
             "max_ms": float(r["max"]), "failed": not r["status"]["passed"]}
            for r in ctx["timing"]["rows"]
            if all(fmt.finite(r[k]) for k in ("median", "min", "max"))]
    if rows:
        out["epoch_time"] = plots.epoch_time_plot(rows)
    acc_rows = precision.plot_rows(ctx["precision"])
    if any(r["bars"] for r in acc_rows):
        out["precision_accuracy"] = plots.precision_accuracy_plot(acc_rows)
    ph = ctx["phases"]
    if ph is not None and ph["breakdowns"]:
        full = [r for r in ph["rows"] if tuple(r["phases"]) == phases.ALL_PHASES]
        out["phases"] = plots.phase_plot(ph["breakdowns"], full)
    st = ctx["stationary"]
    if st is not None:
        out["stationary_phases"] = plots.stationary_phase_plot(st["kernel"], st["rows"],
                                                               st["step_us"])
    for p in ctx["profiles"]:
        out[f"kernels:{p['name']}"] = plots.kernel_breakdown_plot(
            [(k["op"], float(k["total_ns"]) / 1e3) for k in p["kernels"]],
            f"Kernel time per row, one profiled {p['name']} epoch")
    return out


def plot_file(key: str) -> str:
    return KERNEL_PLOT.format(path=key.split(":", 1)[1]) if key.startswith("kernels:") \
        else PLOT_FILES[key]


def render_results(inp: Inputs, out_path, profiles_path, plots_dir, sweep_md,
                   templates_dir) -> tuple[dict, list]:
    """({path: text or bytes} of RESULTS.md, PROFILES.md and the plots, [stale plot files to
    remove]); nothing is written here."""
    out_path, profiles_path, plots_dir = Path(out_path), Path(profiles_path), Path(plots_dir)
    results_t = load_template(Path(templates_dir) / RESULTS_TEMPLATE)
    profiles_t = load_template(Path(templates_dir) / PROFILES_TEMPLATE)
    ctx = results_context(inp)
    images = results_plots(ctx)
    files = {k: shown_name(v, out_path.parent) for k, v in inp.paths.items()}
    files["profiles_md"] = link(profiles_path, out_path.parent)
    files["sweep_md"] = link(sweep_md, out_path.parent)
    files["results_md"] = link(out_path, profiles_path.parent)
    files["ncu_dir"] = shown_name(inp.paths["ncu"], out_path.parent)
    files["ncu"] = [shown_name(x, out_path.parent) for page in inp.ncu
                    for x in (page["details"], page["raw"]) if x is not None]
    ctx["files"] = files
    ctx["links"] = _study_links(ctx, out_path.parent)
    ctx["plots"] = {k: link(plots_dir / plot_file(k), out_path.parent) for k in images}
    ctx["profile_plots"] = {k: link(plots_dir / plot_file(k), profiles_path.parent) for k in images}
    outputs = {out_path: results_t.render(**ctx), profiles_path: profiles_t.render(**ctx)}
    outputs |= {plots_dir / plot_file(k): data for k, data in images.items()}
    stale = [plots_dir / name for name in PLOT_FILES.values()
             if (plots_dir / name) not in outputs and (plots_dir / name).is_file()]
    stale += [p for p in plots_dir.glob(KERNEL_PLOT.format(path="*")) if p not in outputs]
    stale += [p for p in (plots_dir / "fused_kernel_breakdown.png",) if p.is_file()
              and p not in outputs]
    return outputs, sorted(set(stale))


def render_supervised(run: dict, run_path, out_path, templates_dir) -> dict:
    """{RESULTS.md: text} of the short report of a supervised run that did not finish
    (analysis/sections/supervised.py says which runs those are)."""
    template = load_template(Path(templates_dir) / SUPERVISED_TEMPLATE)
    v = verdict.of_run(run, str(run_path))
    ctx = {"r": supervised.short(run, v), "sv": supervised.section(run), "verdict": v,
           "source": shown_name(run_path, Path(out_path).parent)}
    return {Path(out_path): template.render(**ctx)}


def render_sweep(doc: dict, sweep_path, out_path, plots_dir, templates_dir) -> dict:
    """{path: text or bytes} of SWEEP.md and its three plots."""
    from analysis import plots   # matplotlib: only when a plot is drawn, not for a run that stops at its inputs
    out_path, plots_dir = Path(out_path), Path(plots_dir)
    template = load_template(Path(templates_dir) / SWEEP_TEMPLATE)
    ctx = sweep_mod.sweep(doc)
    images = {"speedup": plots.speedup_plot(ctx["_width_points"], ctx["torch_names"]),
              "step_time": plots.step_time_plot(ctx["_batch_points"], ctx["cuda_names"],
                                                ctx["every_torch_names"]),
              "precision_speedup": plots.precision_speedup_plot(ctx["_precision_speedups"])}
    ctx["plots"] = {k: link(plots_dir / SWEEP_PLOT_FILES[k], out_path.parent) for k in images}
    ctx["source"] = shown_name(sweep_path, out_path.parent)
    return {out_path: template.render(**ctx)} | {plots_dir / SWEEP_PLOT_FILES[k]: v
                                                 for k, v in images.items()}


def write(outputs: dict, stale=()) -> None:
    """Every output together (spec.files.write_all), then the stale plots removed."""
    write_all(outputs)
    for p in stale:
        Path(p).unlink(missing_ok=True)


__all__ = ["FILES", "load_template", "render_results", "render_supervised", "render_sweep", "write"]
