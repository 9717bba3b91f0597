// copy_bench: host<->device copy bandwidth with pinned host memory (cudaMallocHost), both
// directions, sizes from 1 MiB to 1 GiB (powers of 4), one cudaMemcpyAsync per operation.
//
// Prints one JSON object per line on stdout (see README.md); progress and errors go to stderr.
// Usage: microbench_copy [--device N] [--help]

#include <cuda_runtime.h>

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

#define CUDA_CHECK(expr)                                                                    \
  do {                                                                                      \
    cudaError_t err_ = (expr);                                                              \
    if (err_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "%s: CUDA error %s (%s) at %s:%d in %s\n", kProg,                \
                   cudaGetErrorName(err_), cudaGetErrorString(err_), __FILE__, __LINE__,    \
                   #expr);                                                                  \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

// ---- JSON-lines output -------------------------------------------------------------------

std::string json_escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

class JsonLine {
 public:
  JsonLine& str(const char* key, const std::string& v) {
    return raw(key, "\"" + json_escape(v) + "\"");
  }
  JsonLine& integer(const char* key, long long v) { return raw(key, std::to_string(v)); }
  JsonLine& boolean(const char* key, bool v) { return raw(key, v ? "true" : "false"); }
  JsonLine& num(const char* key, double v) {
    if (!std::isfinite(v)) return raw(key, "null");
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    return raw(key, buf);
  }
  void print() const {
    std::printf("{%s}\n", body_.c_str());
    std::fflush(stdout);
  }

 private:
  JsonLine& raw(const char* key, const std::string& value) {
    if (!body_.empty()) body_ += ',';
    body_ += '"';
    body_ += key;
    body_ += "\":";
    body_ += value;
    return *this;
  }
  std::string body_;
};

std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

struct DeviceInfo {
  int index = 0;
  cudaDeviceProp prop{};
  std::string driver, runtime;
};

DeviceInfo open_device(int index) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::fprintf(stderr, "%s: no CUDA device available (%s)\n", kProg,
                 err != cudaSuccess ? cudaGetErrorString(err) : "device count is 0");
    std::exit(1);
  }
  if (index < 0 || index >= count) {
    std::fprintf(stderr, "%s: device %d out of range (found %d)\n", kProg, index, count);
    std::exit(1);
  }
  DeviceInfo d;
  d.index = index;
  CUDA_CHECK(cudaSetDevice(index));
  CUDA_CHECK(cudaGetDeviceProperties(&d.prop, index));
  int drv = 0, rt = 0;
  CUDA_CHECK(cudaDriverGetVersion(&drv));
  CUDA_CHECK(cudaRuntimeGetVersion(&rt));
  d.driver = cuda_version_string(drv);
  d.runtime = cuda_version_string(rt);
  return d;
}

JsonLine common_fields(const char* bench, const DeviceInfo& d) {
  JsonLine j;
  j.str("bench", bench)
      .str("gpu", d.prop.name)
      .str("driver", d.driver)
      .str("runtime", d.runtime)
      .integer("device", d.index);
  return j;
}

// Runs `op` `warmup` times, times one call to size the loop, then times `iters` calls with
// cudaEvents on `stream`; returns the mean seconds per call.
template <class Op>
double time_op(Op&& op, cudaStream_t stream, int warmup, double target_s, int min_iters,
               int max_iters, int* iters_out) {
  for (int i = 0; i < warmup; ++i) op();
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaGetLastError());
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start, stream));
  op();
  CUDA_CHECK(cudaEventRecord(stop, stream));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  double one = std::max(ms * 1e-3, 1e-7);
  int iters = static_cast<int>(std::min<double>(max_iters, std::max<double>(min_iters, target_s / one)));
  CUDA_CHECK(cudaEventRecord(start, stream));
  for (int i = 0; i < iters; ++i) op();
  CUDA_CHECK(cudaEventRecord(stop, stream));
  CUDA_CHECK(cudaEventSynchronize(stop));
  CUDA_CHECK(cudaGetLastError());
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  *iters_out = iters;
  return ms * 1e-3 / iters;
}

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
  DeviceInfo dev = open_device(device);
  std::fprintf(stderr, "%s: %s, driver %s, runtime %s\n", kProg, dev.prop.name,
               dev.driver.c_str(), dev.runtime.c_str());

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
      const double t = time_op(launch, stream, /*warmup=*/3, /*target_s=*/0.2, /*min_iters=*/5,
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
