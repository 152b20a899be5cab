// cuda/paths/device.h — the GPU side of a run's setup: the device probe (a device, and code for it in
// this binary) and the data uploaded once.
#pragma once
#include <cuda_runtime.h>

#include "io/dataset.h"
#include "paths/path_fit.h"

// Device 0, after checking that this binary carries code for it. No device, or no code for it
// (the message names `invoke build --arch sm_XY`), is a CudaError (exit 3). First, before the GPU
// is touched, the MLP_CAP_* testing caps are read (cuda/paths/path_fit.h; a malformed one is a
// UserError, exit 2); the device's limits with the caps applied become mlp::effective_limits(),
// which every path's fit and every grid sized by the SM count use.
cudaDeviceProp select_device();
// The limits in force (after select_device): the device's, capped.
const mlp::DeviceLimits& device_limits();

// The training and test images and training labels on the device, freed on scope exit.
struct DeviceData {
  float* train_x = nullptr;
  int* train_y = nullptr;
  float* test_x = nullptr;
  explicit DeviceData(const Dataset& data);
  ~DeviceData();
  DeviceData(const DeviceData&) = delete;
  DeviceData& operator=(const DeviceData&) = delete;

 private:
  void release() noexcept;  // frees every buffer (the destructor, and a constructor that throws)
};
