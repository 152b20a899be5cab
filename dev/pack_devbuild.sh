#!/usr/bin/env bash
# dev/pack_devbuild.sh — builds here for sm_90 (`invoke build --arch sm_90`: build_info.json too) and
# packs build/ into DEST/build.tar.xz with the commit in DEST/COMMIT; device calls carry DEST
# (`carry: [".device-kit", ".devbuild"]`) and the dev/*_device.sh scripts unpack it (dev/devbuild.sh),
# so no nvcc runs on the device's clock.
#   default: the binaries, gemm_check, gemm_bench and the objects the course gate links learners'
#            files against (not the transformer's), about 11 MB
#   SLIM=1:  build/mlp_train and gemm_check only (about 3-5 MB): what the timing scripts need, and
#            small enough to carry beside a base build within the device's 64 MiB
#   VIT=1:   build/vit_forward too (dev/transformer_device.sh, dev/transformer_ab_device.sh);
#   VIT=only: build/vit_forward alone (dev/transformer_engine_device.sh beside base builds)
#   DEST=.devbuild_base SLIM=1: a base commit's binaries for an A/B in one call (check out the base
#            commit first; dev/engine_mlp_device.sh runs them beside .devbuild's)
set -euo pipefail
cd "$(dirname "$0")/.."
DEST="${DEST:-.devbuild}"
case "$DEST" in .devbuild|.devbuild_base) ;; *) echo "DEST must be .devbuild or .devbuild_base"; exit 2 ;; esac
invoke build --arch sm_90 > /dev/null
files=(build/mlp_train build/gemm_check build/build_info.json build/config.stamp)
[ "${SLIM:-0}" = 1 ] || files+=(build/mlp_host build/mlp_fit build/gemm_bench build/obj)
[ "${VIT:-0}" = 1 ] && files+=(build/vit_forward)
[ "${VIT:-0}" = only ] && files=(build/vit_forward build/build_info.json build/config.stamp)
rm -rf "$DEST" && mkdir -p "$DEST"
tar cJf "$DEST/build.tar.xz" --exclude=build/obj/transformer "${files[@]}"
commit="$(git rev-parse HEAD)$(git diff --quiet HEAD || echo '+uncommitted')"
echo "$commit" > "$DEST/COMMIT"
echo "$DEST/build.tar.xz: $(du -h "$DEST/build.tar.xz" | cut -f1) at $commit"
