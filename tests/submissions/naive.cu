// tests/submissions/naive.cu — see naive_base.cuh.
#include "naive_base.cuh"
