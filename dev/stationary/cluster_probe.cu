// dev/stationary/cluster_probe.cu — how many thread-block clusters of each size can be resident at
// once on this GPU (cudaOccupancyMaxActiveClusters), at a few block shapes. The stationary kernel
// needs every cluster of its grid co-resident, so its shape follows from this table.
//   nvcc -O3 -std=c++17 -arch=sm_90 -o build/cluster_probe dev/stationary/cluster_probe.cu && build/cluster_probe
#include <cstdio>
#include <cuda_runtime.h>

__global__ void k_probe(float* out) {
  extern __shared__ float smem[];
  smem[threadIdx.x] = (float)threadIdx.x;
  __syncthreads();
  if (out) out[blockIdx.x] = smem[0];
}

int main() {
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) { std::printf("no device\n"); return 3; }
  std::printf("%s: %d SMs, %zu B smem/block opt-in, %zu B smem/SM\n", prop.name, prop.multiProcessorCount,
              prop.sharedMemPerBlockOptin, prop.sharedMemPerMultiprocessor);
  cudaFuncSetAttribute(k_probe, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  const int smems[] = {0, 48 * 1024, 100 * 1024, 157840, 168768, 200 * 1024};
  const int threads[] = {256, 512};
  for (int th : threads)
    for (int sm : smems) {
      if (cudaFuncSetAttribute(k_probe, cudaFuncAttributeMaxDynamicSharedMemorySize, sm) != cudaSuccess) {
        cudaGetLastError();
        continue;
      }
      std::printf("threads %d smem %6d:", th, sm);
      for (int cl = 1; cl <= 16; ++cl) {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(cl * 16);
        cfg.blockDim = dim3(th);
        cfg.dynamicSmemBytes = sm;
        cudaLaunchAttribute a[1];
        a[0].id = cudaLaunchAttributeClusterDimension;
        a[0].val.clusterDim.x = cl;
        a[0].val.clusterDim.y = 1;
        a[0].val.clusterDim.z = 1;
        cfg.attrs = a;
        cfg.numAttrs = 1;
        int n = -1;
        cudaError_t e = cudaOccupancyMaxActiveClusters(&n, k_probe, &cfg);
        if (e != cudaSuccess) { cudaGetLastError(); std::printf(" %d:err", cl); }
        else std::printf(" %d:%d", cl, n);
      }
      std::printf("\n");
    }
  return 0;
}
