// tests/submissions/mutant_fixed_hyperparams.cu — see naive_base.cuh.
#define MUTANT_FIXED_HYPERPARAMS
#include "naive_base.cuh"
