// tests/submissions/mutant_forward_overrun.cu — see naive_base.cuh.
#define MUTANT_FORWARD_OVERRUN
#include "naive_base.cuh"
