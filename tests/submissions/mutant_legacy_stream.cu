// tests/submissions/mutant_legacy_stream.cu — see naive_base.cuh.
#define MUTANT_LEGACY_STREAM
#include "naive_base.cuh"
