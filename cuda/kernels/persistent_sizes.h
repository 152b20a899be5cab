// cuda/kernels/persistent_sizes.h — the persistent kernels' tile constants and the dynamic shared memory
// each kernel asks for, without CUDA headers: cuda/kernels/persistent.cuh (the device code) and the
// host-only fit logic (cuda/paths/path_fit.cpp, build/mlp_fit) both read them from here.
#pragma once
#include <stddef.h>

namespace mlp {

constexpr int kThreads = 256, kWarps = kThreads / 32;  // one block per SM, 8 warps
constexpr int kTileA = 16;    // H tile: 16 batch rows × 16 hidden units
constexpr int kMaxKA = 1024;  // K (input features) staged per chunk in phase A (the shipped kernel)
constexpr int kSmallKA = 512; // the reduced chunk: phase A's staging in 64 KB (sm_75's per-block limit)
constexpr int kTileC = 32;    // W1 tile: 32 inputs × 64 hidden units (kTileCJ)
constexpr int kTileCJ = 64;
constexpr int kRowsC = 128;   // batch rows staged per chunk in phase C
constexpr int kMaxOut = 16;   // classes: phase B holds them in registers and lanes, phase C
                              // gives each thread at most 2 of the 32·out dW2 outputs

// persistent2: shared-memory regions beside phase C's staging (Xs, Ds: 128×96 floats).
constexpr int kWnOffset = kRowsC * (kTileC + kTileCJ);  // W1 tile, new values [32][64]
constexpr int kXnOffset = kWnOffset + kTileC * kTileCJ; // next batch's inputs [128][32]
constexpr int kPersist2Floats = kXnOffset + kRowsC * kTileC;

constexpr size_t smax(size_t a, size_t b) { return a > b ? a : b; }
constexpr size_t smin_int(int a, int b) { return (size_t)(a < b ? a : b); }

// Phase A's staging for `in` input features staged `ka` at a time (Xs and Ws), or its reduction.
constexpr size_t persistent_phase_a_bytes(int in, int ka) {
  return smax(2 * smin_int(in, ka) * kTileA * sizeof(float), (size_t)kWarps * 256 * sizeof(float));
}
// Phases B and C (and persistent2's next-step partials when `two_barriers`).
constexpr size_t persistent_phase_bc_bytes(bool two_barriers) {
  const size_t b = (size_t)(kWarps + 1) * kMaxOut * sizeof(float);
  size_t c = smax((size_t)kRowsC * (kTileC + kTileCJ), (size_t)kWarps * 1024) * sizeof(float);  // C: W1 tile
  c = smax(c, (size_t)kRowsC * (kTileC + kMaxOut) * sizeof(float));                             // C: W2 item
  if (two_barriers) c = smax(c, (size_t)kPersist2Floats * sizeof(float));
  return smax(b, c);
}
// Dynamic shared memory of a block: persistent (phases A, B, C with phase A's chunk `ka`), or
// persistent2 (`two_barriers`: no phase A; B, C and the partials' region).
constexpr size_t persistent_smem_bytes(int in, bool two_barriers, int ka = kMaxKA) {
  return two_barriers ? persistent_phase_bc_bytes(true)
                      : smax(persistent_phase_a_bytes(in, ka), persistent_phase_bc_bytes(false));
}
static_assert(persistent_smem_bytes(784, false) == 100352, "the shipped persistent kernel's 98 KB at 784 inputs");
static_assert(persistent_smem_bytes(784, false, kSmallKA) == 65536, "the K chunk of 512 stages in 64 KB");
static_assert(persistent_smem_bytes(784, true) == 73728, "persistent2's own region");

}  // namespace mlp
