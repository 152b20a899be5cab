// tests/submissions/mutant_undeclared_tf32.cu — see naive_base.cuh: tf32_products.cu's arithmetic
// without its declaration (no mlp_precision()): gated as FP32, it must fail cases 1, 2, 4 and 9
// (float32's limits are about 1e-6 of the magnitudes, TF32's rounding about 1e-4), with the hint
// that names mlp_precision().
#define VARIANT_TF32_PRODUCTS
#include "naive_base.cuh"
