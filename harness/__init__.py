"""Python side of the benchmark: data, build, run, bindings and the PyTorch baseline."""
