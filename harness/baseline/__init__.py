"""The PyTorch baseline: its variants, the compiled step, hand-written autograd ops, its profiling studies."""
