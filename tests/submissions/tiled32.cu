// tests/submissions/tiled32.cu — see tiled_base.cuh: a correct learner-style submission, shared-memory
// tiled GEMMs of 32 × 32 tiles (1,024 threads a block). The gate must pass it.
#define TILE 32
#include "tiled_base.cuh"
