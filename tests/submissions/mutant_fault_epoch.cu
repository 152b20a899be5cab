// tests/submissions/mutant_fault_epoch.cu — see naive_base.cuh.
#define MUTANT_FAULT_EPOCH
#include "naive_base.cuh"
