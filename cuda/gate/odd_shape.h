// cuda/gate/odd_shape.h — the odd shape every entry-point case also runs at (gate/workload.h), on
// its own so that host-only code (build/mlp_host tolerances) names it without the CUDA headers.
#pragma once
#include "contract/model.h"

namespace gate {

// The widths of the odd shape: none a multiple of 32, 16 or 4, so a kernel that assumes the
// recipe's widths, or a tile size dividing them, meets a remainder everywhere.
constexpr MlpShape kOddShape = {37, 19, 3};
// The odd shape's batches: one row, fewer rows than a warp, and one row past the recipe's batch.
constexpr int kOddBatches[] = {1, 7, 129};

}  // namespace gate
