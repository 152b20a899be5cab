// dev/persistent_phases.cu — where the persistent epoch's time goes (a dev experiment, not part of
// the shipped binary: `make build/persistent_phases`, `invoke gpu.phases`).
//
// What it measures: the median epoch time (CUDA events around one cooperative launch; 20 epochs
// from the seed's initial weights, epoch 0 not timed) of
//   * the persistent kernel's epoch loop with subsets of its phases switched on (A forward hidden,
//     B logits/softmax/dH, C gradients and update) and every grid barrier kept: each phase's cost
//     is its row minus "barriers only". Those epochs do not train; only the clock is read.
//   * the shipped kernels (k_persistent_epoch, k_persistent2_epoch) as they train, and each beside
//     the scalar staging it replaced, timed in the same process: v3's phase-C staging against
//     persistent's v4, v4's next-batch staging against persistent2's v5 (docs/PERFLOG.md 9, 12).
// Each timed epoch is followed, untimed, by the fused test-set evaluation, as in mlp_train's
// training loop, so every epoch starts from the caches a training run's epoch starts from.
//
// Before timing it checks that every variant meant to compute the shipped kernels' values does:
// one epoch of the phase loop with every phase on, of v3's and of v4's staging, bitwise against
// the shipped kernel's parameters. A difference exits 1 and writes nothing.
//
//   build/persistent_phases [--data DIR] [--recipe FILE] [--out DIR] [--epochs N] [--commit STR]
//
// writes OUT/persistent_phases.json (schema 2, docs/formats.md; temp file then rename). Exit
// status: 0 written; 1 a variant's values differ from the shipped kernel's; 2 bad input (one line
// naming it, before the GPU is touched); 3 CUDA error or a device that cannot run the kernels;
// 4 any other error.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "common/common.h"
#include "gate/cpu_reference.h"
#include "common/cuda_check.h"
#include "io/dataset.h"
#include "common/json.h"
#include "paths/kernel_path.h"
#include "paths/persistent_path.h"
#include "io/recipe.h"
#include "common/run_stats.h"

namespace mlp_dev {
using namespace mlp;

// The phases the loop below runs (bits: kPhaseA | kPhaseB | kPhaseC), read by every block.
constexpr int kPhaseA = 1, kPhaseB = 2, kPhaseC = 4, kAllPhases = 7;
__constant__ int c_phases;

// persistent_epoch (cuda/kernels/persistent.cuh) with each phase behind its bit of c_phases; the grid
// barriers, the loop and the step loss always run. With every bit set it trains like the shipped
// kernel, which main() checks bitwise.
__global__ void __launch_bounds__(kThreads, 1) k_phases_epoch(Persist P) {
  extern __shared__ float4 smem_raw[];
  float* smem = reinterpret_cast<float*>(smem_raw);
  cg::grid_group grid = cg::this_grid();
  const int phases = c_phases;
  const int steps = (P.n + P.batch - 1) / P.batch;
  const int a_tiles_c = (P.s.hidden + kTileA - 1) / kTileA;
  const int c_tiles_i = (P.s.in + kTileC - 1) / kTileC, c_tiles_j = (P.s.hidden + kTileCJ - 1) / kTileCJ;
  const int w1_items = c_tiles_i * c_tiles_j, w2_items = (P.s.hidden + kTileC - 1) / kTileC;
  for (int t = 0; t < steps; ++t) {
    const int base = t * P.batch, nb = min(P.batch, P.n - base);
    const int a_tiles = ((nb + kTileA - 1) / kTileA) * a_tiles_c;
    if (phases & kPhaseA)
      for (int item = blockIdx.x; item < a_tiles; item += gridDim.x)
        phase_a_tile(P, smem, base, nb, item / a_tiles_c, item % a_tiles_c);
    grid.sync();
    if (phases & kPhaseB)
      for (int r = blockIdx.x; r < nb; r += gridDim.x) phase_b_row(P, smem, base, nb, r);
    grid.sync();
    const int c_items = (phases & kPhaseC) ? w1_items + w2_items : 0;
    for (int item = blockIdx.x; item < c_items; item += gridDim.x) {
      if (item < w1_items)
        phase_c_w1_tile(P, smem, base, nb, item / c_tiles_j, item % c_tiles_j);
      else
        phase_c_w2_item(P, smem, nb, item - w1_items);
    }
    if (blockIdx.x == gridDim.x - 1) step_loss_sum(P, nb, t);
    grid.sync();
  }
}

// The scalar staging forms the shipped kernels fall back to for odd widths, forced here.
struct StagingV3 : StagingShipped {  // persistent, phase C: X and dH one float a load (v3)
  static constexpr bool kScalarC = true;
};
struct StagingV4Next : StagingShipped {  // persistent2: the next batch's X one float a load (v4)
  static constexpr bool kScalarNext = true;
};
__global__ void __launch_bounds__(kThreads, 1) k_persistent_epoch_v3(Persist P) {
  extern __shared__ float4 smem_raw[];
  persistent_epoch<StagingV3>(P, reinterpret_cast<float*>(smem_raw));
}
__global__ void __launch_bounds__(kThreads, 1) k_persistent2_epoch_v4(Persist P) {
  extern __shared__ float4 smem_raw[];
  persistent2_epoch<StagingV4Next>(P, reinterpret_cast<float*>(smem_raw));
}

// One row of the output: which kernel, phases and staging, and how to make its path.
struct Variant {
  const char* kernel;   // "persistent" | "persistent2"
  int phases;           // bits of the phases on
  const char* staging;  // "v3" | "v4" | "v5"
  bool production;      // the shipped kernel itself, training
  const char* label;
  const void* dev_kernel;  // nullptr: the shipped kernel (make_persistent_path / make_persistent2_path)
};

std::unique_ptr<KernelPath> make(const Variant& v) {
  const bool two = std::string(v.kernel) == "persistent2";
  if (!v.dev_kernel) return two ? make_persistent2_path() : make_persistent_path();
  return std::make_unique<PersistentPath>(v.label, v.dev_kernel, two);
}

struct Options {
  std::string data = "data", recipe = "recipe.toml", out = "results", commit;
  int epochs = 20;
};

const char* kUsage =
    "usage: persistent_phases [--data DIR] [--recipe FILE] [--out DIR] [--epochs N] [--commit STR]\n"
    "  Times the persistent kernels' phases and staging variants; writes OUT/persistent_phases.json.\n"
    "  --epochs N   epochs per variant, the first not timed (default 20, at least 2)\n"
    "  --commit STR written into the file as \"commit\"\n"
    "  exit: 0 written, 1 a variant differs from the shipped kernel, 2 bad input, 3 CUDA error, 4 other\n";

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw UserError(a + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") { std::fputs(kUsage, stdout); std::exit(0); }
    else if (a == "--data") o.data = value();
    else if (a == "--recipe") o.recipe = value();
    else if (a == "--out") o.out = value();
    else if (a == "--commit") o.commit = value();
    else if (a == "--epochs") {
      const std::string v = value();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 2 || n > 1000) throw UserError("--epochs must be an integer in [2, 1000], got '" + v + "'");
      o.epochs = (int)n;
    } else throw UserError("unknown option '" + a + "' (see --help)");
  }
  return o;
}

// Device state of one variant's run: the initial parameters, zero velocity, the workspace and
// the epoch orders; freed on scope exit.
struct State {
  MlpShape s;
  int n, batch, steps;
  float *params = nullptr, *velocity = nullptr, *ws = nullptr, *step_loss = nullptr;
  int* order = nullptr;
  State(MlpShape shape, const Recipe& R, const std::vector<float>& init, const std::vector<std::vector<int32_t>>& orders)
      : s(shape), n(R.train_size), batch(R.batch), steps((R.train_size + R.batch - 1) / R.batch) {
    const size_t total = mlp_offsets(s).total;
    CUDA_CHECK(cudaMalloc(&params, total * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&velocity, total * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&ws, mlp_workspace_floats(s, batch) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&step_loss, (size_t)steps * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&order, orders.size() * (size_t)n * sizeof(int)));
    CUDA_CHECK(cudaMemcpy(params, init.data(), total * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemset(velocity, 0, total * sizeof(float)));
    for (size_t e = 0; e < orders.size(); ++e)
      CUDA_CHECK(cudaMemcpy(order + e * n, orders[e].data(), (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
  }
  ~State() { cudaFree(params); cudaFree(velocity); cudaFree(ws); cudaFree(step_loss); cudaFree(order); }
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  EpochArgs epoch(const Recipe& R, const float* X, const int* y, int e, cudaStream_t st) const {
    return {s, params, velocity, X, y, order + (size_t)e * n, n, batch, (float)R.lr, (float)R.momentum, ws, step_loss, st};
  }
};

// The device copies of the data.
struct Data {
  float* train_x = nullptr;
  int* train_y = nullptr;
  float* test_x = nullptr;
  ~Data() { cudaFree(train_x); cudaFree(train_y); cudaFree(test_x); }
};

// The parameters after one epoch (order 0) from the initial state.
std::vector<float> one_epoch(KernelPath& path, MlpShape s, const Recipe& R, const std::vector<float>& init,
                             const std::vector<std::vector<int32_t>>& orders, const Data& d) {
  State st(s, R, init, {orders[0]});
  path.epoch(st.epoch(R, d.train_x, d.train_y, 0, nullptr));
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> p(mlp_offsets(s).total);
  CUDA_CHECK(cudaMemcpy(p.data(), st.params, p.size() * sizeof(float), cudaMemcpyDeviceToHost));
  return p;
}

// Median and CV of epochs 1.. (run_stats.h's summarise_epochs, as run.json's).
struct Timing { double median_ms, cv_pct; };
Timing time_epochs(KernelPath& path, MlpShape s, const Recipe& R, const std::vector<float>& init,
                   const std::vector<std::vector<int32_t>>& orders, const Data& d, const Dataset& data) {
  State st(s, R, init, orders);
  const int chunk = 10000;
  float* eval_scratch = nullptr;
  CUDA_CHECK(cudaMalloc(&eval_scratch, (size_t)chunk * (s.hidden + s.out) * sizeof(float)));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t t0, t1;
  CUDA_CHECK(cudaEventCreate(&t0));
  CUDA_CHECK(cudaEventCreate(&t1));
  std::vector<double> ms;
  for (size_t e = 0; e < orders.size(); ++e) {
    CUDA_CHECK(cudaMemsetAsync(st.step_loss, 0xFF, (size_t)st.steps * sizeof(float), stream));
    CUDA_CHECK(cudaEventRecord(t0, stream));
    path.epoch(st.epoch(R, d.train_x, d.train_y, (int)e, stream));
    CUDA_CHECK(cudaEventRecord(t1, stream));
    CUDA_CHECK(cudaEventSynchronize(t1));
    float m = 0;
    CUDA_CHECK(cudaEventElapsedTime(&m, t0, t1));
    ms.push_back(m);  // epoch 0 (module load, first launch) is dropped by summarise_epochs
    evaluate_on_device(s, st.params, d.test_x, data.test_y.data(), data.n_test, eval_scratch, chunk, stream);
  }
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
  cudaStreamDestroy(stream);
  cudaFree(eval_scratch);
  const EpochStats e = summarise_epochs(ms);
  return {e.median, e.cv};
}

std::string phases_json(int phases) {
  Json a = Json::array();
  if (phases & kPhaseA) a.add(Json::str("A"));
  if (phases & kPhaseB) a.add(Json::str("B"));
  if (phases & kPhaseC) a.add(Json::str("C"));
  return a.done();
}

int run(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  Recipe R = read_recipe(opt.recipe);
  validate_recipe(R, opt.recipe);
  const MlpShape s{R.input_dim, R.hidden_dim, R.output_dim};
  const Dataset data = load_dataset(opt.data);
  if (data.dim != s.in)
    throw UserError(opt.data + ": images have " + std::to_string(data.dim) + " pixels, recipe input_dim is " + std::to_string(s.in));
  if (data.n_train < R.train_size)
    throw UserError(opt.data + ": " + std::to_string(data.n_train) + " training images, recipe train_size is " +
                    std::to_string(R.train_size));
  for (int y : data.train_y)
    if (y < 0 || y >= s.out) throw UserError(opt.data + ": label " + std::to_string(y) + " out of range for output_dim " + std::to_string(s.out));
  for (int y : data.test_y)
    if (y < 0 || y >= s.out) throw UserError(opt.data + ": test label " + std::to_string(y) + " out of range for output_dim " + std::to_string(s.out));
  const std::vector<float> init = init_params(s, R.seed);
  std::vector<std::vector<int32_t>> orders;
  for (int e = 0; e < opt.epochs; ++e) orders.push_back(epoch_order(R.train_size, R.seed, e));

  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) throw CudaError("no CUDA device found");
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::fprintf(stderr, "GPU: %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);
  Data d;
  CUDA_CHECK(cudaMalloc(&d.train_x, data.train_x.size() * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&d.train_y, data.train_y.size() * sizeof(int)));
  CUDA_CHECK(cudaMalloc(&d.test_x, data.test_x.size() * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(d.train_x, data.train_x.data(), data.train_x.size() * sizeof(float), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d.train_y, data.train_y.data(), data.train_y.size() * sizeof(int), cudaMemcpyHostToDevice));
  CUDA_CHECK(cudaMemcpy(d.test_x, data.test_x.data(), data.test_x.size() * sizeof(float), cudaMemcpyHostToDevice));

  const void* phases_kernel = reinterpret_cast<const void*>(&k_phases_epoch);
  const Variant variants[] = {
      {"persistent", 0, "v4", false, "barriers only", phases_kernel},
      {"persistent", kPhaseA, "v4", false, "A (forward hidden)", phases_kernel},
      {"persistent", kPhaseB, "v4", false, "B (logits, softmax, dH)", phases_kernel},
      {"persistent", kPhaseC, "v4", false, "C (gradients and update)", phases_kernel},
      {"persistent", kAllPhases, "v4", true, "A+B+C (training)", nullptr},
      {"persistent", kAllPhases, "v3", false, "A+B+C, v3 scalar C staging",
       reinterpret_cast<const void*>(&k_persistent_epoch_v3)},
      {"persistent2", kAllPhases, "v5", true, "persistent2, training", nullptr},
      {"persistent2", kAllPhases, "v4", false, "persistent2, v4 scalar next-batch staging",
       reinterpret_cast<const void*>(&k_persistent2_epoch_v4)},
  };

  // The variants that train must compute the shipped kernels' values, bit for bit.
  const int all = kAllPhases;
  CUDA_CHECK(cudaMemcpyToSymbol(c_phases, &all, sizeof all));
  const std::vector<float> shipped1 = one_epoch(*make_persistent_path(), s, R, init, orders, d);
  const std::vector<float> shipped2 = one_epoch(*make_persistent2_path(), s, R, init, orders, d);
  for (const Variant& v : variants) {
    if (v.production || v.phases != kAllPhases) continue;
    const bool two = std::string(v.kernel) == "persistent2";
    const bool same = one_epoch(*make(v), s, R, init, orders, d) == (two ? shipped2 : shipped1);
    std::fprintf(stderr, "%s: one epoch %s the shipped %s kernel's parameters\n", v.label,
                 same ? "bitwise equal to" : "DIFFERS from", v.kernel);
    if (!same) return 1;
  }
  {  // the phase loop with every phase on
    PersistentPath loop("phase loop, every phase", phases_kernel, false);
    const bool same = one_epoch(loop, s, R, init, orders, d) == shipped1;
    std::fprintf(stderr, "phase loop with every phase on: one epoch %s the shipped persistent kernel's parameters\n",
                 same ? "bitwise equal to" : "DIFFERS from");
    if (!same) return 1;
  }

  const int steps = (R.train_size + R.batch - 1) / R.batch;
  Json rows = Json::array();
  for (const Variant& v : variants) {
    CUDA_CHECK(cudaMemcpyToSymbol(c_phases, &v.phases, sizeof v.phases));
    std::unique_ptr<KernelPath> path = make(v);
    const Timing t = time_epochs(*path, s, R, init, orders, d, data);
    std::printf("%-44s median %.4f ms/epoch (%.2f us/step), CV %.1f%%\n", v.label, t.median_ms,
                1000 * t.median_ms / steps, t.cv_pct);
    rows.add(Json::object().set("kernel", Json::str(v.kernel)).set("phases", phases_json(v.phases))
                 .set("staging", Json::str(v.staging)).set("production", Json::boolean(v.production))
                 .set("label", Json::str(v.label)).set("median_ms", Json::num(t.median_ms))
                 .set("cv_pct", Json::num(t.cv_pct)).done());
  }
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  Json root = Json::object();
  root.set("schema", Json::num(2)).set("source", Json::str("dev/persistent_phases.cu"))
      .set("steps_per_epoch", Json::num(steps)).set("epochs_timed", Json::num(opt.epochs - 1))
      .set("date_utc", Json::str(date)).set("gpu", Json::str(prop.name));
  if (!opt.commit.empty()) root.set("commit", Json::str(opt.commit));
  root.set("variants", rows.done());
  mkdir(opt.out.c_str(), 0777);
  write_file_atomic(opt.out + "/persistent_phases.json", root.done() + "\n");
  std::fprintf(stderr, "wrote %s/persistent_phases.json\n", opt.out.c_str());
  return 0;
}

}  // namespace mlp_dev

int main(int argc, char** argv) {
  try {
    return mlp_dev::run(argc, argv);
  } catch (const UserError& e) {
    std::fprintf(stderr, "persistent_phases: error: %s\n", e.what());
    return 2;
  } catch (const CudaError& e) {
    std::fprintf(stderr, "persistent_phases: CUDA error: %s\n", e.what());
    return 3;
  } catch (const mlp::SubmissionError& e) {  // the device cannot run the kernels (no cooperative launch, ...)
    std::fprintf(stderr, "persistent_phases: CUDA error: %s\n", e.what());
    return 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "persistent_phases: error: %s\n", e.what());
    return 4;
  }
}
