#include "cli/run_json.h"

#include <cmath>
#include <ctime>

#include "common/cuda_check.h"
#include "paths/kernel_path.h"

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return b;
}

std::string case_json(const CaseResult& c) {
  Json o = Json::object();
  o.set("id", Json::num(c.id)).set("name", Json::str(c.name)).set("passed", Json::boolean(c.passed))
      .set("value", Json::num(c.value)).set("limit", Json::num(c.limit)).set("detail", Json::str(c.detail));
  if (!c.note.empty()) o.set("note", Json::str(c.note));
  return o.done();
}

namespace {
// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", as nvidia-smi prints it.
std::string uuid_text(const cudaUUID_t& u) {
  static const int groups[] = {4, 2, 2, 2, 6};
  std::string s = "GPU";
  int k = 0;
  for (int g : groups) {
    s += '-';
    for (int i = 0; i < g; ++i, ++k) {
      char b[3];
      std::snprintf(b, sizeof b, "%02x", (unsigned)(unsigned char)u.bytes[k]);
      s += b;
    }
  }
  return s;
}
}  // namespace

std::string gpu_json(const cudaDeviceProp& prop) {
  int driver = 0, runtime = 0;
  CUDA_CHECK(cudaDriverGetVersion(&driver));
  CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  return Json::object()
      .set("name", Json::str(prop.name)).set("uuid", Json::str(uuid_text(prop.uuid)))
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

Json& add_path_run(Json& o, const PathRun& r) {
  if (!r.skipped.empty()) o.set("skipped", Json::str(r.skipped));
  o.set("config", r.skipped.empty() && !r.config.empty() ? Json::str(r.config) : "null");
  if (!r.accumulator.empty()) o.set("accumulator", Json::str(r.accumulator));
  if (!r.precision.empty()) o.set("precision", Json::str(r.precision));
  if (r.epoch_checked)
    o.set("epoch_check", Json::object()
                             .set("passed", Json::boolean(r.epoch_check.passed))
                             .set("value", Json::num(r.epoch_check.value))
                             .set("limit", Json::num(r.epoch_check.limit))
                             .set("detail", Json::str(r.epoch_check.detail))
                             .done());
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
std::string strings_json(const std::vector<std::string>& v) {
  Json a = Json::array();
  for (const auto& h : v) a.add(Json::str(h));
  return a.done();
}

std::string command_line(int argc, char** argv) {
  std::string cmd;
  for (int i = 0; i < argc; ++i) cmd += (i ? " " : "") + std::string(argv[i]);
  return cmd;
}

std::string device_limits_json() { return mlp::device_limits_json(mlp::effective_limits()); }

std::string run_id_json(const std::string& run_id) { return run_id.empty() ? "null" : Json::str(run_id); }
