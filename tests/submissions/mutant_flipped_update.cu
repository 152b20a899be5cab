// tests/submissions/mutant_flipped_update.cu — see naive_base.cuh.
#define MUTANT_FLIPPED_UPDATE
#include "naive_base.cuh"
