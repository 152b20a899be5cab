"""Python side of the benchmark: data, build, run, bindings, the gate's supervisor, the PyTorch
baseline and our studies. harness/README.md says what each module and subpackage holds and the
layers they import along (tests/test_layers.py holds the imports to them)."""
