// cuda/gate/invalid_args.cu — case 14 (invalid-args): submission.h's MLP_ERR_INVALID_ARGUMENT clause.
// Each entry point, at the recipe's shape on valid buffers, is called once per required pointer with
// that pointer NULL, and (where it takes a batch) with batch 0 and batch −1. Each call runs while its
// stream is captured into a CUDA graph (relaxed mode), so what it enqueues on `stream` becomes graph
// nodes and never executes: the call must return MLP_ERR_INVALID_ARGUMENT and enqueue nothing (0
// nodes), and the outputs (poisoned before) must be untouched after a synchronisation. dX of
// mlp_backward may be NULL (the contract's "training passes NULL") and is not one of the checks;
// mlp_step has no batch, and n = 0 or n_samples = 0 may be a no-op, so neither is checked. A kernel
// launched elsewhere with a NULL pointer faults: the case's stage (its own, catalog.h) then fails
// this case alone. The row names the first call that broke the clause.
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#include "common/cuda_check.h"
#include "gate/cases.h"
#include "gate/workload.h"

namespace {

struct Buffer {
  float* p = nullptr;
  size_t n;
  explicit Buffer(size_t count) : n(count) {
    CUDA_CHECK(cudaMalloc(&p, sizeof(float) * n));
    CUDA_CHECK(cudaMemset(p, 0xFF, sizeof(float) * n));  // NaN: an untouched output stays all-ones bits
  }
  ~Buffer() { cudaFree(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  bool untouched() const {
    std::vector<uint32_t> h(n);
    CUDA_CHECK(cudaMemcpy(h.data(), p, sizeof(float) * n, cudaMemcpyDeviceToHost));
    for (uint32_t w : h)
      if (w != 0xFFFFFFFFu) return false;
    return true;
  }
};

struct Variant {
  std::string what;                            // "mlp_forward with H NULL"
  std::function<int(cudaStream_t)> call;
  std::vector<const Buffer*> outputs;          // what it must not write
};

// "" when the call keeps the clause, else one line naming what it did.
std::string check_variant(const Variant& v) {
  cudaStream_t st = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
  const int status = v.call(st);
  const cudaError_t last = cudaGetLastError();
  const cudaError_t end = cudaStreamEndCapture(st, &graph);
  (void)cudaGetLastError();
  size_t nodes = 0;
  if (end == cudaSuccess && graph) CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  if (graph) cudaGraphDestroy(graph);
  CUDA_CHECK(cudaStreamDestroy(st));
  CUDA_CHECK(cudaDeviceSynchronize());  // work that escaped the capture (another stream) surfaces here
  std::string broke;
  if (status != MLP_ERR_INVALID_ARGUMENT)
    broke = v.what + " returned " + mlp_status_name(status) + ", not invalid argument";
  else if (end != cudaSuccess || last != cudaSuccess)
    broke = v.what + " returned invalid argument but broke the capture of its stream (" +
            cudaGetErrorName(end != cudaSuccess ? end : last) + "): it did more than return";
  else if (nodes)
    broke = v.what + " returned invalid argument after enqueuing " + std::to_string(nodes) +
            " operation(s) on its stream: check the arguments before launching anything";
  for (const Buffer* b : v.outputs)
    if (broke.empty() && !b->untouched()) broke = v.what + " wrote an output although the call is invalid";
  return broke;
}

}  // namespace

CaseResult case_invalid_arguments(const GateInputs& g) {
  CaseResult r = gate::make_case(14);
  r.limit = 0;
  const MlpShape s = g.s;
  const size_t n = mlp_offsets(s).total;
  const int B = g.recipe->batch;
  // Valid buffers of the sizes each call needs (their contents do not matter: nothing may run).
  Buffer params(n), velocity(n), grads(n), X((size_t)B * s.in), H((size_t)B * s.hidden), Z((size_t)B * s.out),
      dZ((size_t)B * s.out), loss(1), dH((size_t)B * s.hidden), dX((size_t)B * s.in),
      workspace(mlp_workspace_floats(s, B)), step_loss(2);
  int* labels = nullptr;
  int* order = nullptr;
  CUDA_CHECK(cudaMalloc(&labels, sizeof(int) * B));
  CUDA_CHECK(cudaMalloc(&order, sizeof(int) * B));
  CUDA_CHECK(cudaMemset(labels, 0, sizeof(int) * B));
  CUDA_CHECK(cudaMemset(order, 0, sizeof(int) * B));
  const float* Xall = g.d_train_x;
  const int* yall = g.d_train_y;
  static const char* const kForward[] = {"params", "X", "H", "Z"};
  static const char* const kLoss[] = {"Z", "labels", "dZ", "loss"};
  static const char* const kBackward[] = {"params", "X", "H", "dZ", "grads", "dH_scratch"};
  static const char* const kStep[] = {"params", "velocity", "grads"};
  static const char* const kEpoch[] = {"params", "velocity", "X_all", "labels_all", "order", "workspace", "step_loss"};
  std::vector<Variant> vs;
  // One variant per NULL argument (`null` is the index of the pointer to drop) and per bad batch.
  auto P = [](int i, int null, auto* ptr) { return i == null ? nullptr : ptr; };
  for (int k = -2; k < 4; ++k) {  // forward: params, X, H, Z; k = -2, -1: batch 0, −1
    const int b = k == -2 ? 0 : k == -1 ? -1 : B;
    const std::string what = k < 0 ? "mlp_forward with batch " + std::to_string(b)
                                   : std::string("mlp_forward with ") + kForward[k] + " NULL";
    vs.push_back({what, [=, &params, &X, &H, &Z](cudaStream_t st) {
      return mlp_forward(s, P(0, k, params.p), P(1, k, X.p), b, P(2, k, H.p), P(3, k, Z.p), st); }, {&H, &Z}});
  }
  for (int k = -2; k < 4; ++k) {  // loss: Z, labels, dZ, loss
    const int b = k == -2 ? 0 : k == -1 ? -1 : B;
    const std::string what = k < 0 ? "mlp_loss with batch " + std::to_string(b)
                                   : std::string("mlp_loss with ") + kLoss[k] + " NULL";
    vs.push_back({what, [=, &Z, &dZ, &loss](cudaStream_t st) {
      return mlp_loss(s, P(0, k, Z.p), P(1, k, labels), b, P(2, k, dZ.p), P(3, k, loss.p), st); }, {&dZ, &loss}});
  }
  for (int k = -2; k < 6; ++k) {  // backward: params, X, H, dZ, grads, dH_scratch (dX may be NULL)
    const int b = k == -2 ? 0 : k == -1 ? -1 : B;
    const std::string what = k < 0 ? "mlp_backward with batch " + std::to_string(b)
                                   : std::string("mlp_backward with ") + kBackward[k] + " NULL";
    vs.push_back({what, [=, &params, &X, &H, &dZ, &grads, &dH, &dX](cudaStream_t st) {
      return mlp_backward(s, P(0, k, params.p), P(1, k, X.p), P(2, k, H.p), P(3, k, dZ.p), b, P(4, k, grads.p),
                          P(5, k, dH.p), dX.p, st); }, {&grads, &dX}});
  }
  for (int k = 0; k < 3; ++k) {  // step: params, velocity, grads
    const std::string what = std::string("mlp_step with ") + kStep[k] + " NULL";
    vs.push_back({what, [=, &params, &velocity, &grads](cudaStream_t st) {
      return mlp_step(P(0, k, params.p), P(1, k, velocity.p), P(2, k, grads.p), n, 0.1f, 0.9f, st); },
      {&params, &velocity}});
  }
  for (int k = -2; k < 7; ++k) {  // epoch: params, velocity, X_all, labels_all, order, workspace, step_loss
    const int b = k == -2 ? 0 : k == -1 ? -1 : B;
    const std::string what = k < 0 ? "mlp_train_epoch with batch " + std::to_string(b)
                                   : std::string("mlp_train_epoch with ") + kEpoch[k] + " NULL";
    vs.push_back({what, [=, &params, &velocity, &workspace, &step_loss](cudaStream_t st) {
      return mlp_train_epoch(s, P(0, k, params.p), P(1, k, velocity.p), P(2, k, Xall), P(3, k, yall), P(4, k, order),
                             B, b, 0.1f, 0.9f, P(5, k, workspace.p), P(6, k, step_loss.p), st); },
      {&params, &velocity, &step_loss}});
  }
  std::string broke;
  int failed = 0;
  for (const auto& v : vs) {
    const std::string b = check_variant(v);
    if (!b.empty()) {
      ++failed;
      if (broke.empty()) broke = b;
    }
  }
  cudaFree(labels);
  cudaFree(order);
  r.value = failed;
  r.passed = failed == 0;
  r.detail = r.passed ? std::to_string(vs.size()) + " invalid calls (each required pointer NULL, batch 0 and -1) all "
                        "returned invalid argument without enqueuing or writing anything"
                      : std::to_string(failed) + " of " + std::to_string(vs.size()) + " invalid calls broke the "
                        "clause; first: " + broke;
  return r;
}
