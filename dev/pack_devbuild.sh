#!/usr/bin/env bash
# dev/pack_devbuild.sh — builds here for sm_90 (`invoke build --arch sm_90`: build_info.json too) and
# packs build/ (binaries, gemm_check, gemm_bench, the objects the course gate links learners' files against;
# not the transformer's) into .devbuild/build.tar.xz (about 7 MB), which device calls carry
# (`carry: [".device-kit", ".devbuild"]`) and the dev/*_device.sh scripts unpack with DEVBUILD=1
# or SKIP_BUILD=1: no nvcc on the device's clock, and the tree stays under the 64 MiB it may carry.
set -euo pipefail
cd "$(dirname "$0")/.."
invoke build --arch sm_90 > /dev/null
rm -rf .devbuild && mkdir -p .devbuild
tar cJf .devbuild/build.tar.xz --exclude=build/obj/transformer \
  build/mlp_train build/mlp_host build/mlp_fit build/gemm_check build/gemm_bench build/build_info.json \
  build/config.stamp build/obj
echo ".devbuild/build.tar.xz: $(du -h .devbuild/build.tar.xz | cut -f1) at $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (uncommitted changes)')"
