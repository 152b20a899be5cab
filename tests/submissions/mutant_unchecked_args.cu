// tests/submissions/mutant_unchecked_args.cu — see naive_base.cuh.
#define MUTANT_UNCHECKED_ARGS
#include "naive_base.cuh"
