// tests/submissions/mutant_no_max_shift.cu — see naive_base.cuh.
#define MUTANT_NO_MAX_SHIFT
#include "naive_base.cuh"
