// cuda/gate/guard.h — device buffers with poisoned guard bands, for every buffer the gate hands a
// submission: kGuard elements before and after the buffer are filled with a pattern no float
// computation writes (0x7FA5A5A5, a signalling NaN), and after each call check() names the first
// element written outside: "H: 256 elements written past its end (first at [256], 0 past the
// end)". The gate fails the case that made the call (gate/cases.cu) and case 10 sums the hits.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/cuda_check.h"

constexpr size_t kGuard = 4096;                // elements each side (16 KB of floats: a row of W1 and more)
constexpr uint32_t kGuardPattern = 0x7FA5A5A5u;

template <class T>
struct DevBuf {
  static_assert(sizeof(T) == 4, "guard bands hold 32-bit words");
  T* base = nullptr;  // kGuard | n | kGuard
  T* p = nullptr;
  size_t n = 0;
  std::string name;
  DevBuf(size_t count, std::string buffer_name = "buffer") : n(count), name(std::move(buffer_name)) {
    CUDA_CHECK(cudaMalloc(&base, sizeof(T) * (n + 2 * kGuard)));
    p = base + kGuard;
    std::vector<uint32_t> band(kGuard, kGuardPattern);
    CUDA_CHECK(cudaMemcpy(base, band.data(), sizeof(T) * kGuard, cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(p + n, band.data(), sizeof(T) * kGuard, cudaMemcpyHostToDevice));
  }
  ~DevBuf() { cudaFree(base); }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  void upload(const T* h) { CUDA_CHECK(cudaMemcpy(p, h, sizeof(T) * n, cudaMemcpyHostToDevice)); }
  void poison() { CUDA_CHECK(cudaMemset(p, 0xFF, sizeof(T) * n)); }  // float NaN / int −1
  std::vector<T> download() const {
    std::vector<T> h(n);
    if (n) CUDA_CHECK(cudaMemcpy(h.data(), p, sizeof(T) * n, cudaMemcpyDeviceToHost));
    return h;
  }
  // "" when both bands are intact, else one line naming the buffer and the first element written.
  std::string check() const {
    std::vector<uint32_t> lo(kGuard), hi(kGuard);
    CUDA_CHECK(cudaMemcpy(lo.data(), base, sizeof(T) * kGuard, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(hi.data(), p + n, sizeof(T) * kGuard, cudaMemcpyDeviceToHost));
    size_t after = 0, first_after = kGuard, before = 0, first_before = kGuard;
    for (size_t i = 0; i < kGuard; ++i) {
      if (hi[i] != kGuardPattern) { ++after; if (first_after == kGuard) first_after = i; }
      if (lo[kGuard - 1 - i] != kGuardPattern) { ++before; if (first_before == kGuard) first_before = i; }
    }
    std::string s;
    if (after)
      s = name + " [" + std::to_string(n) + " elements]: " + std::to_string(after) +
          " elements written past its end (first at [" + std::to_string(n + first_after) + "], " +
          std::to_string(first_after) + " past the end)";
    if (before)
      s += (s.empty() ? "" : "; ") + name + ": " + std::to_string(before) +
           " elements written before its start (nearest at [-" + std::to_string(first_before + 1) + "])";
    return s;
  }
};
