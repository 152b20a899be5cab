// tests/submissions/atomic_bias.cu — see naive_base.cuh: a correct submission whose bias gradients are
// summed with atomicAdd, so its reruns differ in the last bits. The gate must pass it, with a note.
#define VARIANT_ATOMIC_BIAS
#include "naive_base.cuh"
