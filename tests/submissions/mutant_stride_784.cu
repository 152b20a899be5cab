// tests/submissions/mutant_stride_784.cu — see naive_base.cuh.
#define MUTANT_STRIDE_784
#include "naive_base.cuh"
