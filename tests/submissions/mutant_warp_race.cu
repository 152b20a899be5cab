// tests/submissions/mutant_warp_race.cu — see naive_base.cuh.
#define MUTANT_WARP_RACE
#include "naive_base.cuh"
