// cuda/paths/epoch_graph.h — one epoch's launches captured once into a CUDA graph and replayed (the
// graph and tiled paths). The graph reads the epoch order from a buffer of its own; each launch
// copies that epoch's order into it (one device-to-device copy, part of the timed epoch) and
// launches the graph on the caller's stream. A change of any pointer, size or hyper-parameter of
// the epoch re-captures. Header-only: the paths' objects (libmlp.so, gemm_check) link no
// train-loop object.
#pragma once
#include <cuda_runtime.h>

#include "common/cuda_check.h"
#include "paths/kernel_path.h"

namespace mlp {

class EpochGraph {
 public:
  EpochGraph() = default;
  EpochGraph(const EpochGraph&) = delete;
  EpochGraph& operator=(const EpochGraph&) = delete;
  ~EpochGraph() { release(); }

  // Whether the graph holds an epoch of `a`'s pointers, sizes and hyper-parameters.
  bool current(const EpochArgs& a) const {
    const EpochArgs& c = captured_;
    return exec_ && c.params == a.params && c.velocity == a.velocity && c.X_all == a.X_all &&
           c.labels_all == a.labels_all && c.n == a.n && c.batch == a.batch && c.lr == a.lr &&
           c.momentum == a.momentum && c.workspace == a.workspace && c.step_loss == a.step_loss &&
           c.stream == a.stream && c.s.in == a.s.in && c.s.hidden == a.s.hidden && c.s.out == a.s.out;
  }

  // Captures enqueue(g): g is `a` with its order read from the graph's buffer and its stream a
  // stream of our own (the caller's may be the legacy default stream, which cannot be captured).
  template <class Enqueue>
  void capture(const EpochArgs& a, Enqueue&& enqueue) {
    if (exec_) { CUDA_CHECK(cudaGraphExecDestroy(exec_)); exec_ = nullptr; }
    if (order_) { CUDA_CHECK(cudaFree(order_)); order_ = nullptr; }
    CUDA_CHECK(cudaMalloc(&order_, sizeof(int) * (size_t)a.n));
    if (!stream_) CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CUDA_CHECK(cudaStreamSynchronize(a.stream));
    EpochArgs g = a;
    g.order = order_;
    g.stream = stream_;
    cudaGraph_t graph;
    CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    try {
      enqueue(g);
    } catch (...) {
      cudaStreamEndCapture(stream_, &graph);
      throw;
    }
    CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
    CUDA_CHECK(cudaGraphInstantiate(&exec_, graph, 0));
    CUDA_CHECK(cudaGraphDestroy(graph));
    CUDA_CHECK(cudaGraphUpload(exec_, a.stream));
    captured_ = a;
  }

  // This epoch's order into the graph's buffer, then the graph, both on a.stream.
  void launch(const EpochArgs& a) {
    CUDA_CHECK(cudaMemcpyAsync(order_, a.order, sizeof(int) * (size_t)a.n, cudaMemcpyDeviceToDevice, a.stream));
    CUDA_CHECK(cudaGraphLaunch(exec_, a.stream));
  }

  void release() noexcept {
    if (exec_) cudaGraphExecDestroy(exec_);
    if (order_) cudaFree(order_);
    if (stream_) cudaStreamDestroy(stream_);
    exec_ = nullptr;
    order_ = nullptr;
    stream_ = nullptr;
  }

 private:
  cudaGraphExec_t exec_ = nullptr;
  int* order_ = nullptr;        // [n] the epoch order the graph reads
  cudaStream_t stream_ = nullptr;  // the capture stream
  EpochArgs captured_{};
};

}  // namespace mlp
