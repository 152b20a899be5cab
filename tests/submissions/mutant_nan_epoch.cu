// tests/submissions/mutant_nan_epoch.cu — see naive_base.cuh.
#define MUTANT_NAN_EPOCH
#include "naive_base.cuh"
