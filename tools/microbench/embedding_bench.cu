// embedding_bench: pooled embedding-bag gather. A table of R rows x D columns (fp32 or bf16),
// a batch of B samples with L ids each (ids drawn on the host from a Zipf(alpha) distribution
// over the R rows), and a kernel that sums each sample's L rows into a B x D output. Then the
// backward pass with the optimizer fused, as FBGEMM's table-batched backward runs it (fp32 rows,
// exact row-wise Adagrad): the (id, sample) pairs sorted by id, the runs of equal ids found, and
// per distinct row its gradient summed over its occurrences, its state and its row updated.
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

#include <cub/cub.cuh>
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

// ---- backward with row-wise Adagrad ------------------------------------------------------

// The sample of every id slot (slot i belongs to sample i / L).
__global__ void slot_samples(int32_t* samples, int n, int pooling) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) samples[i] = i / pooling;
}

// One warp per distinct row (launched for n rows at most; warps past the run count return): the
// row's gradient is the sum of its samples' output gradients (each lane a float4 chunk, two at
// most for D <= 256), its state grows by the mean squared gradient, and the row moves by
// -lr * gradient / (sqrt(state) + eps).
__global__ void adagrad_rows(float4* __restrict__ table, float* __restrict__ state,
                             const float4* __restrict__ grad, const int32_t* __restrict__ rows,
                             const int32_t* __restrict__ offsets,
                             const int32_t* __restrict__ counts,
                             const int32_t* __restrict__ samples, const int* __restrict__ runs,
                             int chunks, float lr, float eps) {
  const int warp = static_cast<int>((blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x) / 32);
  const int lane = threadIdx.x % 32;
  if (warp >= *runs) return;
  const int32_t row = rows[warp];
  const int32_t first = offsets[warp], count = counts[warp];
  float4 acc[2] = {make_float4(0.f, 0.f, 0.f, 0.f), make_float4(0.f, 0.f, 0.f, 0.f)};
  for (int k = first; k < first + count; ++k) {
    const size_t base = static_cast<size_t>(__ldg(samples + k)) * chunks;
    for (int j = 0; j < 2; ++j) {
      const int c = lane + 32 * j;
      if (c >= chunks) break;
      const float4 g = __ldg(grad + base + c);
      acc[j].x += g.x;
      acc[j].y += g.y;
      acc[j].z += g.z;
      acc[j].w += g.w;
    }
  }
  float squares = 0.f;
  for (int j = 0; j < 2; ++j) {
    squares += acc[j].x * acc[j].x + acc[j].y * acc[j].y + acc[j].z * acc[j].z +
               acc[j].w * acc[j].w;
  }
  for (int offset = 16; offset > 0; offset /= 2) squares += __shfl_down_sync(0xffffffffu, squares, offset);
  float s = 0.f;
  if (lane == 0) {
    s = state[row] + squares / static_cast<float>(chunks * 4);
    state[row] = s;
  }
  s = __shfl_sync(0xffffffffu, s, 0);
  const float rate = lr / (sqrtf(s) + eps);
  for (int j = 0; j < 2; ++j) {
    const int c = lane + 32 * j;
    if (c >= chunks) break;
    float4 w = table[static_cast<size_t>(row) * chunks + c];
    w.x -= rate * acc[j].x;
    w.y -= rate * acc[j].y;
    w.z -= rate * acc[j].z;
    w.w -= rate * acc[j].w;
    table[static_cast<size_t>(row) * chunks + c] = w;
  }
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
               "Prints one JSON object per (dtype, alpha, dim, pooling) on stdout, forward\n"
               "(bench embedding) then backward with row-wise Adagrad (embedding_backward).\n",
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
         static_cast<double>(rows) * (max_dim + 1) * sizeof(float) + 8 * ids_bytes + out_bytes >
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

  // Backward with the optimizer (fp32 rows, row-wise Adagrad), on the same ids; the output
  // buffer holds the output gradients. Timed: slot samples, sort by id, runs, offsets, update.
  {
    const int n_max = batch * max_pooling;
    int32_t *keys_out = nullptr, *samples_in = nullptr, *samples_out = nullptr;
    int32_t *unique = nullptr, *counts = nullptr, *offsets = nullptr;
    int* runs = nullptr;
    float* state = nullptr;
    CUDA_CHECK(cudaMalloc(&keys_out, ids_bytes));
    CUDA_CHECK(cudaMalloc(&samples_in, ids_bytes));
    CUDA_CHECK(cudaMalloc(&samples_out, ids_bytes));
    CUDA_CHECK(cudaMalloc(&unique, ids_bytes));
    CUDA_CHECK(cudaMalloc(&counts, ids_bytes));
    CUDA_CHECK(cudaMalloc(&offsets, ids_bytes));
    CUDA_CHECK(cudaMalloc(&runs, sizeof(int)));
    CUDA_CHECK(cudaMalloc(&state, static_cast<size_t>(rows) * sizeof(float)));
    CUDA_CHECK(cudaMemsetAsync(state, 0, static_cast<size_t>(rows) * sizeof(float), stream));
    int bits = 1;
    while (bits < 31 && (int64_t{1} << bits) < rows) ++bits;
    size_t sort_bytes = 0, rle_bytes = 0, scan_bytes = 0;
    CUDA_CHECK(cub::DeviceRadixSort::SortPairs(nullptr, sort_bytes, ids_dev, keys_out, samples_in,
                                               samples_out, n_max, 0, bits, stream));
    CUDA_CHECK(cub::DeviceRunLengthEncode::Encode(nullptr, rle_bytes, keys_out, unique, counts,
                                                  runs, n_max, stream));
    CUDA_CHECK(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, counts, offsets, n_max, stream));
    size_t temp_bytes = std::max(sort_bytes, std::max(rle_bytes, scan_bytes));
    void* temp = nullptr;
    CUDA_CHECK(cudaMalloc(&temp, temp_bytes));
    fill_fp32<<<4096, 256, 0, stream>>>(static_cast<float*>(table),
                                        static_cast<size_t>(rows) * max_dim);
    fill_fp32<<<4096, 256, 0, stream>>>(static_cast<float*>(out),
                                        static_cast<size_t>(batch) * max_dim);
    CUDA_CHECK(cudaGetLastError());
    for (size_t ai = 0; ai < ids_by_alpha.size(); ++ai) {
      CUDA_CHECK(cudaMemcpy(ids_dev, ids_by_alpha[ai].data(), ids_bytes, cudaMemcpyHostToDevice));
      for (int dim : kDims) {
        const int chunks = dim / 4;  // float4 chunks per row
        for (int pooling : kPoolings) {
          const int n = batch * pooling;
          auto launch = [&] {
            slot_samples<<<(n + 255) / 256, 256, 0, stream>>>(samples_in, n, pooling);
            size_t bytes = temp_bytes;
            cub::DeviceRadixSort::SortPairs(temp, bytes, ids_dev, keys_out, samples_in,
                                            samples_out, n, 0, bits, stream);
            bytes = temp_bytes;
            cub::DeviceRunLengthEncode::Encode(temp, bytes, keys_out, unique, counts, runs, n,
                                               stream);
            bytes = temp_bytes;
            cub::DeviceScan::ExclusiveSum(temp, bytes, counts, offsets, n, stream);
            const size_t threads = static_cast<size_t>(n) * 32;
            adagrad_rows<<<static_cast<unsigned>((threads + 255) / 256), 256, 0, stream>>>(
                static_cast<float4*>(table), state, static_cast<const float4*>(out), unique,
                offsets, counts, samples_out, runs, chunks, 0.01f, 1e-8f);
          };
          std::fprintf(stderr, "%s: backward fp32 alpha=%.2f dim=%d pooling=%d\n", kProg,
                       kAlphas[ai], dim, pooling);
          int iters = 0;
          const double t =
              microbench::time_op(kProg, launch, stream, /*warmup=*/3, /*target_s=*/0.1,
                                  /*min_iters=*/10, /*max_iters=*/10000, &iters);
          int distinct = 0;
          CUDA_CHECK(cudaMemcpy(&distinct, runs, sizeof(int), cudaMemcpyDeviceToHost));
          // FBGEMM's backward accounting (twice the forward's rows and outputs) plus the row
          // state read and written: the bytes trainsim's backward kernel model counts.
          const double row = static_cast<double>(dim) * sizeof(float);
          const double bytes = 2.0 * (static_cast<double>(batch) * row +
                                      static_cast<double>(n) * row) +
                               2.0 * distinct * sizeof(float);
          common_fields("embedding_backward", dev)
              .str("dtype", "fp32")
              .str("optimizer", "rowwise_adagrad")
              .integer("rows", rows)
              .integer("dim", dim)
              .integer("pooling", pooling)
              .integer("batch", batch)
              .num("zipf_alpha", kAlphas[ai])
              .integer("unique_rows", distinct)
              .integer("bytes", static_cast<long long>(bytes))
              .num("time_s", t)
              .num("gbps", bytes / t / 1e9)
              .integer("iters", iters)
              .print();
        }
      }
    }
    for (void* p : {static_cast<void*>(keys_out), static_cast<void*>(samples_in),
                    static_cast<void*>(samples_out), static_cast<void*>(unique),
                    static_cast<void*>(counts), static_cast<void*>(offsets),
                    static_cast<void*>(runs), static_cast<void*>(state), temp}) {
      CUDA_CHECK(cudaFree(p));
    }
  }

  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(table));
  CUDA_CHECK(cudaFree(out));
  CUDA_CHECK(cudaFree(ids_dev));
  return 0;
}
