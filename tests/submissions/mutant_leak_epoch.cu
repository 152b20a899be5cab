// tests/submissions/mutant_leak_epoch.cu — see naive_base.cuh.
#define MUTANT_LEAK_EPOCH
#include "naive_base.cuh"
