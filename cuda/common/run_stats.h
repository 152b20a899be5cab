// cuda/common/run_stats.h — the statistics of a run that run.json records: epoch-time summaries and the
// last-five-epoch mean accuracy of case 7.
#pragma once
#include <vector>

// Epoch times after the warm-up: epoch 0 (module load, first launches, graph capture) is never
// timed. median, mean, min, max, and CV = sample standard deviation (n - 1) / mean, in percent
// (0 for one timed epoch). All NaN when fewer than two epochs ran.
struct EpochStats {
  double mean, median, min, max, cv;
};
EpochStats summarise_epochs(const std::vector<double>& epoch_ms);

// Mean of the last min(5, n) values (NaN for none): case 7's accuracy, robust to the 4 pp
// epoch-to-epoch swings of one epoch's test accuracy.
double last5_mean(const std::vector<double>& values);
