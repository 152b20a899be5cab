// tests/submissions/mutant_silent_forward.cu — see naive_base.cuh.
#define MUTANT_SILENT_FORWARD
#include "naive_base.cuh"
