#include "io/inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/common.h"
#include "gate/cpu_reference.h"
#include "io/npy.h"

namespace {
void check_data(const Dataset& data, const Recipe& R, const std::string& dir) {
  if (data.dim != R.input_dim)
    throw UserError(dir + ": images have " + std::to_string(data.dim) + " pixels, recipe input_dim is " +
                    std::to_string(R.input_dim));
  for (int y : data.train_y)
    if (y >= R.output_dim)
      throw UserError(dir + ": label " + std::to_string(y) + " out of range for output_dim " + std::to_string(R.output_dim));
  for (int y : data.test_y)
    if (y >= R.output_dim)
      throw UserError(dir + ": test label " + std::to_string(y) + " out of range for output_dim " +
                      std::to_string(R.output_dim));
  if (data.n_train < R.train_size)
    throw UserError(dir + ": " + std::to_string(data.n_train) + " training images, recipe train_size is " +
                    std::to_string(R.train_size));
  if (data.n_test != R.test_size)
    throw UserError(dir + ": " + std::to_string(data.n_test) + " test images, recipe test_size is " +
                    std::to_string(R.test_size));
}

std::vector<float> read_init(const std::string& path, size_t total) {
  std::vector<float> init = read_npy_f32(path, {total});
  for (size_t i = 0; i < init.size(); ++i)
    if (!std::isfinite(init[i]))
      throw UserError(path + ": value " + std::to_string(i) + " is " + (std::isnan(init[i]) ? "nan" : "inf") +
                      ": initial weights must be finite");
  return init;
}
}  // namespace

RunInputs load_inputs(const Options& opt, const PathCatalog& catalog) {
  RunInputs in;
  in.opt = opt;
  in.R = read_recipe(opt.recipe);
  apply_overrides(in.R, opt);
  validate_recipe(in.R, recipe_source(opt));
  in.s = MlpShape{in.R.input_dim, in.R.hidden_dim, in.R.output_dim};
  in.names = resolve_paths(opt, catalog);
  check_out_dir(opt.out);

  in.data = load_dataset(opt.data);
  check_data(in.data, in.R, opt.data);

  const size_t total = mlp_offsets(in.s).total;
  in.init = opt.init.empty() ? init_params(in.s, in.R.seed) : read_init(opt.init, total);
  if (opt.reference == "shipped") in.shipped = read_reference(opt.data + "/reference", in.R);

  // Bounded by the table: at most 1000 epochs x 60000 rows.
  const int order_epochs = std::max(in.R.epochs, 3);
  for (int e = 0; e < order_epochs; ++e) in.orders.push_back(epoch_order(in.R.train_size, in.R.seed, e));
  // After every check, so that a failed one is the only line on stderr.
  std::fprintf(stderr, "loaded %s (SHA-256 checked)\n", opt.data.c_str());
  return in;
}
