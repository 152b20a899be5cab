"""The two PyTorch variants that the report and the sweep read by name, each for its role.

harness/baseline/registry.py registers every variant (these two among them, under these names):
how to build it and when it runs. pytorch.json records which variants ran, which were left out
and why, so the report needs no other fact about them.
"""
from __future__ import annotations

EAGER = "eager"            # the plain training loop: the tiers and every "vs eager" ratio
CUDA_GRAPH = "cuda-graph"  # the eager step captured whole: RESULTS.md's graph tier, and a sweep variant
