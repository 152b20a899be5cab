// cuda/common/rng.h — the seeded draws: initial weights and each epoch's data order.
// SplitMix64 (Steele, Lea, Flood 2014) is integer-only, so every platform draws the same bits.
#pragma once
#include <cstdint>
#include <vector>

struct SplitMix64 {
  uint64_t state;
  explicit SplitMix64(uint64_t seed) : state(seed) {}
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1) with 53 random bits.
  double uniform() { return (double)(next() >> 11) * (1.0 / 9007199254740992.0); }
};

// Stream ids keep the draws independent of one another.
enum : uint64_t { kStreamInit = 1, kStreamOrder = 2, kStreamTest = 3 };
inline uint64_t stream_seed(uint64_t seed, uint64_t stream, uint64_t index) {
  SplitMix64 s(seed ^ (stream * 0xd1b54a32d192ed03ULL) ^ (index * 0x8cb92ba72f3d8dd7ULL));
  return s.next();
}
