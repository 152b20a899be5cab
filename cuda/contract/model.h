// cuda/contract/model.h — the model's layout, its one owner in C and C++: the layer widths, where each
// tensor sits in the flat parameter buffer, and where mlp_train_epoch's workspace keeps each
// buffer (hence its size). spec/layout.py is the Python owner; tests/test_layout_agreement.py
// compiles this header with g++ and fails when the two disagree.
//
// Plain C (it is part of the learners' contract: cuda/contract/submission.h includes it) that also
// compiles as C++ and as CUDA, where every function is __host__ __device__ (the persistent
// kernels index the flat buffer with mlp_offsets) and constexpr (the static_asserts below). It
// needs no CUDA header, so host tools and the agreement test build it with a plain compiler.
#ifndef MLP_MODEL_H
#define MLP_MODEL_H

#include <stddef.h>

#ifdef __CUDACC__
#define MLP_HD __host__ __device__
#else
#define MLP_HD
#endif
#ifdef __cplusplus
#define MLP_CONSTEXPR constexpr
#else
#define MLP_CONSTEXPR
#endif

#ifdef __cplusplus
extern "C" {
#endif

// Layer widths. The recipe is {784, 256, 10}; sweeps use other hidden widths.
typedef struct MlpShape {
  int in;      // input features (784)
  int hidden;  // hidden units (256)
  int out;     // classes (10)
} MlpShape;

// Offsets (in floats) of each tensor inside the flat parameter buffer, and its total length.
// Every matrix is row-major; gradients and the momentum velocity use the same layout.
//   W1 [in × hidden]   at w1 = 0   W1[i][j] = w1 + i·hidden + j joins input i to hidden unit j
//   b1 [hidden]        at b1
//   W2 [hidden × out]  at w2       W2[j][k] = w2 + j·out + k joins hidden unit j to class k
//   b2 [out]           at b2
//   total = b2 + out floats
typedef struct MlpOffsets {
  size_t w1, b1, w2, b2, total;
} MlpOffsets;

static inline MLP_CONSTEXPR MLP_HD MlpOffsets mlp_offsets(MlpShape s) {
  MlpOffsets o = {0, 0, 0, 0, 0};
  o.w1 = 0;
  o.b1 = o.w1 + (size_t)s.in * (size_t)s.hidden;
  o.w2 = o.b1 + (size_t)s.hidden;
  o.b2 = o.w2 + (size_t)s.hidden * (size_t)s.out;
  o.total = o.b2 + (size_t)s.out;
  return o;
}

// Where our mlp_train_epoch (and tests/submissions/naive_base.cuh) keeps each buffer inside the
// workspace, in floats from its start, for batches of up to `batch` rows. `total` is what the
// caller allocates (mlp_workspace_floats); a submission may use that space any way it likes.
typedef struct MlpWorkspaceOffsets {
  size_t x;       // [batch × in]      the gathered batch
  size_t labels;  // [batch]           its labels, int32 in float-sized slots
  size_t h;       // [batch × hidden]  post-ReLU activations
  size_t dh;      // [batch × hidden]  gradient of the hidden layer
  size_t z;       // [batch × out]     logits
  size_t dz;      // [batch × out]     gradient of the logits
  size_t grads;   // [total params]    gradients, flat, parameter layout
  size_t total;   // floats in all
} MlpWorkspaceOffsets;

static inline MLP_CONSTEXPR MLP_HD MlpWorkspaceOffsets mlp_workspace_offsets(MlpShape s, int batch) {
  MlpWorkspaceOffsets w = {0, 0, 0, 0, 0, 0, 0, 0};
  const size_t b = (size_t)batch;
  w.x = 0;
  w.labels = w.x + b * (size_t)s.in;
  w.h = w.labels + b;
  w.dh = w.h + b * (size_t)s.hidden;
  w.z = w.dh + b * (size_t)s.hidden;
  w.dz = w.z + b * (size_t)s.out;
  w.grads = w.dz + b * (size_t)s.out;
  w.total = w.grads + mlp_offsets(s).total;
  return w;
}

// Floats of scratch space that mlp_train_epoch may use, for batches of up to `batch` rows.
static inline MLP_CONSTEXPR MLP_HD size_t mlp_workspace_floats(MlpShape s, int batch) {
  return mlp_workspace_offsets(s, batch).total;
}

#ifdef __cplusplus
}  // extern "C"

namespace mlp {
// The recipe's widths (recipe.toml is what the binary trains; tests/test_layout_agreement.py
// checks that both agree with this and with spec/layout.py's RECIPE_SHAPE).
constexpr MlpShape kRecipeShape = {784, 256, 10};
constexpr int kRecipeBatch = 128;
static_assert(mlp_offsets(kRecipeShape).total == 203530, "the recipe's MLP has 203,530 parameters");
static_assert(mlp_workspace_floats(kRecipeShape, kRecipeBatch) == 372106,
              "the recipe's workspace: 128 × (784 + 1 + 2·256 + 2·10) floats and one gradient per parameter");
}  // namespace mlp
#endif

#endif  // MLP_MODEL_H
