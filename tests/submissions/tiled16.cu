// tests/submissions/tiled16.cu — see tiled_base.cuh: a correct learner-style submission, shared-memory
// tiled GEMMs of 16 × 16 tiles. The gate must pass it.
#define TILE 16
#include "tiled_base.cuh"
