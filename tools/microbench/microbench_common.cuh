// What every microbenchmark shares: CUDA error checks, the JSON-lines record writer (README.md
// lists the fields), opening the device with its driver and runtime versions, and timing a GPU
// operation with CUDA events. Each program passes its own name for messages.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

// Exits with a message naming `prog`, the CUDA error and the failing expression.
#define MICROBENCH_CHECK_CUDA(prog, expr)                                                        \
  do {                                                                                           \
    cudaError_t err_ = (expr);                                                                   \
    if (err_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s: CUDA error %s (%s) at %s:%d in %s\n", prog,                      \
                   cudaGetErrorName(err_), cudaGetErrorString(err_), __FILE__, __LINE__, #expr); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

namespace microbench {

inline std::string json_escape(const std::string& s) {
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

// One JSON object on one line of stdout.
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

inline std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

struct DeviceInfo {
  int index = 0;
  cudaDeviceProp prop{};
  std::string driver, runtime;
};

// Selects device `index` and reads its properties; exits with a message if there is none.
inline DeviceInfo open_device(const char* prog, int index) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::fprintf(stderr, "%s: no CUDA device available (%s)\n", prog,
                 err != cudaSuccess ? cudaGetErrorString(err) : "device count is 0");
    std::exit(1);
  }
  if (index < 0 || index >= count) {
    std::fprintf(stderr, "%s: device %d out of range (found %d)\n", prog, index, count);
    std::exit(1);
  }
  DeviceInfo d;
  d.index = index;
  MICROBENCH_CHECK_CUDA(prog, cudaSetDevice(index));
  MICROBENCH_CHECK_CUDA(prog, cudaGetDeviceProperties(&d.prop, index));
  int drv = 0, rt = 0;
  MICROBENCH_CHECK_CUDA(prog, cudaDriverGetVersion(&drv));
  MICROBENCH_CHECK_CUDA(prog, cudaRuntimeGetVersion(&rt));
  d.driver = cuda_version_string(drv);
  d.runtime = cuda_version_string(rt);
  return d;
}

// "a,b,,c" -> {"a", "b", "c"}: the items of a comma-separated option.
inline std::vector<std::string> split_commas(const std::string& list) {
  std::vector<std::string> items;
  for (size_t pos = 0; pos <= list.size();) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    if (comma > pos) items.push_back(list.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return items;
}

// The fields every record starts with.
inline JsonLine common_fields(const char* bench, const DeviceInfo& d) {
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
double time_op(const char* prog, Op&& op, cudaStream_t stream, int warmup, double target_s,
               int min_iters, int max_iters, int* iters_out) {
  for (int i = 0; i < warmup; ++i) op();
  MICROBENCH_CHECK_CUDA(prog, cudaStreamSynchronize(stream));
  MICROBENCH_CHECK_CUDA(prog, cudaGetLastError());
  cudaEvent_t start, stop;
  MICROBENCH_CHECK_CUDA(prog, cudaEventCreate(&start));
  MICROBENCH_CHECK_CUDA(prog, cudaEventCreate(&stop));
  MICROBENCH_CHECK_CUDA(prog, cudaEventRecord(start, stream));
  op();
  MICROBENCH_CHECK_CUDA(prog, cudaEventRecord(stop, stream));
  MICROBENCH_CHECK_CUDA(prog, cudaEventSynchronize(stop));
  float ms = 0;
  MICROBENCH_CHECK_CUDA(prog, cudaEventElapsedTime(&ms, start, stop));
  double one = std::max(ms * 1e-3, 1e-7);
  int iters =
      static_cast<int>(std::min<double>(max_iters, std::max<double>(min_iters, target_s / one)));
  MICROBENCH_CHECK_CUDA(prog, cudaEventRecord(start, stream));
  for (int i = 0; i < iters; ++i) op();
  MICROBENCH_CHECK_CUDA(prog, cudaEventRecord(stop, stream));
  MICROBENCH_CHECK_CUDA(prog, cudaEventSynchronize(stop));
  MICROBENCH_CHECK_CUDA(prog, cudaGetLastError());
  MICROBENCH_CHECK_CUDA(prog, cudaEventElapsedTime(&ms, start, stop));
  MICROBENCH_CHECK_CUDA(prog, cudaEventDestroy(start));
  MICROBENCH_CHECK_CUDA(prog, cudaEventDestroy(stop));
  *iters_out = iters;
  return ms * 1e-3 / iters;
}

}  // namespace microbench
