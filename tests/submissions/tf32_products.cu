// tests/submissions/tf32_products.cu — see naive_base.cuh: a correct submission whose matrix products
// round their inputs to TF32 and declare it (mlp_precision() returns MLP_PRECISION_TF32). The gate
// must pass it at TF32's tolerances (README, "Declaring your precision").
#define VARIANT_TF32_PRODUCTS
#define NAIVE_PRECISION MLP_PRECISION_TF32
#include "naive_base.cuh"
