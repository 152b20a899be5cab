// tests/submissions/mutant_db_wrong_axis.cu — see naive_base.cuh.
#define MUTANT_DB_WRONG_AXIS
#include "naive_base.cuh"
