// cuda/paths/kernel_path.h — the kernel paths that train an epoch, and the launch sequences they share.
//
//   unfused     17 launches per step (bias, ReLU, mask and each tensor's update are passes)
//   fused       10 launches per step (bias/ReLU/mask in GEMM epilogues, one flat update)
//   graph       the fused epoch captured once into a CUDA graph, replayed with cudaGraphLaunch
//   persistent  one cooperative launch per epoch, three grid-wide barriers a step
//   persistent2 the same with two barriers a step (opt-in: only when named in --paths); its TF32
//               and BF16 forms persistent2-tf32 and persistent2-bf16 (opt-in)
//   stationary  one cluster launch per epoch: weights stationary in shared memory, one cross-SM
//               wait a step (recipe shape on sm_90+)
//   tiled       float32 register-tiled GEMMs, tile shape and split-K by problem shape, the update in
//               dW1's epilogue, four kernels a step, the epoch as a CUDA graph (any shape)
//   stationary-tf32  the stationary epoch with TF32 products
//   stationary-bf16  the stationary epoch with BF16 products
//   tiled-tf32  the tiled epoch, its two GEMMs on the tensor cores in TF32
//   tiled-bf16  the same in BF16
//   submission  the linked submission's mlp_train_epoch (only when it is not ours)
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/precision.h"  // Precision, its names and unit roundoffs
#include "paths/path_fit.h"
#include "contract/submission.h"

namespace mlp {

// The scratch buffers of one step, carved out of the caller's workspace
// (mlp_workspace_floats(s, batch) floats) at the offsets mlp_workspace_offsets gives (model.h).
struct Workspace {
  float* Xb;     // [batch × in]   the gathered batch
  int* yb;       // [batch]        its labels
  float* H;      // [batch × hidden] post-ReLU activations (A1 before ReLU on the unfused path)
  float* dH;     // [batch × hidden]
  float* Z;      // [batch × out]  logits
  float* dZ;     // [batch × out]
  float* grads;  // [n_params]     flat, parameter layout
};
Workspace carve_workspace(MlpShape s, int batch, float* workspace);

// Everything one epoch needs. All pointers are device pointers.
struct EpochArgs {
  MlpShape s;
  float* params;
  float* velocity;
  const float* X_all;       // [n_total × in]
  const int* labels_all;    // [n_total]
  const int* order;         // [n] this epoch's row order
  int n;                    // samples this epoch
  int batch;
  float lr, momentum;
  float* workspace;         // mlp_workspace_floats(s, batch) floats
  float* step_loss;         // [ceil(n / batch)] each step's mean batch loss
  cudaStream_t stream;
};

// Fused launch sequences (also what cuda/contract/submission_ref.cu implements the contract with).
// Each enqueues on `stream` and checks its launches (CudaError on failure).
void launch_forward_fused(MlpShape s, const float* params, const float* X, int batch, float* H,
                          float* Z, cudaStream_t stream);
void launch_loss(MlpShape s, const float* Z, const int* labels, int batch, float* dZ, float* loss,
                 cudaStream_t stream);
void launch_backward_fused(MlpShape s, const float* params, const float* X, const float* H,
                           const float* dZ, int batch, float* grads, float* dH, float* dX,
                           cudaStream_t stream);
void launch_momentum_flat(float* params, float* velocity, const float* grads, size_t n, float lr,
                          float momentum, cudaStream_t stream);
void fused_epoch(const EpochArgs& a);

// One way of training an epoch.
class KernelPath {
 public:
  virtual ~KernelPath() = default;
  virtual std::string name() const = 0;
  // Kernel launches per training step for an epoch of `steps` steps (a whole-epoch kernel
  // declares 1/steps; -1: unknown, an outside submission).
  virtual double launches_per_step(int steps) const = 0;
  // What its matrix products and column sums accumulate in: "float32", "float64" (the stepwise
  // paths' build option MLP_ACCUM), "float32 (TF32 split products)" or "unknown" (a submission).
  virtual std::string accumulator() const = 0;
  // The precision of its matrix products' inputs (common/precision.h): FP32 unless the path rounds
  // them to TF32 or BF16 (the -tf32 and -bf16 paths); its gate's tolerances follow from it.
  virtual Precision precision() const { return Precision::FP32; }
  // What the path needs of the device (`lim`, capped or not) for layer widths `s` and `batch`
  // rows, checked there: the configuration it then runs in, or why it is skipped. Queries the
  // device (cudaFuncGetAttributes, occupancy) but never throws for a refused configuration.
  // epoch() runs the configuration chosen; without a fit() first (or for another shape) it fits
  // itself to effective_limits(), and throws SubmissionError(MLP_ERR_UNSUPPORTED) when skipped.
  virtual PathFit fit(const DeviceLimits& lim, MlpShape s, int batch) = 0;
  // Enqueues one epoch on a.stream. Throws CudaError (ours) or SubmissionError (a submission's
  // non-zero status, or a configuration the device refused).
  virtual void epoch(const EpochArgs& a) = 0;
};

struct SubmissionError : std::runtime_error {
  int status;
  SubmissionError(const std::string& what, int st) : std::runtime_error(what), status(st) {}
};
// "not implemented", "invalid argument", ... for a MlpStatus value: submission.h's mlp_status_name.
const char* status_name(int status);

// Paths of ordinary launches (static shared memory only): each kernel's registers, static shared
// memory and maximum threads (cudaFuncGetAttributes) against the limits; the configuration
// "ordinary launches of <= T threads, <= S B static shared/block", or the first kernel that
// does not fit and why (cuda/paths/stepwise_path.cu).
struct KernelUse {
  const void* fn;
  int threads;
  const char* name;
};
PathFit fit_ordinary_launches(const std::vector<KernelUse>& uses, const DeviceLimits& lim);

// The path of a name of paths/registry.h (or "submission"); nullptr for any other name.
std::unique_ptr<KernelPath> make_path(const std::string& name);
// cuda/paths/persistent_path.cu: one cooperative launch an epoch, three grid barriers a step. Where its
// time goes: dev/persistent_phases.cu (build/persistent_phases).
std::unique_ptr<KernelPath> make_persistent_path();
// persistent2: two grid barriers a step; opt-in: only run when named in --paths, not in the
// default set of paths/registry.h, so a default run does not depend on it (its times: RESULTS.md
// when a run named it, docs/PERFLOG.md). At TF32 and BF16 (`persistent2-tf32`, `persistent2-bf16`)
// the same epoch with its two big products' inputs rounded as they are staged.
std::unique_ptr<KernelPath> make_persistent2_path(Precision precision = Precision::FP32);
// cuda/paths/stationary_path.cu: the weight-stationary epoch, one cluster launch an epoch, weights on
// chip, one cross-SM wait a step (recipe shape, sm_90+); `stationary-tf32` and `stationary-bf16`
// (precision TF32, BF16) the same epoch with TF32 or BF16 products (one MMA where the FP32 form's
// split takes two).
std::unique_ptr<KernelPath> make_stationary_path(Precision precision = Precision::FP32);
// cuda/paths/tiled_path.cu: register-tiled GEMMs chosen by shape, four kernels a step, the epoch as
// one CUDA graph (the path for widths and batches far from the recipe's): `tiled` float32 SIMT,
// `tiled-tf32` and `tiled-bf16` the same epoch with the GEMMs on the tensor cores.
std::unique_ptr<KernelPath> make_tiled_path(Precision prec = Precision::FP32);

// Test accuracy and mean loss of `params` on n rows already on the device (our trusted fused
// forward, whatever submission is linked). `scratch` holds chunk × (hidden + out) floats.
struct GpuEval { double accuracy; double loss; };
GpuEval evaluate_on_device(MlpShape s, const float* params, const float* X, const int* labels_host,
                           int n, float* scratch, int chunk, cudaStream_t stream);

// Epoch timing (cuda/paths/train_loop.cpp; harness/baseline/pytorch_baseline.py does the same for PyTorch): a
// one-thread kernel that spins kHoldCycles SM clock cycles (about 100 µs) on `stream`, queued just
// before an epoch's start event, so that the host has queued the epoch's first launches by the time
// the GPU reaches that event; the host's submission latency of an epoch's first launch is then
// outside the timed range, for every path alike (later launches still race the GPU).
constexpr long long kHoldCycles = 200000;
void hold_stream(cudaStream_t stream);

// The current device's own limits (CudaError when it cannot be asked).
DeviceLimits query_device_limits();
// The limits every fit and every grid sized by the SM count use: those set (the device's with
// the MLP_CAP_* caps applied, cuda/paths/device.cpp), else the device's own, queried once.
void set_effective_limits(const DeviceLimits& lim);
const DeviceLimits& effective_limits();

// One of our kernels, for cudaFuncGetAttributes: it fails when the binary has no code for the GPU.
const void* probe_kernel();

}  // namespace mlp
