// tests/submissions/mutant_tail_mean.cu — see naive_base.cuh.
#define MUTANT_TAIL_MEAN
#include "naive_base.cuh"
