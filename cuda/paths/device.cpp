#include "paths/device.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "common/cuda_check.h"
#include "paths/kernel_path.h"

cudaDeviceProp select_device() {
  const auto caps = mlp::read_caps([](const char* n) -> const char* { return std::getenv(n); });  // bad input: exit 2 before the GPU
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0)
    throw CudaError(std::string("no CUDA device found (cudaGetDeviceCount: ") +
                    (err == cudaSuccess ? "0 devices" : cudaGetErrorString(err)) + ")");
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaFuncAttributes attr;
  err = cudaFuncGetAttributes(&attr, mlp::probe_kernel());
  if (err != cudaSuccess)
    throw CudaError("this binary has no code for " + std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
                    std::to_string(prop.minor) + "): rebuild with `invoke build --arch sm_" +
                    std::to_string(prop.major) + std::to_string(prop.minor) + "` (" + cudaGetErrorString(err) + ")");
  mlp::set_effective_limits(mlp::apply_caps(mlp::query_device_limits(), caps));
  if (!caps.empty()) {
    const mlp::DeviceLimits& l = mlp::effective_limits();
    std::fprintf(stderr, "device limits capped (MLP_CAP_*): %d SMs, %lld B shared/block, %d threads/SM, sm_%d\n", l.sms,
                 l.smem_per_block_optin, l.threads_per_sm, l.cc);
  }
  return prop;
}

const mlp::DeviceLimits& device_limits() { return mlp::effective_limits(); }

DeviceData::DeviceData(const Dataset& data) {
  try {
    CUDA_CHECK(cudaMalloc(&train_x, data.train_x.size() * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&train_y, data.train_y.size() * sizeof(int)));
    CUDA_CHECK(cudaMalloc(&test_x, data.test_x.size() * sizeof(float)));
    CUDA_CHECK(cudaMemcpy(train_x, data.train_x.data(), data.train_x.size() * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(train_y, data.train_y.data(), data.train_y.size() * sizeof(int), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(test_x, data.test_x.data(), data.test_x.size() * sizeof(float), cudaMemcpyHostToDevice));
  } catch (...) {
    release();  // a constructor that throws gets no destructor call
    throw;
  }
}

DeviceData::~DeviceData() { release(); }

void DeviceData::release() noexcept {
  cudaFree(train_x);
  cudaFree(train_y);
  cudaFree(test_x);
}
