// cuda/contract/submission_ref.cu — our implementation of the contract in submission.h: the fused kernels
// (bias/ReLU/mask in GEMM epilogues, one flat momentum update). A learner's file replaces this
// one with `invoke build --submission FILE`.
//
// It does not define mlp_precision() (submission.h's optional entry point): its products take the
// float32 values themselves, which is the default, FP32, so every build of ours runs the gate
// through the default a learner's float32 file gets too (common/declared_precision.h).
#include "common/cuda_check.h"
#include "paths/kernel_path.h"
#include "contract/submission.h"

namespace {
bool bad_shape(MlpShape s) { return s.in <= 0 || s.hidden <= 0 || s.out <= 0; }

// Runs `body`, turning a failed launch (CudaError) into MLP_ERR_CUDA and a shape our kernels
// cannot launch (SubmissionError, e.g. over the grid's limits) into its status: no exception
// crosses the C ABI.
template <class F>
int guarded(F&& body) {
  try {
    body();
    return MLP_OK;
  } catch (const CudaError&) {
    return MLP_ERR_CUDA;
  } catch (const mlp::SubmissionError& e) {
    return e.status;
  }
}
}  // namespace

extern "C" int mlp_forward(MlpShape s, const float* params, const float* X, int batch, float* H, float* Z,
                           cudaStream_t stream) {
  if (bad_shape(s) || batch <= 0 || !params || !X || !H || !Z) return MLP_ERR_INVALID_ARGUMENT;
  return guarded([&] { mlp::launch_forward_fused(s, params, X, batch, H, Z, stream); });
}

extern "C" int mlp_loss(MlpShape s, const float* Z, const int* labels, int batch, float* dZ, float* loss,
                        cudaStream_t stream) {
  if (bad_shape(s) || batch <= 0 || !Z || !labels || !dZ || !loss) return MLP_ERR_INVALID_ARGUMENT;
  return guarded([&] { mlp::launch_loss(s, Z, labels, batch, dZ, loss, stream); });
}

extern "C" int mlp_backward(MlpShape s, const float* params, const float* X, const float* H, const float* dZ,
                            int batch, float* grads, float* dH_scratch, float* dX, cudaStream_t stream) {
  if (bad_shape(s) || batch <= 0 || !params || !X || !H || !dZ || !grads || !dH_scratch)
    return MLP_ERR_INVALID_ARGUMENT;
  return guarded([&] { mlp::launch_backward_fused(s, params, X, H, dZ, batch, grads, dH_scratch, dX, stream); });
}

extern "C" int mlp_step(float* params, float* velocity, const float* grads, size_t n, float lr, float momentum,
                        cudaStream_t stream) {
  if (!params || !velocity || !grads || n == 0) return MLP_ERR_INVALID_ARGUMENT;
  return guarded([&] { mlp::launch_momentum_flat(params, velocity, grads, n, lr, momentum, stream); });
}

extern "C" int mlp_train_epoch(MlpShape s, float* params, float* velocity, const float* X_all,
                               const int* labels_all, const int* order, int n_samples, int batch, float lr,
                               float momentum, float* workspace, float* step_loss, cudaStream_t stream) {
  if (bad_shape(s) || batch <= 0 || n_samples <= 0 || !params || !velocity || !X_all || !labels_all || !order ||
      !workspace || !step_loss)
    return MLP_ERR_INVALID_ARGUMENT;
  mlp::EpochArgs a{s, params, velocity, X_all, labels_all, order, n_samples, batch, lr, momentum,
                   workspace, step_loss, stream};
  return guarded([&] { mlp::fused_epoch(a); });
}
