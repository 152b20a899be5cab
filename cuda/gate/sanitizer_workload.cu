// cuda/gate/sanitizer_workload.cu — gate/sanitizer_workload.h: the calls, their buffers, one pass, and
// the measured pass (time, and launches counted in a captured graph).
#include "gate/sanitizer_workload.h"

#include <algorithm>
#include <chrono>
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

struct Call {
  std::string label;              // "784-256-10 mlp_forward, batch 128"
  std::function<int(cudaStream_t)> run;
  bool odd = false;               // a call of the odd shape (declining it skips the shape's others)
};

// The buffers and calls of one shape: entry points at a full batch `b_full` and at `b_tail`, and
// epochs of (rows, batch) each.
struct ShapeCalls {
  MlpShape s;
  std::string label;
  int b_full, b_tail;
  std::unique_ptr<Exact<float>> params, velocity, X_full, X_tail, H_full, Z_full, H_tail, Z_tail, dZ_full, dZ_tail,
      loss, grads, dH, dX, workspace, step_loss, X_all, epoch_params, epoch_velocity;
  std::unique_ptr<Exact<int>> y_full, y_tail, y_all, order;
  std::vector<float> init;
};

std::unique_ptr<ShapeCalls> shape_calls(const gate::Workload& w, int b_full, int b_tail, int epoch_rows,
                                        int epoch_batch, std::vector<Call>& calls, bool odd) {
  auto sc = std::make_unique<ShapeCalls>();
  sc->s = w.s;
  sc->label = w.label;
  sc->b_full = b_full;
  sc->b_tail = b_tail;
  const MlpShape s = w.s;
  const size_t n = mlp_offsets(s).total;
  const int b_max = std::max({b_full, b_tail, epoch_batch});
  std::vector<float> Xf, Xt;
  std::vector<int> yf, yt;
  gate::take_rows(w, b_full, Xf, yf);
  gate::take_rows(w, b_tail, Xt, yt);
  sc->init = w.init;
  sc->params = std::make_unique<Exact<float>>(n, w.init.data());
  std::vector<float> v0(n, 0.f);
  for (size_t i = 0; i < n; ++i) v0[i] = 1e-3f * (float)((int)(i % 7) - 3);  // a velocity that is not zero
  sc->velocity = std::make_unique<Exact<float>>(n, v0.data());
  sc->X_full = std::make_unique<Exact<float>>(Xf.size(), Xf.data());
  sc->X_tail = std::make_unique<Exact<float>>(Xt.size(), Xt.data());
  sc->y_full = std::make_unique<Exact<int>>(yf.size(), yf.data());
  sc->y_tail = std::make_unique<Exact<int>>(yt.size(), yt.data());
  sc->H_full = std::make_unique<Exact<float>>((size_t)b_full * s.hidden);
  sc->Z_full = std::make_unique<Exact<float>>((size_t)b_full * s.out);
  sc->H_tail = std::make_unique<Exact<float>>((size_t)b_tail * s.hidden);
  sc->Z_tail = std::make_unique<Exact<float>>((size_t)b_tail * s.out);
  sc->dZ_full = std::make_unique<Exact<float>>((size_t)b_full * s.out);
  sc->dZ_tail = std::make_unique<Exact<float>>((size_t)b_tail * s.out);
  sc->loss = std::make_unique<Exact<float>>(1);
  sc->grads = std::make_unique<Exact<float>>(n);
  sc->dH = std::make_unique<Exact<float>>((size_t)b_max * s.hidden);
  sc->dX = std::make_unique<Exact<float>>((size_t)b_full * s.in);
  sc->workspace = std::make_unique<Exact<float>>(mlp_workspace_floats(s, epoch_batch));
  sc->step_loss = std::make_unique<Exact<float>>((size_t)((epoch_rows + epoch_batch - 1) / epoch_batch));
  sc->epoch_params = std::make_unique<Exact<float>>(n, w.init.data());
  sc->epoch_velocity = std::make_unique<Exact<float>>(n, v0.data());
  std::vector<int32_t> ord(w.order.begin(), w.order.begin() + std::min<size_t>(epoch_rows, w.order.size()));
  sc->order = std::make_unique<Exact<int>>(ord.size(), ord.data());
  ShapeCalls* c = sc.get();
  const float lr = 0.1f, mu = 0.9f;
  auto at = [c](const char* fn, int batch) { return c->label + " " + fn + ", batch " + std::to_string(batch); };
  calls.push_back({at("mlp_forward", b_full), [c](cudaStream_t st) {
    return mlp_forward(c->s, c->params->p, c->X_full->p, c->b_full, c->H_full->p, c->Z_full->p, st); }, odd});
  calls.push_back({at("mlp_loss", b_full), [c](cudaStream_t st) {
    return mlp_loss(c->s, c->Z_full->p, c->y_full->p, c->b_full, c->dZ_full->p, c->loss->p, st); }, odd});
  calls.push_back({at("mlp_backward (dX)", b_full), [c](cudaStream_t st) {
    return mlp_backward(c->s, c->params->p, c->X_full->p, c->H_full->p, c->dZ_full->p, c->b_full, c->grads->p,
                        c->dH->p, c->dX->p, st); }, odd});
  calls.push_back({at("mlp_step", b_full), [c, n, lr, mu](cudaStream_t st) {
    return mlp_step(c->params->p, c->velocity->p, c->grads->p, n, lr, mu, st); }, odd});
  calls.push_back({at("mlp_forward", b_tail), [c](cudaStream_t st) {
    return mlp_forward(c->s, c->params->p, c->X_tail->p, c->b_tail, c->H_tail->p, c->Z_tail->p, st); }, odd});
  calls.push_back({at("mlp_loss", b_tail), [c](cudaStream_t st) {
    return mlp_loss(c->s, c->Z_tail->p, c->y_tail->p, c->b_tail, c->dZ_tail->p, c->loss->p, st); }, odd});
  calls.push_back({at("mlp_backward (no dX)", b_tail), [c](cudaStream_t st) {
    return mlp_backward(c->s, c->params->p, c->X_tail->p, c->H_tail->p, c->dZ_tail->p, c->b_tail, c->grads->p,
                        c->dH->p, nullptr, st); }, odd});
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

Plan plan_of(const GateInputs& g) {
  Plan p;
  const int B = g.recipe->batch;
  const int T = std::max(1, B * 11 / 32);
  const gate::Workload rw = gate::recipe_workload(g);
  p.shapes.push_back(shape_calls(rw, B, T, B + T, B, p.calls, false));
  epoch_call(rw, p.shapes.back().get(), std::min(B + T, g.recipe->train_size), B, p.calls, false);
  const gate::Workload& ow = gate::odd_workload(g);
  // The odd shape's two epochs share its buffers: the larger batch sizes them.
  p.shapes.push_back(shape_calls(ow, 7, 129, 129 + 7, 129, p.calls, true));
  epoch_call(ow, p.shapes.back().get(), 7 + 3, 7, p.calls, true);
  epoch_call(ow, p.shapes.back().get(), 129 + 7, 129, p.calls, true);
  return p;
}

// One pass: each call, then (eager) a synchronisation that surfaces a fault as a CudaError.
void one_pass(const Plan& p, cudaStream_t st, bool eager, SanitizerWorkload& out) {
  bool odd_declined = false;
  for (const auto& c : p.calls) {
    if (c.odd && odd_declined) continue;
    const int status = c.run(st);
    if (eager) {
      CUDA_CHECK(cudaStreamSynchronize(st));
      ++out.calls;
      if (status == MLP_ERR_UNSUPPORTED && c.odd) odd_declined = true;
      if (status != MLP_OK) out.statuses.push_back(c.label + ": " + mlp_status_name(status));
    } else if (status == MLP_ERR_UNSUPPORTED && c.odd) {
      odd_declined = true;
    }
  }
}

}  // namespace

std::string sanitizer_workload_words(const GateInputs& g) {
  const int B = g.recipe->batch;
  const int T = std::max(1, B * 11 / 32);
  return "every entry point at batches " + std::to_string(B) + " and " + std::to_string(T) + " and an epoch of " +
         std::to_string(B + T) + " rows (a full step and a " + std::to_string(T) + "-row tail) at the recipe's shape; "
         "the same at the odd shape 37-19-3 at batches 7 and 129, epochs of 10 and 136 rows";
}

SanitizerWorkload run_sanitizer_workload(const GateInputs& g, bool measure) {
  SanitizerWorkload out;
  const Plan plan = plan_of(g);
  cudaStream_t st = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  one_pass(plan, st, true, out);
  if (measure) {
    SanitizerWorkload timed;
    const auto t0 = std::chrono::steady_clock::now();
    one_pass(plan, st, true, timed);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
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
