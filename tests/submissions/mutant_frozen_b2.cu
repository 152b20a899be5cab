// tests/submissions/mutant_frozen_b2.cu — see naive_base.cuh.
#define MUTANT_FROZEN_B2
#include "naive_base.cuh"
