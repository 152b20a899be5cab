#!/usr/bin/env bash
# dev/precision_device.sh — one device call for our TF32 and BF16 paths (issue 30): dev/tiled_device.sh
# with their defaults (the binaries carried in .devbuild/, no gemm_check there, the precision paths'
# GPU tests, the paths and PyTorch variants at each precision; $OUT/precision.tgz). Every knob of
# tiled_device.sh still applies (POINTS, PATHS_RUN, TORCH_VARIANTS, GPU_TESTS, EPOCHS, ...).
cd "$(dirname "$0")/.."
NAME=precision DEVBUILD="${DEVBUILD:-1}" GEMM_CHECK="${GEMM_CHECK:-0}" \
  GPU_TESTS="${GPU_TESTS-tests/test_gpu_precision_paths.py}" \
  POINTS="${POINTS-256x128 8192x128 4096x2048 256x2048}" EPOCHS="${EPOCHS:-5}" \
  PATHS_RUN="${PATHS_RUN:-stationary,stationary-tf32,tiled,tiled-tf32,tiled-bf16}" \
  TORCH_VARIANTS="${TORCH_VARIANTS:-compiled-step,compiled-step-tf32,compiled-step-bf16,cuda-graph-tf32,cuda-graph-bf16}" \
  exec bash dev/tiled_device.sh
