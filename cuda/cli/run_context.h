// cuda/cli/run_context.h — what every mode of mlp_train gets once the inputs are checked and the GPU
// is up: the inputs, the device, the data on it, and the binary's facts for run.json.
#pragma once
#include <cuda_runtime.h>

#include <string>

#include "common/declared_precision.h"
#include "paths/device.h"
#include "io/inputs.h"

struct RunContext {
  const RunInputs& in;
  const cudaDeviceProp& prop;
  const DeviceData& dd;
  std::string submission;  // the linked submission's source file (run.json "submission")
  std::string gated;       // the gated path: "submission" for a learner's file, else "fused"
  std::string command;     // the command line (run.json "run_command")
  // The linked submission's precision (common/declared_precision.h), asked once before the GPU:
  // the gate's cases 1-5 and 9 take their tolerances from it (GateInputs::precision).
  mlp::DeclaredPrecision precision;
};
