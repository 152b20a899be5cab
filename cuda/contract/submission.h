// cuda/contract/submission.h — the contract a submission implements.
//
// Five C-ABI entry points train a two-layer ReLU MLP with softmax cross-entropy and SGD with
// momentum; a sixth, optional, declares the precision of their matrix products' inputs
// (mlp_precision, at the end). `mlp_train` gates any implementation of them and times it
// (`mlp_host catalog` lists the cases; README's "submission.h, clause by clause" says which case
// holds each promise below);
// `harness/binding.py` calls them from Python on arbitrary arrays. Our own implementation is
// cuda/contract/submission_ref.cu; a learner's file replaces it with `invoke build --submission FILE`.
// cuda/contract/submission_starter.cu holds documented stubs to start from.
//
// Conventions that hold for every entry point:
//  * Every pointer is a DEVICE pointer (cudaMalloc'd), except the MlpShape passed by value.
//  * Every matrix is row-major and dense: element (r, c) of an R×C matrix is at [r*C + c].
//  * Parameters live in ONE flat float32 buffer, in this order (offsets: mlp_offsets, model.h):
//        W1 [in × hidden] | b1 [hidden] | W2 [hidden × out] | b2 [out]
//    Gradients and the momentum velocity use the same layout.
//  * Work is enqueued on `stream` and may run asynchronously; the caller synchronises. Return
//    MLP_OK when everything was enqueued; never call exit() or print on success.
//  * No host synchronisation and no allocation inside any entry point: losses stay on the device,
//    and scratch comes from the `workspace` and `dH_scratch` arguments.
//  * Inputs (const pointers) are read-only. Shapes are not only the recipe's 784-256-10.
//  * Results need not be bitwise reproducible (atomics are fine), but must stay within rounding.
//  * Return MLP_ERR_NOT_IMPLEMENTED from an entry point you have not written yet: the gate then
//    reports that case as "not implemented" instead of comparing garbage.
//  * Any shape the implementation does not support: return MLP_ERR_UNSUPPORTED.
//  * A NULL required pointer (dX of mlp_backward may be NULL) or batch <= 0: return
//    MLP_ERR_INVALID_ARGUMENT before enqueuing anything.
#ifndef MLP_SUBMISSION_H
#define MLP_SUBMISSION_H

#include <cuda_runtime.h>
#include <stddef.h>

// MlpShape, MlpOffsets, mlp_offsets (the flat parameter layout) and mlp_workspace_floats. They
// live in model.h, not here, because the kernels and host tools share them and must build them
// without CUDA headers (this file needs cudaStream_t); a submission still includes only this file.
#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

// Status codes returned by every entry point.
enum MlpStatus {
  MLP_OK = 0,
  MLP_ERR_NOT_IMPLEMENTED = 1,  // the entry point is a stub
  MLP_ERR_INVALID_ARGUMENT = 2, // a null pointer, batch <= 0, ...
  MLP_ERR_UNSUPPORTED = 3,      // a shape this implementation does not handle
  MLP_ERR_CUDA = 4,             // a CUDA call or launch failed
};

// The status names (for messages; spec/layout.py STATUS_NAMES is the same list).
static inline const char* mlp_status_name(int status) {
  switch (status) {
    case MLP_OK: return "ok";
    case MLP_ERR_NOT_IMPLEMENTED: return "not implemented";
    case MLP_ERR_INVALID_ARGUMENT: return "invalid argument";
    case MLP_ERR_UNSUPPORTED: return "unsupported shape";
    case MLP_ERR_CUDA: return "CUDA error";
    default: return "unknown status";
  }
}

// 1. Forward pass for `batch` rows.
//    X [batch × in]  ->  H = ReLU(X·W1 + b1) [batch × hidden],  Z = H·W2 + b2 [batch × out].
//    H is written too, since backward needs it (post-ReLU values).
int mlp_forward(MlpShape s, const float* params, const float* X, int batch, float* H, float* Z,
                cudaStream_t stream);

// 2. Softmax cross-entropy, averaged over the batch, and its gradient with respect to Z.
//    Z [batch × out], labels [batch] (int32 in [0, out))  ->
//    *loss (ONE float on the device) = mean_i( logsumexp(Z_i) − Z_i[label_i] ),
//    dZ [batch × out] = (softmax(Z) − onehot(labels)) / batch.
//    Must stay finite for logits as large as ±60 (subtract each row's max).
int mlp_loss(MlpShape s, const float* Z, const int* labels, int batch, float* dZ, float* loss,
             cudaStream_t stream);

// 3. Backward pass. Inputs: params, X [batch × in], H [batch × hidden] (post-ReLU, from
//    mlp_forward), dZ [batch × out]. Output: grads (flat, parameter layout):
//      dW2 = Hᵀ·dZ,  db2 = colsum(dZ),  dH = (dZ·W2ᵀ) ⊙ (H > 0),  dW1 = Xᵀ·dH,  db1 = colsum(dH).
//    dX [batch × in] = dH·W1ᵀ is written only when dX != NULL (training passes NULL).
//    dH needs scratch of batch × hidden floats: use `dH_scratch` (device, never NULL).
int mlp_backward(MlpShape s, const float* params, const float* X, const float* H,
                 const float* dZ, int batch, float* grads, float* dH_scratch, float* dX,
                 cudaStream_t stream);

// 4. One SGD-with-momentum update over the whole flat buffer of n floats:
//      v = momentum·v − lr·g ;  p = p + v        (elementwise; params and velocity in place)
int mlp_step(float* params, float* velocity, const float* grads, size_t n, float lr,
             float momentum, cudaStream_t stream);

// 5. One epoch: for step t = 0 .. ceil(n_samples / batch) − 1, take the rows
//    order[t*batch .. min((t+1)*batch, n_samples) − 1] of X_all [n_total × in] and
//    labels_all [n_total], run forward, loss, backward and one momentum step (the last batch
//    may be short: 6000 = 46·128 + 112). Write each step's mean batch loss to step_loss[t]
//    (device, ceil(n_samples / batch) floats). `workspace` holds at least
//    mlp_workspace_floats(s, batch) floats (model.h). No host synchronisation inside.
int mlp_train_epoch(MlpShape s, float* params, float* velocity, const float* X_all,
                    const int* labels_all, const int* order, int n_samples, int batch, float lr,
                    float momentum, float* workspace, float* step_loss, cudaStream_t stream);

// The precisions a submission may declare (the values of common/precision.h's mlp::Precision,
// static_assert'ed in common/declared_precision.cpp).
enum MlpPrecision {
  MLP_PRECISION_FP32 = 0,  // the products' inputs are the float32 values themselves (the default)
  MLP_PRECISION_TF32 = 1,  // rounded to TF32 first: 10 explicit mantissa bits, unit roundoff 2^-11
  MLP_PRECISION_BF16 = 2,  // rounded to bfloat16 first: 7 explicit mantissa bits, unit roundoff 2^-8
};

// 6. OPTIONAL: the precision of the INPUTS of your matrix products — X·W1 and H·W2 in forward,
//    Hᵀ·dZ, dZ·W2ᵀ, Xᵀ·dH and dH·W1ᵀ in backward, and the same inside mlp_train_epoch — when you
//    round them to TF32 or bfloat16 (round to nearest) before multiplying, as tensor cores do.
//    What does not change: every product accumulates in float32 (or wider); the parameters, the
//    velocity, H, Z, dZ and the gradients are float32 buffers; mlp_loss has no product and
//    mlp_step's update stays float32. The gate then holds cases 1, 2, 4 and 9 to the declared
//    format's unit roundoff (README, "Declaring your precision"); case 5 (step) and case 3 (loss)
//    keep their float32 tolerances whatever you declare.
//    Leave it undefined and your submission is MLP_PRECISION_FP32, gated as every float32 one.
//    A host function: return a constant, call no CUDA API (the gate asks once, before the GPU is
//    touched). A value other than the three above stops the gate with one line (exit status 2, bad
//    input).
int mlp_precision(void);

#ifdef __cplusplus
}
#endif

#endif  // MLP_SUBMISSION_H
