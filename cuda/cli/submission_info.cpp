// cuda/cli/submission_info.cpp — submission_info.h, from the Makefile's SUBMISSION_DEFS.
#include "cli/submission_info.h"

#ifndef MLP_SUBMISSION_SOURCE
#define MLP_SUBMISSION_SOURCE "cuda/contract/submission_ref.cu"
#endif
#ifndef MLP_EXTERNAL_SUBMISSION
#define MLP_EXTERNAL_SUBMISSION 0
#endif

const char* linked_submission_source() { return MLP_SUBMISSION_SOURCE; }
bool linked_submission_is_external() { return MLP_EXTERNAL_SUBMISSION != 0; }
