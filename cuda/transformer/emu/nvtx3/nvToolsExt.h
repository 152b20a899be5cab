// cuda/transformer/emu/nvtx3/nvToolsExt.h — NVTX ranges as no-ops for the CPU emulation (emu/cuda_runtime.h).
#pragma once
inline int nvtxRangePushA(const char*) { return 0; }
inline int nvtxRangePop() { return 0; }
