// tests/submissions/launch_heavy.cu — see learner_common.cuh: tiled16.cu whose mlp_train_epoch runs the
// short last batch's forward one row at a time (VARIANT_ROWWISE_TAIL: 222 more launches an epoch at
// the recipe), every number bitwise equal to tiled16.cu's. Correct, only slower: the gate must pass it.
#define TILE 16
#define VARIANT_ROWWISE_TAIL
#include "tiled_base.cuh"
