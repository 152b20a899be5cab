// cuda/gate/contract.cu — case 13 (stream-contract): submission.h's promises about how an entry point
// runs, not what it computes. Each of the five entry points, at the recipe's shape on real images:
//   1. eager on a stream the gate created (blocking, so that work on the legacy default stream is
//      an implicit dependency the capture refuses), inside a CallWatch (gate/call_watch.h) and with
//      stdout and stderr redirected: no allocation, no host synchronisation, no legacy-stream op,
//      nothing printed;
//   2. captured into a CUDA graph on that stream in cudaStreamCaptureModeGlobal (any sync or
//      allocation then fails, and work on another stream either breaks the capture or runs at
//      once): the capture must succeed and leave the outputs untouched;
//   3. the graph replayed from the same inputs: it must reproduce the eager outputs (relative
//      distance <= 1e-4: a submission that sums with atomics is not bitwise reproducible; non-finite
//      values at the same places in both runs count as reproduced: gate/replay_distance.h);
//   4. four more eager calls: the device's free memory may fall by at most kGrowthLimit.
// The row's detail starts with what broke first ("allocation", "host synchronisation", "another
// stream", "capture", "printed", "memory growth"), which gate/hints.cpp reads. The memory figure
// is the device's, so the stage runs with the GPU to itself (catalog.h: exclusive).
#include "gate/contract.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>

#include "common/cuda_check.h"
#include "common/rng.h"
#include "gate/call_watch.h"
#include "gate/guard.h"
#include "gate/replay_distance.h"
#include "gate/workload.h"

namespace {

constexpr double kReplayLimit = 1e-4;          // ||replay − eager|| / ||eager||
constexpr size_t kGrowthLimit = 8u << 20;      // bytes of device memory over kRepeats calls
constexpr int kRepeats = 4;

// stdout and stderr (fds 1 and 2) into a temporary file while it lives; text() is what was written.
class OutputCapture {
 public:
  OutputCapture() {
    std::fflush(stdout);
    std::fflush(stderr);
    tmp_ = std::tmpfile();
    if (!tmp_) return;
    saved_out_ = dup(1);
    saved_err_ = dup(2);
    dup2(fileno(tmp_), 1);
    dup2(fileno(tmp_), 2);
  }
  ~OutputCapture() { restore(); if (tmp_) std::fclose(tmp_); }
  std::string text() {
    restore();
    if (!tmp_) return "";
    std::string s;
    std::rewind(tmp_);
    char buf[256];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, tmp_)) > 0 && s.size() < 4096) s.append(buf, n);
    return s;
  }

 private:
  void restore() {
    if (saved_out_ < 0) return;
    std::fflush(stdout);
    std::fflush(stderr);
    dup2(saved_out_, 1);
    dup2(saved_err_, 2);
    close(saved_out_);
    close(saved_err_);
    saved_out_ = saved_err_ = -1;
  }
  FILE* tmp_ = nullptr;
  int saved_out_ = -1, saved_err_ = -1;
};

// One entry point as the case drives it: the call on a stream, the state it starts from (reset),
// and the buffers it writes (compared between the eager run and the graph's replay).
struct Call {
  const char* name;
  std::function<int(cudaStream_t)> run;
  std::function<void()> reset;              // inputs and in-place state back to the start, outputs poisoned
  std::vector<DevBuf<float>*> outputs;
};

std::vector<std::vector<float>> download_all(const Call& c) {
  std::vector<std::vector<float>> out;
  for (auto* b : c.outputs) out.push_back(b->download());
  return out;
}

std::string mib(size_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f MiB", bytes / 1048576.0);
  return b;
}

// What the watch saw, as the row's first words; "" when nothing.
std::string watched_violation(const char* fn, const CallCounts& k) {
  if (k.allocations)
    return std::string("allocation: ") + fn + " called " + k.first_alloc + " (" + std::to_string(k.allocations) +
           " allocation(s), " + mib(k.allocated_bytes) + ")";
  if (k.synchronisations)
    return std::string("host synchronisation: ") + fn + " called " + k.first_sync + " (" +
           std::to_string(k.synchronisations) + " synchronising call(s))";
  if (k.legacy_stream_ops)
    return std::string("another stream: ") + fn + " called cudaMemset, which runs on the legacy default stream "
           "(use cudaMemsetAsync on `stream`)";
  return "";
}

// Steps 1-3 for one entry point; "" when it keeps the contract.
std::string check_call(const Call& c, cudaStream_t st) {
  // 1. eager
  c.reset();
  int status;
  std::string printed, watched;
  {
    OutputCapture out;  // device printf reaches stdout at the synchronisation below, still captured
    {
      CallWatch watch;
      status = c.run(st);
      watched = watched_violation(c.name, watch.counts());
    }
    const cudaError_t sync_err = cudaStreamSynchronize(st);
    printed = out.text();
    if (sync_err != cudaSuccess) throw CudaError(std::string(c.name) + " (eager, case 13): " + cudaGetErrorName(sync_err));
  }
  if (status != MLP_OK) return std::string("capture: ") + c.name + " returned " + mlp_status_name(status) + " on a stream of the gate's";
  if (!watched.empty()) return watched;
  if (!printed.empty()) {
    std::string first = printed.substr(0, printed.find('\n')).substr(0, 80);
    return std::string("printed: ") + c.name + " wrote " + std::to_string(printed.size()) + " byte(s) to stdout/stderr "
           "on success: '" + first + "'";
  }
  const std::vector<std::vector<float>> eager = download_all(c);

  // 2. captured
  c.reset();
  const std::vector<std::vector<float>> before = download_all(c);
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
  CallCounts seen;
  {
    CallWatch watch;
    status = c.run(st);
    seen = watch.counts();
  }
  const cudaError_t last = cudaGetLastError();  // a launch the capture refused (not sticky)
  const cudaError_t end = cudaStreamEndCapture(st, &graph);
  (void)cudaGetLastError();
  CUDA_CHECK(cudaStreamSynchronize(st));
  std::string broke = watched_violation(c.name, seen);
  if (broke.empty() && (end != cudaSuccess || status != MLP_OK || last != cudaSuccess)) {
    const cudaError_t why = last != cudaSuccess ? last : end;
    if (why == cudaErrorStreamCaptureImplicit)
      broke = std::string("another stream: ") + c.name + " put work on the legacy default stream while `stream` was "
              "captured (cudaErrorStreamCaptureImplicit)";
    else if (why == cudaErrorStreamCaptureUnjoined || why == cudaErrorStreamCaptureIsolation ||
             why == cudaErrorStreamCaptureMerge)
      broke = std::string("another stream: ") + c.name + " forked work onto a stream it did not join back into "
              "`stream` (" + cudaGetErrorName(why) + ")";
    else
      broke = std::string("capture: ") + c.name + " could not be captured into a CUDA graph on `stream`: it returned " +
              mlp_status_name(status) + ", the capture ended with " + cudaGetErrorName(end) +
              (last != cudaSuccess ? std::string(" after ") + cudaGetErrorName(last) : std::string());
  }
  if (!broke.empty()) {
    if (graph) cudaGraphDestroy(graph);
    return broke;
  }
  const std::vector<std::vector<float>> during = download_all(c);
  for (size_t i = 0; i < during.size(); ++i)
    if (std::memcmp(during[i].data(), before[i].data(), sizeof(float) * during[i].size()) != 0) {
      cudaGraphDestroy(graph);
      return std::string("another stream: ") + c.name + " wrote " + c.outputs[i]->name + " while `stream` was only "
             "being captured: its work ran on a stream of its own, outside the caller's ordering";
    }

  // 3. replayed
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  c.reset();
  CUDA_CHECK(cudaGraphLaunch(exec, st));
  CUDA_CHECK(cudaStreamSynchronize(st));
  const std::vector<std::vector<float>> replay = download_all(c);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  for (size_t i = 0; i < replay.size(); ++i) {
    const double d = gate::replay_distance(replay[i], eager[i]);
    if (!(d <= kReplayLimit)) {
      char b[96];
      std::snprintf(b, sizeof b, "%.3g", d);
      const size_t bad = gate::non_finite_count(eager[i]);
      return std::string("another stream: the CUDA graph captured from ") + c.name + " on `stream` did not reproduce " +
             c.outputs[i]->name + " (distance " + b + " > 1e-4" +
             (bad ? ", the eager run's own output holding " + std::to_string(bad) + " non-finite value(s)" : "") +
             "): part of its work ran outside `stream`";
    }
  }
  return "";
}

}  // namespace

CaseResult case_stream_contract(const GateInputs& g) {
  CaseResult r;
  r.id = 13;
  r.name = "stream-contract";
  r.value = NAN;
  r.limit = 0;
  const MlpShape s = g.s;
  const MlpOffsets o = mlp_offsets(s);
  const int B = g.recipe->batch;
  const int n = std::min(g.recipe->train_size, 2 * B + std::max(1, B * 11 / 32));  // case 9's epoch
  const float lr = (float)g.recipe->lr, mu = (float)g.recipe->momentum;
  SplitMix64 rng(stream_seed(g.seed, kStreamTest, 13));
  auto noise = [&](size_t count, double scale) { return gate::uniform(count, scale, rng); };
  // Inputs: real images and labels in epoch 0's order, the initial parameters, drawn values elsewhere.
  std::vector<float> X((size_t)B * s.in);
  std::vector<int> y((size_t)B);
  for (int row = 0; row < B; ++row) {
    const int idx = (*g.order0)[(size_t)row];
    std::copy(g.data->train_x.begin() + (long)idx * s.in, g.data->train_x.begin() + (long)(idx + 1) * s.in,
              X.begin() + (long)row * s.in);
    y[(size_t)row] = g.data->train_y[(size_t)idx];
  }
  std::vector<float> H = noise((size_t)B * s.hidden, 1.0), logits = noise((size_t)B * s.out, 3.0),
                     dZ = noise((size_t)B * s.out, 1.0 / B), grads = noise(o.total, 0.5), v0 = noise(o.total, 1e-3);
  for (auto& h : H) h = std::fmax(h, 0.f);
  std::vector<int> order(g.order0->begin(), g.order0->begin() + n);

  DevBuf<float> dP(o.total, "params"), dV(o.total, "velocity"), dX(X.size(), "X"), dH(H.size(), "H"),
      dZin(logits.size(), "Z"), dZout(logits.size(), "Z"), dHout(H.size(), "H"), dG(dZ.size(), "dZ"),
      dGin(dZ.size(), "dZ"), dLoss(1, "loss"), dGrad(o.total, "grads"), dGradIn(o.total, "grads"),
      dHs((size_t)B * s.hidden, "dH_scratch"), dXo(X.size(), "dX"), dWs(mlp_workspace_floats(s, B), "workspace"),
      dSteps((size_t)((n + B - 1) / B), "step_loss");
  DevBuf<int> dy(y.size(), "labels"), dOrd(order.size(), "order");
  dX.upload(X.data());
  dH.upload(H.data());
  dZin.upload(logits.data());
  dGin.upload(dZ.data());
  dGradIn.upload(grads.data());
  dy.upload(y.data());
  dOrd.upload(order.data());
  auto params_back = [&] {
    dP.upload(g.init->data());
    dV.upload(v0.data());
  };
  const std::vector<Call> calls = {
      {"mlp_forward", [&](cudaStream_t st) { return mlp_forward(s, dP.p, dX.p, B, dHout.p, dZout.p, st); },
       [&] { params_back(); dHout.poison(); dZout.poison(); }, {&dHout, &dZout}},
      {"mlp_loss", [&](cudaStream_t st) { return mlp_loss(s, dZin.p, dy.p, B, dG.p, dLoss.p, st); },
       [&] { dG.poison(); dLoss.poison(); }, {&dG, &dLoss}},
      {"mlp_backward",
       [&](cudaStream_t st) { return mlp_backward(s, dP.p, dX.p, dH.p, dGin.p, B, dGrad.p, dHs.p, dXo.p, st); },
       [&] { params_back(); dGrad.poison(); dXo.poison(); }, {&dGrad, &dXo}},
      {"mlp_step", [&](cudaStream_t st) { return mlp_step(dP.p, dV.p, dGradIn.p, o.total, lr, mu, st); },
       [&] { params_back(); }, {&dP, &dV}},
      {"mlp_train_epoch",
       [&](cudaStream_t st) {
         return mlp_train_epoch(s, dP.p, dV.p, g.d_train_x, g.d_train_y, dOrd.p, n, B, lr, mu, dWs.p, dSteps.p, st);
       },
       [&] { params_back(); dWs.poison(); dSteps.poison(); }, {&dP, &dV, &dSteps}},
  };

  cudaStream_t st = nullptr;
  CUDA_CHECK(cudaStreamCreate(&st));  // blocking: legacy-stream work during its capture is refused, not hidden
  std::string broke;
  for (const auto& c : calls) {
    broke = check_call(c, st);
    if (!broke.empty()) break;
  }
  // 4. memory over repeated calls (every call has run eagerly once: modules are loaded)
  size_t worst_growth = 0;
  std::string worst_fn = "none";
  for (const auto& c : calls) {
    if (!broke.empty()) break;
    size_t free0 = 0, free1 = 0, total = 0;
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemGetInfo(&free0, &total));
    for (int k = 0; k < kRepeats; ++k) {
      c.reset();
      (void)c.run(st);
    }
    CUDA_CHECK(cudaStreamSynchronize(st));
    CUDA_CHECK(cudaMemGetInfo(&free1, &total));
    const size_t growth = free0 > free1 ? free0 - free1 : 0;
    if (growth >= worst_growth) { worst_growth = growth; worst_fn = c.name; }
    if (growth > kGrowthLimit)
      broke = std::string("memory growth: device memory fell by ") + mib(growth) + " over " + std::to_string(kRepeats) +
              " calls of " + c.name + " (limit " + mib(kGrowthLimit) + ")";
  }
  CUDA_CHECK(cudaStreamDestroy(st));
  for (auto* b : {&dP, &dV, &dX, &dH, &dZin, &dZout, &dHout, &dG, &dGin, &dLoss, &dGrad, &dGradIn, &dHs, &dXo, &dWs,
                  &dSteps}) {
    const std::string hit = b->check();
    if (!hit.empty() && broke.empty()) broke = "guard band: " + hit;
    if (!hit.empty()) record_guard_hit("case 13: " + hit);
  }
  for (auto* b : {&dy, &dOrd}) {
    const std::string hit = b->check();
    if (!hit.empty() && broke.empty()) broke = "guard band: " + hit;
    if (!hit.empty()) record_guard_hit("case 13: " + hit);
  }
  r.passed = broke.empty();
  r.value = r.passed ? 0 : 1;
  r.detail = r.passed ? "each entry point eager, captured into a CUDA graph on a stream of the gate's "
                        "(cudaStreamCaptureModeGlobal) and replayed: no allocation, host synchronisation, other stream "
                        "or output; device memory over " + std::to_string(kRepeats) + " more calls of each: at most " +
                            mib(worst_growth) + " (" + worst_fn + "; limit " + mib(kGrowthLimit) + ")"
                      : broke;
  return r;
}
