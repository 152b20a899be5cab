// cuda/transformer/timing.h — `vit_forward time` and `profile`: our forward timed with CUDA events
// (a pair around each forward, warm-up excluded), launched kernel by kernel on a stream and as one
// CUDA graph of the same launches; and one forward inside the NVTX range nsys captures.
#pragma once
#include <string>
#include <vector>

#include "transformer/forward.h"

struct TimingStats {
  double median_ms = 0, mean_ms = 0, min_ms = 0, max_ms = 0, cv_pct = 0;
  std::vector<double> times_ms;
};
// spec/stats.py summary's definitions: the median (mean of the middle two), CV = sample sd / mean.
TimingStats summarise(const std::vector<double>& times_ms);

struct TimingRow {
  int batch = 0;
  GemmEngine engine = GemmEngine::kFp32;
  TimingStats stream, graph;
  std::string tiles, tuning;  // the plan timed, and the tuner's times ("op: tile ms ... -> tile")
  int tile_mismatches = 0;    // tiles whose output differed from the heuristic tile's (never used)
};

// `images` [n × image²] on the host; a batch larger than n repeats the images.
// Every batch on every engine (the forward's engine restored after).
std::vector<TimingRow> time_forward(VitForward& f, const std::vector<float>& images, int n,
                                    const std::vector<int>& batches, const std::vector<GemmEngine>& engines,
                                    int warmup, int repeats);
std::string timing_json(const std::vector<TimingRow>& rows, const VitShape& s, int warmup, int repeats);

// The tiles tuned, warm-up forwards, then one forward at `batch` between nvtxRangePushA(range) and
// nvtxRangePop.
void profile_forward(VitForward& f, const std::vector<float>& images, int n, int batch, const std::string& range);
