// copy_bench: host<->device copy bandwidth with pinned host memory (cudaMallocHost), both
// directions, sizes from 1 MiB to 1 GiB (powers of 4), one cudaMemcpyAsync per operation.
//
// Prints one JSON object per line on stdout (see README.md); progress and errors go to stderr.
// Usage: microbench_copy [--device N] [--help]

#include <cuda_runtime.h>

#include "microbench_common.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

const char* const kProg = "microbench_copy";

#define CUDA_CHECK(expr) MICROBENCH_CHECK_CUDA(kProg, expr)

using microbench::common_fields;
using microbench::DeviceInfo;
using microbench::JsonLine;

void usage() {
  std::fprintf(stderr,
               "usage: %s [--device N]\n"
               "Prints one JSON object per direction and size on stdout.\n",
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

  const size_t kMin = 1ull << 20, kMax = 1ull << 30;
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  size_t max_bytes = kMax;
  while (max_bytes > kMin && static_cast<double>(max_bytes) > 0.9 * static_cast<double>(free_b))
    max_bytes /= 4;

  void* host = nullptr;
  void* dev_buf = nullptr;
  cudaError_t err = cudaMallocHost(&host, max_bytes);
  while (err != cudaSuccess && max_bytes > kMin) {
    (void)cudaGetLastError();  // clear the allocation error and try a smaller buffer
    max_bytes /= 4;
    err = cudaMallocHost(&host, max_bytes);
  }
  CUDA_CHECK(err);
  if (max_bytes < kMax)
    std::fprintf(stderr, "%s: largest copy limited to %.0f MiB\n", kProg,
                 static_cast<double>(max_bytes) / (1 << 20));
  std::memset(host, 0x5a, max_bytes);  // touch every page
  CUDA_CHECK(cudaMalloc(&dev_buf, max_bytes));
  CUDA_CHECK(cudaMemset(dev_buf, 0x3c, max_bytes));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  for (int dir = 0; dir < 2; ++dir) {
    const bool h2d = dir == 0;
    for (size_t bytes = kMin; bytes <= max_bytes; bytes *= 4) {
      std::fprintf(stderr, "%s: %s %.0f MiB\n", kProg, h2d ? "h2d" : "d2h",
                   static_cast<double>(bytes) / (1 << 20));
      auto launch = [&] {
        if (h2d)
          CUDA_CHECK(cudaMemcpyAsync(dev_buf, host, bytes, cudaMemcpyHostToDevice, stream));
        else
          CUDA_CHECK(cudaMemcpyAsync(host, dev_buf, bytes, cudaMemcpyDeviceToHost, stream));
      };
      int iters = 0;
      const double t = microbench::time_op(kProg, launch, stream, /*warmup=*/3, /*target_s=*/0.2,
                                           /*min_iters=*/5,
                                           /*max_iters=*/2000, &iters);
      common_fields(h2d ? "h2d" : "d2h", dev)
          .integer("bytes", static_cast<long long>(bytes))
          .num("time_s", t)
          .num("gbps", static_cast<double>(bytes) / t / 1e9)
          .boolean("pinned", true)
          .integer("iters", iters)
          .print();
    }
  }

  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(dev_buf));
  CUDA_CHECK(cudaFreeHost(host));
  return 0;
}
