// dev/stationary/check_shipped.cuh — `build/stationary_epoch --check-shipped`: the shipped kernel
// (cuda/kernels/stationary.cuh's k_stationary_epoch, through the host API stationary_epoch) against
// dev's variant kernel built with the shipped bits (k_stationary_variant<CL, U, kShippedV>), from
// the same parameters, velocity, data and orders, over N epochs that continue one another: the
// final parameters, velocities and every step loss must be bitwise equal. Included by
// dev/stationary/stationary_epoch.cu after variants.cuh.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace check {

inline void ck(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "stationary check: %s failed: %s (%s)\n", what, cudaGetErrorName(e), cudaGetErrorString(e));
  std::exit(3);
}

// stationary_epoch's semantics for k_stationary_variant<CL, U, kShippedV>, every shape of kShapes.
inline int variant_epoch(mlp::StationaryPlan* p, float* params, float* velocity, const int* labels, const int* order, int n,
                         int batch, float lr, float mu, float* step_loss) {
  using namespace mlp::wstat;
  const Args args{params, velocity, p->xb, labels, order, n, batch, lr, mu, step_loss, p->slots, p->counters,
                  p->arrivals, p->error_flag, nullptr};
  cudaError_t e = cudaErrorInvalidValue;
#define MLP_WSTAT_CHECK_CASE(A, B) \
  if (p->cluster == A && p->units == B) e = variants::launch<A, B, kShippedV>(p, args);
  MLP_WSTAT_SHAPES(MLP_WSTAT_CHECK_CASE)
#undef MLP_WSTAT_CHECK_CASE
  if (e != cudaSuccess) return MLP_ERR_CUDA;
  p->arrivals += (unsigned)p->clusters * (unsigned)((n + batch - 1) / batch);
  return MLP_OK;
}

struct Device {
  float *params, *velocity, *loss;  // loss: [steps] of one epoch
  const int* labels;
  int* order;
};
struct Result {
  std::vector<float> params, velocity, loss;  // loss: every epoch's step losses, in order
};

// The epochs of `orders` from (p0, v0), each from the state the previous one left.
inline Result run(bool shipped, mlp::StationaryPlan& plan, const Device& d, const std::vector<float>& p0,
                  const std::vector<float>& v0, const std::vector<std::vector<int>>& orders, int batch, float lr, float mu) {
  ck(cudaMemcpy(d.params, p0.data(), p0.size() * 4, cudaMemcpyHostToDevice), "copying the parameters");
  ck(cudaMemcpy(d.velocity, v0.data(), v0.size() * 4, cudaMemcpyHostToDevice), "copying the velocity");
  Result r;
  for (const std::vector<int>& o : orders) {
    const int n = (int)o.size(), steps = (n + batch - 1) / batch;
    ck(cudaMemcpy(d.order, o.data(), o.size() * 4, cudaMemcpyHostToDevice), "copying the order");
    ck(cudaMemset(d.loss, 0xff, (size_t)steps * 4), "clearing the step losses");  // NaN until written
    const int st = shipped ? mlp::stationary_epoch(&plan, d.params, d.velocity, d.labels, d.order, n, batch, lr, mu, d.loss, 0)
                           : variant_epoch(&plan, d.params, d.velocity, d.labels, d.order, n, batch, lr, mu, d.loss);
    if (st != MLP_OK) {
      const cudaError_t e = cudaGetLastError();
      ck(e == cudaSuccess ? cudaErrorLaunchFailure : e, "the launch");
    }
    ck(cudaDeviceSynchronize(), shipped ? "the shipped epoch" : "the variant epoch");
    const size_t at = r.loss.size();
    r.loss.resize(at + (size_t)steps);
    ck(cudaMemcpy(r.loss.data() + at, d.loss, (size_t)steps * 4, cudaMemcpyDeviceToHost), "reading the step losses");
  }
  r.params.resize(p0.size());
  r.velocity.resize(v0.size());
  ck(cudaMemcpy(r.params.data(), d.params, p0.size() * 4, cudaMemcpyDeviceToHost), "reading the parameters");
  ck(cudaMemcpy(r.velocity.data(), d.velocity, v0.size() * 4, cudaMemcpyDeviceToHost), "reading the velocity");
  return r;
}

// The first index where a and b differ bitwise (their common length when one is shorter), or -1.
inline long first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  const size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i)
    if (std::memcmp(&a[i], &b[i], 4) != 0) return (long)i;
  return a.size() == b.size() ? -1 : (long)n;
}

// Where flat index i of params / velocity lies ("W1[k][j]", "b1[j]", ...), or which step loss.
inline std::string where(const char* part, long i, int steps_per_epoch) {
  char s[64];
  const MlpOffsets off = mlp_offsets(MlpShape{mlp::wstat::kIn, mlp::wstat::kHidden, mlp::wstat::kOut});
  const long w1 = (long)off.w1, b1 = (long)off.b1, w2 = (long)off.w2, b2 = (long)off.b2, H = mlp::wstat::kHidden;
  if (std::strcmp(part, "step_loss") == 0) std::snprintf(s, sizeof s, "epoch %ld step %ld", i / steps_per_epoch, i % steps_per_epoch);
  else if (i >= b2) std::snprintf(s, sizeof s, "b2[%ld]", i - b2);
  else if (i >= w2) std::snprintf(s, sizeof s, "W2[%ld][%ld]", (i - w2) / mlp::wstat::kOut, (i - w2) % mlp::wstat::kOut);
  else if (i >= b1) std::snprintf(s, sizeof s, "b1[%ld]", i - b1);
  else std::snprintf(s, sizeof s, "W1[%ld][%ld]", (i - w1) / H, (i - w1) % H);
  return s;
}

// Prints the verdict line; returns the exit status (0 equal, 1 not; CUDA errors exit 3 earlier).
inline int shipped_vs_variant(mlp::StationaryPlan& plan, const Device& d, const std::vector<float>& p0,
                              const std::vector<float>& v0, const std::vector<std::vector<int>>& orders, int batch, float lr,
                              float mu) {
  const Result a = run(true, plan, d, p0, v0, orders, batch, lr, mu);
  const Result b = run(false, plan, d, p0, v0, orders, batch, lr, mu);
  const int n = (int)orders.size();
  const struct {
    const char* name;
    const std::vector<float>& x;
    const std::vector<float>& y;
  } parts[] = {{"params", a.params, b.params}, {"velocity", a.velocity, b.velocity}, {"step_loss", a.loss, b.loss}};
  for (const auto& part : parts) {
    const long i = first_difference(part.x, part.y);
    if (i < 0) continue;
    unsigned ux = 0, uy = 0;
    if ((size_t)i < part.x.size()) std::memcpy(&ux, &part.x[(size_t)i], 4);
    if ((size_t)i < part.y.size()) std::memcpy(&uy, &part.y[(size_t)i], 4);
    const int steps = (int)((orders[0].size() + (size_t)batch - 1) / (size_t)batch);
    std::printf("stationary check: shipped kernel DIFFERS from dev's shipped-bit build over %d epochs (<%d,%d>): first at "
                "%s[%ld] = %s (shipped 0x%08x, dev 0x%08x)\n", n, plan.cluster, plan.units, part.name, i,
                where(part.name, i, steps).c_str(), ux, uy);
    return 1;
  }
  std::printf("stationary check: shipped kernel bitwise equal to dev's shipped-bit build over %d epochs (<%d,%d>)\n", n,
              plan.cluster, plan.units);
  return 0;
}

}  // namespace check
