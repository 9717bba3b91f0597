// nccl_bench: NCCL collective bandwidth across all GPUs of the node from one process
// (ncclCommInitAll, one stream per GPU, group calls). Ops: all_reduce, all_gather,
// reduce_scatter, alltoall (ncclSend/ncclRecv pairs in a group), broadcast (root 0) and
// sendrecv (rank r sends to r+1 and receives from r-1), float data, out-of-place, sizes from
// 8 B to 1 GiB in powers of 2.
//
// Size convention as in nccl-tests: "bytes" is the larger of one rank's send and receive
// buffers, i.e. the whole gathered buffer for all_gather, the whole input for reduce_scatter
// and the whole send buffer for alltoall. Sizes are rounded down to a multiple of
// ranks * 4 bytes where the op splits the buffer across ranks; sizes that leave less than one
// float per rank are skipped.
//
// Prints one JSON object per line on stdout (see README.md); progress and errors go to stderr.
// Usage: microbench_nccl [--max-bytes N] [--op LIST] [--help]

#include <cuda_runtime.h>

#include <nccl.h>
#include "microbench_common.cuh"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

const char* const kProg = "microbench_nccl";

#define CUDA_CHECK(expr) MICROBENCH_CHECK_CUDA(kProg, expr)

#define NCCL_CHECK(expr)                                                                         \
  do {                                                                                           \
    ncclResult_t res_ = (expr);                                                                  \
    if (res_ != ncclSuccess) {                                                                   \
      std::fprintf(stderr, "%s: NCCL error %d (%s) at %s:%d in %s\n", kProg,                     \
                   static_cast<int>(res_), ncclGetErrorString(res_), __FILE__, __LINE__, #expr); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

using microbench::common_fields;
using microbench::DeviceInfo;
using microbench::JsonLine;

// ---- collectives -------------------------------------------------------------------------

enum class Op { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kSendRecv };

struct OpInfo {
  Op op;
  const char* name;
};

const OpInfo kOps[] = {
    {Op::kAllReduce, "all_reduce"},         {Op::kAllGather, "all_gather"},
    {Op::kReduceScatter, "reduce_scatter"}, {Op::kAllToAll, "alltoall"},
    {Op::kBroadcast, "broadcast"},          {Op::kSendRecv, "sendrecv"},
};

// nccl-tests bus-bandwidth factor.
double busbw_factor(Op op, int n) {
  switch (op) {
    case Op::kAllReduce:
      return 2.0 * (n - 1) / n;
    case Op::kAllGather:
    case Op::kReduceScatter:
    case Op::kAllToAll:
      return static_cast<double>(n - 1) / n;
    default:
      return 1.0;
  }
}

struct Rank {
  int device;
  ncclComm_t comm;
  cudaStream_t stream;
  float* send;
  float* recv;
  cudaEvent_t start, stop;
};

// `count` is the number of floats in the nccl-tests "bytes" buffer (see the file comment).
void enqueue(Op op, std::vector<Rank>& ranks, size_t count) {
  const int n = static_cast<int>(ranks.size());
  const size_t per_rank = count / n;
  NCCL_CHECK(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    Rank& k = ranks[r];
    switch (op) {
      case Op::kAllReduce:
        NCCL_CHECK(ncclAllReduce(k.send, k.recv, count, ncclFloat, ncclSum, k.comm, k.stream));
        break;
      case Op::kAllGather:
        NCCL_CHECK(ncclAllGather(k.send, k.recv, per_rank, ncclFloat, k.comm, k.stream));
        break;
      case Op::kReduceScatter:
        NCCL_CHECK(
            ncclReduceScatter(k.send, k.recv, per_rank, ncclFloat, ncclSum, k.comm, k.stream));
        break;
      case Op::kAllToAll:
        for (int p = 0; p < n; ++p) {
          NCCL_CHECK(ncclSend(k.send + p * per_rank, per_rank, ncclFloat, p, k.comm, k.stream));
          NCCL_CHECK(ncclRecv(k.recv + p * per_rank, per_rank, ncclFloat, p, k.comm, k.stream));
        }
        break;
      case Op::kBroadcast:
        NCCL_CHECK(ncclBroadcast(k.send, k.recv, count, ncclFloat, /*root=*/0, k.comm, k.stream));
        break;
      case Op::kSendRecv:
        NCCL_CHECK(ncclSend(k.send, count, ncclFloat, (r + 1) % n, k.comm, k.stream));
        NCCL_CHECK(ncclRecv(k.recv, count, ncclFloat, (r + n - 1) % n, k.comm, k.stream));
        break;
    }
  }
  NCCL_CHECK(ncclGroupEnd());
}

void check_async(std::vector<Rank>& ranks) {
  for (Rank& k : ranks) {
    ncclResult_t async = ncclSuccess;
    NCCL_CHECK(ncclCommGetAsyncError(k.comm, &async));
    NCCL_CHECK(async);
  }
}

void synchronize(std::vector<Rank>& ranks) {
  for (Rank& k : ranks) {
    CUDA_CHECK(cudaSetDevice(k.device));
    CUDA_CHECK(cudaStreamSynchronize(k.stream));
  }
  check_async(ranks);
}

// Times `iters` back-to-back operations; returns the mean seconds per operation, taken as the
// slowest rank's elapsed time between its start and stop events.
double time_iters(Op op, std::vector<Rank>& ranks, size_t count, int iters) {
  for (Rank& k : ranks) {
    CUDA_CHECK(cudaSetDevice(k.device));
    CUDA_CHECK(cudaEventRecord(k.start, k.stream));
  }
  for (int i = 0; i < iters; ++i) enqueue(op, ranks, count);
  for (Rank& k : ranks) {
    CUDA_CHECK(cudaSetDevice(k.device));
    CUDA_CHECK(cudaEventRecord(k.stop, k.stream));
  }
  synchronize(ranks);
  double worst = 0;
  for (Rank& k : ranks) {
    float ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&ms, k.start, k.stop));
    worst = std::max(worst, static_cast<double>(ms) * 1e-3);
  }
  return worst / iters;
}

__global__ void fill_kernel(float* p, size_t n, float v) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n; i += stride)
    p[i] = v + static_cast<float>(i % 1024) * 1e-3f;
}

std::string nccl_version_string(int code) {
  // Since NCCL 2.9 the code is major*10000 + minor*100 + patch; before, major*1000 + minor*100.
  if (code >= 10000)
    return std::to_string(code / 10000) + "." + std::to_string((code % 10000) / 100) + "." +
           std::to_string(code % 100);
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 100) + "." +
         std::to_string(code % 100);
}

void usage() {
  std::fprintf(stderr,
               "usage: %s [--max-bytes N] [--op LIST]\n"
               "  --max-bytes N  largest size in bytes (default 1073741824)\n"
               "  --op LIST      comma-separated subset of all_reduce,all_gather,reduce_scatter,\n"
               "                 alltoall,broadcast,sendrecv (default all)\n"
               "Uses every visible GPU (set CUDA_VISIBLE_DEVICES to choose).\n"
               "Prints one JSON object per op and size on stdout.\n",
               kProg);
}

}  // namespace

int main(int argc, char** argv) {
  size_t max_bytes = 1ull << 30;
  std::string op_list = "all_reduce,all_gather,reduce_scatter,alltoall,broadcast,sendrecv";
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--max-bytes" && i + 1 < argc) {
      max_bytes = std::strtoull(argv[++i], nullptr, 10);
    } else if (arg == "--op" && i + 1 < argc) {
      op_list = argv[++i];
    } else if (arg == "--help" || arg == "-h") {
      usage();
      return 0;
    } else {
      usage();
      return 2;
    }
  }
  const std::vector<std::string> wanted = microbench::split_commas(op_list);
  for (const auto& w : wanted) {
    bool known = false;
    for (const auto& o : kOps) known = known || w == o.name;
    if (!known) {
      std::fprintf(stderr, "%s: unknown op '%s'\n", kProg, w.c_str());
      return 2;
    }
  }

  DeviceInfo dev = microbench::open_device(kProg, 0);  // reported device: the first rank's GPU
  int n = 0;
  CUDA_CHECK(cudaGetDeviceCount(&n));
  int nccl_code = 0;
  NCCL_CHECK(ncclGetVersion(&nccl_code));
  const std::string nccl_version = nccl_version_string(nccl_code);
  std::fprintf(stderr, "%s: %d x %s, driver %s, runtime %s, NCCL %s\n", kProg, n, dev.prop.name,
               dev.driver.c_str(), dev.runtime.c_str(), nccl_version.c_str());

  // Buffers of max_bytes on every GPU for both send and receive, shrunk to fit.
  for (int d = 0; d < n; ++d) {
    CUDA_CHECK(cudaSetDevice(d));
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    while (max_bytes > 8 && 2.0 * max_bytes > 0.8 * static_cast<double>(free_b)) max_bytes /= 2;
  }
  std::fprintf(stderr, "%s: sizes 8 B to %zu B\n", kProg, max_bytes);

  std::vector<int> devices(n);
  for (int d = 0; d < n; ++d) devices[d] = d;
  std::vector<ncclComm_t> comms(n);
  NCCL_CHECK(ncclCommInitAll(comms.data(), n, devices.data()));
  std::vector<Rank> ranks(n);
  const size_t max_floats = max_bytes / sizeof(float);
  for (int r = 0; r < n; ++r) {
    Rank& k = ranks[r];
    k.device = r;
    k.comm = comms[r];
    CUDA_CHECK(cudaSetDevice(r));
    CUDA_CHECK(cudaStreamCreateWithFlags(&k.stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaMalloc(&k.send, std::max<size_t>(max_floats, 1) * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&k.recv, std::max<size_t>(max_floats, 1) * sizeof(float)));
    fill_kernel<<<1024, 256, 0, k.stream>>>(k.send, max_floats, 1.0f + r);
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaMemsetAsync(k.recv, 0, max_floats * sizeof(float), k.stream));
    CUDA_CHECK(cudaEventCreate(&k.start));
    CUDA_CHECK(cudaEventCreate(&k.stop));
  }
  synchronize(ranks);

  for (const OpInfo& info : kOps) {
    if (std::find(wanted.begin(), wanted.end(), info.name) == wanted.end()) continue;
    const bool split =
        info.op == Op::kAllGather || info.op == Op::kReduceScatter || info.op == Op::kAllToAll;
    for (size_t size = 8; size <= max_bytes; size *= 2) {
      size_t count = size / sizeof(float);
      if (split) count = count / n * n;
      if (count == 0) {
        std::fprintf(stderr, "%s: skipping %s %zu B: less than one float per rank\n", kProg,
                     info.name, size);
        continue;
      }
      const double bytes = static_cast<double>(count) * sizeof(float);
      std::fprintf(stderr, "%s: %s %.0f B\n", kProg, info.name, bytes);
      for (int w = 0; w < 5; ++w) enqueue(info.op, ranks, count);  // warm-up
      synchronize(ranks);
      const double one = std::max(time_iters(info.op, ranks, count, 1), 1e-7);
      const int iters = static_cast<int>(std::min(1000.0, std::max(10.0, std::floor(0.1 / one))));
      const double t = time_iters(info.op, ranks, count, iters);
      const double algbw = bytes / t / 1e9;
      common_fields("nccl", dev)
          .str("op", info.name)
          .integer("ranks", n)
          .integer("bytes", static_cast<long long>(bytes))
          .num("time_s", t)
          .num("algbw", algbw)
          .num("busbw", algbw * busbw_factor(info.op, n))
          .str("nccl_version", nccl_version)
          .integer("iters", iters)
          .print();
    }
  }

  for (Rank& k : ranks) {
    CUDA_CHECK(cudaSetDevice(k.device));
    CUDA_CHECK(cudaEventDestroy(k.start));
    CUDA_CHECK(cudaEventDestroy(k.stop));
    CUDA_CHECK(cudaFree(k.send));
    CUDA_CHECK(cudaFree(k.recv));
    CUDA_CHECK(cudaStreamDestroy(k.stream));
    NCCL_CHECK(ncclCommDestroy(k.comm));
  }
  return 0;
}
