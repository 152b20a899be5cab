// cuda/gate/cpu_reference.h — the float64 CPU reference: a plain, readable MLP that proves the CUDA
// kernels right. Host-only (no CUDA), so CI builds and tests it. OpenMP where available; every
// reduction keeps a fixed order, so results do not depend on the thread count.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/precision.h"     // Precision, round_to_precision
#include "contract/submission.h"  // MlpShape, mlp_offsets (plain C, no CUDA calls)

// Initial parameters for `seed`, in the flat layout, drawn like torch.nn.Linear's defaults:
// every weight and bias of a layer ~ U(−1/√fan_in, +1/√fan_in). Float32, since that is what the
// GPU starts from; the float64 reference promotes these exact values.
std::vector<float> init_params(MlpShape s, uint64_t seed);

// Epoch e's data order: a Fisher–Yates permutation of 0..n−1 from SplitMix64(seed, e).
std::vector<int32_t> epoch_order(int n, uint64_t seed, int epoch);

// Forward for `batch` rows: H = ReLU(X·W1 + b1) [batch × hidden], Z = H·W2 + b2 [batch × out].
void ref_forward(MlpShape s, const double* params, const double* X, int batch, double* H, double* Z);

// Mean softmax cross-entropy (log-sum-exp with the row max subtracted) and
// dZ = (softmax(Z) − onehot) / batch. Returns the mean loss.
double ref_loss(MlpShape s, const double* Z, const int* labels, int batch, double* dZ);

// grads (flat layout) from X, H, dZ: dW2 = Hᵀ·dZ, db2 = colsum(dZ), dH = (dZ·W2ᵀ)⊙(H>0),
// dW1 = Xᵀ·dH, db1 = colsum(dH). dX [batch × in] = dH·W1ᵀ when dX != nullptr.
void ref_backward(MlpShape s, const double* params, const double* X, const double* H, const double* dZ,
                  int batch, double* grads, double* dX = nullptr);

// v = μ·v − lr·g ; p = p + v, elementwise over n values.
void ref_step(double* params, double* velocity, const double* grads, size_t n, double lr, double momentum);

// Test accuracy (fraction) and mean loss of `params` on n rows.
struct EvalResult { double accuracy; double loss; };
EvalResult ref_evaluate(MlpShape s, const double* params, const double* X, const int* y, int n);

// Full training from `params` (updated in place): per epoch, its data order, batches of `batch`
// (the last one short), one momentum step each. `progress` is called after every epoch.
struct RefTrainResult {
  std::vector<double> loss_per_epoch;            // mean training loss per sample
  std::vector<double> test_accuracy_per_epoch;   // after each epoch
  double seconds = 0;
};
// `inputs` other than FP32: the rounded-input reference, the same training with every matrix
// product's two inputs rounded to that format (mlp::round_to_precision of the float nearest each
// operand) before the product, and everything else (sums, softmax, biases, the update) float64:
// what correct arithmetic at that precision does to the trajectory, free of float32's own
// rounding. The test accuracy it reports is the float64 forward of its parameters.
RefTrainResult ref_train(MlpShape s, std::vector<double>& params, const std::vector<double>& X, const std::vector<int>& y,
                         int n_train, const std::vector<double>& X_test, const std::vector<int>& y_test, int n_test,
                         const std::vector<std::vector<int32_t>>& orders, int batch, double lr, double momentum,
                         const std::function<void(int epoch, double loss, double acc, double seconds)>& progress,
                         mlp::Precision inputs = mlp::Precision::FP32);
