// cuda/host_tool.cpp — mlp_host: the host-only parts of the binary (data loader, seeded draws,
// float64 reference) behind a small CLI, so the CPU test suite checks them against numpy with
// no GPU.
//   mlp_host init     --recipe F --out P.npy                 initial parameters (float32)
//   mlp_host order    --recipe F --out O.npy [--epochs N]    per-epoch orders (int32)
//   mlp_host dump     --data DIR --out DIR                   loaded arrays as .npy
//   mlp_host grad     --recipe F --params P.npy --x X.npy --y Y.npy --out DIR   fp64 forward/loss/backward
//   mlp_host train    --recipe F --data DIR --epochs N --train-size N --out DIR   fp64 training
//   mlp_host reference --recipe F --data DIR --out DIR     the shipped reference (data/reference)
#include <cstdio>
#include <map>
#include <string>

#include "common.h"
#include "cpu_reference.h"
#include "dataset.h"
#include "npy.h"
#include "recipe.h"
#include "shipped_reference.h"

namespace {
std::map<std::string, std::string> flags(int argc, char** argv) {
  std::map<std::string, std::string> f;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || i + 1 >= argc) throw UserError("bad argument '" + a + "'");
    f[a.substr(2)] = argv[++i];
  }
  return f;
}
std::string need(std::map<std::string, std::string>& f, const char* k) {
  auto it = f.find(k);
  if (it == f.end()) throw UserError(std::string("missing --") + k);
  return it->second;
}
int run(int argc, char** argv) {
  if (argc < 2) throw UserError("usage: mlp_host init|order|dump|grad|train [--flag value ...]");
  std::string cmd = argv[1];
  auto f = flags(argc, argv);
  if (cmd == "dump") {
    Dataset d = load_dataset(need(f, "data"));
    std::string out = need(f, "out");
    write_npy_f32(out + "/train_x.npy", d.train_x, {(size_t)d.n_train, (size_t)d.dim});
    write_npy_i32(out + "/train_y.npy", std::vector<int32_t>(d.train_y.begin(), d.train_y.end()), {(size_t)d.n_train});
    write_npy_f32(out + "/test_x.npy", d.test_x, {(size_t)d.n_test, (size_t)d.dim});
    write_npy_i32(out + "/test_y.npy", std::vector<int32_t>(d.test_y.begin(), d.test_y.end()), {(size_t)d.n_test});
    return 0;
  }
  Recipe R = read_recipe(f.count("recipe") ? f["recipe"] : "recipe.toml");
  if (f.count("epochs")) R.epochs = std::stoi(f["epochs"]);
  if (f.count("train-size")) R.train_size = std::stoi(f["train-size"]);
  validate_recipe(R);
  // --train-size bypasses read_recipe's range check: a value <= 0 reached epoch_order and the
  // slicing in `train` as a negative size.
  if (R.train_size < 1 || R.train_size > (1 << 24))
    throw UserError("train size must be an integer in [1, 16777216], got " + std::to_string(R.train_size));
  MlpShape s{R.input_dim, R.hidden_dim, R.output_dim};
  size_t total = mlp_offsets(s).total;
  if (cmd == "init") {
    write_npy_f32(need(f, "out"), init_params(s, R.seed), {total});
  } else if (cmd == "order") {
    std::vector<int32_t> flat;
    for (int e = 0; e < R.epochs; ++e) {
      auto o = epoch_order(R.train_size, R.seed, e);
      flat.insert(flat.end(), o.begin(), o.end());
    }
    write_npy_i32(need(f, "out"), flat, {(size_t)R.epochs, (size_t)R.train_size});
  } else if (cmd == "grad") {
    int B = std::stoi(need(f, "batch"));
    std::vector<float> pf = read_npy_f32(need(f, "params"), {total});
    std::vector<float> xf = read_npy_f32(need(f, "x"), {(size_t)B, (size_t)s.in});
    std::vector<int32_t> y = read_npy_i32(need(f, "y"), {(size_t)B});
    // A label outside 0..out-1 made ref_loss read past the row of logits (heap overflow).
    for (size_t i = 0; i < y.size(); ++i)
      if (y[i] < 0 || y[i] >= s.out)
        throw UserError(need(f, "y") + ": label " + std::to_string(y[i]) + " at index " + std::to_string(i) +
                        ": expected 0.." + std::to_string(s.out - 1));
    std::vector<double> P(pf.begin(), pf.end()), X(xf.begin(), xf.end());
    std::vector<double> H((size_t)B * s.hidden), Z((size_t)B * s.out), dZ(Z.size()), G(total), dX((size_t)B * s.in);
    std::vector<int> yi(y.begin(), y.end());
    ref_forward(s, P.data(), X.data(), B, H.data(), Z.data());
    double loss = ref_loss(s, Z.data(), yi.data(), B, dZ.data());
    ref_backward(s, P.data(), X.data(), H.data(), dZ.data(), B, G.data(), dX.data());
    std::string out = need(f, "out");
    write_npy_f64(out + "/Z.npy", Z, {(size_t)B, (size_t)s.out});
    write_npy_f64(out + "/grads.npy", G, {total});
    write_npy_f64(out + "/dX.npy", dX, {(size_t)B, (size_t)s.in});
    write_npy_f64(out + "/loss.npy", {loss}, {1});
  } else if (cmd == "reference") {
    Dataset d = load_dataset(need(f, "data"));
    write_reference(need(f, "out"), R, d, [&](int e, double loss, double acc, double secs) {
      std::fprintf(stderr, "fp64 reference: epoch %2d/%d  loss %.4f  test acc %.2f%%  (%.1f s)\n", e + 1, R.epochs,
                   loss, 100 * acc, secs);
    });
  } else if (cmd == "train") {
    Dataset d = load_dataset(need(f, "data"));
    // The checks mlp_train makes (cuda/main.cu) before slicing the data; without them a train size
    // above the data, or a recipe whose input_dim/output_dim does not fit the data, read past the
    // arrays (heap overflows in the slicing below, ref_forward and ref_loss).
    const std::string& dir = f["data"];
    if (d.dim != s.in)
      throw UserError(dir + ": images have " + std::to_string(d.dim) + " pixels, recipe input_dim is " + std::to_string(s.in));
    if (d.n_train < R.train_size)
      throw UserError(dir + ": " + std::to_string(d.n_train) + " training images, train size is " + std::to_string(R.train_size));
    for (const std::vector<int>* ys : {&d.train_y, &d.test_y})
      for (int label : *ys)
        if (label >= s.out)
          throw UserError(dir + ": label " + std::to_string(label) + " does not fit recipe output_dim " + std::to_string(s.out));
    std::vector<float> init = init_params(s, R.seed);
    std::vector<double> P(init.begin(), init.end());
    std::vector<double> Xtr(d.train_x.begin(), d.train_x.begin() + (long)R.train_size * s.in);
    std::vector<double> Xte(d.test_x.begin(), d.test_x.end());
    std::vector<std::vector<int32_t>> orders;
    for (int e = 0; e < R.epochs; ++e) orders.push_back(epoch_order(R.train_size, R.seed, e));
    RefTrainResult r = ref_train(s, P, Xtr, d.train_y, R.train_size, Xte, d.test_y, d.n_test, orders, R.batch, R.lr,
                                 R.momentum, [](int e, double loss, double acc, double secs) {
                                   std::fprintf(stderr, "fp64 epoch %d loss %.6f acc %.4f (%.1f s)\n", e + 1, loss, acc, secs);
                                 });
    std::string out = need(f, "out");
    write_npy_f64(out + "/loss_per_epoch.npy", r.loss_per_epoch, {r.loss_per_epoch.size()});
    write_npy_f64(out + "/test_accuracy_per_epoch.npy", r.test_accuracy_per_epoch, {r.test_accuracy_per_epoch.size()});
    write_npy_f64(out + "/final_params.npy", P, {total});
  } else {
    throw UserError("unknown command '" + cmd + "'");
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlp_host: error: %s\n", e.what());
    return 2;
  }
}
