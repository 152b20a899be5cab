// cuda/tools/mlp_host.cpp — mlp_host: the host-only parts of the binary (data loader, seeded draws,
// float64 reference) behind a small CLI, so the CPU test suite checks them against numpy with
// no GPU.
//   mlp_host init     --recipe F --out P.npy                 initial parameters (float32)
//   mlp_host order    --recipe F --out O.npy [--epochs N]    per-epoch orders (int32)
//   mlp_host dump     --data DIR --out DIR                   loaded arrays as .npy
//   mlp_host grad     --recipe F --params P.npy --x X.npy --y Y.npy --out DIR   fp64 forward/loss/backward
//   mlp_host train    --recipe F --data DIR --epochs N --train-size N --out DIR   fp64 training
//   mlp_host reference --recipe F --data DIR --out DIR     the shipped reference (data/reference)
//   mlp_host limits                                       the bounds table (cuda/io/bounds.h) as JSON
//   mlp_host parse-args ARGS...                           mlp_train's own parser: the options as JSON
//   mlp_host recipe [--recipe F]                          the validated recipe as JSON
//   mlp_host stats MS...                                  run.json's epoch-time summary of MS (epoch 0 dropped)
//   mlp_host plan-gemm M N K SMS                            the tiled path's GEMM plan (kernels/tiled_plan.h) as JSON
//   mlp_host catalog                                      the gate's cases and stages (cuda/gate/catalog.h) and the
//                                                         kernel paths (cuda/paths/registry.h) as JSON
//   mlp_host tolerances [--recipe F] [--precision P]      the limits of cases 1-5 at the recipe's shape and the odd
//                                                         one, and every row's words, for a submission that
//                                                         declares P (fp32, tf32, bf16; default fp32) as JSON
//   mlp_host precision                                    the precision this program's link declares
//                                                         (cuda/common/declared_precision.h; no submission
//                                                         is linked: the weak default, fp32) as JSON
//   mlp_host verdict [RUN.json ...]   the gate's verdict (cuda/gate/verdict.h: PASS or FAIL, what failed, the hints)
//                                of each run.json named, else of each JSON document on stdin, one a line: one
//                                JSON object a line, in order, {"error": why} for one that is no run.json
//                                (spec/verdict.py asks it for every report)
// Each command takes only the flags listed above (kFlags); another flag, one given twice, or a flag
// whose value is missing or starts with `--` is one line, exit 2.
// Exit statuses as mlp_train's (cuda/common/exit_status.h): 2 for bad input, 4 for an internal error.
#include <cstdio>
#include <map>
#include <new>
#include <set>
#include <string>

#include "gate/case_result.h"
#include "common/common.h"
#include "common/declared_precision.h"
#include "gate/cpu_reference.h"
#include "gate/catalog.h"
#include "gate/verdict.h"
#include "common/json_read.h"
#include "kernels/tiled_plan.h"
#include "paths/registry.h"
#include "io/dataset.h"
#include "common/exit_status.h"
#include "common/json.h"
#include "io/bounds.h"
#include "io/npy.h"
#include "io/options.h"
#include "io/recipe.h"
#include "common/run_stats.h"
#include "gate/odd_shape.h"
#include "gate/shipped_reference.h"
#include "gate/tolerances.h"

namespace {
// The flags each subcommand that takes `--flag value` pairs accepts; any other flag is an error.
const std::map<std::string, std::set<std::string>> kFlags = {
    {"dump", {"data", "out"}},
    {"init", {"recipe", "out"}},
    {"order", {"recipe", "out", "epochs", "train-size"}},
    {"grad", {"recipe", "params", "x", "y", "batch", "out"}},
    {"train", {"recipe", "data", "out", "epochs", "train-size"}},
    {"reference", {"recipe", "data", "out"}},
    {"recipe", {"recipe", "epochs", "train-size"}},
    {"tolerances", {"recipe", "precision"}},
};

// `--flag value` pairs of argv[2..] for `cmd`: a flag the command does not take, a flag given
// twice, or a flag without its value (the end of the arguments, or another `--flag` where the
// value should be) is a UserError naming it.
std::map<std::string, std::string> flags(const std::string& cmd, int argc, char** argv) {
  const auto allowed = kFlags.find(cmd);
  if (allowed == kFlags.end()) throw UserError("unknown command '" + cmd + "'");
  std::map<std::string, std::string> f;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 || i + 1 >= argc || std::string(argv[i + 1]).rfind("--", 0) == 0)
      throw UserError("bad argument '" + a + "'" + (a.rfind("--", 0) == 0 ? " (it needs a value)" : ""));
    if (!allowed->second.count(a.substr(2))) {
      std::string takes;
      for (const auto& k : allowed->second) takes += (takes.empty() ? "--" : ", --") + k;
      throw UserError(cmd + " takes no " + a + " (it takes " + takes + ")");
    }
    if (!f.emplace(a.substr(2), argv[++i]).second) throw UserError(a + " given twice");
  }
  return f;
}
std::string need(std::map<std::string, std::string>& f, const char* k) {
  auto it = f.find(k);
  if (it == f.end()) throw UserError(std::string("missing --") + k);
  return it->second;
}
int run(int argc, char** argv) {
  if (argc < 2)
    throw UserError("usage: mlp_host init|order|dump|grad|train|reference|limits|parse-args|recipe|tolerances|stats|catalog|precision|verdict|plan-gemm [--flag value ...]");
  std::string cmd = argv[1];
  if (cmd == "limits") {
    std::printf("%s\n", limits_json().c_str());
    return 0;
  }
  if (cmd == "parse-args") {  // the same parser as mlp_train's; checks of names and --out need its paths
    std::printf("%s\n", options_json(parse_args(std::vector<std::string>(argv + 2, argv + argc))).c_str());
    return 0;
  }
  if (cmd == "precision") {
    const mlp::DeclaredPrecision d = mlp::declared_precision();
    std::printf("%s\n", Json::object().set("precision", Json::str(mlp::precision_name(d.precision)))
                             .set("declared", Json::boolean(d.declared))
                             .set("unit_roundoff", Json::num(mlp::unit_roundoff(d.precision)))
                             .set("source", Json::str(d.source())).done().c_str());
    return 0;
  }
  if (cmd == "catalog") {
    std::printf("%s\n", Json::object().set("gate", catalog_json()).set("paths", path_registry_json()).done().c_str());
    return 0;
  }
  if (cmd == "verdict") {  // the supervisor, the reports and the leaderboard take their verdicts from here
    // One answer a document, in order; a document that is not a run.json answers {"error": why} and the
    // others are still decided (a leaderboard of many folders is not lost to one broken file).
    auto answer = [](const std::string& text, const std::string& where) {
      try {
        std::printf("%s\n", verdict_json(gate_verdict(parse_json(text, where), where)).c_str());
      } catch (const UserError& e) {
        std::printf("%s\n", Json::object().set("error", Json::str(e.what())).done().c_str());
      }
    };
    if (argc > 2) {
      for (int i = 2; i < argc; ++i) answer(read_file(argv[i]), argv[i]);
      return 0;
    }
    std::string line;
    int n = 0;
    for (int ch; (ch = std::getchar()) != EOF;) {
      if (ch != '\n') { line += (char)ch; continue; }
      ++n;
      if (line.find_first_not_of(" \t\r") != std::string::npos) answer(line, "stdin line " + std::to_string(n));
      line.clear();
    }
    if (line.find_first_not_of(" \t\r") != std::string::npos) answer(line, "stdin line " + std::to_string(n + 1));
    return 0;
  }
  if (cmd == "plan-gemm") {
    if (argc != 6) throw UserError("usage: mlp_host plan-gemm M N K SMS");
    int v[4];
    for (int i = 0; i < 4; ++i)
      v[i] = (int)parse_integer_in(argv[2 + i], 1, 1 << 20, "plan-gemm");
    const mlp::tiled::GemmPlan p = mlp::tiled::plan_gemm(v[0], v[1], v[2], v[3]);
    const mlp::tiled::TileShape& t = mlp::tiled::kTileShapes[p.shape];
    std::printf("%s\n", Json::object().set("shape", Json::str(t.name)).set("bm", Json::num(t.bm)).set("bn", Json::num(t.bn))
                             .set("bk", Json::num(t.bk)).set("split", Json::num(p.split)).set("k_chunk", Json::num(p.k_chunk))
                             .set("tiles_m", Json::num(p.tiles_m)).set("tiles_n", Json::num(p.tiles_n))
                             .set("est_us", Json::num(p.est_us)).set("describe", Json::str(p.describe())).done().c_str());
    return 0;
  }
  if (cmd == "stats") {
    std::vector<double> ms;
    for (int i = 2; i < argc; ++i) ms.push_back(parse_real(Bound{"ms", "", false, 0, 1e12, "milliseconds"}, argv[i], "stats"));
    const EpochStats st = summarise_epochs(ms);
    std::printf("%s\n", Json::object().set("median", Json::num(st.median)).set("mean", Json::num(st.mean))
                             .set("min", Json::num(st.min)).set("max", Json::num(st.max))
                             .set("cv_pct", Json::num(st.cv)).set("last5_mean", Json::num(last5_mean(ms))).done().c_str());
    return 0;
  }
  auto f = flags(cmd, argc, argv);
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
  // The same strict parse and bounds as mlp_train's --epochs and --train-size.
  if (f.count("epochs")) set_recipe_value(R, "epochs", f["epochs"], "--epochs");
  if (f.count("train-size")) set_recipe_value(R, "train_size", f["train-size"], "--train-size");
  validate_recipe(R, f.count("recipe") ? f["recipe"] : "recipe.toml");
  if (cmd == "recipe") {
    std::printf("%s\n", recipe_values_json(R).c_str());
    return 0;
  }
  MlpShape s{R.input_dim, R.hidden_dim, R.output_dim};
  size_t total = mlp_offsets(s).total;
  if (cmd == "tolerances") {
    mlp::DeclaredPrecision d;  // as a submission declaring it would be gated (fp32: the default's words too)
    if (f.count("precision") && !mlp::parse_precision(f["precision"], &d.precision))
      throw UserError("--precision '" + f["precision"] + "': expected fp32, tf32 or bf16");
    d.declared = f.count("precision") > 0;
    Json shapes = Json::object();
    for (MlpShape sh : {s, gate::kOddShape}) {
      Json o = Json::object();
      for (bool normwise : {false, true}) {
        const gate::ForwardLimits l = gate::forward_limits(d.precision, sh, normwise);
        o.set(normwise ? "case2" : "case1", Json::object().set("z", Json::num(l.z)).set("h", Json::num(l.h)).done());
      }
      shapes.set(std::to_string(sh.in) + "-" + std::to_string(sh.hidden) + "-" + std::to_string(sh.out), o.done());
    }
    const gate::GradTolerance g = gate::grad_tolerance(d.precision);
    std::printf("%s\n", Json::object().set("precision", Json::str(mlp::precision_name(d.precision)))
                             .set("u", Json::num(gate::kU32)).set("u_p", Json::num(mlp::unit_roundoff(d.precision)))
                             .set("input_roundoff", Json::num(mlp::input_roundoff(d.precision)))
                             .set("shapes", shapes.done()).set("case3", Json::num(gate::loss_limit()))
                             .set("case4", Json::object().set("rtol", Json::num(g.rtol)).set("atol", Json::num(g.atol)).done())
                             .set("case5", Json::object().set("atol", Json::num(gate::kStepAtol))
                                               .set("rtol", Json::num(gate::kStepRtol)).done())
                             .set("what", Json::object().set("1", Json::str(gate::forward_what(d, false)))
                                              .set("2", Json::str(gate::forward_what(d, true)))
                                              .set("3", Json::str(gate::loss_what(d)))
                                              .set("4", Json::str(gate::grad_what(d)))
                                              .set("5", Json::str(gate::step_what(d)))
                                              .set("9", Json::str(gate::epoch_what(d))).done())
                             .done().c_str());
    return 0;
  }
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
    int B = (int)parse_integer(bound("batch"), need(f, "batch"), "--batch");
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
    // The checks mlp_train makes (cuda/io/inputs.cpp) before slicing the data; without them a train size
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
    throw std::logic_error("command '" + cmd + "' has flags in kFlags but no branch here");
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UserError& e) {
    print_error("mlp_host", "error", e.what());
    return kExitBadInput;
  } catch (const std::bad_alloc& e) {
    print_error("mlp_host", "internal error", std::string("out of host memory (") + e.what() + ")");
    return kExitInternal;
  } catch (const std::exception& e) {
    print_error("mlp_host", "internal error", e.what());
    return kExitInternal;
  }
}
