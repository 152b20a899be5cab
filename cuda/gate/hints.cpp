#include "gate/hints.h"

#include <cstdio>

#include "gate/catalog.h"
#include "gate/tolerances.h"

namespace {

bool starts(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// What each stream-contract failure means; case 13's detail starts with its tag (gate/contract.cu).
std::string contract_hint(const std::string& detail) {
  if (starts(detail, "another stream"))
    return "stream-contract: enqueue every launch, copy and memset on the `stream` argument (kernel<<<grid, block, "
           "smem, stream>>>, cudaMemcpyAsync(..., stream)); work on the legacy default stream or a stream of your own "
           "escapes the caller's ordering (fork onto your own stream only through events recorded on `stream`)";
  if (starts(detail, "host synchronisation"))
    return "stream-contract: no cudaDeviceSynchronize, cudaStreamSynchronize, blocking cudaMemcpy or cudaFree inside "
           "an entry point: the losses stay on the device and the caller synchronises";
  if (starts(detail, "allocation"))
    return "stream-contract: no cudaMalloc inside an entry point: take scratch from the `workspace` argument "
           "(mlp_workspace_floats(s, batch) floats, cuda/contract/model.h) or dH_scratch";
  if (starts(detail, "memory growth"))
    return "stream-contract: device memory grew over repeated calls: something is allocated and never freed "
           "(use the workspace the caller passes instead of allocating)";
  if (starts(detail, "printed"))
    return "stream-contract: an entry point printed on success (printf, std::cout, device printf): return MLP_OK "
           "silently and report problems through the status";
  return "stream-contract: the calls could not be captured into a CUDA graph on the caller's stream (the row says "
         "what failed): every call must only enqueue work on `stream`";
}

std::string path_hint(const std::string& failure) {
  if (has(failure, "parity"))
    return "parity: this path's parameters after one epoch are far from the fused path's (more than its parity limit: "
           "1e-2 of the epoch's update, 0.2 at a declared tf32 or bf16): a step or a batch row lost, or a race in a "
           "fused kernel";
  if (has(failure, "not bitwise identical"))
    return "rerun: two runs of one epoch from the same state differed in some bit: our paths (and, with "
           "--strict-determinism, submissions) must not sum in a run-dependent order (atomicAdd) or read "
           "uninitialised memory";
  if (has(failure, "reruns of one epoch differ"))
    return "rerun: two runs of one epoch from the same state differ by more than the parity limit: a race (run "
           "`invoke sanitize`) or memory read before it is written";
  return "path check: " + failure;  // any other failure of a trained path is its own explanation
}

}  // namespace

const char* const kHintTimeout =
    "timeout: a kernel spinning on a flag no one sets, or a grid that does not cover the data (a loop that waits for "
    "work that never comes)";
const char* const kHintFault =
    "an illegal address or a fault usually means an index past a buffer: run `invoke sanitize` (memcheck names the "
    "kernel and the address)";
const char* const kHintNoDevice =
    "no GPU reached: the stage exited 3 (a CUDA error before any case: no CUDA device, no code for this GPU, or a "
    "driver problem); nothing of the submission was judged: run the gate where `nvidia-smi -L` lists a GPU, built for "
    "it (`invoke build --arch`)";
const char* const kHintNoSanitizer =
    "cases 11-12 need compute-sanitizer (it ships with the CUDA toolkit, cuda/bin): put it on PATH or set "
    "COMPUTE_SANITIZER";

std::vector<std::string> hints_for(const std::vector<CaseResult>& cases, const std::vector<std::string>& path_failures,
                                   const std::vector<std::string>& endings) {
  // The first row of each case id counts.
  auto row = [&](int id) -> const CaseResult* {
    for (const auto& c : cases) if (c.id == id) return &c;
    return nullptr;
  };
  // A row the supervisor wrote for a stage or a run that did not end by itself ("not run: ...", "timed
  // out ...") was never judged: its ending speaks for it, not the case's own hint.
  auto unjudged = [](const CaseResult& c) {
    return starts(c.detail, "not run") || starts(c.detail, "timed out") || starts(c.detail, "died") ||
           starts(c.detail, "CUDA error") || starts(c.detail, "exited ");
  };
  auto failed = [&](int id) { const CaseResult* c = row(id); return c && !c->passed && !unjudged(*c); };
  auto stub = [&](int id) { const CaseResult* c = row(id); return c && has(c->detail, "not implemented"); };
  std::vector<std::string> h;
  std::vector<int> explained;  // failed cases a hint speaks for
  auto add = [&](std::initializer_list<int> ids, const std::string& s) {
    explained.insert(explained.end(), ids.begin(), ids.end());
    if (s.empty()) return;
    for (const auto& x : h) if (x == s) return;
    h.push_back(s);
  };
  for (const auto& e : endings) {  // a stage that timed out or died: its running case's row says so
    if (starts(e, "timed out")) add({}, kHintTimeout);
    else if (starts(e, "died") || starts(e, "CUDA error")) add({}, kHintFault);
    else if (starts(e, "exited 3")) add({}, kHintNoDevice);
  }
  for (const auto& c : cases)
    if (starts(c.detail, "timed out")) add({c.id}, kHintTimeout);
    else if (starts(c.detail, "died") || starts(c.detail, "CUDA error")) add({c.id}, kHintFault);
    else if (starts(c.detail, "exited 3")) add({c.id}, kHintNoDevice);
    else if (starts(c.detail, "not run")) add({c.id}, "");
  for (const auto& c : gate_cases())
    if (*c.entry_point && stub(c.id))
      return {"case " + std::to_string(c.id) + " is not implemented yet: write " + c.entry_point + " next"};
  // Precision: a float32 forward within a lower precision's rounding (cases 1, 2 say so), or a case
  // held to a declared precision's tolerances (its row names "declared by mlp_precision()").
  auto says = [&](int id, const char* part) { const CaseResult* c = row(id); return c && has(c->detail, part); };
  const bool lower = (failed(1) && says(1, gate::kWithinLowerPrecision)) || (failed(2) && says(2, gate::kWithinLowerPrecision));
  if (lower)
    add({1, 2}, "precision: the forward's errors are over float32's limits but within TF32's or bfloat16's rounding: if "
                "your matrix products round their inputs to a lower precision (tensor cores, __float2bfloat16), "
                "declare it with mlp_precision() (submission.h; README \"Declaring your precision\"), and cases 1, 2, "
                "4 and 9 are held to that precision's tolerances");
  if ((failed(1) || failed(2)) && !lower)
    add({1, 2}, "forward: W1 is in x hidden row-major (X.W1), b1 is added per hidden unit, H is stored after the ReLU, "
                "Z = H.W2 + b2, every index from the shape's widths (the odd shape 37-19-3 catches a literal 784 or "
                "256)");
  if (failed(3))
    add({3}, "loss-extreme: subtract each row's max before exp(), and compute the loss as log(sum exp(z - m)) - "
             "(z_label - m), not -log(softmax): p_label underflows at logits of +-60");
  if (failed(4))
    add({4, 6, 9}, "grad-check: a missing ReLU mask (dH = (dZ.W2^T) * (H > 0)), a bias gradient summed over the wrong "
                   "axis (db = column sums over the batch), dZ without the 1/B, or dX = dH.W1^T not written when dX "
                   "is not NULL");
  if (failed(5))
    add({5, 9}, "step: v = momentum*v - lr*g first, then p = p + v (check the sign of the update), with the lr and "
                "momentum arguments, not the recipe's values");
  if (failed(6) && !failed(4))
    add({6}, "overfit-32 fails while grad-check passes: the ReLU mask or the update's sign (two errors can cancel at "
             "one gradient-check point), or the batch slicing of mlp_train_epoch");
  if (failed(9) && !failed(4) && !failed(5))
    add({9}, "epoch-check: the entry points pass but mlp_train_epoch does not match float64 after a few steps: every "
             "tensor updated each step (the step covers all n parameters), the short last batch (its rows, and the "
             "mean over its own size), the velocity carried from the previous step, the lr and momentum arguments");
  if (failed(13)) add({13}, contract_hint(row(13)->detail));
  if (failed(14))
    add({14}, "invalid-args: check the arguments first and return MLP_ERR_INVALID_ARGUMENT before enqueuing "
              "anything when a required pointer is NULL or batch <= 0 (dX of mlp_backward may be NULL: then skip "
              "dX); the row names the first call that did otherwise");
  if (failed(10))
    add({10}, "guard-bands: a kernel wrote outside its buffer (an index past a buffer: a grid or bound check off by "
              "one); run `invoke sanitize` (memcheck names the kernel and the address)");
  if (failed(7))
    add({7}, "train: if accuracy moved after fusing an epilogue, suspect a race (run `invoke sanitize`); and never "
             "time epoch 0");
  // After the cases' own hints: the leaderboard's first hint stays the defect's.
  for (int id : {1, 2, 4, 9})
    if (failed(id) && says(id, "declared by mlp_precision()")) {
      add({}, "declared precision: cases 1, 2, 4 and 9 were held to the tolerances of the precision mlp_precision() "
              "declares (its row names it): rounding more than that (bfloat16 inputs declared tf32, truncation "
              "instead of round to nearest, H or Z stored in the lower format) fails them too, as do the defects "
              "of the other hints");
      break;
    }
  for (int id : {11, 12}) {
    if (!failed(id)) continue;
    const std::string& d = row(id)->detail;
    if (starts(d, "compute-sanitizer not found")) add({id}, kHintNoSanitizer);
    else if (starts(d, "inconclusive"))
      add({id}, "inconclusive: compute-sanitizer ran out of time on the sanitizer workload, which finishes without "
                "it, so nothing was concluded (no race, no memory error, no hang was seen): run the command in the "
                "row to see how long it takes; the tools' cost grows with the shared-memory (racecheck) or global "
                "(memcheck) accesses of each launch and with the launches per call: larger tiles, fewer re-reads, "
                "fewer launches bring it within its limit");
    else if (id == 11 && has(d, "error(s)"))
      add({id}, "memcheck: an index past a buffer (a grid or a bound check off by one): the log names the kernel, "
                "the access and the address");
    else if (id == 12 && has(d, "hazard"))
      add({id}, "racecheck: a shared-memory race: a missing __syncthreads() between the writes of a tile and its "
                "reads (or before the next tile overwrites it), or a warp-synchronous reduction without "
                "__syncwarp() between its steps (the lanes of a warp are not in lockstep since Volta)");
  }
  for (const auto& f : path_failures) add({}, path_hint(f));
  // Every failed case that decides the verdict is explained: one without a hint of its own gets its row's detail.
  for (const auto& c : cases) {
    const CaseInfo* info = find_case(c.id);
    if (c.passed || !info || !info->decides) continue;
    bool done = false;
    for (int id : explained) done |= id == c.id;
    if (done) continue;
    const std::string d = c.detail.size() > 200 ? c.detail.substr(0, 197) + "..." : c.detail;
    add({c.id}, std::string(info->name) + ": " + (d.empty() ? "failed (no detail)" : d));
  }
  return h;
}

void print_hints(const std::vector<std::string>& hints) {
  for (const auto& h : hints) std::printf("hint: %s\n", h.c_str());
}
