// cuda/paths/registry.h — the one list of kernel paths: each path's name, whether a plain run
// times it, and what it is in a line. make_path (paths/kernel_path.h) builds each by name;
// `mlp_host catalog` prints this list (path_registry_json) and the Python side reads it
// (spec/catalog.py); what each path needs of a device is mlp_fit's (paths/path_fit.h). Plain data,
// host-only, no CUDA header.
#pragma once
#include <string>
#include <vector>

struct PathInfo {
  const char* name;
  bool in_default_set;  // timed by a plain run; false: only when named in --paths (or --profile)
  const char* what;
};

inline const std::vector<PathInfo>& path_registry() {
  static const std::vector<PathInfo> paths = {
      {"unfused", true, "17 launches per step: separate bias, ReLU, mask passes; one momentum update per tensor"},
      {"fused", true, "10 launches per step: bias/ReLU and the ReLU mask in GEMM epilogues; one flat update (our submission)"},
      {"graph", true, "the fused epoch captured once into a CUDA graph, replayed per epoch"},
      {"persistent", true, "one cooperative kernel per epoch, three grid barriers per step, the update fused into the gradient phase"},
      {"persistent2", false, "opt-in: persistent with two barriers per step, the update phase also computing the next step's pre-activations"},
      {"stationary", true, "one cluster launch per epoch, weights stationary in shared memory, one cross-SM wait per step (recipe shape, sm_90+)"},
      // The precision paths (issue 30) are in the default set: the main job's gate holds each to
      // its own case 9 at its precision (gate/cases.h case_path_epoch_check).
      {"stationary-tf32", true, "the stationary epoch with TF32 products: one MMA of the inputs' TF32 parts where stationary's split takes two (recipe shape, sm_90+)"},
      {"stationary-bf16", true, "the stationary epoch with BF16 products: the inputs rounded to bfloat16, one MMA on the TF32 instruction, which holds them exactly (recipe shape, sm_90+)"},
      {"tiled", true, "4 launches per step in one CUDA graph: float32 register-tiled GEMMs (tile shape and split-K by problem shape), the batch gathered in the loads, the update in the gradient epilogues (any shape)"},
      {"tiled-tf32", true, "the tiled epoch with its two GEMMs on the tensor cores in TF32 (inputs rounded to TF32, float32 sums; the head in float32)"},
      {"tiled-bf16", true, "the tiled epoch with its two GEMMs on the tensor cores in BF16 (inputs rounded to bfloat16, float32 sums; the head in float32)"},
      // The persistent epoch at TF32 and BF16, for the widths where a step is launch- and
      // barrier-bound and the tensor cores would gain nothing (64-512 at batch 128: issue 38).
      {"persistent2-tf32", false, "opt-in: persistent2 with the inputs of its two big products (forward, dW1) rounded to TF32 as they are staged, float32 sums on the CUDA cores; the head in float32"},
      {"persistent2-bf16", false, "opt-in: persistent2 with the inputs of its two big products (forward, dW1) rounded to bfloat16 as they are staged, float32 sums on the CUDA cores; the head in float32"},
  };
  return paths;
}

// The path a linked learner's file adds: its mlp_train_epoch, gated instead of "fused".
constexpr const char* kSubmissionPath = "submission";

// The paths a plain run times, in report order ("submission" first when a learner's file is linked),
// and those that run only when named.
inline std::vector<std::string> default_path_names(bool external_submission) {
  std::vector<std::string> names;
  if (external_submission) names.push_back(kSubmissionPath);
  for (const auto& p : path_registry())
    if (p.in_default_set) names.push_back(p.name);
  return names;
}
inline std::vector<std::string> opt_in_path_names() {
  std::vector<std::string> names;
  for (const auto& p : path_registry())
    if (!p.in_default_set) names.push_back(p.name);
  return names;
}

// The registry as a JSON array of {"name", "default", "what"} (common/json.h's writer).
std::string path_registry_json();
