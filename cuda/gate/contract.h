// cuda/gate/contract.h — case 13, stream-contract (gate/contract.cu): every entry point only enqueues
// work on the caller's stream: no other stream, no host synchronisation, no allocation, nothing
// printed on success, and no device-memory growth over repeated calls.
#pragma once
#include "gate/cases.h"

CaseResult case_stream_contract(const GateInputs& g);
