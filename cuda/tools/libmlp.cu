// cuda/tools/libmlp.cu — memory helpers exported beside the five entry points in build/libmlp.so,
// so harness/binding.py (ctypes + numpy) can call any entry point on arbitrary arrays.
// Each returns a cudaError_t value (0 = success).
#include <cuda_runtime.h>

extern "C" {
int mlpx_device_count(int* n) { return (int)cudaGetDeviceCount(n); }
int mlpx_malloc(void** p, size_t bytes) { return (int)cudaMalloc(p, bytes); }
int mlpx_free(void* p) { return (int)cudaFree(p); }
int mlpx_memset(void* p, int value, size_t bytes) { return (int)cudaMemset(p, value, bytes); }
int mlpx_h2d(void* dst, const void* src, size_t bytes) { return (int)cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice); }
int mlpx_d2h(void* dst, const void* src, size_t bytes) { return (int)cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost); }
int mlpx_sync(void) { return (int)cudaDeviceSynchronize(); }
const char* mlpx_error_string(int err) { return cudaGetErrorString((cudaError_t)err); }
}
