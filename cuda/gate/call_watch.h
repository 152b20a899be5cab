// cuda/gate/call_watch.h — what a submission's entry point asked of the CUDA runtime while it ran:
// allocations and frees, host synchronisations, blocking copies and the streams it created. The
// gate opens a window around each call it watches (CallWatch); mlp_train is linked with
// `-Xlinker --wrap=cudaMalloc,...` (Makefile WATCHED) so every such call in the process goes
// through gate/call_watch.cu's __wrap_ functions, which count it while a window is open and
// forward it unchanged. Outside a window they only forward. Case 13 (gate/contract.cu) names what
// it saw when a call breaks the stream contract.
#pragma once
#include <cstddef>
#include <string>

struct CallCounts {
  int allocations = 0;         // cudaMalloc, cudaMallocManaged, cudaMallocHost, cudaHostAlloc, cudaMallocPitch, cudaMallocAsync
  size_t allocated_bytes = 0;
  int frees = 0;               // cudaFree, cudaFreeHost (cudaFree also synchronises the device)
  int synchronisations = 0;    // cudaDeviceSynchronize, cudaStreamSynchronize, cudaEventSynchronize, cudaStreamQuery,
                               // cudaEventQuery, blocking cudaMemcpy / cudaMemcpyTo/FromSymbol
  int legacy_stream_ops = 0;   // cudaMemset: work on the legacy default stream, whatever stream was passed
  int streams_created = 0;     // cudaStreamCreate, cudaStreamCreateWithFlags, cudaStreamCreateWithPriority
  std::string first_sync, first_alloc;  // the first call of each kind ("cudaStreamSynchronize")
};

// Counts the runtime calls of one window: construct before the call, read counts() after it.
class CallWatch {
 public:
  CallWatch();
  ~CallWatch();
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;
  const CallCounts& counts() const;
};
