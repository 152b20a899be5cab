// cuda/gate/replay_distance.h — case 13's comparison of a CUDA graph's replay with the eager run of the
// same call (gate/contract.cu), host-only so the CPU tests compile it (tests/test_replay_distance.py).
#pragma once
#include <cmath>
#include <vector>

namespace gate {

// ||replay − eager|| / ||eager|| over the elements finite in both. An element non-finite in one run
// and finite in the other, or non-finite of another kind (NaN against ±inf, +inf against −inf), is
// infinitely far: that is work that ran differently. Non-finite values at the same places in both
// runs (an output the call never wrote, still the gate's NaN poison, or a NaN it computed) are the
// same in both: the other cases judge those, and case 13 does not blame them on another stream.
inline double replay_distance(const std::vector<float>& replay, const std::vector<float>& eager) {
  double d = 0, n = 0;
  for (size_t i = 0; i < replay.size() && i < eager.size(); ++i) {
    const float a = replay[i], b = eager[i];
    if (!std::isfinite(a) || !std::isfinite(b)) {
      if (std::isfinite(a) != std::isfinite(b) || std::isnan(a) != std::isnan(b) || (!std::isnan(b) && a != b))
        return INFINITY;
      continue;
    }
    d += ((double)a - b) * ((double)a - b);
    n += (double)b * b;
  }
  if (replay.size() != eager.size()) return INFINITY;
  return n > 0 ? std::sqrt(d / n) : std::sqrt(d);
}

// How many elements of `eager` are not finite (the detail names them when the replay differs).
inline size_t non_finite_count(const std::vector<float>& eager) {
  size_t k = 0;
  for (float x : eager) k += !std::isfinite(x);
  return k;
}

}  // namespace gate
