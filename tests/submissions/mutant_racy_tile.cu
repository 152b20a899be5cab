// tests/submissions/mutant_racy_tile.cu — see naive_base.cuh.
#define MUTANT_RACY_TILE
#include "naive_base.cuh"
