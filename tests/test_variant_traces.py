"""harness.baseline.variant_traces: the README's sentences follow the trace numbers."""
import pytest

pytest.importorskip("torch")
from harness.baseline.variant_traces import readme  # noqa: E402


def _v(wall, kern, launches, graphs):
    return {"steps": 47, "wall_ms": wall, "kernel_ms": kern, "gpu_busy_fraction": kern / wall,
            "kernels": launches, "kernel_launches": launches, "graph_launches": graphs, "compiled": False,
            "top_cpu_ops": [{"name": "Optimizer.step#SGD.step", "self_cpu_ms": 12.0, "calls": 47}]}


def test_readme_names_the_bound_from_the_numbers():
    doc = {"commit": "abc", "gpu": "G", "variants": {"slow": _v(48.0, 4.0, 940, 47), "fast": _v(2.2, 2.0, 0, 47)}}
    text = readme(doc)
    assert "`slow`: host-bound: the GPU computes 4.00 of the epoch's 48.00 ms" in text
    assert "20.0 kernel launches and 1.0 graph launches a step" in text
    assert "`fast`: GPU-bound" in text
    assert "| slow | 48.00 | 4.00 | 8% | 940 | 940 | 47 | Optimizer.step#SGD.step (12.00) |" in text
