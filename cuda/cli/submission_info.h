// cuda/cli/submission_info.h — which submission this mlp_train links: the one object that differs
// between two submissions' builds besides the submission's own (the Makefile compiles
// submission_info.cpp with SUBMISSION_DEFS), so a course's builds share every other object.
#pragma once

// The submission's source as the build named it (SUBMISSION), e.g. "cuda/contract/submission_ref.cu".
const char* linked_submission_source();
// True for a learner's file (any SUBMISSION but ours): the gated path is then the submission's own epoch.
bool linked_submission_is_external();
