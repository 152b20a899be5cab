// cuda/gate/shipped_reference.h — the float64 reference's result for the recipe, shipped in
// data/reference/ so a gate can compare against it without retraining (`--reference shipped`).
// `mlp_host reference` (and `invoke reference`) regenerates the folder; the CPU test suite checks
// that the regeneration is bit-identical.
//
// data/reference/
//   init_params.npy              float32 (n_params,)   the seed's initial weights
//   order.npy                    int32 (epochs, train)  every epoch's data order
//   fp64_final_params.npy        float64 (n_params,)   the float64 reference after all epochs
//   fp64_loss_per_epoch.npy      float64 (epochs,)     mean training loss per sample
//   fp64_test_accuracy_per_epoch.npy  float64 (epochs,)
//   fp64_reference.json          the same numbers and the recipe they belong to, for people
//   SHA256SUMS                   every file above
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/recipe.h"

struct ShippedReference {
  std::vector<double> loss_per_epoch, test_accuracy_per_epoch, final_params;
};

// Trains the float64 reference for `r` on `data` and writes DIR (atomically, file by file).
void write_reference(const std::string& dir, const Recipe& r, const Dataset& data,
                     const std::function<void(int epoch, double loss, double acc, double seconds)>& progress);

// Reads DIR after checking its SHA256SUMS and that it was made for this recipe (a mismatch is a
// UserError naming the file and the field).
ShippedReference read_reference(const std::string& dir, const Recipe& r);
