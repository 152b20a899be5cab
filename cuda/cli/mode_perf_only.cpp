#include <cmath>
#include <cstdio>
#include <memory>

#include "common/common.h"
#include "common/exit_status.h"
#include "cli/modes.h"
#include "cli/run_json.h"

// run.json says "mode": "perf-only" and holds no gate cases; every path trains from the seed's
// weights and is timed (case 8 alone).
int run_perf_only(const RunContext& ctx) {
  const RunInputs& in = ctx.in;
  const Recipe& R = in.R;
  Json pj = Json::object();
  bool ok = true;
  for (const auto& name : in.names) {
    std::unique_ptr<mlp::KernelPath> path = mlp::make_path(name);
    PathRun run = train_path(*path, R, in.s, in.init, in.orders, ctx.dd, in.data, R.epochs, true);
    if (!run.ok) std::fprintf(stderr, "path %s failed: %s\n", name.c_str(), run.error.c_str());
    if (!run.skipped.empty()) std::printf("path %s: skipped: %s\n", name.c_str(), run.skipped.c_str());
    ok &= !run.skipped.empty() || (run.ok && std::isfinite(run.median));
    Json o = Json::object();
    add_path_run(o, run);
    if (run.skipped.empty()) o.set("passed", Json::boolean(run.ok));
    pj.set(name, o.done());
    std::printf("%-10s median %.4f ms/epoch, CV %.2f%%, test acc %.2f%%\n", name.c_str(), run.median, run.cv,
                run.test_accuracy_per_epoch.empty() ? NAN : 100 * run.test_accuracy_per_epoch.back());
  }
  Json root = Json::object();
  root.set("schema", Json::num(1)).set("mode", Json::str("perf-only")).set("date_utc", Json::str(utc_now()))
      .set("run_id", run_id_json(in.opt.run_id))
      .set("gpu", gpu_json(ctx.prop)).set("device_limits", device_limits_json()).set("submission", Json::str(ctx.submission))
      .set("run_command", Json::str(ctx.command))
      .set("recipe", recipe_json(R, in.data.n_test, mlp_offsets(in.s).total)).set("memory", memory_watch().json())
      .set("paths", pj.done());
  write_init_and_order(ctx);
  write_file_atomic(in.opt.out + "/run.json", root.done() + "\n");
  std::fprintf(stderr, "wrote %s/run.json\n", in.opt.out.c_str());
  return ok ? kExitPass : kExitGateFailed;
}
