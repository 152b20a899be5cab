// cuda/transformer/vit_forward.cu — the vision transformer's forward pass (issue 31): our kernels, checked
// against float64, timed; harness/transformer/ drives it (`invoke transformer.*`).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "common/common.h"
#include "common/cuda_check.h"
#include "common/exit_status.h"
#include "common/json.h"
#include "io/bounds.h"
#include "io/dataset.h"
#include "io/npy.h"
#include "transformer/checks.h"
#include "transformer/config.h"
#include "transformer/forward.h"
#include "transformer/model.h"
#include "transformer/reference.h"
#include "transformer/timing.h"
#include "transformer/weights.h"

namespace {

constexpr const char* kUsage =
    "usage: vit_forward MODE [--config transformer.toml] [options]\n"
    "  limits                      the config's bounds as JSON (spec/transformer.py holds the same)\n"
    "  config                      the config's values as JSON (or one line per bad key, exit 2)\n"
    "  layout                      the weight layout as JSON (names, shapes, offsets, counts)\n"
    "  verify    --weights DIR     check the weights folder's hashes and layout (no GPU)\n"
    "  reference WEIGHTS --images N --out DIR   float64 intermediates of the first N test images (no GPU)\n"
    "  check     WEIGHTS [--gemm E] [--layer-batch 32] [--logits-batch 256] [--explain i,j,...] [--out FILE.json]\n"
    "  predict   WEIGHTS [--gemm E] [--out LOGITS.npy] [--json FILE.json]   the test set's logits and accuracy\n"
    "  time      WEIGHTS [--gemm fp32,tf32x3] [--batches 128,1024,10000] [--warmup 5] [--repeats 30] [--out FILE.json]\n"
    "  profile   WEIGHTS [--gemm E] [--batch 1024]   one forward inside the NVTX range 'vit-forward' (for nsys)\n"
    "--gemm E: the GEMMs' engine, fp32 (CUDA-core FFMA, the default), tf32x3 (tensor cores, float32-accurate) or bf16\n"
    "          (bfloat16 operands, float32 sums; checked at bfloat16's bounds)\n"
    "WEIGHTS: --weights DIR (manifest.json + params.npy) or --random SEED (model.h random_params)\n"
    "common: --data DIR (default data), --config FILE (default transformer.toml)\n";

struct Args {
  std::string mode;
  std::map<std::string, std::string> kv;
  std::string get(const std::string& k, const std::string& def = "") const {
    auto it = kv.find(k);
    return it == kv.end() ? def : it->second;
  }
  bool has(const std::string& k) const { return kv.count(k) > 0; }
};

Args parse_args(int argc, char** argv) {
  static const char* known[] = {"--config", "--weights", "--random", "--data", "--images", "--out", "--json",
                                "--layer-batch", "--logits-batch", "--explain", "--batches", "--warmup",
                                "--repeats", "--batch", "--gemm"};
  Args a;
  if (argc < 2) throw UserError(std::string("no mode given\n") + kUsage);
  a.mode = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string f = argv[i];
    bool ok = false;
    for (const char* k : known) ok |= f == k;
    if (!ok) throw UserError("unknown flag " + one_line(f) + " (see --help)");
    if (i + 1 >= argc) throw UserError(f + " needs a value");
    if (a.kv.count(f)) throw UserError(f + " given twice");
    a.kv[f] = argv[++i];
  }
  return a;
}

int int_flag(const Args& a, const std::string& k, int def, long long lo, long long hi) {
  return a.has(k) ? (int)parse_integer_in(a.get(k), lo, hi, k) : def;
}

std::vector<int> int_list(const std::string& text, const std::string& flag, long long lo, long long hi) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back((int)parse_integer_in(item, lo, hi, flag));
  if (out.empty()) throw UserError(flag + ": empty list");
  return out;
}

struct Model {
  VitConfig config;
  VitShape shape;
  std::vector<float> params;
  std::string source, params_sha256 = "";
};

Model load_model(const Args& a) {
  Model m;
  m.config = read_vit_config(a.get("--config", "transformer.toml"));
  m.shape = shape_of(m.config);
  if (a.has("--weights") == a.has("--random")) throw UserError("give exactly one of --weights DIR and --random SEED");
  if (a.has("--weights")) {
    LoadedWeights w = load_weights(a.get("--weights"), m.config, m.shape);
    m.params = std::move(w.params);
    m.source = w.source;
    m.params_sha256 = w.params_sha256;
  } else {
    const uint64_t seed = (uint64_t)parse_integer_in(a.get("--random"), 0, (1LL << 53) - 1, "--random");
    m.params = random_params(m.shape, seed);
    m.source = "random seed " + std::to_string(seed);
  }
  return m;
}

std::string gpu_name() {
  int dev = 0;
  CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp p{};
  CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  return p.name;
}

Json header(const Model& m, const std::string& mode) {
  Json o = Json::object();
  o.set("schema", Json::num(1)).set("mode", Json::str(mode)).set("weights", Json::str(m.source))
      .set("params_sha256", Json::str(m.params_sha256)).set("config", vit_config_json(m.config));
  return o;
}

void write_json_file(const std::string& path, const std::string& body) {
  if (!path.empty()) write_file_atomic(path, body + "\n");
}

int mode_reference(const Args& a, const Model& m) {
  const Dataset ds = load_dataset(a.get("--data", "data"));
  const int n = int_flag(a, "--images", 4, 1, ds.n_test);
  const std::string out = a.get("--out");
  if (out.empty()) throw UserError("reference: --out DIR is required");
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) throw UserError(out + ": cannot create the folder: " + ec.message());
  const VitShape& s = m.shape;
  const RefWeights w = ref_weights(s, m.params);
  std::map<std::string, std::vector<double>> arrays;
  for (int i = 0; i < n; ++i) {
    ImageTrace tr;
    ref_image(s, w, ds.test_x.data() + (size_t)i * ds.dim, tr);
    auto add = [&](const std::string& k, const std::vector<double>& v) { arrays[k].insert(arrays[k].end(), v.begin(), v.end()); };
    add("x0", tr.x0);
    for (int l = 0; l < s.layers; ++l) {
      const LayerTrace& L = tr.layers[l];
      const std::string p = "L" + std::to_string(l + 1) + ".";
      add(p + "ln1", L.ln1); add(p + "qkv", L.qkv); add(p + "probs", L.probs); add(p + "heads", L.heads);
      add(p + "x_attn", L.x_attn); add(p + "ln2", L.ln2); add(p + "u", L.u); add(p + "x_out", L.x_out);
    }
    add("lnf", tr.lnf); add("pooled", tr.pooled); add("logits", tr.logits);
  }
  for (const auto& kv : arrays)
    write_npy_f64(out + "/" + kv.first + ".npy", kv.second, {(size_t)n, kv.second.size() / n});
  std::printf("wrote %zu float64 arrays of %d images into %s\n", arrays.size(), n, out.c_str());
  return kExitPass;
}

int mode_check(const Args& a, const Model& m) {
  const Dataset ds = load_dataset(a.get("--data", "data"));
  CheckInputs in;
  in.s = &m.shape;
  in.params = &m.params;
  in.images = &ds.test_x;
  in.n_images = ds.n_test;
  in.layer_batch = int_flag(a, "--layer-batch", 32, 1, 1024);
  in.logits_batch = int_flag(a, "--logits-batch", 256, 1, 10000);
  if (a.has("--explain") && !a.get("--explain").empty()) in.explain = int_list(a.get("--explain"), "--explain", 0, ds.n_test - 1);
  const int max_batch = std::max({in.layer_batch, in.logits_batch, (int)in.explain.size(), 1});
  VitForward f(m.shape, m.params, max_batch);
  f.set_engine(engine_of(a.get("--gemm", "fp32")));
  std::printf("vit_forward check: %s, %s GEMMs, on %s\n", m.source.c_str(), engine_name(f.engine()), gpu_name().c_str());
  const CheckReport rep = run_checks(f, in);
  Json o = header(m, "check");
  o.set("gpu", Json::str(gpu_name())).set("gemm", Json::str(engine_name(f.engine())))
      .set("layer_batch", Json::num(in.layer_batch))
      .set("logits_batch", Json::num(in.logits_batch)).set("u", Json::num(1.0 / 16777216.0))
      .set("precision", Json::str(engine_precision(f.engine())))
      .set("u_operands", Json::num(operand_rounding(f.engine()).rel / 16777216.0))
      .set("checks", check_rows_json(rep.rows)).set("passed", Json::boolean(rep.passed))
      .set("argmax_agree", Json::num(rep.argmax_agree)).set("argmax_n", Json::num(rep.argmax_n))
      .set("reference_seconds", Json::num(rep.ref_seconds)).set("explain", rep.explain_json);
  write_json_file(a.get("--out"), o.done());
  std::printf("vit_forward check: %s\n", rep.passed ? "every check passed" : "a check FAILED");
  return rep.passed ? kExitPass : kExitGateFailed;
}

int mode_predict(const Args& a, const Model& m) {
  const Dataset ds = load_dataset(a.get("--data", "data"));
  const int n = std::min(ds.n_test, m.config.test_size), C = m.shape.classes;
  VitForward f(m.shape, m.params, n);
  f.set_engine(engine_of(a.get("--gemm", "fp32")));
  CUDA_CHECK(cudaMemcpy(f.images(), ds.test_x.data(), (size_t)n * ds.dim * sizeof(float), cudaMemcpyHostToDevice));
  f.enqueue(f.images(), n, nullptr);
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> logits((size_t)n * C);
  CUDA_CHECK(cudaMemcpy(logits.data(), f.logits(), logits.size() * sizeof(float), cudaMemcpyDeviceToHost));
  int correct = 0;
  for (int i = 0; i < n; ++i) {
    int best = 0;
    for (int c = 1; c < C; ++c) best = logits[(size_t)i * C + c] > logits[(size_t)i * C + best] ? c : best;
    correct += best == ds.test_y[i];
  }
  if (a.has("--out")) write_npy_f32(a.get("--out"), logits, {(size_t)n, (size_t)C});
  std::printf("vit_forward predict: %d of %d test images correct (%.2f%%) with %s\n", correct, n, 100.0 * correct / n,
              m.source.c_str());
  Json o = header(m, "predict");
  o.set("gpu", Json::str(gpu_name())).set("gemm", Json::str(engine_name(f.engine()))).set("n", Json::num(n)).set("correct", Json::num(correct))
      .set("accuracy", Json::num((double)correct / n));
  write_json_file(a.get("--json"), o.done());
  return kExitPass;
}

int mode_time(const Args& a, const Model& m) {
  const Dataset ds = load_dataset(a.get("--data", "data"));
  const std::vector<int> batches = int_list(a.get("--batches", "128,1024,10000"), "--batches", 1, 65535);
  const int warmup = int_flag(a, "--warmup", 5, 1, 1000), repeats = int_flag(a, "--repeats", 30, 2, 10000);
  int max_batch = 1;
  for (int b : batches) max_batch = std::max(max_batch, b);
  VitForward f(m.shape, m.params, max_batch);
  std::printf("vit_forward time: %s on %s, %d warm-up + %d timed forwards per batch\n", m.source.c_str(),
              gpu_name().c_str(), warmup, repeats);
  std::vector<GemmEngine> engines;
  std::stringstream names(a.get("--gemm", "fp32,tf32x3"));
  for (std::string e; std::getline(names, e, ',');) engines.push_back(engine_of(e));
  const auto rows = time_forward(f, ds.test_x, ds.n_test, batches, engines, warmup, repeats);
  Json o = header(m, "time");
  o.set("gpu", Json::str(gpu_name())).set("timing", timing_json(rows, m.shape, warmup, repeats));
  write_json_file(a.get("--out"), o.done());
  return kExitPass;
}

int run(int argc, char** argv) {
  if (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::printf("%s%s", kUsage, kExitStatusHelp);
    return kExitPass;
  }
  const Args a = parse_args(argc, argv);
  const std::string config = a.get("--config", "transformer.toml");
  if (a.mode == "limits") {
    std::printf("%s\n", vit_limits_json().c_str());
    return kExitPass;
  }
  if (a.mode == "config") {
    std::printf("%s\n", vit_config_json(read_vit_config(config)).c_str());
    return kExitPass;
  }
  if (a.mode == "layout") {
    const VitShape s = shape_of(read_vit_config(config));
    Json o = Json::object();
    std::string why;
    for (const auto& r : unsupported_reasons(s)) why += (why.empty() ? "" : "; ") + r;
    o.set("layout", layout_json(s)).set("forward_flop", Json::num(forward_flop(s))).set("unsupported", Json::str(why));
    std::printf("%s\n", o.done().c_str());
    return kExitPass;
  }
  static const char* kModes[] = {"verify", "reference", "check", "predict", "time", "profile"};
  bool known = false;
  for (const char* k : kModes) known |= a.mode == k;
  if (!known) throw UserError("unknown mode " + one_line(a.mode) + " (see --help)");
  if (a.mode == "verify" && !a.has("--weights")) throw UserError("verify: --weights DIR is required");
  const Model m = load_model(a);
  if (a.mode == "verify") {
    std::printf("vit_forward verify: %s: hashes, config and layout match\n", m.source.c_str());
    return kExitPass;
  }
  if (a.mode == "reference") return mode_reference(a, m);
  if (a.mode == "check") return mode_check(a, m);
  if (a.mode == "predict") return mode_predict(a, m);
  if (a.mode == "time") return mode_time(a, m);
  if (a.mode == "profile") {
    const Dataset ds = load_dataset(a.get("--data", "data"));
    const int batch = int_flag(a, "--batch", 1024, 1, 65535);
    VitForward f(m.shape, m.params, batch);
    f.set_engine(engine_of(a.get("--gemm", "fp32")));
    profile_forward(f, ds.test_x, ds.n_test, batch, "vit-forward");
    std::printf("vit_forward profile: one forward at batch %d inside NVTX range vit-forward (%s)\n", batch,
                f.tile_plan(batch).c_str());
    return kExitPass;
  }
  throw UserError("unknown mode " + one_line(a.mode) + " (see --help)");
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UserError& e) {
    std::istringstream lines(e.what());
    std::string line;
    while (std::getline(lines, line)) print_error("vit_forward", "error", line);
    return kExitBadInput;
  } catch (const CudaError& e) {
    print_error("vit_forward", "CUDA error", e.what());
    return kExitCudaError;
  } catch (const std::bad_alloc&) {
    print_error("vit_forward", "internal error", "out of host memory");
    return kExitInternal;
  } catch (const std::exception& e) {
    print_error("vit_forward", "internal error", e.what());
    return kExitInternal;
  }
}
