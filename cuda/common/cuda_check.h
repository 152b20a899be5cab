// cuda/common/cuda_check.h — every CUDA call and every launch is checked; a failure names the call,
// the file and the line.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "common/common.h"

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

[[noreturn]] inline void throw_cuda(cudaError_t err, const char* call, const char* file, int line) {
  std::string msg = std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " +
                    cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")";
  if (err == cudaErrorNoKernelImageForDevice || err == cudaErrorInvalidDeviceFunction ||
      err == cudaErrorUnsupportedPtxVersion)
    msg += " — the binary has no code for this GPU: rebuild with `invoke build --arch sm_XY` for its compute capability";
  throw CudaError(msg);
}

// Host-side: throws CudaError.
#define CUDA_CHECK(call)                                          \
  do {                                                            \
    cudaError_t err_ = (call);                                    \
    if (err_ != cudaSuccess) throw_cuda(err_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: catches bad configurations at once (asynchronous faults surface at
// the next synchronising call, which is checked too).
#define CUDA_CHECK_LAUNCH(name)                                                        \
  do {                                                                                 \
    cudaError_t err_ = cudaPeekAtLastError();                                          \
    if (err_ != cudaSuccess) throw_cuda(err_, (std::string("launch of ") + (name)).c_str(), __FILE__, __LINE__); \
  } while (0)

// Inside submission entry points: turn a failure into MLP_ERR_CUDA instead of throwing across
// the C ABI.
#define MLP_TRY_LAUNCH()                                  \
  do {                                                    \
    if (cudaPeekAtLastError() != cudaSuccess) return MLP_ERR_CUDA; \
  } while (0)
