// tests/submissions/bf16_products.cu — see naive_base.cuh: a correct submission whose matrix products
// round their inputs to bfloat16 and declare it (mlp_precision() returns MLP_PRECISION_BF16). The
// gate must pass it at bfloat16's tolerances (README, "Declaring your precision").
#define VARIANT_BF16_PRODUCTS
#define NAIVE_PRECISION MLP_PRECISION_BF16
#include "naive_base.cuh"
