"""The PyTorch baseline: its variants (registered in registry.py), the compiled step, hand-written autograd ops, its profiling studies."""
