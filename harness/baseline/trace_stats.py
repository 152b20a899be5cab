"""Numbers from torch.profiler's exports, with no torch import: the Chrome trace's events (step
times, GPU busy time, the kernels each CPU range launched) and the memory timeline's
[times, sizes by category].

Chrome trace events used (complete events, "ph": "X", times in microseconds):
  user_annotation   record_function ranges on the host ("step", "fc1.forward", ...)
  cpu_op            aten ops and autograd nodes ("autograd::engine::evaluate_function:
                    AddmmBackward0"); args "Sequence number" ties a backward node to the forward
                    op that made it
  cuda_runtime / cuda_driver   the launch calls; args "correlation" names the GPU event launched
  kernel, gpu_memcpy, gpu_memset   GPU work; args "correlation" names the launch
"""
from __future__ import annotations

import bisect
import json
from collections import defaultdict

GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")
BACKWARD_PREFIX = "autograd::engine::evaluate_function: "

# The memory timeline's columns, as torch.profiler._memory_profiler._CATEGORY_TO_COLORS orders
# them (torch 2.1 to 2.13); torch_profiles reads the order from torch itself and passes it here.
TORCH_CATEGORIES = ("PARAMETER", "OPTIMIZER_STATE", "INPUT", "TEMPORARY", "ACTIVATION",
                    "GRADIENT", "AUTOGRAD_DETAIL", "UNKNOWN")
# The report's groups of torch's categories. "inputs" is apart from "other" because it holds the
# whole train set the batch is gathered from (on the device, as in every variant): 18 MiB that
# would hide the rest.
GROUPS = {"parameters": ("PARAMETER",), "gradients": ("GRADIENT",),
          "optimizer_state": ("OPTIMIZER_STATE",), "activations": ("ACTIVATION",),
          "inputs": ("INPUT",), "other": ("TEMPORARY", "AUTOGRAD_DETAIL", "UNKNOWN")}


class TraceError(ValueError):
    """A trace or timeline that is not what torch.profiler writes; the message names it."""


def events(doc) -> list[dict]:
    """The complete ("X") events of a Chrome trace document (a dict with traceEvents, or a
    list), sorted by start time."""
    evs = doc.get("traceEvents") if isinstance(doc, dict) else doc
    if not isinstance(evs, list):
        raise TraceError("no traceEvents list")
    out = [e for e in evs if isinstance(e, dict) and e.get("ph") == "X"
           and isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))]
    return sorted(out, key=lambda e: (e["ts"], -e["dur"]))


def load_trace(text: str | bytes) -> list[dict]:
    try:
        return events(json.loads(text))
    except json.JSONDecodeError as exc:
        raise TraceError(f"not a Chrome trace JSON ({exc})") from None


def _end(e) -> float:
    return float(e["ts"]) + float(e["dur"])


def union_us(intervals) -> float:
    """Total length of the union of (start, end) intervals."""
    total, cur_s, cur_e = 0.0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def step_stats(evs: list[dict], step_name: str = "step") -> dict:
    """Per-step figures of the traced steps (each a user_annotation named step_name).

    window: from the first step's start to the later of the last step's end and the last GPU
    event's end; wall_us_per_step: window / steps; host_us_per_step: mean length of a step range
    (the host issuing the step); kernel_us_per_step: summed kernel time / steps; gpu_busy_fraction:
    the union of GPU events (kernels, copies, memsets) inside the window over the window (None
    without GPU events); kernels_per_step, launches_per_step (runtime or driver calls that put
    a GPU event in the trace): counts / steps."""
    steps = [e for e in evs if e.get("cat") == "user_annotation" and e.get("name") == step_name]
    if not steps:
        raise TraceError(f"no {step_name!r} ranges in the trace")
    t0 = min(e["ts"] for e in steps)
    host_end = max(_end(e) for e in steps)
    gpu = [e for e in evs if e.get("cat") in GPU_CATS and e["ts"] >= t0]
    kernels = [e for e in gpu if e.get("cat") == "kernel"]
    t1 = max([host_end] + [_end(e) for e in gpu])
    window = t1 - t0
    n = len(steps)
    gpu_corr = {(e.get("args") or {}).get("correlation") for e in gpu} - {None}
    launches = [e for e in evs if e.get("cat") in LAUNCH_CATS and t0 <= e["ts"] <= host_end
                and (e.get("args") or {}).get("correlation") in gpu_corr]
    busy = union_us((float(e["ts"]), _end(e)) for e in gpu) if gpu else None
    return {"steps": n, "window_us": window, "wall_us_per_step": window / n,
            "host_us_per_step": sum(float(e["dur"]) for e in steps) / n,
            "kernel_us_per_step": sum(float(e["dur"]) for e in kernels) / n,
            "gpu_busy_us_per_step": None if busy is None else busy / n,
            "gpu_busy_fraction": None if busy is None or window <= 0 else busy / window,
            "kernels_per_step": len(kernels) / n, "launches_per_step": len(launches) / n}


class _Ranges:
    """CPU ranges per thread, to find the innermost range holding a time."""

    def __init__(self, ranges):
        self.by_tid = defaultdict(list)
        for r in ranges:
            self.by_tid[r["tid"]].append(r)
        for lst in self.by_tid.values():
            lst.sort(key=lambda r: (r["ts"], -r["dur"]))
        self.starts = {tid: [r["ts"] for r in lst] for tid, lst in self.by_tid.items()}

    def innermost(self, tid, t):
        lst = self.by_tid.get(tid, ())
        i = bisect.bisect_right(self.starts.get(tid, []), t)
        best = None
        for r in reversed(lst[:i]):          # ranges starting at or before t, latest first
            if _end(r) >= t and (best is None or r["dur"] < best["dur"]):
                best = r
        return best


def _seq(e):
    return (e.get("args") or {}).get("Sequence number")


def layer_ranges(evs: list[dict], layers) -> list[dict]:
    """For each layer name L: its forward ranges (user_annotation "L.forward") and its backward
    ranges (the autograd nodes whose sequence numbers are those of the ops inside a forward
    range). Returns [{"layer", "phase": "forward"|"backward", "node", "tid", "ts", "dur"}]."""
    out = []
    ops = [e for e in evs if e.get("cat") == "cpu_op"]
    backward = [e for e in ops if str(e.get("name", "")).startswith(BACKWARD_PREFIX)
                and _seq(e) is not None]
    for layer in layers:
        fwd = [e for e in evs if e.get("cat") == "user_annotation"
               and e.get("name") == f"{layer}.forward"]
        seqs = set()
        for f in fwd:
            out.append({"layer": layer, "phase": "forward", "node": f["name"], "tid": f.get("tid"),
                        "ts": f["ts"], "dur": f["dur"]})
            seqs |= {_seq(e) for e in ops if e.get("tid") == f.get("tid") and
                     f["ts"] <= e["ts"] and _end(e) <= _end(f) and _seq(e) is not None}
        for b in backward:
            if _seq(b) in seqs:
                out.append({"layer": layer, "phase": "backward",
                            "node": b["name"][len(BACKWARD_PREFIX):], "tid": b.get("tid"),
                            "ts": b["ts"], "dur": b["dur"]})
    return out


def attribute(evs: list[dict], ranges: list[dict]) -> list[dict]:
    """The GPU events (kernels, copies, memsets) and the CPU ops of each range in `ranges` (from
    layer_ranges): [{"layer", "phase", "node", "kind": "kernel"|... |"op", "name", "dur_us",
    "op": the innermost aten op that launched it}], GPU events matched through their launch's
    correlation id to the range holding the launch."""
    holder = _Ranges(ranges)
    aten = _Ranges([e for e in evs if e.get("cat") == "cpu_op"
                    and not str(e.get("name", "")).startswith(BACKWARD_PREFIX)])
    out = []
    by_corr = {}
    for e in evs:
        if e.get("cat") in LAUNCH_CATS:
            corr = (e.get("args") or {}).get("correlation")
            r = holder.innermost(e.get("tid"), e["ts"])
            if corr is not None and r is not None:
                op = aten.innermost(e.get("tid"), e["ts"])
                by_corr[corr] = (r, op["name"] if op else None)
        elif e.get("cat") == "cpu_op" and not str(e.get("name", "")).startswith(BACKWARD_PREFIX):
            r = holder.innermost(e.get("tid"), e["ts"])
            if r is not None and _end(e) <= _end(r):
                dims = (e.get("args") or {}).get("Input Dims")
                out.append({"layer": r["layer"], "phase": r["phase"], "node": r["node"],
                            "kind": "op", "name": e["name"], "dur_us": float(e["dur"]),
                            "op": e["name"], "input_dims": dims})
    for e in evs:
        if e.get("cat") in GPU_CATS:
            hit = by_corr.get((e.get("args") or {}).get("correlation"))
            if hit is not None:
                r, op = hit
                out.append({"layer": r["layer"], "phase": r["phase"], "node": r["node"],
                            "kind": e["cat"], "name": e["name"], "dur_us": float(e["dur"]),
                            "op": op})
    return out


def group_rows(rows: list[dict], n_steps: int) -> list[dict]:
    """Rows of attribute() grouped by (layer, phase, node, kind, name, op), in first-seen order:
    instances_per_step, mean_us, us_per_step."""
    groups: dict = {}
    for r in rows:
        key = (r["layer"], r["phase"], r["node"], r["kind"], r["name"], r["op"])
        g = groups.setdefault(key, {"layer": r["layer"], "phase": r["phase"], "node": r["node"],
                                    "kind": r["kind"], "name": r["name"], "op": r["op"], "n": 0,
                                    "total": 0.0})
        if r.get("input_dims") is not None:
            g["input_dims"] = r["input_dims"]
        g["n"] += 1
        g["total"] += r["dur_us"]
    out = []
    for g in groups.values():
        n, total = g.pop("n"), g.pop("total")
        out.append(g | {"instances_per_step": n / n_steps, "mean_us": total / n,
                        "us_per_step": total / n_steps})
    return out


# --------------------------------------------------------------------------------------------
# Memory timeline
# --------------------------------------------------------------------------------------------

def parse_timeline(doc, categories=TORCH_CATEGORIES) -> tuple[list[float], list[list[int]]]:
    """(times in us, sizes [[bytes per category]]) of export_memory_timeline's JSON
    [times, sizes], whose rows hold a leading 0 and then one column per category."""
    if not (isinstance(doc, list) and len(doc) == 2 and isinstance(doc[0], list)
            and isinstance(doc[1], list) and len(doc[0]) == len(doc[1])):
        raise TraceError("memory timeline: expected [times, sizes] of equal length")
    if not doc[0]:
        raise TraceError("memory timeline: no points")
    width = len(categories) + 1
    for i, row in enumerate(doc[1]):
        if not isinstance(row, list) or len(row) != width:
            raise TraceError(f"memory timeline: row {i} has {len(row) if isinstance(row, list) else '?'}"
                             f" values, expected {width} (0 and {len(categories)} categories)")
    return [float(t) for t in doc[0]], [[int(x) for x in row[1:]] for row in doc[1]]


def memory_summary(times, sizes, categories=TORCH_CATEGORIES) -> dict:
    """Peaks of a parsed timeline: peak_total_bytes (the largest sum over categories) and
    when it happened (us after the first point), the categories at that moment (at_peak), each
    category's own peak (category_peak), and both again in GROUPS (groups_peak, groups_at_peak).
    A category torch did not list counts as 0 in its group."""
    totals = [sum(row) for row in sizes]
    i = max(range(len(totals)), key=lambda k: totals[k])
    at_peak = dict(zip(categories, sizes[i]))
    own = {c: max(row[j] for row in sizes) for j, c in enumerate(categories)}

    def grouped(d):
        return {g: sum(d.get(c, 0) for c in cs) for g, cs in GROUPS.items()}

    return {"points": len(times), "duration_us": times[-1] - times[0],
            "peak_total_bytes": totals[i], "peak_at_us": times[i] - times[0],
            "at_peak": at_peak, "category_peak": own,
            "groups_at_peak": grouped(at_peak), "groups_peak": grouped(own)}
