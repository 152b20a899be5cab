#include "common/run_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

EpochStats summarise_epochs(const std::vector<double>& epoch_ms) {
  EpochStats r{NAN, NAN, NAN, NAN, NAN};
  if (epoch_ms.size() < 2) return r;
  std::vector<double> t(epoch_ms.begin() + 1, epoch_ms.end());
  std::vector<double> s = t;
  std::sort(s.begin(), s.end());
  size_t n = s.size();
  r.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  r.mean = std::accumulate(t.begin(), t.end(), 0.0) / n;
  r.min = s.front();
  r.max = s.back();
  double var = 0;
  for (double x : t) var += (x - r.mean) * (x - r.mean);
  r.cv = n > 1 ? 100.0 * std::sqrt(var / (n - 1)) / r.mean : 0.0;
  return r;
}

double last5_mean(const std::vector<double>& values) {
  if (values.empty()) return NAN;
  size_t k = std::min<size_t>(5, values.size());
  double s = 0;
  for (size_t i = values.size() - k; i < values.size(); ++i) s += values[i];
  return s / (double)k;
}
