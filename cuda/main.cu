// cuda/main.cu — mlp_train: gates the linked submission (cases 1–7), times every kernel path
// (case 8) and writes results/run.json. `--profile PATH` instead trains one epoch of PATH inside
// the NVTX range "profile-epoch" for Nsight Systems.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <numeric>
#include <sys/stat.h>

#include "common.h"
#include "cpu_reference.h"
#include "cuda_check.h"
#include "dataset.h"
#include "gate.h"
#include "json.h"
#include "npy.h"
#include "paths.h"
#include "recipe.h"
#include "shipped_reference.h"

#ifndef MLP_SUBMISSION_SOURCE
#define MLP_SUBMISSION_SOURCE "cuda/submission_ref.cu"
#endif
#ifndef MLP_EXTERNAL_SUBMISSION
#define MLP_EXTERNAL_SUBMISSION 0
#endif

namespace {

const char* kUsage =
    "usage: mlp_train [--data DIR] [--recipe FILE] [--out DIR] [--paths a,b,...] [--epochs N]\n"
    "                 [--batch N] [--lr X] [--momentum X] [--seed N] [--init FILE.npy]\n"
    "                 [--hidden N] [--train-size N] [--profile PATH] [--quick] [--smoke] [--perf-only]\n"
    "                 [--reference same-run|shipped] [--help]\n"
    "  Runs gate cases 1-8 and writes OUT/run.json (exit 1 when a case 1-7 fails).\n"
    "  --profile PATH  warm up, then train one epoch of PATH inside the NVTX range profile-epoch\n"
    "  --quick         cases 1-6 and one training epoch per path (for sanitizers); no run.json\n"
    "  --smoke         --quick without case 6's 200 overfit steps and the bitwise rerun (for racecheck,\n"
    "                  with a small --train-size: every kernel still runs, tail batch included)\n"
    "  --reference shipped  case 7 compares with DATA/reference (the float64 result shipped for the\n"
    "                  recipe) instead of retraining float64 on the CPU (same-run, the default)\n"
    "  --perf-only     time the paths (case 8) without the gate or the float64 reference (sweeps)\n"
    "  --persistent-phases  time the persistent kernel with subsets of its phases (barriers kept);\n"
    "                  writes OUT/persistent_phases.json\n";

struct Options {
  std::string data = "data", recipe = "recipe.toml", out = "results", init, profile;
  std::string reference = "same-run";  // or "shipped": case 7 reads DATA/reference instead of retraining
  std::vector<std::string> paths;
  bool quick = false;
  // --smoke: --quick minus the long parts. racecheck instruments every shared-memory access and
  // takes minutes per epoch; its hazards depend on the kernels and launch shapes, not on how many
  // steps run, so a few steps of each kernel (a full batch and a tail batch) cover them.
  bool smoke = false;
  bool perf_only = false;  // --perf-only: case 8 alone (sweeps): no gate cases, no float64 reference
  bool phase_breakdown = false;  // --persistent-phases: time the persistent kernel's phases
  // Overrides of the recipe (validated like the recipe itself).
  std::map<std::string, std::string> overrides;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a <= s.size()) {
    size_t b = s.find(sep, a);
    if (b == std::string::npos) b = s.size();
    if (b > a) out.push_back(s.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

double parse_number(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end || !std::isfinite(x)) throw UserError(flag + ": not a number: '" + v + "'");
  return x;
}

long long parse_integer(const std::string& flag, const std::string& v) {
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end) throw UserError(flag + ": not an integer: '" + v + "'");
  return x;
}

Options parse_args(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UserError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); std::exit(0); }
    else if (a == "--data") o.data = value();
    else if (a == "--recipe") o.recipe = value();
    else if (a == "--out") o.out = value();
    else if (a == "--init") o.init = value();
    else if (a == "--profile") o.profile = value();
    else if (a == "--paths") o.paths = split(value(), ',');
    else if (a == "--quick") o.quick = true;
    else if (a == "--smoke") o.quick = o.smoke = true;
    else if (a == "--reference") {
      o.reference = value();
      if (o.reference != "same-run" && o.reference != "shipped")
        throw UserError("--reference: '" + o.reference + "' is neither same-run nor shipped");
    }
    else if (a == "--persistent-phases") o.phase_breakdown = true;
    else if (a == "--perf-only") o.perf_only = true;
    else if (a == "--epochs" || a == "--batch" || a == "--lr" || a == "--momentum" || a == "--seed" ||
             a == "--hidden" || a == "--train-size")
      o.overrides[a.substr(2)] = value();
    else throw UserError("unknown option '" + a + "' (see --help)");
  }
  return o;
}

void apply_overrides(Recipe& r, const Options& o) {
  for (const auto& kv : o.overrides) {
    const std::string flag = "--" + kv.first;
    if (kv.first == "epochs") r.epochs = (int)parse_integer(flag, kv.second);
    else if (kv.first == "batch") r.batch = (int)parse_integer(flag, kv.second);
    else if (kv.first == "lr") r.lr = parse_number(flag, kv.second);
    else if (kv.first == "momentum") r.momentum = parse_number(flag, kv.second);
    else if (kv.first == "hidden") {
      long long h = parse_integer(flag, kv.second);
      if (h < 1 || h > (1 << 20)) throw UserError("--hidden must be in [1, 1048576], got " + kv.second);
      r.hidden_dim = (int)h;
    } else if (kv.first == "train-size") {
      long long n = parse_integer(flag, kv.second);
      if (n < 1 || n > (1 << 24)) throw UserError("--train-size must be in [1, 16777216], got " + kv.second);
      r.train_size = (int)n;
    } else if (kv.first == "seed") {
      long long s = parse_integer(flag, kv.second);
      if (s < 0) throw UserError("--seed must be non-negative");
      r.seed = (uint64_t)s;
    }
  }
}

// The GPU, and a check that this binary carries code for it (the message names --arch).
cudaDeviceProp select_device() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0)
    throw UserError(std::string("no CUDA device found (cudaGetDeviceCount: ") +
                    (err == cudaSuccess ? "0 devices" : cudaGetErrorString(err)) + ")");
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaFuncAttributes attr;
  err = cudaFuncGetAttributes(&attr, mlp::probe_kernel());
  if (err != cudaSuccess)
    throw UserError("this binary has no code for " + std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
                    std::to_string(prop.minor) + "): rebuild with `invoke build --arch sm_" +
                    std::to_string(prop.major) + std::to_string(prop.minor) + "` (" + cudaGetErrorString(err) + ")");
  return prop;
}

// One epoch of any path from the initial state must land within this distance of the fused
// path's parameters, relative to the size of the epoch's update. Float32 summation order alone
// moves it by ~3e-7, but a ReLU whose pre-activation sits within rounding of zero can flip in one
// implementation and not the other, and the trajectories then part: measured on the H200 at seed
// 20260829, the unfused path (and the fused path built with float32 accumulation) flips unit 96
// of sample 120 at step 28 (pre-activation -3.6e-7 on a term scale of 4.4, i.e. 8e-8 relative)
// and ends the epoch 3.4e-3 from float64 while the persistent path ends 3.8e-7 from it. Real defects land far above the limit: dropping one row
// per step gives 9e-2, dropping one step's gradient 1.5e-2 (numpy experiments, PERFLOG.md).
constexpr double kParityLimit = 1e-2;

struct DeviceData {
  float* train_x = nullptr;
  int* train_y = nullptr;
  float* test_x = nullptr;
  ~DeviceData() { cudaFree(train_x); cudaFree(train_y); cudaFree(test_x); }
};

struct PathRun {
  std::string name;
  double parity_vs_fused = NAN;  // ||p - p_fused|| / ||p_fused - p_init|| after one epoch
  double parity_vs_fp64 = NAN;   // the same against the float64 reference's epoch
  bool deterministic = false;    // two one-epoch runs from the same state: bitwise equal
  double launches_per_step = 0;
  bool ok = true;             // trained every epoch without error or non-finite loss
  std::string error;
  std::vector<double> epoch_ms, loss_per_epoch, test_accuracy_per_epoch;
  CaseResult overfit;
  double mean = NAN, median = NAN, min = NAN, max = NAN, cv = NAN;
};

void summarise(PathRun& p) {
  // Epoch 0 is the warm-up (module load, first launches, graph capture): never timed.
  if (p.epoch_ms.size() < 2) return;
  std::vector<double> t(p.epoch_ms.begin() + 1, p.epoch_ms.end());
  std::vector<double> s = t;
  std::sort(s.begin(), s.end());
  size_t n = s.size();
  p.median = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  p.mean = std::accumulate(t.begin(), t.end(), 0.0) / n;
  p.min = s.front();
  p.max = s.back();
  double var = 0;
  for (double x : t) var += (x - p.mean) * (x - p.mean);
  p.cv = n > 1 ? 100.0 * std::sqrt(var / (n - 1)) / p.mean : 0.0;
}

// Device memory: free bytes after the context exists, and the lowest free seen while training
// (each path's state allocated), so peak_used = what this run's buffers took at most.
struct MemoryWatch {
  size_t total = 0, free_before = 0, min_free = 0;
  void start() {
    CUDA_CHECK(cudaMemGetInfo(&free_before, &total));
    min_free = free_before;
  }
  void sample() {
    size_t f = 0, t = 0;
    CUDA_CHECK(cudaMemGetInfo(&f, &t));
    if (f < min_free) min_free = f;
  }
  std::string json() const {
    return Json::object().set("device_total_bytes", Json::num((long long)total))
        .set("free_before_bytes", Json::num((long long)free_before))
        .set("peak_used_bytes", Json::num((long long)(free_before - min_free))).done();
  }
};
MemoryWatch g_memory;

// Device state of one training run: parameters from `init`, zero velocity, the workspace, the
// per-step losses and the first `epochs` epoch orders. Freed on scope exit, also on a throw.
struct TrainState {
  MlpShape s;
  int n, batch, steps;
  float *params = nullptr, *velocity = nullptr, *ws = nullptr, *step_loss = nullptr;
  int* order = nullptr;
  TrainState(const Recipe& R, MlpShape shape, const std::vector<float>& init,
             const std::vector<std::vector<int32_t>>& orders, int epochs)
      : s(shape), n(R.train_size), batch(R.batch), steps((R.train_size + R.batch - 1) / R.batch) {
    const size_t total = mlp_offsets(s).total;
    CUDA_CHECK(cudaMalloc(&params, total * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&velocity, total * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&ws, mlp_workspace_floats(s, batch) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&step_loss, (size_t)steps * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&order, (size_t)epochs * n * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(params, init.data(), total * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(velocity, 0, total * sizeof(float)));
    for (int e = 0; e < epochs; ++e)
      CUDA_CHECK(cudaMemcpy(order + (size_t)e * n, orders[(size_t)e].data(), (size_t)n * sizeof(int),
                            cudaMemcpyHostToDevice));
  }
  ~TrainState() { cudaFree(params); cudaFree(velocity); cudaFree(ws); cudaFree(step_loss); cudaFree(order); }
  TrainState(const TrainState&) = delete;
  TrainState& operator=(const TrainState&) = delete;
  // Arguments of epoch e on `stream`.
  mlp::EpochArgs epoch(const Recipe& R, const DeviceData& dd, int e, cudaStream_t stream) const {
    return {s, params, velocity, dd.train_x, dd.train_y, order + (size_t)e * n, n, batch, (float)R.lr,
            (float)R.momentum, ws, step_loss, stream};
  }
};

// Trains `epochs` epochs of one path from the initial parameters; times each epoch with CUDA
// events around its enqueued work; evaluates on the test set after each epoch (not timed).
PathRun train_path(mlp::KernelPath& path, const Recipe& R, MlpShape s, const std::vector<float>& init,
                   const std::vector<std::vector<int32_t>>& orders, const DeviceData& dd, const Dataset& data,
                   int epochs, bool progress, bool check_loss = true) {
  PathRun run;
  const size_t total = mlp_offsets(s).total;
  const int n = R.train_size, steps = (n + R.batch - 1) / R.batch;
  run.name = path.name();
  run.launches_per_step = path.launches_per_step(steps);
  const int chunk = 10000;
  TrainState ts(R, s, init, orders, epochs);
  float* step_loss = ts.step_loss;
  float* eval_scratch;
  CUDA_CHECK(cudaMalloc(&eval_scratch, (size_t)chunk * (s.hidden + s.out) * sizeof(float)));
  g_memory.sample();
  cudaStream_t st;
  CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  cudaEvent_t t0, t1;
  CUDA_CHECK(cudaEventCreate(&t0));
  CUDA_CHECK(cudaEventCreate(&t1));
  std::vector<float> losses((size_t)steps);
  try {
    for (int e = 0; e < epochs; ++e) {
      CUDA_CHECK(cudaMemsetAsync(step_loss, 0xFF, (size_t)steps * sizeof(float), st));  // NaN poison
      mlp::EpochArgs a = ts.epoch(R, dd, e, st);
      CUDA_CHECK(cudaEventRecord(t0, st));
      path.epoch(a);
      CUDA_CHECK(cudaEventRecord(t1, st));
      CUDA_CHECK(cudaEventSynchronize(t1));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, t0, t1));
      CUDA_CHECK(cudaMemcpy(losses.data(), step_loss, (size_t)steps * sizeof(float), cudaMemcpyDeviceToHost));
      double loss = 0;
      for (int t = 0; t < steps; ++t) {
        if (check_loss && !std::isfinite(losses[(size_t)t]))
          throw std::runtime_error("non-finite loss " + std::to_string(losses[(size_t)t]) + " at epoch " +
                                   std::to_string(e) + " step " + std::to_string(t));
        loss += (double)losses[(size_t)t] * std::min(R.batch, n - t * R.batch);
      }
      mlp::GpuEval ev = mlp::evaluate_on_device(s, ts.params, dd.test_x, data.test_y.data(), data.n_test, eval_scratch,
                                                chunk, st);
      run.epoch_ms.push_back(ms);
      run.loss_per_epoch.push_back(loss / n);
      run.test_accuracy_per_epoch.push_back(ev.accuracy);
      if (progress)
        std::fprintf(stderr, "  %-10s epoch %2d/%d  %8.3f ms  loss %.4f  test acc %.2f%%\n", run.name.c_str(), e + 1,
                     epochs, ms, loss / n, 100 * ev.accuracy);
    }
  } catch (const mlp::SubmissionError& e) {
    run.ok = false;
    run.error = e.what();
  } catch (const CudaError&) {
    throw;  // a CUDA fault poisons the context: stop the run
  } catch (const std::runtime_error& e) {
    run.ok = false;
    run.error = e.what();
  }
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  cudaStreamDestroy(st);
  cudaFree(eval_scratch);
  summarise(run);
  return run;
}

// Parameters after ONE epoch (order 0) of `path` from the initial state: for the parity check
// against the fused path and the bitwise determinism check.
std::vector<float> one_epoch_params(mlp::KernelPath& path, const Recipe& R, MlpShape s, const std::vector<float>& init,
                                    const std::vector<int32_t>& order0, const DeviceData& dd) {
  const size_t total = mlp_offsets(s).total;
  TrainState ts(R, s, init, {order0}, 1);
  std::vector<float> out(total);
  try {
    path.epoch(ts.epoch(R, dd, 0, nullptr));
    CUDA_CHECK(cudaDeviceSynchronize());
    CUDA_CHECK(cudaMemcpy(out.data(), ts.params, total * sizeof(float), cudaMemcpyDeviceToHost));
  } catch (const mlp::SubmissionError&) {
    out.clear();
  }
  return out;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

std::string case_json(const CaseResult& c) {
  return Json::object()
      .set("id", Json::num(c.id)).set("name", Json::str(c.name)).set("passed", Json::boolean(c.passed))
      .set("value", Json::num(c.value)).set("limit", Json::num(c.limit)).set("detail", Json::str(c.detail))
      .done();
}

void print_case(const CaseResult& c) {
  std::printf("%-2d %-18s %12.4g %12.4g  %s   %s\n", c.id, c.name.c_str(), c.value, c.limit,
              !c.passed ? "FAIL" : (std::isnan(c.value) && c.detail.rfind("not run", 0) == 0) ? "SKIP" : "PASS",
              c.detail.c_str());
  std::fflush(stdout);
}

// What failed cases usually mean (from the mutants in tests/submissions/ and the fixes they
// needed): printed under the table and written to run.json ("hints"), so RESULTS.md carries them.
// "not implemented" cases name the stage to write next, one stage at a time.
std::vector<std::string> hints_for(const std::vector<CaseResult>& cases) {
  auto failed = [&](int id) {
    for (const auto& c : cases) if (c.id == id) return !c.passed;
    return false;
  };
  auto stub = [&](int id) {
    for (const auto& c : cases) if (c.id == id) return c.detail.find("not implemented") != std::string::npos;
    return false;
  };
  static const char* kStage[] = {"", "mlp_forward (stage 1)", "mlp_forward (stage 1)", "mlp_loss (stage 2)",
                                 "mlp_backward (stage 3)", "mlp_step (stage 4)", "mlp_train_epoch (stage 5)",
                                 "mlp_train_epoch (stage 5)"};
  std::vector<std::string> h;
  for (int id = 1; id <= 7; ++id)
    if (stub(id)) return {"case " + std::to_string(id) + " is not implemented yet: write " + kStage[id] + " next"};
  if (failed(1) || failed(2))
    h.push_back("forward: W1 is in x hidden row-major (X.W1), b1 is added per hidden unit, H is stored after the "
                "ReLU, Z = H.W2 + b2");
  if (failed(3))
    h.push_back("loss-extreme: subtract each row's max before exp(), and compute the loss as log(sum exp(z - m)) - "
                "(z_label - m), not -log(softmax): p_label underflows at logits of +-60");
  if (failed(4))
    h.push_back("grad-check: a missing ReLU mask (dH = (dZ.W2^T) * (H > 0)), a bias gradient summed over the wrong "
                "axis (db = column sums over the batch), or dZ without the 1/B");
  if (failed(5)) h.push_back("step: v = momentum*v - lr*g first, then p = p + v (check the sign of the update)");
  if (failed(6) && !failed(4))
    h.push_back("overfit-32 fails while grad-check passes: the ReLU mask or the update's sign (two errors can cancel "
                "at one gradient-check point), or the batch slicing of mlp_train_epoch");
  if (failed(7))
    h.push_back("train: if accuracy moved after fusing an epilogue, suspect a race (run `invoke sanitize`); and never "
                "time epoch 0");
  return h;
}

void print_hints(const std::vector<std::string>& hints) {
  for (const auto& h : hints) std::printf("hint: %s\n", h.c_str());
}

int run_profile(const Options& opt, const Recipe& R, MlpShape s, const std::vector<float>& init,
                const std::vector<std::vector<int32_t>>& orders, const DeviceData& dd) {
  std::unique_ptr<mlp::KernelPath> path = mlp::make_path(opt.profile);
  bool known = false;
  for (const auto& n : mlp::path_names(MLP_EXTERNAL_SUBMISSION)) known |= n == opt.profile;
  known |= opt.profile == "persistent2";  // experimental, profiled when named
  if (!path || !known) throw UserError("--profile: no path named '" + opt.profile + "'");
  TrainState ts(R, s, init, orders, 3);
  cudaStream_t st;
  CUDA_CHECK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  auto epoch = [&](int e) { path->epoch(ts.epoch(R, dd, e, st)); };
  // Two warm-up epochs (module load, first launches, graph capture), then the profiled one.
  epoch(0);
  epoch(1);
  CUDA_CHECK(cudaStreamSynchronize(st));
  nvtxRangePushA("profile-epoch");
  epoch(2);
  CUDA_CHECK(cudaStreamSynchronize(st));
  nvtxRangePop();
  std::vector<float> losses((size_t)ts.steps);
  CUDA_CHECK(cudaMemcpy(losses.data(), ts.step_loss, losses.size() * sizeof(float), cudaMemcpyDeviceToHost));
  std::fprintf(stderr, "profiled one epoch of path %s (%d steps, last step loss %.4f)\n", opt.profile.c_str(),
               ts.steps, losses.back());
  cudaStreamDestroy(st);
  return 0;
}

// Where the persistent epoch's time goes: the same kernel with phase subsets switched off (the
// grid barriers stay), 20 epochs each after a warm-up, median epoch time per subset. The
// parameters of a partial epoch are meaningless; only the clock is read.
int run_phase_breakdown(const Options& opt, const Recipe& R, MlpShape s, const std::vector<float>& init,
                        const std::vector<std::vector<int32_t>>& orders, const DeviceData& dd, const Dataset& data) {
  struct Variant { const char* name; int mask; };
  // Mask bit 32 (this table only) selects persistent2, whose kernel has no phase switches: its
  // rows time the whole epoch with v5's and with v4's (scalar, bit 16) staging of the next batch.
  constexpr int kTwoBarriers = 32;
  const Variant variants[] = {{"barriers only", 0}, {"A (forward hidden)", 1}, {"B (logits, softmax, dH)", 2},
                              {"C (gradients and update)", 4}, {"A+B+C (training)", 7},
                              // v3's scalar phase-C staging (mask bit 8), timed beside v4 in this process.
                              {"A+B+C, v3 scalar C staging", 15},
                              {"persistent2, training", 7 | kTwoBarriers},
                              {"persistent2, v4 scalar next-batch staging", 23 | kTwoBarriers}};
  Json rows = Json::array();
  Recipe r = R;
  r.epochs = 20;
  for (const auto& v : variants) {
    std::unique_ptr<mlp::KernelPath> path = (v.mask & kTwoBarriers) ? mlp::make_persistent2_path(v.mask & ~kTwoBarriers)
                                                                     : mlp::make_persistent_path(v.mask);
    PathRun run = train_path(*path, r, s, init, orders, dd, data, r.epochs, false, /*check_loss=*/false);
    std::printf("%-26s median %.4f ms/epoch (%.2f us/step), CV %.1f%%\n", v.name, run.median,
                1000 * run.median / ((R.train_size + R.batch - 1) / R.batch), run.cv);
    rows.add(Json::object().set("phases", Json::str(v.name)).set("mask", Json::num(v.mask))
                 .set("median_ms", Json::num(run.median)).set("cv_pct", Json::num(run.cv)).done());
  }
  mkdir(opt.out.c_str(), 0777);
  write_file_atomic(opt.out + "/persistent_phases.json",
                    Json::object().set("schema", Json::num(1)).set("variants", rows.done()).done() + "\n");
  return 0;
}

// ---- run.json pieces shared by the gate run and the perf-only run --------------------------------
std::string gpu_json(const cudaDeviceProp& prop) {
  int driver = 0, runtime = 0;
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  return Json::object()
      .set("name", Json::str(prop.name))
      .set("compute_capability", Json::str(std::to_string(prop.major) + "." + std::to_string(prop.minor)))
      .set("sm_count", Json::num(prop.multiProcessorCount)).set("l2_bytes", Json::num(prop.l2CacheSize))
      .set("driver_api_version", Json::num(driver)).set("runtime_version", Json::num(runtime))
      .set("toolkit_version", Json::num(CUDART_VERSION))
      .done();
}

std::string recipe_json(const Recipe& R, int n_test, size_t total) {
  return Json::object()
      .set("input_dim", Json::num(R.input_dim)).set("hidden_dim", Json::num(R.hidden_dim))
      .set("output_dim", Json::num(R.output_dim)).set("batch", Json::num(R.batch)).set("lr", Json::num(R.lr))
      .set("momentum", Json::num(R.momentum)).set("epochs", Json::num(R.epochs))
      .set("seed", Json::num((long long)R.seed)).set("train_size", Json::num(R.train_size))
      .set("test_size", Json::num(n_test)).set("steps_per_epoch", Json::num((R.train_size + R.batch - 1) / R.batch))
      .set("n_params", Json::num((long long)total))
      .done();
}

// Timing, accuracy and loss of one path's run (the gate adds its verdicts to these).
Json& add_path_run(Json& o, const PathRun& r) {
  return o.set("launches_per_step", Json::num(r.launches_per_step))
      .set("error", Json::str(r.error))
      .set("epoch_ms", Json::nums(r.epoch_ms.size() > 1 ? std::vector<double>(r.epoch_ms.begin() + 1, r.epoch_ms.end())
                                                         : std::vector<double>{}))
      .set("warmup_epoch_ms", Json::num(r.epoch_ms.empty() ? NAN : r.epoch_ms[0]))
      .set("mean_ms", Json::num(r.mean)).set("median_ms", Json::num(r.median)).set("min_ms", Json::num(r.min))
      .set("max_ms", Json::num(r.max)).set("cv_pct", Json::num(r.cv))
      .set("test_accuracy", Json::num(r.test_accuracy_per_epoch.empty() ? NAN : r.test_accuracy_per_epoch.back()))
      .set("test_accuracy_per_epoch", Json::nums(r.test_accuracy_per_epoch))
      .set("loss_per_epoch", Json::nums(r.loss_per_epoch));
}


std::string hints_json(const std::vector<std::string>& hints) {
  Json a = Json::array();
  for (const auto& h : hints) a.add(Json::str(h));
  return a.done();
}

std::string command_line(int argc, char** argv) {
  std::string cmd;
  for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(argv[i]);
  return cmd;
}

// --perf-only: every path trains `epochs` epochs from the seed's weights and is timed (case 8
// alone), for the sweeps; run.json says "mode": "perf-only" and holds no gate cases.
int run_perf_only(const Options& opt, const Recipe& R, MlpShape s, const std::vector<float>& init,
                  const std::vector<std::vector<int32_t>>& orders, const DeviceData& dd, const Dataset& data,
                  const std::vector<std::string>& names, const cudaDeviceProp& prop, int argc, char** argv) {
  Json pj = Json::object();
  bool ok = true;
  for (const auto& name : names) {
    std::unique_ptr<mlp::KernelPath> path = mlp::make_path(name);
    PathRun run = train_path(*path, R, s, init, orders, dd, data, R.epochs, true);
    if (!run.ok) std::fprintf(stderr, "path %s failed: %s\n", name.c_str(), run.error.c_str());
    ok &= run.ok && std::isfinite(run.median);
    Json o = Json::object();
    add_path_run(o, run).set("passed", Json::boolean(run.ok));
    pj.set(name, o.done());
    std::printf("%-10s median %.4f ms/epoch, CV %.2f%%, test acc %.2f%%\n", name.c_str(), run.median, run.cv,
                run.test_accuracy_per_epoch.empty() ? NAN : 100 * run.test_accuracy_per_epoch.back());
  }
  Json root = Json::object();
  root.set("schema", Json::num(1)).set("mode", Json::str("perf-only")).set("date_utc", Json::str(utc_now()))
      .set("gpu", gpu_json(prop)).set("submission", Json::str(MLP_SUBMISSION_SOURCE))
      .set("run_command", Json::str(command_line(argc, argv)))
      .set("recipe", recipe_json(R, data.n_test, mlp_offsets(s).total)).set("memory", g_memory.json())
      .set("paths", pj.done());
  write_file_atomic(opt.out + "/run.json", root.done() + "\n");
  std::fprintf(stderr, "wrote %s/run.json\n", opt.out.c_str());
  return ok ? 0 : 1;
}

int run_main(int argc, char** argv) {
  Options opt = parse_args(argc, argv);
  Recipe R = read_recipe(opt.recipe);
  apply_overrides(R, opt);
  validate_recipe(R);
  const MlpShape s{R.input_dim, R.hidden_dim, R.output_dim};
  const size_t total = mlp_offsets(s).total;

  std::vector<std::string> names = mlp::path_names(MLP_EXTERNAL_SUBMISSION);
  if (!opt.paths.empty()) {
    std::vector<std::string> known = names;
    known.push_back("persistent2");  // experimental: only when named
    for (const auto& p : opt.paths)
      if (std::find(known.begin(), known.end(), p) == known.end())
        throw UserError("--paths: no path named '" + p + "' (have: unfused, fused, graph, persistent, persistent2" +
                        std::string(MLP_EXTERNAL_SUBMISSION ? ", submission" : "") + ")");
    names = opt.paths;
  }

  // Every input is read and checked before the GPU is touched, so a bad file or flag gets its own
  // one-line error on any machine.
  std::fprintf(stderr, "loading %s (SHA-256 checked)\n", opt.data.c_str());
  Dataset data = load_dataset(opt.data);
  if (data.dim != s.in) throw UserError(opt.data + ": images have " + std::to_string(data.dim) + " pixels, recipe input_dim is " + std::to_string(s.in));
  for (int y : data.train_y)
    if (y >= s.out) throw UserError(opt.data + ": label " + std::to_string(y) + " out of range for output_dim " + std::to_string(s.out));
  for (int y : data.test_y)
    if (y >= s.out) throw UserError(opt.data + ": test label " + std::to_string(y) + " out of range for output_dim " + std::to_string(s.out));
  if (data.n_train < R.train_size) throw UserError(opt.data + ": " + std::to_string(data.n_train) + " training images, recipe train_size is " + std::to_string(R.train_size));

  std::vector<float> init = opt.init.empty() ? init_params(s, R.seed) : read_npy_f32(opt.init, {total});
  ShippedReference shipped;
  if (opt.reference == "shipped") {
    if (!opt.init.empty()) throw UserError("--reference shipped needs the seed's initial weights: drop --init");
    shipped = read_reference(opt.data + "/reference", R);
  }
  // At least 3 orders for --profile (two warm-up epochs and the profiled one) and 20 for
  // --persistent-phases, whatever --epochs says.
  const int order_epochs = std::max(R.epochs, 20);
  std::vector<std::vector<int32_t>> orders;
  for (int e = 0; e < order_epochs; ++e) orders.push_back(epoch_order(R.train_size, R.seed, e));

  cudaDeviceProp prop = select_device();
  std::fprintf(stderr, "GPU: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  CUDA_CHECK(cudaFree(nullptr));  // the context exists before the memory baseline is read
  g_memory.start();

  DeviceData dd;
  CUDA_CHECK(cudaMalloc(&dd.train_x, data.train_x.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&dd.train_y, data.train_y.size() * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&dd.test_x, data.test_x.size() * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(dd.train_x, data.train_x.data(), data.train_x.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dd.train_y, data.train_y.data(), data.train_y.size() * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(dd.test_x, data.test_x.data(), data.test_x.size() * sizeof(float), cudaMemcpyHostToDevice));

  if (!opt.profile.empty()) return run_profile(opt, R, s, init, orders, dd);
  if (opt.phase_breakdown) return run_phase_breakdown(opt, R, s, init, orders, dd, data);

  if (!opt.quick) {
    mkdir(opt.out.c_str(), 0777);
    write_npy_f32(opt.out + "/init_params.npy", init, {total});
    std::vector<int32_t> flat;
    for (int e = 0; e < R.epochs; ++e) flat.insert(flat.end(), orders[(size_t)e].begin(), orders[(size_t)e].end());
    write_npy_i32(opt.out + "/order.npy", flat, {(size_t)R.epochs, (size_t)R.train_size});
  }

  if (opt.perf_only) return run_perf_only(opt, R, s, init, orders, dd, data, names, prop, argc, argv);

  GateInputs g{s, &R, &data, &init, &orders[0], dd.train_x, dd.train_y, R.seed};
  std::printf("%-2s %-18s %12s %12s  %s\n", "#", "case", "value", "limit", "verdict");
  std::vector<CaseResult> cases;
  for (auto fn : {case_onebatch_forward, case_batch_forward, case_loss_extreme, case_grad_check, case_step}) {
    cases.push_back(fn(g));
    print_case(cases.back());
  }

  // The gated path: the submission's own epoch when a learner's file is linked, else our fused path.
  const std::string gated = MLP_EXTERNAL_SUBMISSION ? "submission" : "fused";
  const int epochs = opt.quick ? 1 : R.epochs;
  std::vector<PathRun> runs;
  std::vector<float> fused_one;
  {
    std::unique_ptr<mlp::KernelPath> fused = mlp::make_path("fused");
    fused_one = one_epoch_params(*fused, R, s, init, orders[0], dd);
  }
  // ||p − q||₂ over every parameter, in float64.
  auto l2_distance = [](const std::vector<float>& p, auto const& q) {
    double d = 0;
    for (size_t i = 0; i < p.size(); ++i) d += ((double)p[i] - q[i]) * ((double)p[i] - q[i]);
    return std::sqrt(d);
  };
  const double update_norm = l2_distance(fused_one, init);
  // The float64 reference's parameters after the same epoch: every path is also measured
  // against them (float32 rounding alone lands near 1e-7 of the update).
  std::vector<double> fp64_one(init.begin(), init.end());
  {
    std::vector<double> Xtr1(data.train_x.begin(), data.train_x.begin() + (long)R.train_size * s.in);
    std::vector<double> Xte1(data.test_x.begin(), data.test_x.begin() + (long)s.in);  // evaluation unused
    ref_train(s, fp64_one, Xtr1, data.train_y, R.train_size, Xte1, data.test_y, 1, {orders[0]}, R.batch, R.lr,
              R.momentum, nullptr);
  }
  // Distance relative to the fused path's one-epoch update; NaN for a path that did not run.
  auto dist = [&](const std::vector<float>& p, auto const& q) {
    return p.empty() ? NAN : l2_distance(p, q) / update_norm;
  };
  std::fprintf(stderr, "fused: one epoch vs float64 ||dp||/||update|| = %.3g\n", dist(fused_one, fp64_one));
  for (const auto& name : names) {
    std::unique_ptr<mlp::KernelPath> path = mlp::make_path(name);
    std::vector<float> p1 = one_epoch_params(*path, R, s, init, orders[0], dd);
    // --smoke skips the rerun: p2 stays empty and the line below says so instead of claiming identity.
    std::vector<float> p2 = opt.smoke ? std::vector<float>{} : one_epoch_params(*path, R, s, init, orders[0], dd);
    const double parity = dist(p1, fused_one);
    const bool deterministic = !p1.empty() && p1 == p2;
    const double vs64 = dist(p1, fp64_one);
    std::fprintf(stderr, "path %s: one epoch vs fused ||dp||/||update|| = %.3g (limit %.0e), vs float64 %.3g; rerun bitwise %s\n",
                 name.c_str(), parity, kParityLimit, vs64,
                 opt.smoke ? "skipped (--smoke)" : deterministic ? "identical" : "DIFFERENT");
    if (!(parity <= kParityLimit) && !p1.empty()) {
      // Which tensor differs: the first thing to know when a path drifts from the fused one.
      const MlpOffsets o = mlp_offsets(s);
      const size_t b[5] = {o.w1, o.b1, o.w2, o.b2, o.total};
      const char* tn[4] = {"W1", "b1", "W2", "b2"};
      for (int t = 0; t < 4; ++t) {
        double d = 0, u = 0;
        size_t worst = b[t];
        double wv = -1;
        for (size_t i = b[t]; i < b[t + 1]; ++i) {
          double e = std::fabs((double)p1[i] - fused_one[i]);
          d += e * e;
          u += ((double)fused_one[i] - init[i]) * ((double)fused_one[i] - init[i]);
          if (e > wv) { wv = e; worst = i; }
        }
        std::fprintf(stderr, "    %s: ||dp||/||update|| = %.3g, worst index %zu (|dp| %.3g)\n", tn[t],
                     std::sqrt(d / u), worst - b[t], wv);
      }
    }
    CaseResult of;
    if (opt.smoke) {
      of.id = 6; of.name = "overfit-32"; of.value = NAN; of.limit = 0.01; of.passed = true;
      of.detail = "not run (--smoke)";
      std::fprintf(stderr, "path %s: overfit-32 skipped (--smoke); training %d epochs\n", name.c_str(), epochs);
    } else {
      of = case_overfit32(g, *path);
      std::fprintf(stderr, "path %s: overfit-32 loss %.5f (%s); training %d epochs\n", name.c_str(), of.value,
                   of.passed ? "PASS" : "FAIL", epochs);
    }
    PathRun run = train_path(*path, R, s, init, orders, dd, data, epochs, true);
    run.overfit = of;
    run.parity_vs_fused = parity;
    run.parity_vs_fp64 = vs64;
    run.deterministic = deterministic;
    if (!run.ok) std::fprintf(stderr, "path %s failed: %s\n", name.c_str(), run.error.c_str());
    runs.push_back(run);
  }
  // The gated path's verdicts fill the table; when --paths leaves it out, the first path run does.
  const PathRun* gated_run = nullptr;
  for (const auto& r : runs) if (r.name == gated) gated_run = &r;
  if (!gated_run && !runs.empty()) gated_run = &runs.front();
  CaseResult c6;
  c6.id = 6; c6.name = "overfit-32"; c6.value = NAN; c6.limit = 0.01;
  if (gated_run) c6 = gated_run->overfit;
  else c6.detail = "path " + gated + " not run (--paths)";
  cases.push_back(c6);
  print_case(c6);
  if (opt.quick) {
    bool ok = true;
    for (const auto& c : cases) ok &= c.passed;
    for (const auto& r : runs) ok &= r.ok && r.overfit.passed;
    print_hints(hints_for(cases));
    std::printf("quick run: %s\n", ok ? "all passed" : "FAILED");
    return ok ? 0 : 1;
  }

  // Case 7: the float64 reference from the same init and order, trained in this run (default) or
  // read from the shipped folder (--reference shipped, checked against its SHA256SUMS and recipe).
  RefTrainResult ref;
  if (opt.reference == "shipped") {
    std::fprintf(stderr, "float64 reference: shipped %s/reference (not retrained)\n", opt.data.c_str());
    ref.loss_per_epoch = shipped.loss_per_epoch;
    ref.test_accuracy_per_epoch = shipped.test_accuracy_per_epoch;
  } else {
    std::fprintf(stderr, "float64 CPU reference: %d epochs, trained in this run\n", R.epochs);
    std::vector<double> P(init.begin(), init.end());
    std::vector<double> Xtr(data.train_x.begin(), data.train_x.begin() + (long)R.train_size * s.in);
    std::vector<double> Xte(data.test_x.begin(), data.test_x.end());
    std::vector<std::vector<int32_t>> ref_orders(orders.begin(), orders.begin() + R.epochs);
    ref = ref_train(s, P, Xtr, data.train_y, R.train_size, Xte, data.test_y, data.n_test, ref_orders, R.batch, R.lr,
                    R.momentum, [](int e, double loss, double acc, double secs) {
                      std::fprintf(stderr, "  fp64       epoch %2d  loss %.4f  test acc %.2f%%  (%.1f s)\n", e + 1,
                                   loss, 100 * acc, secs);
                    });
  }
  const double ref_acc = ref.test_accuracy_per_epoch.back();
  // Case 7 compares the mean test accuracy of the last five epochs, not the last epoch alone: at
  // lr 0.1 and momentum 0.9 the float32 and float64 runs follow one trajectory for the first
  // epochs and then drift apart chaotically, and a single epoch's test accuracy swings by up to
  // 4 pp from one epoch to the next (measured on the H200 with PyTorch and with our paths), so a
  // last-epoch comparison would pass or fail correct code by chance. Both are printed.
  auto tail_mean = [&](const std::vector<double>& acc) {
    size_t k = std::min<size_t>(5, acc.size());
    double s = 0;
    for (size_t i = acc.size() - k; i < acc.size(); ++i) s += acc[i];
    return s / (double)k;
  };
  const double ref_tail = tail_mean(ref.test_accuracy_per_epoch);
  auto accuracy_case = [&](const PathRun* r) {
    CaseResult c;
    c.id = 7; c.name = "train"; c.limit = 1.0; c.value = NAN;
    if (!r) { c.detail = "path " + gated + " not run (--paths)"; return c; }
    if (!r->ok) { c.detail = "path " + r->name + ": " + r->error; return c; }
    double acc = r->test_accuracy_per_epoch.back(), tail = tail_mean(r->test_accuracy_per_epoch);
    c.value = 100.0 * std::fabs(tail - ref_tail);
    char b[320];
    std::snprintf(b, sizeof b,
                  "|mean test acc of the last 5 epochs: %s %.2f%% - fp64 %.2f%%| in pp (last epoch: %.2f%% vs %.2f%%)",
                  r->name.c_str(), 100 * tail, 100 * ref_tail, 100 * acc, 100 * ref_acc);
    c.detail = b;
    c.passed = c.value <= c.limit;
    return c;
  };
  cases.push_back(accuracy_case(gated_run));
  print_case(cases.back());

  // Case 8: every path timed (19 epochs after the warm-up) with finite results.
  CaseResult c8;
  c8.id = 8; c8.name = "perf"; c8.limit = NAN;
  c8.value = gated_run ? gated_run->median : NAN;
  c8.passed = !runs.empty();
  std::string perf_detail = "median epoch ms (epochs 1.." + std::to_string(R.epochs - 1) + "; CV %):";
  for (const auto& r : runs) {
    c8.passed &= r.ok && std::isfinite(r.median);
    char b[96];
    std::snprintf(b, sizeof b, " %s %.3f (%.1f%%)", r.name.c_str(), r.median, r.cv);
    perf_detail += b;
  }
  c8.detail = perf_detail;
  cases.push_back(c8);
  print_case(c8);

  // run.json
  Json cj = Json::array();
  for (const auto& c : cases) cj.add(case_json(c));
  Json pj = Json::object();
  for (const auto& r : runs) {
    CaseResult acc = accuracy_case(&r);
    Json o = Json::object();
    add_path_run(o, r)
        .set("passed", Json::boolean(r.ok && r.overfit.passed && acc.passed && r.parity_vs_fused <= kParityLimit))
        .set("parity_vs_fused", Json::num(r.parity_vs_fused))
        .set("parity_vs_fp64", Json::num(r.parity_vs_fp64))
        .set("parity_limit", Json::num(kParityLimit))
        .set("deterministic", Json::boolean(r.deterministic))
        .set("overfit_loss", Json::num(r.overfit.value))
        .set("accuracy_gap_pp", Json::num(acc.value))
        .set("test_accuracy_last5_mean", Json::num(r.test_accuracy_per_epoch.empty() ? NAN : tail_mean(r.test_accuracy_per_epoch)));
    pj.set(r.name, o.done());
  }
  Json refj = Json::object();
  refj.set("test_accuracy", Json::num(ref_acc)).set("test_accuracy_last5_mean", Json::num(ref_tail)).set("test_accuracy_per_epoch", Json::nums(ref.test_accuracy_per_epoch))
      .set("loss_per_epoch", Json::nums(ref.loss_per_epoch)).set("train_seconds", Json::num(ref.seconds));
  const std::string cmd = command_line(argc, argv);
  Json root = Json::object();
  root.set("schema", Json::num(1)).set("date_utc", Json::str(utc_now())).set("gpu", gpu_json(prop))
      .set("submission", Json::str(MLP_SUBMISSION_SOURCE)).set("gated_path", Json::str(gated))
      .set("run_command", Json::str(cmd)).set("recipe", recipe_json(R, data.n_test, total))
      .set("reference_source", Json::str(opt.reference)).set("memory", g_memory.json())
      .set("cases", cj.done()).set("hints", hints_json(hints_for(cases))).set("paths", pj.done())
      .set("reference_fp64", refj.done());
  write_file_atomic(opt.out + "/run.json", root.done() + "\n");
  std::fprintf(stderr, "wrote %s/run.json\n", opt.out.c_str());

  bool ok = true;
  for (const auto& c : cases) if (c.id <= 7) ok &= c.passed;
  print_hints(hints_for(cases));
  std::printf("gate: %s\n", ok ? "PASS (cases 1-7)" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const UserError& e) {
    std::fprintf(stderr, "mlp_train: error: %s\n", e.what());
    return 2;
  } catch (const CudaError& e) {
    std::fprintf(stderr, "mlp_train: CUDA error: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mlp_train: error: %s\n", e.what());
    return 1;
  }
}
