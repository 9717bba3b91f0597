// hbm_bench: device-memory (HBM) bandwidth with a float4 copy kernel (b[i] = a[i]) and a
// float4 triad kernel (a[i] = b[i] + s * c[i]) over array sizes from 1 MiB to 4 GiB per array.
//
// Prints one JSON object per line on stdout (see README.md); progress and errors go to stderr.
// Usage: microbench_hbm [--device N] [--help]
// Arrays smaller than the L2 cache (50 MiB on H100) mostly measure L2, not HBM.

#include <cuda_runtime.h>

#include "microbench_common.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

const char* const kProg = "microbench_hbm";

#define CUDA_CHECK(expr) MICROBENCH_CHECK_CUDA(kProg, expr)

using microbench::common_fields;
using microbench::DeviceInfo;
using microbench::JsonLine;

// ---- kernels -----------------------------------------------------------------------------

constexpr int kBlock = 256;

__global__ void __launch_bounds__(kBlock)
    copy_kernel(const float4* __restrict__ a, float4* __restrict__ b, size_t n4) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4; i += stride)
    b[i] = a[i];
}

__global__ void __launch_bounds__(kBlock)
    triad_kernel(float4* __restrict__ a, const float4* __restrict__ b, const float4* __restrict__ c,
                 float s, size_t n4) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4; i += stride) {
    const float4 x = b[i], y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

__global__ void fill_kernel(float4* p, size_t n4, float v) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n4; i += stride)
    p[i] = make_float4(v, v + 1.0f, v + 2.0f, v + 3.0f);
}

void usage() {
  std::fprintf(stderr,
               "usage: %s [--device N]\n"
               "Prints one JSON object per kernel and array size on stdout.\n",
               kProg);
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else {
      usage();
      return 2;
    }
  }
  DeviceInfo dev = microbench::open_device(kProg, device);
  std::fprintf(stderr, "%s: %s, driver %s, runtime %s\n", kProg, dev.prop.name, dev.driver.c_str(),
               dev.runtime.c_str());

  // Three arrays of the largest size that fits (triad touches three).
  const size_t kMin = 1ull << 20, kMax = 4ull << 30;
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  size_t max_bytes = kMax;
  while (max_bytes > kMin && 3.0 * max_bytes > 0.9 * static_cast<double>(free_b)) max_bytes /= 4;
  if (max_bytes < kMax)
    std::fprintf(stderr, "%s: %.2f GiB free: largest array limited to %.0f MiB\n", kProg,
                 static_cast<double>(free_b) / (1 << 30),
                 static_cast<double>(max_bytes) / (1 << 20));
  float4 *a = nullptr, *b = nullptr, *c = nullptr;
  CUDA_CHECK(cudaMalloc(&a, max_bytes));
  CUDA_CHECK(cudaMalloc(&b, max_bytes));
  CUDA_CHECK(cudaMalloc(&c, max_bytes));
  const size_t max_n4 = max_bytes / sizeof(float4);
  fill_kernel<<<1024, kBlock>>>(a, max_n4, 1.0f);
  fill_kernel<<<1024, kBlock>>>(b, max_n4, 2.0f);
  fill_kernel<<<1024, kBlock>>>(c, max_n4, 3.0f);
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaDeviceSynchronize());

  int blocks_per_sm_copy = 0, blocks_per_sm_triad = 0;
  CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm_copy, copy_kernel, kBlock, 0));
  CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm_triad, triad_kernel, kBlock, 0));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  for (size_t bytes_per_array = kMin; bytes_per_array <= max_bytes; bytes_per_array *= 4) {
    const size_t n = bytes_per_array / sizeof(float);  // elements
    const size_t n4 = n / 4;
    const size_t wanted_blocks = (n4 + kBlock - 1) / kBlock;
    for (int kernel = 0; kernel < 2; ++kernel) {
      const bool is_copy = kernel == 0;
      const size_t resident = static_cast<size_t>(dev.prop.multiProcessorCount) *
                              std::max(1, is_copy ? blocks_per_sm_copy : blocks_per_sm_triad);
      const unsigned grid = static_cast<unsigned>(std::min(wanted_blocks, resident));
      const double bytes = (is_copy ? 2.0 : 3.0) * static_cast<double>(n) * sizeof(float);
      std::fprintf(stderr, "%s: %s, %.0f MiB per array\n", kProg, is_copy ? "copy" : "triad",
                   static_cast<double>(bytes_per_array) / (1 << 20));
      auto launch = [&] {
        if (is_copy)
          copy_kernel<<<grid, kBlock, 0, stream>>>(a, b, n4);
        else
          triad_kernel<<<grid, kBlock, 0, stream>>>(a, b, c, 0.5f, n4);
      };
      int iters = 0;
      const double t = microbench::time_op(kProg, launch, stream, /*warmup=*/5, /*target_s=*/0.2,
                                           /*min_iters=*/10,
                                           /*max_iters=*/10000, &iters);
      common_fields("hbm", dev)
          .str("kernel", is_copy ? "copy" : "triad")
          .integer("bytes", static_cast<long long>(bytes))
          .num("time_s", t)
          .num("gbps", bytes / t / 1e9)
          .integer("elements", static_cast<long long>(n))
          .integer("iters", iters)
          .print();
    }
  }

  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(c));
  return 0;
}
