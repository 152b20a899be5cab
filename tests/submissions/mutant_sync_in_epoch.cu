// tests/submissions/mutant_sync_in_epoch.cu — see naive_base.cuh.
#define MUTANT_SYNC_IN_EPOCH
#include "naive_base.cuh"
