// tests/submissions/mutant_no_relu_mask.cu — see naive_base.cuh.
#define MUTANT_NO_RELU_MASK
#include "naive_base.cuh"
