"""Python side of the benchmark: data, build, run, bindings, the gate's supervisor, the PyTorch
baseline and our studies. harness/README.md says what each module and subpackage holds and their
layers (data, build, binding < gate < baseline < run, profiling < studies < gpu_session; a module
imports only from its own layer or below, tests/test_layers.py)."""
