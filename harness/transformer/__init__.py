"""The transformer extension (issue 31): the vision transformer of transformer.toml in PyTorch (model.py),
its brief training and weights folder (train.py, weights.py), the PyTorch timings (torch_time.py), the
runs of build/vit_forward (run.py: check, predict, time, profile) and results/transformer.json
(results.py). `invoke transformer.*` (tasks.py) calls these; dev/transformer_device.sh runs them all."""
