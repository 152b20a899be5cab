// cuda/gate/call_watch.cu — the __wrap_ side of gate/call_watch.h: each wrapped runtime call is
// counted while a CallWatch window is open, then forwarded to the real one (__real_). The names
// listed here and in the Makefile's WATCHED must agree (a wrap without its function fails the link).
#include "gate/call_watch.h"

#include <cuda_runtime.h>

namespace {
CallCounts* g_open = nullptr;  // the open window's counts; null outside a window

void alloc(const char* fn, size_t bytes) {
  if (!g_open) return;
  if (g_open->allocations++ == 0) g_open->first_alloc = fn;
  g_open->allocated_bytes += bytes;
}
void sync(const char* fn) {
  if (!g_open) return;
  if (g_open->synchronisations++ == 0) g_open->first_sync = fn;
}
}  // namespace

CallWatch::CallWatch() { g_open = new CallCounts(); }
CallWatch::~CallWatch() {
  delete g_open;
  g_open = nullptr;
}
const CallCounts& CallWatch::counts() const { return *g_open; }

extern "C" {
cudaError_t __real_cudaMalloc(void**, size_t);
cudaError_t __real_cudaMallocManaged(void**, size_t, unsigned);
cudaError_t __real_cudaMallocHost(void**, size_t);
cudaError_t __real_cudaHostAlloc(void**, size_t, unsigned);
cudaError_t __real_cudaMallocPitch(void**, size_t*, size_t, size_t);
cudaError_t __real_cudaMallocAsync(void**, size_t, cudaStream_t);
cudaError_t __real_cudaFree(void*);
cudaError_t __real_cudaFreeHost(void*);
cudaError_t __real_cudaDeviceSynchronize(void);
cudaError_t __real_cudaStreamSynchronize(cudaStream_t);
cudaError_t __real_cudaEventSynchronize(cudaEvent_t);
cudaError_t __real_cudaStreamQuery(cudaStream_t);
cudaError_t __real_cudaEventQuery(cudaEvent_t);
cudaError_t __real_cudaMemcpy(void*, const void*, size_t, cudaMemcpyKind);
cudaError_t __real_cudaMemset(void*, int, size_t);
cudaError_t __real_cudaMemcpyToSymbol(const void*, const void*, size_t, size_t, cudaMemcpyKind);
cudaError_t __real_cudaMemcpyFromSymbol(void*, const void*, size_t, size_t, cudaMemcpyKind);
cudaError_t __real_cudaStreamCreate(cudaStream_t*);
cudaError_t __real_cudaStreamCreateWithFlags(cudaStream_t*, unsigned);
cudaError_t __real_cudaStreamCreateWithPriority(cudaStream_t*, unsigned, int);

cudaError_t __wrap_cudaMalloc(void** p, size_t n) { alloc("cudaMalloc", n); return __real_cudaMalloc(p, n); }
cudaError_t __wrap_cudaMallocManaged(void** p, size_t n, unsigned f) {
  alloc("cudaMallocManaged", n);
  return __real_cudaMallocManaged(p, n, f);
}
cudaError_t __wrap_cudaMallocHost(void** p, size_t n) { alloc("cudaMallocHost", n); return __real_cudaMallocHost(p, n); }
cudaError_t __wrap_cudaHostAlloc(void** p, size_t n, unsigned f) {
  alloc("cudaHostAlloc", n);
  return __real_cudaHostAlloc(p, n, f);
}
cudaError_t __wrap_cudaMallocPitch(void** p, size_t* pitch, size_t w, size_t h) {
  alloc("cudaMallocPitch", w * h);
  return __real_cudaMallocPitch(p, pitch, w, h);
}
cudaError_t __wrap_cudaMallocAsync(void** p, size_t n, cudaStream_t s) {
  alloc("cudaMallocAsync", n);
  return __real_cudaMallocAsync(p, n, s);
}
cudaError_t __wrap_cudaFree(void* p) {
  if (g_open && p) ++g_open->frees;
  if (p) sync("cudaFree");  // cudaFree synchronises the device
  return __real_cudaFree(p);
}
cudaError_t __wrap_cudaFreeHost(void* p) {
  if (g_open && p) ++g_open->frees;
  return __real_cudaFreeHost(p);
}
cudaError_t __wrap_cudaDeviceSynchronize(void) { sync("cudaDeviceSynchronize"); return __real_cudaDeviceSynchronize(); }
cudaError_t __wrap_cudaStreamSynchronize(cudaStream_t s) {
  sync("cudaStreamSynchronize");
  return __real_cudaStreamSynchronize(s);
}
cudaError_t __wrap_cudaEventSynchronize(cudaEvent_t e) {
  sync("cudaEventSynchronize");
  return __real_cudaEventSynchronize(e);
}
cudaError_t __wrap_cudaStreamQuery(cudaStream_t s) { sync("cudaStreamQuery"); return __real_cudaStreamQuery(s); }
cudaError_t __wrap_cudaEventQuery(cudaEvent_t e) { sync("cudaEventQuery"); return __real_cudaEventQuery(e); }
cudaError_t __wrap_cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind k) {
  sync("cudaMemcpy");
  return __real_cudaMemcpy(d, s, n, k);
}
cudaError_t __wrap_cudaMemset(void* d, int v, size_t n) {
  if (g_open) ++g_open->legacy_stream_ops;
  return __real_cudaMemset(d, v, n);
}
cudaError_t __wrap_cudaMemcpyToSymbol(const void* sym, const void* s, size_t n, size_t off, cudaMemcpyKind k) {
  sync("cudaMemcpyToSymbol");
  return __real_cudaMemcpyToSymbol(sym, s, n, off, k);
}
cudaError_t __wrap_cudaMemcpyFromSymbol(void* d, const void* sym, size_t n, size_t off, cudaMemcpyKind k) {
  sync("cudaMemcpyFromSymbol");
  return __real_cudaMemcpyFromSymbol(d, sym, n, off, k);
}
cudaError_t __wrap_cudaStreamCreate(cudaStream_t* s) {
  if (g_open) ++g_open->streams_created;
  return __real_cudaStreamCreate(s);
}
cudaError_t __wrap_cudaStreamCreateWithFlags(cudaStream_t* s, unsigned f) {
  if (g_open) ++g_open->streams_created;
  return __real_cudaStreamCreateWithFlags(s, f);
}
cudaError_t __wrap_cudaStreamCreateWithPriority(cudaStream_t* s, unsigned f, int p) {
  if (g_open) ++g_open->streams_created;
  return __real_cudaStreamCreateWithPriority(s, f, p);
}
}  // extern "C"
