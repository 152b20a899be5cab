// cuda/io/options.h — mlp_train's command line: the Options it parses to, the strict parser (every
// numeric flag through the bounds table of cuda/io/bounds.h), the --help text, and the checks of
// the names and the output folder that need no GPU. Host-only: `mlp_host parse-args` runs this
// same parser, so the CPU tests exercise exactly what mlp_train runs.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "io/recipe.h"

struct Options {
  std::string data = "data", recipe = "recipe.toml", out = "results", init, profile;
  std::string reference = "same-run";  // or "shipped": case 7 reads DATA/reference instead of retraining
  std::string run_id;                  // --run-id: written into run.json as "run_id" (null when absent)
  std::vector<std::string> paths;      // --paths, as given (checked against the binary's paths by resolve_paths)
  bool help = false;
  bool quick = false;
  // --smoke: --quick minus the long parts. racecheck instruments every shared-memory access and
  // takes minutes per epoch; its hazards depend on the kernels and launch shapes, not on how many
  // steps run, so a few steps of each kernel (a full batch and a tail batch) cover them.
  bool smoke = false;
  bool perf_only = false;  // --perf-only: case 8 alone (sweeps): no gate cases, no float64 reference
  // --sanitizer-workload once|measure: the workload compute-sanitizer runs for cases 11-12
  // (gate/sanitizer_workload.h): one pass ("once"), or a measured one writing
  // OUT/sanitizer-workload.json ("measure"); "" when not given.
  std::string sanitizer_workload;
  bool parity = false;     // --parity (with --perf-only): one epoch of each path against float64
  // --stage a,b: only these stages of the gate (binary_stage_names, cuda/gate/catalog.h), each
  // writing OUT/stage-<name>.json; harness/gate/supervisor.py runs each in a fresh process and
  // merges the parts into run.json.
  std::vector<std::string> stages;
  // --strict-determinism: a linked submission's rerun must be bitwise identical (ours always must).
  bool strict_determinism = false;
  // Recipe overrides: recipe key -> the flag's text, already checked against the key's bound.
  std::map<std::string, std::string> overrides;
};

// Parses argv[1..] (without the program name). A flag given twice, a flag without its value, an
// unknown flag, a value outside its bound, an empty string, or modes that cannot be combined
// are a UserError naming the flag.
Options parse_args(const std::vector<std::string>& args);

// The --help text: synopsis, every flag, the bounds table, the exit statuses.
std::string usage();

// The recipe with the flags' overrides applied (then call validate_recipe).
void apply_overrides(Recipe& r, const Options& o);
// Where the run's recipe values come from, for validate_recipe: "recipe.toml" or
// "recipe.toml with --batch, --hidden".
std::string recipe_source(const Options& o);

// The binary's kernel paths: those a plain run times, and those that run only when named.
struct PathCatalog {
  std::vector<std::string> defaults, opt_in;
};
// The paths this run trains: --paths checked against the catalog (else every default path);
// also checks that --profile names a path of the catalog.
std::vector<std::string> resolve_paths(const Options& o, const PathCatalog& catalog);

// --out must be an existing directory, or a new one whose parent directory exists (it is made
// by make_out_dir, later); checked without writing anything.
void check_out_dir(const std::string& out);
// Creates --out if missing (mkdir, its result checked).
void make_out_dir(const std::string& out);

// The parsed options as one JSON object (`mlp_host parse-args`); overrides as typed numbers.
std::string options_json(const Options& o);
