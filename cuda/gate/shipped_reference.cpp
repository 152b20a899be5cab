#include "gate/shipped_reference.h"

#include <cstdio>
#include <sstream>

#include "common/common.h"
#include "gate/cpu_reference.h"
#include "common/json.h"
#include "io/npy.h"
#include "common/run_stats.h"
#include "io/sha256.h"

namespace {
const char* kFiles[] = {"init_params.npy", "order.npy", "fp64_final_params.npy", "fp64_loss_per_epoch.npy",
                        "fp64_test_accuracy_per_epoch.npy", "fp64_reference.json"};

std::string recipe_json(const Recipe& r) {
  return Json::object()
      .set("input_dim", Json::num(r.input_dim)).set("hidden_dim", Json::num(r.hidden_dim))
      .set("output_dim", Json::num(r.output_dim)).set("batch", Json::num(r.batch)).set("lr", Json::num(r.lr))
      .set("momentum", Json::num(r.momentum)).set("epochs", Json::num(r.epochs))
      .set("seed", Json::num((long long)r.seed)).set("train_size", Json::num(r.train_size))
      .done();
}
}  // namespace

void write_reference(const std::string& dir, const Recipe& r, const Dataset& data,
                     const std::function<void(int, double, double, double)>& progress) {
  const MlpShape s{r.input_dim, r.hidden_dim, r.output_dim};
  const size_t total = mlp_offsets(s).total;
  std::vector<float> init = init_params(s, r.seed);
  std::vector<std::vector<int32_t>> orders;
  std::vector<int32_t> flat;
  for (int e = 0; e < r.epochs; ++e) {
    orders.push_back(epoch_order(r.train_size, r.seed, e));
    flat.insert(flat.end(), orders.back().begin(), orders.back().end());
  }
  std::vector<double> P(init.begin(), init.end());
  std::vector<double> Xtr(data.train_x.begin(), data.train_x.begin() + (long)r.train_size * s.in);
  std::vector<double> Xte(data.test_x.begin(), data.test_x.end());
  RefTrainResult res = ref_train(s, P, Xtr, data.train_y, r.train_size, Xte, data.test_y, data.n_test, orders, r.batch,
                                 r.lr, r.momentum, progress);
  const size_t E = (size_t)r.epochs;
  write_npy_f32(dir + "/init_params.npy", init, {total});
  write_npy_i32(dir + "/order.npy", flat, {E, (size_t)r.train_size});
  write_npy_f64(dir + "/fp64_final_params.npy", P, {total});
  write_npy_f64(dir + "/fp64_loss_per_epoch.npy", res.loss_per_epoch, {E});
  write_npy_f64(dir + "/fp64_test_accuracy_per_epoch.npy", res.test_accuracy_per_epoch, {E});
  // No timings: the folder must regenerate bit for bit.
  std::string js = Json::object()
                       .set("recipe", recipe_json(r))
                       .set("made_by", Json::str("mlp_host reference (float64 CPU reference, cuda/gate/cpu_reference.cpp)"))
                       .set("test_accuracy", Json::num(res.test_accuracy_per_epoch.back()))
                       .set("test_accuracy_last5_mean", Json::num(last5_mean(res.test_accuracy_per_epoch)))
                       .set("test_accuracy_per_epoch", Json::nums(res.test_accuracy_per_epoch))
                       .set("loss_per_epoch", Json::nums(res.loss_per_epoch))
                       .done();
  write_file_atomic(dir + "/fp64_reference.json", js + "\n");
  std::string sums;
  for (const char* f : kFiles) sums += sha256_hex(read_file(dir + "/" + f)) + "  " + f + "\n";
  write_file_atomic(dir + "/SHA256SUMS", sums);
}

ShippedReference read_reference(const std::string& dir, const Recipe& r) {
  verify_sha256sums(dir);
  std::string js = read_file(dir + "/fp64_reference.json");
  std::string want = "\"recipe\": " + recipe_json(r);
  if (js.find(want) == std::string::npos)
    throw UserError(dir + "/fp64_reference.json: made for another recipe (want " + recipe_json(r) +
                    "): use --reference same-run, or regenerate with `invoke reference`");
  const MlpShape s{r.input_dim, r.hidden_dim, r.output_dim};
  const size_t E = (size_t)r.epochs;
  ShippedReference ref;
  ref.loss_per_epoch = read_npy_f64(dir + "/fp64_loss_per_epoch.npy", {E});
  ref.test_accuracy_per_epoch = read_npy_f64(dir + "/fp64_test_accuracy_per_epoch.npy", {E});
  ref.final_params = read_npy_f64(dir + "/fp64_final_params.npy", {mlp_offsets(s).total});
  // The shipped initial weights and order must be the ones this run draws.
  if (read_npy_f32(dir + "/init_params.npy", {mlp_offsets(s).total}) != init_params(s, r.seed))
    throw UserError(dir + "/init_params.npy: differs from the weights seed " + std::to_string(r.seed) + " draws");
  return ref;
}
