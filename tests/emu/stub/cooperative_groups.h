// tests/emu/stub/cooperative_groups.h — what cuda/kernels/persistent.cuh names of cooperative groups,
// for its CPU emulation (tests/emu/persistent_emu.cpp): a grid barrier that does nothing. The
// emulation runs one phase at a time, block after block, so the epoch loops (which need a real
// grid barrier) are compiled but never run there.
#pragma once
namespace cooperative_groups {
struct grid_group {
  void sync() {}
};
inline grid_group this_grid() { return {}; }
}  // namespace cooperative_groups
