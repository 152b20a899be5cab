// tests/submissions/atomic_bias.cu — see naive_base.cuh: a correct submission whose bias gradients are
// summed with atomicAdd in an order that changes with every call, so its reruns differ in the last
// bits every time. The gate must pass it, with a note, and fail it under --strict-determinism.
#define VARIANT_ATOMIC_BIAS
#include "naive_base.cuh"
