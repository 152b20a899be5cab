# dev/devbuild.sh — sourced by the dev/*_device.sh scripts: the binaries built on the CPU machine
# for sm_90 (dev/pack_devbuild.sh) unpacked on the device, so no nvcc runs on the device's clock.
#   unpack_devbuild [DIR]   .devbuild/build.tar.xz into DIR (default: the repository root, so
#                           build/...), every file touched newer than the sources (make then
#                           rebuilds nothing), its commit printed from .devbuild/COMMIT; returns
#                           non-zero where neither build/mlp_train nor build/vit_forward runs.
#   unpack_base DIR         .devbuild_base/ the same way into DIR (a base commit's binaries for an
#                           A/B in one call); returns non-zero where there is none.
#   pack_on_exit TGZ DIR    makes $OUT/DIR; when the script exits, packs it into $OUT/TGZ and removes
#                           it (the next device call copies the working tree over results/, and the
#                           device returns a few files: one tarball a call)
unpack_devbuild() {
  local dir="${1:-.}"
  [ -f .devbuild/build.tar.xz ] || { echo "no .devbuild/build.tar.xz (run dev/pack_devbuild.sh)"; return 1; }
  mkdir -p "$dir" && tar xJf .devbuild/build.tar.xz -C "$dir" && find "$dir/build" -type f -exec touch {} +
  echo "binaries of $(cat .devbuild/COMMIT 2>/dev/null || echo 'an unrecorded commit') from .devbuild"
  "$dir/build/mlp_train" --help > /dev/null 2>&1 || "$dir/build/vit_forward" --help > /dev/null 2>&1 ||
    { echo "no usable build/mlp_train or build/vit_forward in .devbuild"; return 1; }
}
unpack_base() {
  local dir="$1"
  [ -f .devbuild_base/build.tar.xz ] || return 1
  mkdir -p "$dir" && tar xJf .devbuild_base/build.tar.xz -C "$dir" || return 1
  echo "base binaries of $(cat .devbuild_base/COMMIT 2>/dev/null || echo 'an unrecorded commit') from .devbuild_base"
}
pack_on_exit() {
  PACK_TGZ=$1 PACK_DIR=$2
  mkdir -p "$OUT/$PACK_DIR"
  trap 'tar czf "$OUT/$PACK_TGZ" -C "$OUT" "$PACK_DIR" && rm -rf "${OUT:?}/$PACK_DIR"' EXIT
}
