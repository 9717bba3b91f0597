// embedding_bench: pooled embedding-bag gather. A table of R rows x D columns (fp32 or bf16),
// a batch of B samples with L ids each (ids drawn on the host from a Zipf(alpha) distribution
// over the R rows), and a kernel that sums each sample's L rows into a B x D output.
//
// Prints one JSON object per line on stdout (see README.md); progress and errors go to stderr.
// Usage: microbench_embedding [--device N] [--rows R] [--batch B] [--help]
//
// Zipf sampling: rank i (0-based) has weight 1/(i+1)^alpha (alpha = 0 is uniform); a uniform
// u in [0, total) is mapped to the first rank whose cumulative weight exceeds u (inverse CDF
// by binary search). Ranks are spread over the table by the bijection
// row = (rank * P) mod R, P coprime with R, so hot rows are not adjacent in memory (as
// with hashed ids). The generator is std::mt19937_64 with a fixed seed, so ids are
// deterministic.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "microbench_common.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

namespace {

const char* const kProg = "microbench_embedding";

#define CUDA_CHECK(expr) MICROBENCH_CHECK_CUDA(kProg, expr)

using microbench::common_fields;
using microbench::DeviceInfo;
using microbench::JsonLine;

// ---- Zipf ids ----------------------------------------------------------------------------

constexpr uint64_t kSeed = 20240611;

// Deterministic uniform double in [0, 1) from the top 53 bits of a 64-bit draw.
double uniform01(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

class ZipfSampler {
 public:
  ZipfSampler(int64_t rows, double alpha) : cdf_(static_cast<size_t>(rows)) {
    double total = 0;
    for (int64_t i = 0; i < rows; ++i) {
      total += alpha == 0 ? 1.0 : std::pow(static_cast<double>(i + 1), -alpha);
      cdf_[static_cast<size_t>(i)] = total;
    }
  }
  // Returns a rank in [0, rows): rank 0 is the most frequent.
  int64_t operator()(std::mt19937_64& rng) const {
    const double u = uniform01(rng) * cdf_.back();
    auto it = std::upper_bound(cdf_.begin(), cdf_.end(), u);
    if (it == cdf_.end()) --it;
    return it - cdf_.begin();
  }

 private:
  std::vector<double> cdf_;
};

// Multiplier of the rank -> row bijection: coprime with `rows`.
uint64_t scatter_multiplier(uint64_t rows) {
  uint64_t p = 2654435761ull % rows;
  if (p < 2) p = 1;
  while (std::gcd(p, rows) != 1) ++p;
  return p;
}

std::vector<int32_t> make_ids(int64_t rows, double alpha, size_t count) {
  ZipfSampler zipf(rows, alpha);
  std::mt19937_64 rng(kSeed + static_cast<uint64_t>(std::llround(alpha * 1000)));
  const uint64_t mult = scatter_multiplier(static_cast<uint64_t>(rows));
  std::vector<int32_t> ids(count);
  for (auto& id : ids) {
    const uint64_t rank = static_cast<uint64_t>(zipf(rng));
    id = static_cast<int32_t>((rank * mult) % static_cast<uint64_t>(rows));
  }
  return ids;
}

// ---- kernels -----------------------------------------------------------------------------

// One thread per (sample, 16-byte chunk of a row): fp32 rows are D/4 float4 chunks, bf16 rows
// are D/8 chunks of 8 values. Accumulation is in fp32; the output has the table's dtype.
__global__ void pool_fp32(const float4* __restrict__ table, const int32_t* __restrict__ ids,
                          float4* __restrict__ out, int batch, int pooling, int chunks) {
  const size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (t >= static_cast<size_t>(batch) * chunks) return;
  const size_t sample = t / chunks;
  const int c = static_cast<int>(t % chunks);
  const int32_t* sid = ids + sample * pooling;
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 4
  for (int l = 0; l < pooling; ++l) {
    const float4 v = __ldg(table + static_cast<size_t>(__ldg(sid + l)) * chunks + c);
    acc.x += v.x;
    acc.y += v.y;
    acc.z += v.z;
    acc.w += v.w;
  }
  out[t] = acc;
}

__device__ inline void add_bf16x2(float* acc, uint32_t bits) {
  __nv_bfloat162 h;
  static_assert(sizeof h == sizeof bits, "bf16x2 size");
  memcpy(&h, &bits, sizeof bits);
  const float2 f = __bfloat1622float2(h);
  acc[0] += f.x;
  acc[1] += f.y;
}

__device__ inline uint32_t pack_bf16x2(float a, float b) {
  const __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
  uint32_t bits;
  memcpy(&bits, &h, sizeof bits);
  return bits;
}

__global__ void pool_bf16(const uint4* __restrict__ table, const int32_t* __restrict__ ids,
                          uint4* __restrict__ out, int batch, int pooling, int chunks) {
  const size_t t = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (t >= static_cast<size_t>(batch) * chunks) return;
  const size_t sample = t / chunks;
  const int c = static_cast<int>(t % chunks);
  const int32_t* sid = ids + sample * pooling;
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll 4
  for (int l = 0; l < pooling; ++l) {
    const uint4 v = __ldg(table + static_cast<size_t>(__ldg(sid + l)) * chunks + c);
    add_bf16x2(acc + 0, v.x);
    add_bf16x2(acc + 2, v.y);
    add_bf16x2(acc + 4, v.z);
    add_bf16x2(acc + 6, v.w);
  }
  out[t] = make_uint4(pack_bf16x2(acc[0], acc[1]), pack_bf16x2(acc[2], acc[3]),
                      pack_bf16x2(acc[4], acc[5]), pack_bf16x2(acc[6], acc[7]));
}

__device__ inline float hash_value(size_t i) {
  uint64_t x = i * 0x9E3779B97F4A7C15ULL + 12345;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 29;
  return static_cast<float>((x >> 40) & 0xffffff) * (1.0f / 16777216.0f) - 0.5f;
}

__global__ void fill_fp32(float* p, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    p[i] = hash_value(i);
}

__global__ void fill_bf16(__nv_bfloat16* p, size_t n) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    p[i] = __float2bfloat16(hash_value(i));
}

void usage() {
  std::fprintf(stderr,
               "usage: %s [--device N] [--rows R] [--batch B]\n"
               "  --rows R   table rows (default 10000000, halved until the table fits)\n"
               "  --batch B  samples per batch (default 16384)\n"
               "Prints one JSON object per (dtype, alpha, dim, pooling) on stdout.\n",
               kProg);
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  int64_t rows = 10000000;
  int batch = 16384;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else if (arg == "--rows" && i + 1 < argc) {
      rows = std::atoll(argv[++i]);
    } else if (arg == "--batch" && i + 1 < argc) {
      batch = std::atoi(argv[++i]);
    } else if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else {
      usage();
      return 2;
    }
  }
  if (rows < 1 || rows > INT32_MAX || batch < 1) {
    std::fprintf(stderr, "%s: --rows must be in [1, 2^31) and --batch positive\n", kProg);
    return 2;
  }
  const int kDims[] = {16, 32, 64, 128, 256};
  const int kPoolings[] = {1, 8, 32};
  const double kAlphas[] = {0.0, 0.9, 1.1};
  const int max_dim = 256, max_pooling = 32;

  DeviceInfo dev = microbench::open_device(kProg, device);
  std::fprintf(stderr, "%s: %s, driver %s, runtime %s\n", kProg, dev.prop.name, dev.driver.c_str(),
               dev.runtime.c_str());

  // One buffer sized for the fp32 table at the largest dim, reused for every (dtype, dim).
  const size_t ids_bytes = static_cast<size_t>(batch) * max_pooling * sizeof(int32_t);
  const size_t out_bytes = static_cast<size_t>(batch) * max_dim * sizeof(float);
  size_t free_b = 0, total_b = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
  while (rows > 1024 &&
         static_cast<double>(rows) * max_dim * sizeof(float) + ids_bytes + out_bytes >
             0.9 * static_cast<double>(free_b)) {
    rows /= 2;
  }
  const size_t table_bytes = static_cast<size_t>(rows) * max_dim * sizeof(float);
  std::fprintf(stderr, "%s: %lld rows (%.2f GiB table buffer)\n", kProg,
               static_cast<long long>(rows), static_cast<double>(table_bytes) / (1 << 30));

  void *table = nullptr, *out = nullptr;
  int32_t* ids_dev = nullptr;
  CUDA_CHECK(cudaMalloc(&table, table_bytes));
  CUDA_CHECK(cudaMalloc(&out, out_bytes));
  CUDA_CHECK(cudaMalloc(&ids_dev, ids_bytes));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // ids for the largest pooling; smaller poolings use the first batch * L of them.
  std::vector<std::vector<int32_t>> ids_by_alpha;
  for (double alpha : kAlphas) {
    std::fprintf(stderr, "%s: drawing ids, zipf alpha %.2f\n", kProg, alpha);
    ids_by_alpha.push_back(make_ids(rows, alpha, static_cast<size_t>(batch) * max_pooling));
  }

  const char* kDtypes[] = {"fp32", "bf16"};
  for (const char* dtype : kDtypes) {
    const bool fp32 = dtype[0] == 'f';
    const size_t elem = fp32 ? sizeof(float) : sizeof(__nv_bfloat16);
    const size_t table_elems = static_cast<size_t>(rows) * max_dim;
    if (fp32)
      fill_fp32<<<4096, 256, 0, stream>>>(static_cast<float*>(table), table_elems);
    else
      fill_bf16<<<4096, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(table), table_elems);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaStreamSynchronize(stream));
    for (size_t ai = 0; ai < ids_by_alpha.size(); ++ai) {
      CUDA_CHECK(cudaMemcpy(ids_dev, ids_by_alpha[ai].data(), ids_bytes, cudaMemcpyHostToDevice));
      for (int dim : kDims) {
        const int chunks = static_cast<int>(dim * elem / 16);  // 16-byte chunks per row
        for (int pooling : kPoolings) {
          const size_t threads = static_cast<size_t>(batch) * chunks;
          const unsigned grid = static_cast<unsigned>((threads + 255) / 256);
          auto launch = [&] {
            if (fp32)
              pool_fp32<<<grid, 256, 0, stream>>>(static_cast<const float4*>(table), ids_dev,
                                                  static_cast<float4*>(out), batch, pooling,
                                                  chunks);
            else
              pool_bf16<<<grid, 256, 0, stream>>>(static_cast<const uint4*>(table), ids_dev,
                                                  static_cast<uint4*>(out), batch, pooling, chunks);
          };
          std::fprintf(stderr, "%s: %s alpha=%.2f dim=%d pooling=%d\n", kProg, dtype, kAlphas[ai],
                       dim, pooling);
          int iters = 0;
          const double t =
              microbench::time_op(kProg, launch, stream, /*warmup=*/5, /*target_s=*/0.1,
                                  /*min_iters=*/10, /*max_iters=*/10000, &iters);
          const double bytes = static_cast<double>(batch) * pooling * dim * elem;
          common_fields("embedding", dev)
              .str("dtype", dtype)
              .integer("rows", rows)
              .integer("dim", dim)
              .integer("pooling", pooling)
              .integer("batch", batch)
              .num("zipf_alpha", kAlphas[ai])
              .integer("bytes", static_cast<long long>(bytes))
              .num("time_s", t)
              .num("gbps", bytes / t / 1e9)
              .integer("iters", iters)
              .print();
        }
      }
    }
  }

  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(table));
  CUDA_CHECK(cudaFree(out));
  CUDA_CHECK(cudaFree(ids_dev));
  return 0;
}
