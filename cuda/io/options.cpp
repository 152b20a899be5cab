#include "io/options.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

#include "common/common.h"
#include "common/exit_status.h"
#include "common/json.h"
#include "io/bounds.h"
#include "gate/catalog.h"  // the stage names --stage takes (plain data, no dependency)

namespace {

const char* kSynopsis =
    "usage: mlp_train [--data DIR] [--recipe FILE] [--out DIR] [--paths a,b,...] [--epochs N]\n"
    "                 [--batch N] [--lr X] [--momentum X] [--seed N] [--init FILE.npy]\n"
    "                 [--hidden N] [--train-size N] [--profile PATH] [--quick] [--smoke] [--perf-only]\n"
    "                 [--reference same-run|shipped] [--run-id STR] [--stage NAME[,NAME]]\n"
    "                 [--strict-determinism] [--parity] [--sanitizer-workload once|race|measure] [--help]\n"
    "  Runs gate cases 1-8 and writes OUT/run.json (exit 1 when a case 1-7 fails).\n"
    "  --out DIR       an existing directory, or a new one whose parent exists (default results)\n"
    "  --paths a,b     the kernel paths to run (default every path but the opt-in persistent2)\n"
    "  --init FILE.npy initial weights (float32, the flat layout; every value finite) instead of the seed's\n"
    "  --profile PATH  warm up, then train one epoch of PATH inside the NVTX range profile-epoch\n"
    "  --quick         cases 1-6 and one training epoch per path (for sanitizers); no run.json\n"
    "  --smoke         --quick without case 6's 200 overfit steps and the bitwise rerun (for racecheck,\n"
    "                  with a small --train-size: every kernel still runs, tail batch included)\n"
    "  --reference shipped  case 7 compares with DATA/reference (the float64 result shipped for the\n"
    "                  recipe) instead of retraining float64 on the CPU (same-run, the default)\n"
    "  --perf-only     time the paths (case 8) without the gate or the float64 reference (sweeps)\n"
    "  --parity        with --perf-only: also one epoch of every path against one float64 epoch on the\n"
    "                  CPU (run.json \"parity_vs_fp64\" per path, \"fp64_reference\")\n"
    "  --run-id STR    written into run.json as \"run_id\" (1-128 of A-Z a-z 0-9 . _ : + -)\n"
    "  --stage NAMES   only these stages of the gate, each writing OUT/stage-NAME.json (no run.json);\n"
    "                  harness/gate/supervisor.py runs each in a fresh process and merges them into\n"
    "                  run.json (the stages and their cases: `mlp_host catalog`)\n"
    "  --sanitizer-workload once|race|measure  the workload compute-sanitizer runs for cases 11-12:\n"
    "                  every entry point and two short epochs at each code path the cases reach (once: one\n"
    "                  pass, memcheck's; race: racecheck's, the odd shape and then the recipe's full step; measure:\n"
    "                  unsanitized, a timed pass and the launches, into OUT/sanitizer-workload.json)\n"
    "  --strict-determinism  a linked submission's one-epoch rerun must be bitwise identical, as our\n"
    "                  paths' must (default: within the parity limit, with a note)\n"
    "  Every input is checked before the GPU is touched. Recipe values and their overrides:\n";

// Flags that take a value, and the recipe key a numeric one overrides ("" for none).
const std::map<std::string, std::string> kValueFlags = {
    {"--data", ""}, {"--recipe", ""}, {"--out", ""}, {"--init", ""}, {"--profile", ""}, {"--paths", ""},
    {"--reference", ""}, {"--run-id", ""}, {"--stage", ""}, {"--sanitizer-workload", ""}, {"--epochs", "epochs"}, {"--batch", "batch"}, {"--lr", "lr"},
    {"--momentum", "momentum"}, {"--seed", "seed"}, {"--hidden", "hidden_dim"}, {"--train-size", "train_size"},
};

std::vector<std::string> split_names(const std::string& flag, const std::string& s, const char* what = "path") {
  std::vector<std::string> out;
  size_t a = 0;
  while (true) {
    size_t b = s.find(',', a);
    std::string name = s.substr(a, b == std::string::npos ? std::string::npos : b - a);
    if (name.empty()) throw UserError(flag + ": empty " + what + " name in '" + s + "'");
    if (std::find(out.begin(), out.end(), name) != out.end())
      throw UserError(flag + ": " + what + " '" + name + "' named twice");
    out.push_back(name);
    if (b == std::string::npos) return out;
    a = b + 1;
  }
}

bool run_id_ok(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || std::strchr("._:+-", c)))
      return false;
  return true;
}

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

Options parse_args(const std::vector<std::string>& args) {
  Options o;
  std::set<std::string> given;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") { o.help = true; return o; }
    const bool valued = kValueFlags.count(a) > 0;
    const bool boolean = a == "--quick" || a == "--smoke" || a == "--perf-only" || a == "--strict-determinism" ||
                         a == "--parity";
    if (!valued && !boolean) {
      if (a == "--persistent-phases")
        throw UserError("--persistent-phases: moved to build/persistent_phases (`invoke gpu.phases`)");
      throw UserError("unknown option '" + a + "' (see --help)");
    }
    if (!given.insert(a).second) throw UserError(a + " given twice");
    if (boolean) {
      if (a == "--quick") o.quick = true;
      else if (a == "--smoke") o.quick = o.smoke = true;
      else if (a == "--strict-determinism") o.strict_determinism = true;
      else if (a == "--parity") o.parity = true;
      else o.perf_only = true;
      continue;
    }
    if (i + 1 >= args.size()) throw UserError(a + " needs a value");
    const std::string v = args[++i];
    if (v.rfind("--", 0) == 0) throw UserError(a + " needs a value (got the option '" + v + "')");
    const std::string& key = kValueFlags.at(a);
    if (!key.empty()) {
      Recipe scratch;  // checks the value against its bound now, so the error names the flag
      set_recipe_value(scratch, key, v, a);
      o.overrides[key] = v;
      continue;
    }
    if (v.empty()) throw UserError(a + ": empty value");
    if (a == "--data") o.data = v;
    else if (a == "--recipe") o.recipe = v;
    else if (a == "--out") o.out = v;
    else if (a == "--init") o.init = v;
    else if (a == "--profile") o.profile = v;
    else if (a == "--paths") o.paths = split_names(a, v);
    else if (a == "--stage") {
      o.stages = split_names(a, v, "stage");
      check_stage_names(o.stages, "--stage");
    }
    else if (a == "--sanitizer-workload") {
      if (v != "once" && v != "race" && v != "measure")
        throw UserError("--sanitizer-workload: '" + v + "' is not once, race or measure");
      o.sanitizer_workload = v;
    }
    else if (a == "--reference") {
      if (v != "same-run" && v != "shipped") throw UserError("--reference: '" + v + "' is neither same-run nor shipped");
      o.reference = v;
    } else if (a == "--run-id") {
      if (!run_id_ok(v)) throw UserError("--run-id: '" + v + "' is not 1-128 of A-Z a-z 0-9 . _ : + -");
      o.run_id = v;
    }
  }
  // Modes that cannot be combined: each would silently drop the other's work.
  if (!o.sanitizer_workload.empty() && (!o.profile.empty() || o.perf_only || o.quick || !o.stages.empty() ||
                                        o.reference == "shipped"))
    throw UserError("--sanitizer-workload runs alone: drop " +
                    std::string(!o.profile.empty() ? "--profile" : o.perf_only ? "--perf-only" : o.quick ? "--quick"
                                : !o.stages.empty() ? "--stage" : "--reference shipped"));
  const char* mode = !o.profile.empty() ? "--profile" : o.perf_only ? "--perf-only" : nullptr;
  if (!o.profile.empty() && o.perf_only) throw UserError("--profile and --perf-only cannot be combined");
  if (o.parity && !o.perf_only) throw UserError("--parity needs --perf-only (a gate run checks parity already)");
  if (mode && o.quick) throw UserError(std::string(mode) + " and " + (o.smoke ? "--smoke" : "--quick") +
                                       " cannot be combined");
  if (!o.stages.empty() && (mode || o.quick))
    throw UserError(std::string("--stage and ") + (mode ? mode : o.smoke ? "--smoke" : "--quick") +
                    " cannot be combined");
  if (o.reference == "shipped") {
    if (mode || o.quick)
      throw UserError("--reference shipped: only the full gate runs case 7 (drop " +
                      std::string(mode ? mode : o.smoke ? "--smoke" : "--quick") + ")");
    if (!o.init.empty()) throw UserError("--reference shipped needs the seed's initial weights: drop --init");
  }
  return o;
}

std::string usage() { return kSynopsis + limits_help() + kExitStatusHelp; }

void apply_overrides(Recipe& r, const Options& o) {
  for (const auto& kv : o.overrides) {
    std::string flag;
    for (const auto& f : kValueFlags)
      if (f.second == kv.first) flag = f.first;
    set_recipe_value(r, kv.first, kv.second, flag);
  }
}

std::string recipe_source(const Options& o) {
  std::string s = o.recipe;
  const char* sep = " with ";
  for (const auto& f : kValueFlags)
    if (!f.second.empty() && o.overrides.count(f.second)) {
      s += sep + f.first;
      sep = ", ";
    }
  return s;
}

std::vector<std::string> resolve_paths(const Options& o, const PathCatalog& c) {
  std::vector<std::string> known = c.defaults;
  known.insert(known.end(), c.opt_in.begin(), c.opt_in.end());
  auto check = [&](const std::string& flag, const std::string& name) {
    if (std::find(known.begin(), known.end(), name) == known.end())
      throw UserError(flag + ": no path named '" + name + "' (have: " + join(known) + ")");
  };
  for (const auto& p : o.paths) check("--paths", p);
  if (!o.profile.empty()) check("--profile", o.profile);
  return o.paths.empty() ? c.defaults : o.paths;
}

void check_out_dir(const std::string& out) {
  if (out.empty()) throw UserError("--out: empty path");
  struct stat st;
  if (stat(out.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw UserError("--out " + out + ": exists and is not a directory");
    if (access(out.c_str(), W_OK | X_OK) != 0) throw UserError("--out " + out + ": directory is not writable");
    return;
  }
  std::string parent = out;
  while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
  size_t slash = parent.rfind('/');
  parent = slash == std::string::npos ? "." : slash == 0 ? "/" : parent.substr(0, slash);
  if (stat(parent.c_str(), &st) != 0)
    throw UserError("--out " + out + ": parent directory " + parent +
                    (errno == ENOENT ? " does not exist" : std::string(": ") + std::strerror(errno)));
  if (!S_ISDIR(st.st_mode)) throw UserError("--out " + out + ": parent directory " + parent + " is not a directory");
  if (access(parent.c_str(), W_OK | X_OK) != 0)
    throw UserError("--out " + out + ": cannot create it in " + parent + " (not writable)");
}

void make_out_dir(const std::string& out) {
  if (mkdir(out.c_str(), 0777) != 0 && !(errno == EEXIST && is_dir(out)))
    throw UserError("--out " + out + ": cannot create: " + std::strerror(errno));
}

std::string options_json(const Options& o) {
  Json paths = Json::array();
  for (const auto& p : o.paths) paths.add(Json::str(p));
  Json stages = Json::array();
  for (const auto& st : o.stages) stages.add(Json::str(st));
  Json ov = Json::object();
  for (const auto& kv : o.overrides) {
    const Bound& b = bound(kv.first);
    ov.set(kv.first, b.integer ? Json::num(parse_integer(b, kv.second, kv.first)) : Json::num(parse_real(b, kv.second, kv.first)));
  }
  return Json::object()
      .set("help", Json::boolean(o.help)).set("data", Json::str(o.data)).set("recipe", Json::str(o.recipe))
      .set("out", Json::str(o.out)).set("init", Json::str(o.init)).set("profile", Json::str(o.profile))
      .set("reference", Json::str(o.reference)).set("run_id", Json::str(o.run_id)).set("paths", paths.done())
      .set("quick", Json::boolean(o.quick)).set("smoke", Json::boolean(o.smoke))
      .set("perf_only", Json::boolean(o.perf_only)).set("strict_determinism", Json::boolean(o.strict_determinism)).set("parity", Json::boolean(o.parity)).set("sanitizer_workload", Json::str(o.sanitizer_workload)).set("overrides", ov.done()).set("stage", stages.done())
      .done();
}
