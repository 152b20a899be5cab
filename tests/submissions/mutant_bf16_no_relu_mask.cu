// tests/submissions/mutant_bf16_no_relu_mask.cu — see naive_base.cuh: bf16_products.cu (bfloat16 inputs,
// declared) with mutant_no_relu_mask.cu's defect: bfloat16's looser tolerances must still fail it
// in case 4 (grad-check).
#define MUTANT_NO_RELU_MASK
#define VARIANT_BF16_PRODUCTS
#define NAIVE_PRECISION MLP_PRECISION_BF16
#include "naive_base.cuh"
