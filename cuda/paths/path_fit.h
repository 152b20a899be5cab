// cuda/paths/path_fit.h — what a kernel path needs of the device, and the choice of a configuration
// that fits (or the reason none does), without CUDA: the binary fills DeviceLimits from the
// device and each path's needs from cudaFuncGetAttributes (cuda/paths/stepwise_path.cu, persistent_path.h,
// stationary_path.cu); build/mlp_fit and the CPU tests call the same functions with the limits of
// other GPUs (harness/studies/arch_resources.py's table).
//
// Testing aid: environment variables make the binary believe the device is smaller (every fit
// decision and every grid sized by the SM count uses the capped limits; run.json's
// "device_limits" records them):
//   MLP_CAP_SMEM_PER_BLOCK  bytes of shared memory per block (the opt-in maximum), 1024..
//   MLP_CAP_SMS             multiprocessors, 1..
//   MLP_CAP_THREADS_PER_SM  resident threads per multiprocessor, 32..
//   MLP_CAP_CC              compute capability as major·10 + minor (75, 86, 90, ...), 50..
// A cap above the device's own value leaves that value as it is. A malformed value (not a
// decimal integer in range) is bad input: one line, exit status 2, before the GPU is touched.
#pragma once
#include <stddef.h>

#include <string>
#include <utility>
#include <vector>

#include "contract/model.h"

namespace mlp {

struct DeviceLimits {
  int cc = 0;                         // compute capability, major·10 + minor
  int sms = 0;                        // multiprocessors
  long long smem_per_block_optin = 0; // cudaDevAttrMaxSharedMemoryPerBlockOptin
  long long smem_per_sm = 0;          // cudaDevAttrMaxSharedMemoryPerMultiprocessor
  long long reserved_smem_per_block = 0;  // cudaDevAttrReservedSharedMemoryPerBlock
  int threads_per_sm = 0;             // cudaDevAttrMaxThreadsPerMultiProcessor
  int threads_per_block = 1024;
  int regs_per_sm = 65536;
  int max_blocks_per_sm = 16;
  bool cooperative = false;           // cudaDevAttrCooperativeLaunch
  bool clusters = false;              // cudaDevAttrClusterLaunch
  std::vector<std::pair<std::string, long long>> capped;  // the MLP_CAP_* in force, as given
};

// The MLP_CAP_* variables (read through `getenv`, e.g. std::getenv), checked: a malformed value
// throws UserError naming the variable. Returns the caps given, in the order above.
using EnvLookup = const char* (*)(const char*);
std::vector<std::pair<std::string, long long>> read_caps(EnvLookup getenv);
// `real` with `caps` applied (each cap lowers its limit; the smem-per-SM limit follows the
// per-block cap plus the reserve when that is lower). caps land in .capped.
DeviceLimits apply_caps(DeviceLimits real, const std::vector<std::pair<std::string, long long>>& caps);

// One kernel launch configuration's needs.
struct KernelNeeds {
  std::string kernel;            // its name, for the reason
  long long dynamic_smem = 0;    // bytes per block
  long long static_smem = 0;     // bytes per block (cudaFuncAttributes::sharedSizeBytes)
  int threads = 0;               // per block
  int regs = 0;                  // per thread (cudaFuncAttributes::numRegs); 0: not known
  int min_cc = 75;               // the newest instruction it uses (the binary's oldest target: 75)
  bool cooperative = false;      // a cooperative launch (grid-wide barriers)
  int blocks_per_sm = 0;         // >0: needs this many co-resident blocks on EVERY SM
  int cluster = 0;               // >0: blocks per thread-block cluster (sm_90+)
  int clusters = 0;              // co-resident clusters it needs at once
  int device_blocks_per_sm = -1; // the device's own occupancy answer (-1: not asked)
  int device_max_clusters = -1;  // the device's cudaOccupancyMaxActiveClusters (-1: not asked)
  std::string refused;           // the device refused the configuration (a CUDA error's text)
};

// Resident blocks per SM by the limits (threads, registers, shared memory, blocks), further
// bounded by the device's own answer when asked.
int resident_blocks(const KernelNeeds& k, const DeviceLimits& lim);
// Co-resident clusters of k.cluster blocks: bounded by the SM count over the cluster size and by
// the device's answer when asked.
int resident_clusters(const KernelNeeds& k, const DeviceLimits& lim);
// Why `k` cannot run on `lim` ("" when it can): the first need that fails, with both numbers.
std::string why_not(const KernelNeeds& k, const DeviceLimits& lim);

// A path's decision: the configuration it runs in, or why it is skipped.
struct PathFit {
  int choice = -1;      // index of the candidate it runs (-1: skipped)
  std::string config;   // what it runs in (run.json "config")
  std::string skipped;  // why it does not run ("" when it runs)
  bool runs() const { return choice >= 0; }
};
// The first candidate that fits, described by its label; else skipped with every candidate's
// reason ("<label>: <reason>; ...").
PathFit choose(const std::vector<KernelNeeds>& candidates, const std::vector<std::string>& labels,
               const DeviceLimits& lim);

// ---- each path's declared needs (the binary adds registers and the device's answers) --------
// unfused, fused, graph: ordinary launches of at most `threads` threads and `static_smem` bytes.
KernelNeeds stepwise_needs(const std::string& kernel, int threads, long long static_smem);
// persistent (two_barriers false: candidates K chunk kMaxKA, then kSmallKA) and persistent2
// (one candidate): one block of kThreads per SM, cooperative.
struct PersistentCandidate {
  int ka;                // phase A's K chunk (persistent2: 0, it has no phase A)
  KernelNeeds needs;
  std::string label;     // "K chunk 1024 (100352 B shared/block)"
};
std::vector<PersistentCandidate> persistent_candidates(MlpShape s, bool two_barriers);
// stationary: shape <cl, u> of `clusters` clusters, `smem` bytes a block, sm_90+.
KernelNeeds stationary_needs(int cl, int u, int clusters, long long smem);
std::string stationary_label(int cl, int u, int clusters, long long smem);
// Why the stationary path cannot take this problem at all ("" when it can): shape and batch.
std::string stationary_problem_unsupported(MlpShape s, int batch);

// JSON of the limits for run.json "device_limits" (docs/formats.md).
std::string device_limits_json(const DeviceLimits& lim);

}  // namespace mlp
