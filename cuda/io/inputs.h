// cuda/io/inputs.h — everything one mlp_train run reads, loaded and checked before the GPU is
// touched and before any order or buffer is built: a bad flag, recipe, data file, --init file,
// reference folder or --out gets its one-line UserError (exit 2) on any machine. Host-only.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/dataset.h"
#include "io/options.h"
#include "io/recipe.h"
#include "gate/shipped_reference.h"
#include "contract/submission.h"

struct RunInputs {
  Options opt;
  Recipe R;                                  // recipe.toml with the flags' overrides, validated
  MlpShape s;                                // {input_dim, hidden_dim, output_dim}
  std::vector<std::string> names;            // the paths to run, in order
  Dataset data;                              // checked against the recipe (dims, labels, sizes)
  std::vector<float> init;                   // the seed's initial weights, or --init's (all finite)
  ShippedReference shipped;                  // --reference shipped only
  std::vector<std::vector<int32_t>> orders;  // max(epochs, 3) epoch orders (--profile trains 3)
};

RunInputs load_inputs(const Options& opt, const PathCatalog& catalog);
