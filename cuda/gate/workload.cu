// cuda/gate/workload.cu — gate/workload.h: the recipe's and the odd shape's workloads, a case's parts
// and their row, and the checks after every call.
#include "gate/workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "common/cuda_check.h"
#include "common/rng.h"
#include "gate/catalog.h"
#include "gate/cpu_reference.h"

namespace gate {

Workload recipe_workload(const GateInputs& g) {
  Workload w;
  w.s = g.s;
  w.label = std::to_string(g.s.in) + "-" + std::to_string(g.s.hidden) + "-" + std::to_string(g.s.out);
  w.X = g.data->train_x.data();
  w.y = g.data->train_y.data();
  w.rows = g.data->n_train;
  w.order = *g.order0;
  w.init = *g.init;
  w.d_X = g.d_train_x;
  w.d_y = g.d_train_y;
  return w;
}

const Workload& odd_workload(const GateInputs& g) {
  struct Held {
    Workload w;
    std::vector<float> X;
    std::vector<int> y;
    std::unique_ptr<DevBuf<float>> dX;
    std::unique_ptr<DevBuf<int>> dy;
  };
  static std::unique_ptr<Held> held;
  if (held) return held->w;
  held = std::make_unique<Held>();
  const MlpShape s = kOddShape;
  const int rows = 640;
  SplitMix64 rng(stream_seed(g.seed, kStreamTest, 37));
  held->X.resize((size_t)rows * s.in);
  for (auto& x : held->X) x = (float)(rng.next() % 256) / 255.0f;  // like pixels: k/255
  held->y.resize((size_t)rows);
  for (auto& v : held->y) v = (int)(rng.next() % (uint64_t)s.out);
  held->dX = std::make_unique<DevBuf<float>>(held->X.size(), "X_all");
  held->dy = std::make_unique<DevBuf<int>>(held->y.size(), "labels_all");
  held->dX->upload(held->X.data());
  held->dy->upload(held->y.data());
  Workload& w = held->w;
  w.s = s;
  w.label = "odd shape " + std::to_string(s.in) + "-" + std::to_string(s.hidden) + "-" + std::to_string(s.out);
  w.odd = true;
  w.X = held->X.data();
  w.y = held->y.data();
  w.rows = rows;
  w.order = epoch_order(rows, g.seed ^ 0x37u, 0);
  w.init = init_params(s, g.seed ^ 0x37u);
  w.d_X = held->dX->p;
  w.d_y = held->dy->p;
  return w;
}

void take_rows(const Workload& w, int batch, std::vector<float>& X, std::vector<int>& y) {
  X.assign((size_t)batch * w.s.in, 0.f);
  y.assign((size_t)batch, 0);
  for (int r = 0; r < batch; ++r) {
    const int idx = w.order[(size_t)r % w.order.size()];
    std::copy(w.X + (long)idx * w.s.in, w.X + (long)(idx + 1) * w.s.in, X.begin() + (long)r * w.s.in);
    y[(size_t)r] = w.y[(size_t)idx];
  }
}

void combine(CaseResult& r, const std::vector<Part>& parts, const std::string& what) {
  r.passed = true;
  const Part* lead = nullptr;  // the first failing part, else the one nearest its limit
  double nearest = -1;
  std::string figures, declined;
  for (const auto& p : parts) {
    if (p.declined) {
      declined += (declined.empty() ? "" : ", ") + p.label;
      figures += "; " + p.label + ": declined";
      continue;
    }
    if (!p.detail.empty()) {
      figures += "; " + p.label + ": " + p.detail;
    } else {
      char b[200];
      std::snprintf(b, sizeof b, "; %s: %.3g (limit %.3g)%s", p.label.c_str(), p.value, p.limit, p.passed ? "" : " FAIL");
      figures += b;
    }
    if (!p.passed && r.passed) lead = &p;
    r.passed &= p.passed;
    const double ratio = p.limit > 0 ? p.value / p.limit : p.value;
    if (r.passed && ratio > nearest) { nearest = ratio; lead = &p; }
  }
  if (lead) {
    r.value = lead->detail.empty() ? lead->value : NAN;
    r.limit = lead->limit;
  }
  r.detail = lead && !lead->passed && !lead->detail.empty() ? lead->label + ": " + lead->detail + " (" + what + figures + ")"
                                                            : what + figures;
  if (!declined.empty()) r.note = declined + ": declined (" + mlp_status_name(MLP_ERR_UNSUPPORTED) + ")";
}

bool call_ok(int status, const char* fn, const Workload& w, Part& part) {
  if (status == MLP_ERR_UNSUPPORTED && w.odd) {
    part.declined = true;
    part.passed = true;
    return false;
  }
  if (status != MLP_OK) {
    part.passed = false;
    part.detail = std::string(fn) + " returned " + mlp_status_name(status);
    return false;
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  return true;
}

bool guards_ok(Part& part, int case_id, const char* fn, std::initializer_list<std::string> checks) {
  std::string all;
  for (const auto& c : checks)
    if (!c.empty()) all += (all.empty() ? "" : "; ") + c;
  if (all.empty()) return true;
  record_guard_hit("case " + std::to_string(case_id) + ": " + fn + ": " + all);
  part.passed = false;
  part.detail = std::string("guard band: ") + fn + " wrote outside its buffer: " + all;
  return false;
}

namespace {
template <class T>
std::string first_change(const char* fn, const std::string& name, const std::vector<T>& got, const T* want) {
  for (size_t k = 0; k < got.size(); ++k)
    if (std::memcmp(&got[k], &want[k], sizeof(T)) != 0)
      return std::string(fn) + " changed its input " + name + " (first at [" + std::to_string(k) +
             "]): inputs are read-only (const in submission.h)";
  return "";
}
}  // namespace

std::string inputs_changed(const char* fn, const std::vector<std::pair<const DevBuf<float>*, const float*>>& f,
                           const std::vector<std::pair<const DevBuf<int>*, const int*>>& i) {
  for (const auto& [buf, want] : f) {
    const std::string d = first_change(fn, buf->name, buf->download(), want);
    if (!d.empty()) return d;
  }
  for (const auto& [buf, want] : i) {
    const std::string d = first_change(fn, buf->name, buf->download(), want);
    if (!d.empty()) return d;
  }
  return "";
}

template <class T>
std::string device_changed(const char* fn, const char* name, const T* dev, const T* want, size_t n) {
  std::vector<T> got(n);
  CUDA_CHECK(cudaMemcpy(got.data(), dev, sizeof(T) * n, cudaMemcpyDeviceToHost));
  return first_change(fn, name, got, want);
}
template std::string device_changed<float>(const char*, const char*, const float*, const float*, size_t);
template std::string device_changed<int>(const char*, const char*, const int*, const int*, size_t);

std::vector<float> uniform(size_t n, double scale, SplitMix64& rng) {
  std::vector<float> v(n);
  for (auto& x : v) x = (float)((rng.uniform() * 2 - 1) * scale);
  return v;
}

std::pair<float, float> drawn_hyperparameters(uint64_t seed) {
  SplitMix64 rng(seed);
  const float lr = (float)(0.01 + 0.49 * rng.uniform()), mu = (float)(0.3 + 0.69 * rng.uniform());
  return {lr, mu};
}

CaseResult make_case(int id) {
  CaseResult r;
  r.id = id;
  const CaseInfo* info = find_case(id);
  r.name = info ? info->name : "?";
  r.value = NAN;
  r.limit = NAN;
  return r;
}

}  // namespace gate
