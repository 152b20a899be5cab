// cuda/gate/sanitizer_workload.cu — gate/sanitizer_workload.h: the calls, their buffers, one pass, and
// the measured pass (time, and launches counted in a captured graph).
#include "gate/sanitizer_workload.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>

#include "common/cuda_check.h"
#include "gate/odd_shape.h"
#include "gate/workload.h"

namespace {

// A device buffer of exactly `n` elements (no guard bands: memcheck sees every byte past it).
template <class T>
struct Exact {
  T* p = nullptr;
  size_t n;
  explicit Exact(size_t count, const T* host = nullptr) : n(std::max<size_t>(count, 1)) {
    CUDA_CHECK(cudaMalloc(&p, sizeof(T) * n));
    if (host) CUDA_CHECK(cudaMemcpy(p, host, sizeof(T) * count, cudaMemcpyHostToDevice));
  }
  ~Exact() { cudaFree(p); }
  Exact(const Exact&) = delete;
  Exact& operator=(const Exact&) = delete;
};

// When a call runs, against whether the submission declined the odd shape (racecheck's plan runs
// the odd shape first and picks the recipe's calls by it).
enum class When { kAlways, kOddDeclined, kOddTaken };

struct Call {
  std::string label;              // "784-256-10 mlp_forward, batch 128"
  std::function<int(cudaStream_t)> run;
  bool odd = false;               // a call of the odd shape (declining it skips the shape's others)
  When when = When::kAlways;
};

// One batch's rows of a workload and the outputs its calls chain through: X and its labels in, H and
// Z from forward, dZ from loss.
struct BatchBufs {
  int b = 0;
  std::unique_ptr<Exact<float>> X, H, Z, dZ;
  std::unique_ptr<Exact<int>> y;
};

// The buffers and calls of one shape: entry points at a full batch and at a tail, and epochs.
struct ShapeCalls {
  MlpShape s;
  std::string label;
  BatchBufs full, tail;
  std::unique_ptr<Exact<float>> params, velocity, loss, grads, dH, dX, workspace, step_loss, epoch_params,
      epoch_velocity;
  std::unique_ptr<Exact<int>> order;
};

BatchBufs batch_bufs(const gate::Workload& w, int b) {
  BatchBufs bb;
  bb.b = b;
  std::vector<float> X;
  std::vector<int> y;
  gate::take_rows(w, b, X, y);
  bb.X = std::make_unique<Exact<float>>(X.size(), X.data());
  bb.y = std::make_unique<Exact<int>>(y.size(), y.data());
  bb.H = std::make_unique<Exact<float>>((size_t)b * w.s.hidden);
  bb.Z = std::make_unique<Exact<float>>((size_t)b * w.s.out);
  bb.dZ = std::make_unique<Exact<float>>((size_t)b * w.s.out);
  return bb;
}

// forward, loss and backward of `bb` (dX written when `with_dX`, else NULL) into `calls`.
void batch_calls(ShapeCalls* c, const BatchBufs* bb, bool with_dX, std::vector<Call>& calls, bool odd) {
  auto at = [c, bb](const char* fn) { return c->label + " " + fn + ", batch " + std::to_string(bb->b); };
  calls.push_back({at("mlp_forward"), [c, bb](cudaStream_t st) {
    return mlp_forward(c->s, c->params->p, bb->X->p, bb->b, bb->H->p, bb->Z->p, st); }, odd});
  calls.push_back({at("mlp_loss"), [c, bb](cudaStream_t st) {
    return mlp_loss(c->s, bb->Z->p, bb->y->p, bb->b, bb->dZ->p, c->loss->p, st); }, odd});
  calls.push_back({at(with_dX ? "mlp_backward (dX)" : "mlp_backward (no dX)"), [c, bb, with_dX](cudaStream_t st) {
    return mlp_backward(c->s, c->params->p, bb->X->p, bb->H->p, bb->dZ->p, bb->b, c->grads->p, c->dH->p,
                        with_dX ? c->dX->p : nullptr, st); }, odd});
}

std::unique_ptr<ShapeCalls> shape_calls(const gate::Workload& w, int b_full, int b_tail, int epoch_rows,
                                        int epoch_batch, std::vector<Call>& calls, bool odd) {
  auto sc = std::make_unique<ShapeCalls>();
  const MlpShape s = w.s;
  const size_t n = mlp_offsets(s).total;
  sc->s = s;
  sc->label = w.label;
  sc->full = batch_bufs(w, b_full);
  sc->tail = batch_bufs(w, b_tail);
  std::vector<float> v0(n, 0.f);
  for (size_t i = 0; i < n; ++i) v0[i] = 1e-3f * (float)((int)(i % 7) - 3);  // a velocity that is not zero
  sc->params = std::make_unique<Exact<float>>(n, w.init.data());
  sc->velocity = std::make_unique<Exact<float>>(n, v0.data());
  sc->loss = std::make_unique<Exact<float>>(1);
  sc->grads = std::make_unique<Exact<float>>(n);
  sc->dH = std::make_unique<Exact<float>>((size_t)std::max({b_full, b_tail, epoch_batch}) * s.hidden);
  sc->dX = std::make_unique<Exact<float>>((size_t)b_full * s.in);
  sc->workspace = std::make_unique<Exact<float>>(mlp_workspace_floats(s, epoch_batch));
  sc->step_loss = std::make_unique<Exact<float>>((size_t)((epoch_rows + epoch_batch - 1) / epoch_batch));
  sc->epoch_params = std::make_unique<Exact<float>>(n, w.init.data());
  sc->epoch_velocity = std::make_unique<Exact<float>>(n, v0.data());
  std::vector<int32_t> ord(w.order.begin(), w.order.begin() + std::min<size_t>(epoch_rows, w.order.size()));
  sc->order = std::make_unique<Exact<int>>(ord.size(), ord.data());
  ShapeCalls* c = sc.get();
  // At the full batch: forward, loss, backward with dX, and the step; at the tail: backward without dX.
  batch_calls(c, &c->full, true, calls, odd);
  calls.push_back({c->label + " mlp_step, batch " + std::to_string(b_full), [c, n](cudaStream_t st) {
    return mlp_step(c->params->p, c->velocity->p, c->grads->p, n, 0.1f, 0.9f, st); }, odd});
  batch_calls(c, &c->tail, false, calls, odd);
  return sc;
}

// An epoch call of `sc`'s shape over `rows` rows at `batch` (X_all and the labels from `w`).
void epoch_call(const gate::Workload& w, ShapeCalls* sc, int rows, int batch, std::vector<Call>& calls, bool odd) {
  const std::string label = sc->label + " mlp_train_epoch, " + std::to_string(rows) + " rows at batch " +
                            std::to_string(batch);
  const float* X_all = w.d_X;
  const int* y_all = w.d_y;
  calls.push_back({label, [sc, X_all, y_all, rows, batch](cudaStream_t st) {
    return mlp_train_epoch(sc->s, sc->epoch_params->p, sc->epoch_velocity->p, X_all, y_all, sc->order->p, rows, batch,
                           0.1f, 0.9f, sc->workspace->p, sc->step_loss->p, st); }, odd});
}

struct Plan {
  std::vector<std::unique_ptr<ShapeCalls>> shapes;
  std::vector<Call> calls;
};

// The tail's rows: kSanitizerTail, below the recipe's batch. Not case 9's 44: a tail only has to be
// short of every tile (13 rows: odd, and under 16), and each of its rows can be a launch of its own (a
// learner's one-row-at-a-time tail), which racecheck costs at a whole block's K loop apiece.
constexpr int kSanitizerTail = 13;
int sanitizer_tail(int B) { return std::max(1, std::min(kSanitizerTail, B - 1)); }

Plan plan_of(const GateInputs& g, bool race) {
  Plan p;
  const int B = g.recipe->batch;
  const int T = sanitizer_tail(B);
  const int recipe_rows = std::min(B + T, g.recipe->train_size);
  const gate::Workload rw = gate::recipe_workload(g);
  const gate::Workload& ow = gate::odd_workload(g);
  auto odd_shape = [&] {
    // The odd shape's two epochs share its buffers: the larger batch sizes them.
    p.shapes.push_back(shape_calls(ow, 7, 129, 129 + 7, 129, p.calls, true));
    epoch_call(ow, p.shapes.back().get(), 7 + 3, 7, p.calls, true);
    epoch_call(ow, p.shapes.back().get(), 129 + 7, 129, p.calls, true);
  };
  if (!race) {
    p.shapes.push_back(shape_calls(rw, B, T, B + T, B, p.calls, false));
    epoch_call(rw, p.shapes.back().get(), recipe_rows, B, p.calls, false);
    odd_shape();
    return p;
  }
  // Racecheck's plan (WorkloadRun::kRace): the odd shape first; then, if the submission took it, the
  // recipe's epoch over one full batch; if it declined it, the recipe's calls as above.
  odd_shape();
  const size_t first = p.calls.size();
  p.shapes.push_back(shape_calls(rw, B, T, B + T, B, p.calls, false));
  epoch_call(rw, p.shapes.back().get(), recipe_rows, B, p.calls, false);
  for (size_t k = first; k < p.calls.size(); ++k) p.calls[k].when = When::kOddDeclined;
  epoch_call(rw, p.shapes.back().get(), std::min(B, g.recipe->train_size), B, p.calls, false);
  p.calls.back().when = When::kOddTaken;
  return p;
}

// One pass: each call, then (eager) a synchronisation that surfaces a fault as a CudaError; with
// `print`, a line per call as it ends (under a sanitizer, its log then says where the time went, and
// how far a run that ran out of time got).
void one_pass(const Plan& p, cudaStream_t st, bool eager, SanitizerWorkload& out, bool print = false) {
  bool odd_declined = false;
  for (const auto& c : p.calls) {
    if (c.odd && odd_declined) continue;
    if ((c.when == When::kOddDeclined && !odd_declined) || (c.when == When::kOddTaken && odd_declined)) continue;
    const auto t0 = std::chrono::steady_clock::now();
    const int status = c.run(st);
    if (eager) {
      CUDA_CHECK(cudaStreamSynchronize(st));
      out.call_seconds.emplace_back(c.label, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      if (print) {
        std::printf("sanitizer workload: call %d %s: %.3f s\n", out.calls + 1, c.label.c_str(),
                    out.call_seconds.back().second);
        std::fflush(stdout);
      }
      ++out.calls;
      if (status == MLP_ERR_UNSUPPORTED && c.odd) odd_declined = true;
      if (status != MLP_OK) out.statuses.push_back(c.label + ": " + mlp_status_name(status));
    } else if (status == MLP_ERR_UNSUPPORTED && c.odd) {
      odd_declined = true;
    }
  }
}

}  // namespace

std::string sanitizer_workload_words(const GateInputs& g, WorkloadRun run) {
  const int B = g.recipe->batch;
  const int T = sanitizer_tail(B);
  const std::string recipe = "every entry point at batches " + std::to_string(B) + " and " + std::to_string(T) +
                             " and an epoch of " + std::to_string(B + T) + " rows (a full step and a " +
                             std::to_string(T) + "-row tail) at the recipe's shape";
  const std::string odd = "every entry point at batches 7 and 129 and epochs of 10 and 136 rows at the odd shape "
                          "37-19-3";
  if (run == WorkloadRun::kRace)
    return odd + "; then an epoch of " + std::to_string(B) + " rows (one full step) at the recipe's shape, or, "
           "where the odd shape is declined, " + recipe;
  return recipe + "; " + odd;
}

SanitizerWorkload run_sanitizer_workload(const GateInputs& g, WorkloadRun run) {
  SanitizerWorkload out;
  const bool measure = run == WorkloadRun::kMeasure;
  const Plan plan = plan_of(g, run == WorkloadRun::kRace);
  cudaStream_t st = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  one_pass(plan, st, true, out, !measure);
  if (measure) {
    SanitizerWorkload timed;
    const auto t0 = std::chrono::steady_clock::now();
    one_pass(plan, st, true, timed);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.call_seconds = timed.call_seconds;
    // The launches: the pass captured into a graph (relaxed: a call that synchronises or allocates
    // breaks the capture, and then the count is unknown; case 13 judges that).
    cudaGraph_t graph = nullptr;
    CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
    SanitizerWorkload captured;
    one_pass(plan, st, false, captured);
    const cudaError_t last = cudaGetLastError();
    const cudaError_t end = cudaStreamEndCapture(st, &graph);
    (void)cudaGetLastError();
    if (end != cudaSuccess || last != cudaSuccess || !graph) {
      out.capture = std::string("the pass could not be captured into a CUDA graph: ") +
                    cudaGetErrorName(end != cudaSuccess ? end : last);
    } else {
      size_t count = 0;
      CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &count));
      std::vector<cudaGraphNode_t> nodes(count);
      if (count) CUDA_CHECK(cudaGraphGetNodes(graph, nodes.data(), &count));
      out.launches = 0;
      out.memory_ops = 0;
      for (auto node : nodes) {
        cudaGraphNodeType type;
        CUDA_CHECK(cudaGraphNodeGetType(node, &type));
        if (type == cudaGraphNodeTypeKernel) ++out.launches;
        else if (type == cudaGraphNodeTypeMemset || type == cudaGraphNodeTypeMemcpy) ++out.memory_ops;
      }
      out.capture = "ok";
    }
    if (graph) cudaGraphDestroy(graph);
    CUDA_CHECK(cudaStreamSynchronize(st));
  }
  CUDA_CHECK(cudaStreamDestroy(st));
  return out;
}
