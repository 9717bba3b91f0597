// gemm_bench: cuBLASLt matrix-multiply throughput for bf16, fp16, tf32, fp32 and fp8 (e4m3).
//
// Prints one JSON object per line on stdout (see README.md); progress and errors go to stderr.
// Usage: microbench_gemm [--device N] [--dtype LIST] [--help]
//   --dtype LIST  comma-separated subset of bf16,fp16,tf32,fp32,fp8 (default: all)

#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
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

const char* const kProg = "microbench_gemm";

#define CUDA_CHECK(expr) MICROBENCH_CHECK_CUDA(kProg, expr)

#define CUBLAS_CHECK(expr)                                                                        \
  do {                                                                                            \
    cublasStatus_t st_ = (expr);                                                                  \
    if (st_ != CUBLAS_STATUS_SUCCESS) {                                                           \
      std::fprintf(stderr, "%s: cuBLAS error %s (%d) at %s:%d in %s\n", kProg,                    \
                   cublasLtGetStatusName(st_), static_cast<int>(st_), __FILE__, __LINE__, #expr); \
      std::exit(1);                                                                               \
    }                                                                                             \
  } while (0)

using microbench::common_fields;
using microbench::DeviceInfo;
using microbench::JsonLine;

// ---- data initialisation -----------------------------------------------------------------

__host__ __device__ inline uint32_t hash32(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return static_cast<uint32_t>(x);
}

__device__ inline void store_value(float* p, float v) { *p = v; }
__device__ inline void store_value(__half* p, float v) { *p = __float2half(v); }
__device__ inline void store_value(__nv_bfloat16* p, float v) { *p = __float2bfloat16(v); }
__device__ inline void store_value(__nv_fp8_e4m3* p, float v) { *p = __nv_fp8_e4m3(v); }

// Uniform values in [-1, 1): realistic bit patterns (all-zero inputs draw less power).
template <class T>
__global__ void fill_uniform(T* p, size_t n, uint64_t seed) {
  size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    float v = (hash32(i + seed * 0x9E3779B97F4A7C15ULL) >> 8) * (1.0f / 8388608.0f) - 1.0f;
    store_value(p + i, v);
  }
}

template <class T>
void fill(void* p, size_t n, uint64_t seed, cudaStream_t s) {
  fill_uniform<T><<<1024, 256, 0, s>>>(static_cast<T*>(p), n, seed);
  CUDA_CHECK(cudaGetLastError());
}

// ---- GEMM configurations -----------------------------------------------------------------

struct DtypeConfig {
  const char* name;
  cudaDataType_t ab_type;  // A and B
  cudaDataType_t cd_type;  // C and D
  cublasComputeType_t compute;
  size_t ab_size, cd_size;  // bytes per element
  int min_cc;               // minimum compute capability (major*10+minor)
  void (*fill_ab)(void*, size_t, uint64_t, cudaStream_t);
  void (*fill_cd)(void*, size_t, uint64_t, cudaStream_t);
};

const DtypeConfig kDtypes[] = {
    {"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, 80, fill<__nv_bfloat16>,
     fill<__nv_bfloat16>},
    {"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2, 70, fill<__half>, fill<__half>},
    {"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, 80, fill<float>,
     fill<float>},
    {"fp32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, 0, fill<float>, fill<float>},
    // FP8 matmuls in cuBLASLt need the "TN" layout (which we use for every dtype); the output
    // is bf16 with the default scale factors of 1.
    {"fp8", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2, 89, fill<__nv_fp8_e4m3>,
     fill<__nv_bfloat16>},
};

struct Shape {
  long long m, n, k;
};

std::vector<Shape> shapes() {
  std::vector<Shape> v;
  for (long long s = 256; s <= 16384; s *= 2) v.push_back({s, s, s});
  v.push_back({8192, 8192, 1024});
  v.push_back({65536, 1024, 1024});
  v.push_back({1024, 1024, 65536});
  v.push_back({16384, 4096, 4096});
  v.push_back({8192, 28672, 8192});
  return v;
}

constexpr size_t kWorkspaceBytes = 64ull << 20;

// Runs and times D = A^T * B (column-major, A stored k x m, B stored k x n, D m x n).
// Returns false when cuBLASLt has no algorithm for the case.
bool run_case(cublasLtHandle_t lt, const DtypeConfig& dt, const Shape& s, void* workspace,
              cudaStream_t stream, double* time_s, int* iters) {
  const size_t a_elems = static_cast<size_t>(s.k) * s.m;
  const size_t b_elems = static_cast<size_t>(s.k) * s.n;
  const size_t d_elems = static_cast<size_t>(s.m) * s.n;
  void *a = nullptr, *b = nullptr, *d = nullptr;
  CUDA_CHECK(cudaMalloc(&a, a_elems * dt.ab_size));
  CUDA_CHECK(cudaMalloc(&b, b_elems * dt.ab_size));
  CUDA_CHECK(cudaMalloc(&d, d_elems * dt.cd_size));
  dt.fill_ab(a, a_elems, 1, stream);
  dt.fill_ab(b, b_elems, 2, stream);
  dt.fill_cd(d, d_elems, 3, stream);

  cublasLtMatmulDesc_t op;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&op, dt.compute, CUDA_R_32F));
  cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  cublasLtMatrixLayout_t la, lb, ld;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&la, dt.ab_type, s.k, s.m, s.k));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, dt.ab_type, s.k, s.n, s.k));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&ld, dt.cd_type, s.m, s.n, s.m));
  cublasLtMatmulPreference_t pref;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = kWorkspaceBytes;
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &ws, sizeof ws));
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  cublasStatus_t hs =
      cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, ld, ld, pref, 1, &heur, &found);
  bool ok = hs == CUBLAS_STATUS_SUCCESS && found > 0;
  if (ok) {
    const float alpha = 1.0f, beta = 0.0f;
    auto launch = [&] {
      CUBLAS_CHECK(cublasLtMatmul(lt, op, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &heur.algo,
                                  workspace, kWorkspaceBytes, stream));
    };
    *time_s =
        microbench::time_op(kProg, launch, stream, /*warmup=*/3, /*target_s=*/0.25, /*min_iters=*/5,
                            /*max_iters=*/2000, iters);
  } else {
    std::fprintf(stderr,
                 "%s: skipping %s m=%lld n=%lld k=%lld: no cuBLASLt algorithm (status %d)\n", kProg,
                 dt.name, s.m, s.n, s.k, static_cast<int>(hs));
  }
  CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(la));
  CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(lb));
  CUBLAS_CHECK(cublasLtMatrixLayoutDestroy(ld));
  CUBLAS_CHECK(cublasLtMatmulDescDestroy(op));
  CUDA_CHECK(cudaFree(a));
  CUDA_CHECK(cudaFree(b));
  CUDA_CHECK(cudaFree(d));
  return ok;
}

void usage() {
  std::fprintf(stderr,
               "usage: %s [--device N] [--dtype LIST]\n"
               "  --dtype LIST  comma-separated subset of bf16,fp16,tf32,fp32,fp8 (default all)\n"
               "Prints one JSON object per GEMM on stdout.\n",
               kProg);
}

}  // namespace

int main(int argc, char** argv) {
  int device = 0;
  std::string dtype_list = "bf16,fp16,tf32,fp32,fp8";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else if (arg == "--dtype" && i + 1 < argc) {
      dtype_list = argv[++i];
    } else if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else {
      usage();
      return 2;
    }
  }
  const std::vector<std::string> wanted = microbench::split_commas(dtype_list);
  for (const auto& w : wanted) {
    bool known = false;
    for (const auto& dt : kDtypes) known = known || w == dt.name;
    if (!known) {
      std::fprintf(stderr, "%s: unknown dtype '%s'\n", kProg, w.c_str());
      return 2;
    }
  }

  DeviceInfo dev = microbench::open_device(kProg, device);
  const int cc = dev.prop.major * 10 + dev.prop.minor;
  std::fprintf(stderr, "%s: %s (sm_%d), driver %s, runtime %s\n", kProg, dev.prop.name, cc,
               dev.driver.c_str(), dev.runtime.c_str());

  cublasLtHandle_t lt;
  CUBLAS_CHECK(cublasLtCreate(&lt));
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  void* workspace = nullptr;
  CUDA_CHECK(cudaMalloc(&workspace, kWorkspaceBytes));

  for (const auto& dt : kDtypes) {
    if (std::find(wanted.begin(), wanted.end(), dt.name) == wanted.end()) continue;
    if (cc < dt.min_cc) {
      std::fprintf(stderr, "%s: skipping %s: needs compute capability >= %d.%d, device is %d.%d\n",
                   kProg, dt.name, dt.min_cc / 10, dt.min_cc % 10, dev.prop.major, dev.prop.minor);
      continue;
    }
    for (const Shape& s : shapes()) {
      const double need = static_cast<double>(s.k) * (s.m + s.n) * dt.ab_size +
                          static_cast<double>(s.m) * s.n * dt.cd_size;
      size_t free_b = 0, total_b = 0;
      CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
      if (need > 0.9 * static_cast<double>(free_b)) {
        std::fprintf(
            stderr, "%s: skipping %s m=%lld n=%lld k=%lld: needs %.2f GiB, %.2f GiB free\n", kProg,
            dt.name, s.m, s.n, s.k, need / (1 << 30), static_cast<double>(free_b) / (1 << 30));
        continue;
      }
      std::fprintf(stderr, "%s: %s m=%lld n=%lld k=%lld\n", kProg, dt.name, s.m, s.n, s.k);
      double t = 0;
      int iters = 0;
      if (!run_case(lt, dt, s, workspace, stream, &t, &iters)) continue;
      const double flops = 2.0 * s.m * s.n * s.k;
      common_fields("gemm", dev)
          .str("dtype", dt.name)
          .integer("m", s.m)
          .integer("n", s.n)
          .integer("k", s.k)
          .integer("flops", static_cast<long long>(flops))
          .num("time_s", t)
          .num("tflops", flops / t / 1e12)
          .integer("iters", iters)
          .print();
    }
  }

  CUDA_CHECK(cudaFree(workspace));
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUBLAS_CHECK(cublasLtDestroy(lt));
  return 0;
}
