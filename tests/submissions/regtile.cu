// tests/submissions/regtile.cu — see regtile_base.cuh: a correct learner-style submission, register-tiled
// GEMMs (64 × 64 block tiles, 8-deep slabs in shared memory, 4 × 4 outputs a thread). The gate must
// pass it.
#define RT_BM 64
#define RT_BN 64
#define RT_BK 8
#define RT_TM 4
#define RT_TN 4
#include "regtile_base.cuh"
