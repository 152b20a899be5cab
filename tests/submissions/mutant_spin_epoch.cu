// tests/submissions/mutant_spin_epoch.cu — see naive_base.cuh.
#define MUTANT_SPIN_EPOCH
#include "naive_base.cuh"
