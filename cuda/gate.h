// cuda/gate.h — the gate cases 1–6, run against the linked submission's entry points (or, for
// case 6, any kernel path). Each returns a verdict with the measured value and the limit it
// was held to, both printed.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "dataset.h"
#include "paths.h"
#include "recipe.h"

struct CaseResult {
  int id = 0;
  std::string name;
  bool passed = false;
  double value = 0;   // the measured figure (NaN when it could not be measured)
  double limit = 0;   // the bound it must stay under (NaN when the case has none)
  std::string detail; // how value and limit are defined, or why it failed
};

// Everything the cases need, already on the device where they run there.
struct GateInputs {
  MlpShape s;
  const Recipe* recipe;
  const Dataset* data;
  const std::vector<float>* init;          // initial parameters (host)
  const std::vector<int32_t>* order0;      // epoch 0's order (host)
  const float* d_train_x;                  // device copies of the training set
  const int* d_train_y;
  uint64_t seed;
};

CaseResult case_onebatch_forward(const GateInputs& g);
CaseResult case_batch_forward(const GateInputs& g);
CaseResult case_loss_extreme(const GateInputs& g);
CaseResult case_grad_check(const GateInputs& g);
CaseResult case_step(const GateInputs& g);
// 32 images, 200 steps of `path` (one 32-image epoch each), final loss < 0.01.
CaseResult case_overfit32(const GateInputs& g, mlp::KernelPath& path);
