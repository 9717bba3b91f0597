#include "models/calibration/microbench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "models/spec/config_error.h"

namespace trainsim::models {

namespace {

class LineReader {
 public:
  LineReader(const nlohmann::json& j, const std::string& source, int line)
      : j_(j), source_(source), line_(line) {}

  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw ConfigError(source_, line_, 1, field, message);
  }
  double number(const char* field) const {
    const auto it = j_.find(field);
    if (it == j_.end()) fail(field, "missing field '" + std::string(field) + "'");
    if (!it->is_number()) fail(field, "field '" + std::string(field) + "' must be a number");
    return it->get<double>();
  }
  double positive(const char* field) const {
    const double v = number(field);
    if (!(v > 0.0)) fail(field, "field '" + std::string(field) + "' must be positive");
    return v;
  }
  // A positive byte count up to an exabyte (the bound of every size trainsim reads).
  double bytes(const char* field) const {
    const double v = positive(field);
    if (v > 1e18) fail(field, "field '" + std::string(field) + "' must be at most 1e18 bytes");
    return v;
  }
  // A whole number from 1 to `largest` (an int field).
  int whole(const char* field, int largest) const {
    const double v = number(field);
    if (!(v >= 1 && v <= largest) || std::floor(v) != v) {
      fail(field, "field '" + std::string(field) + "' must be a whole number from 1 to " +
                      std::to_string(largest));
    }
    return static_cast<int>(v);
  }
  std::string text(const char* field) const {
    const auto it = j_.find(field);
    if (it == j_.end()) fail(field, "missing field '" + std::string(field) + "'");
    if (!it->is_string()) fail(field, "field '" + std::string(field) + "' must be a string");
    return it->get<std::string>();
  }

 private:
  const nlohmann::json& j_;
  const std::string& source_;
  int line_;
};

// Least squares of y = a + b x (ordinary, via Eigen's QR).
std::pair<double, double> linear_fit(const std::vector<double>& x, const std::vector<double>& y) {
  Eigen::MatrixXd a(static_cast<Eigen::Index>(x.size()), 2);
  Eigen::VectorXd b(static_cast<Eigen::Index>(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    a(static_cast<Eigen::Index>(i), 0) = 1.0;
    a(static_cast<Eigen::Index>(i), 1) = x[i];
    b[static_cast<Eigen::Index>(i)] = y[i];
  }
  const Eigen::VectorXd c = a.colPivHouseholderQr().solve(b);
  return {c[0], c[1]};
}

// Fits eff(s) = e * s / (s + h) to (s, eff) samples: 1/eff = 1/e + (h/e) (1/s) is linear.
std::pair<double, double> saturating_fit(const std::vector<double>& s,
                                         const std::vector<double>& eff) {
  std::vector<double> x, y;
  for (std::size_t i = 0; i < s.size(); ++i) {
    x.push_back(1.0 / s[i]);
    y.push_back(1.0 / eff[i]);
  }
  const auto [inv_e, h_over_e] = linear_fit(x, y);
  const double e = 1.0 / inv_e;
  return {e, std::max(0.0, h_over_e * e)};
}

void score(GpuFit& fit, const std::vector<double>& measured, const std::vector<double>& predicted) {
  fit.samples = static_cast<int>(measured.size());
  for (std::size_t i = 0; i < measured.size(); ++i) {
    const double e = std::abs(predicted[i] / measured[i] - 1.0);
    fit.mean_abs_error += e;
    fit.max_abs_error = std::max(fit.max_abs_error, e);
  }
  if (fit.samples) fit.mean_abs_error /= fit.samples;
}

std::string format(const char* f, double a, double b = 0.0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, f, a, b);
  return buf;
}

}  // namespace

std::vector<MicrobenchRecord> parse_microbench(const std::string& text, const std::string& name) {
  std::vector<MicrobenchRecord> records;
  std::istringstream in(text);
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& e) {
      throw ConfigError(name, number, static_cast<int>(std::min<std::size_t>(e.byte, 1 << 30)), "",
                        "invalid JSON: " + std::string(e.what()));
    } catch (const nlohmann::json::exception& e) {  // e.g. a number beyond a double's range
      throw ConfigError(name, number, 1, "", "invalid JSON: " + std::string(e.what()));
    }
    if (!j.is_object()) throw ConfigError(name, number, 1, "", "expected a JSON object");
    const LineReader r(j, name, number);
    MicrobenchRecord rec;
    rec.source = name;
    rec.line = number;
    rec.bench = r.text("bench");
    rec.gpu = r.text("gpu");
    rec.time_s = r.positive("time_s");
    if (rec.bench == "gemm") {
      rec.dtype = r.text("dtype");
      if (!parse_dtype(rec.dtype)) r.fail("dtype", "unknown dtype '" + rec.dtype + "'");
      rec.flops = r.positive("flops");
    } else if (rec.bench == "hbm") {
      rec.kernel = r.text("kernel");
      rec.bytes = r.bytes("bytes");
    } else if (rec.bench == "embedding" || rec.bench == "embedding_backward") {
      rec.dtype = r.text("dtype");
      rec.bytes = r.bytes("bytes");
      rec.dim = r.whole("dim", 1 << 20);
      if (!parse_dtype(rec.dtype)) r.fail("dtype", "unknown dtype '" + rec.dtype + "'");
    } else if (rec.bench == "h2d" || rec.bench == "d2h") {
      rec.bytes = r.bytes("bytes");
    } else if (rec.bench == "nccl") {
      rec.op = r.text("op");
      if (!parse_collective(rec.op)) r.fail("op", "unknown collective '" + rec.op + "'");
      rec.bytes = r.bytes("bytes");
      rec.ranks = r.whole("ranks", 1 << 20);
    } else {
      r.fail("bench",
             "unknown bench '" + rec.bench +
                 "' (expected gemm, hbm, embedding, embedding_backward, h2d, d2h, nccl)");
    }
    records.push_back(rec);
  }
  if (records.empty()) throw ConfigError(name, 0, 0, "", "no measurements in the file");
  return records;
}

std::vector<MicrobenchRecord> read_microbench(const std::string& path) {
  return parse_microbench(read_input_file(path), path);
}

MicrobenchFit fit_microbench(const GpuSpec& gpu, const std::vector<MicrobenchRecord>& records,
                             Dtype gemm_dtype) {
  MicrobenchFit out;
  out.gpu = gpu;

  // GEMM: per dtype with a peak, efficiency = achieved / peak, a saturating curve in FLOP.
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> gemm;
  for (const auto& r : records) {
    if (r.bench != "gemm") continue;
    const auto peak = gpu.peak_flops_per_s.find(*parse_dtype(r.dtype));
    if (peak == gpu.peak_flops_per_s.end()) continue;
    gemm[r.dtype].first.push_back(r.flops);
    gemm[r.dtype].second.push_back(r.flops / r.time_s / peak->second);
  }
  for (const auto& [dtype, samples] : gemm) {
    if (samples.first.size() < 2) continue;
    const auto [e, h] = saturating_fit(samples.first, samples.second);
    GpuFit fit{"gemm " + dtype,
               format("efficiency %.3f of peak for large GEMMs, half of that at %.3g FLOP", e, h)};
    std::vector<double> predicted;
    for (const double f : samples.first) predicted.push_back(e * f / (f + h));
    score(fit, samples.second, predicted);
    out.fits.push_back(fit);
    if (dtype == dtype_name(gemm_dtype)) {
      out.gpu.gemm_efficiency = std::clamp(e, 0.01, 1.0);
      out.gpu.gemm_half_flops = h;
    }
  }

  // HBM: mean achieved fraction of peak over the large transfers (>= 256 MiB, or the largest).
  std::vector<std::pair<double, double>> hbm;  // (bytes, efficiency)
  for (const auto& r : records) {
    if (r.bench == "hbm")
      hbm.emplace_back(r.bytes, r.bytes / r.time_s / gpu.hbm_bandwidth_bytes_per_s);
  }
  if (!hbm.empty()) {
    std::sort(hbm.begin(), hbm.end());
    std::vector<double> large;
    for (const auto& [b, e] : hbm) {
      if (b >= 256.0 * 1024 * 1024) large.push_back(e);
    }
    if (large.empty()) large.push_back(hbm.back().second);
    double mean = 0.0;
    for (const double e : large) mean += e;
    mean /= static_cast<double>(large.size());
    GpuFit fit{"hbm", format("%.3f of peak bandwidth on streams of 256 MiB and more", mean)};
    score(fit, large, std::vector<double>(large.size(), mean));
    out.fits.push_back(fit);
    out.gpu.hbm_efficiency = std::clamp(mean, 0.01, 1.0);
  }

  // Embedding gathers: efficiency of HBM peak against row bytes, saturating.
  std::vector<double> rows, eff;
  for (const auto& r : records) {
    if (r.bench != "embedding") continue;
    rows.push_back(r.dim * dtype_bytes(*parse_dtype(r.dtype)));
    eff.push_back(r.bytes / r.time_s / gpu.hbm_bandwidth_bytes_per_s);
  }
  if (rows.size() >= 2) {
    const auto [e, h] = saturating_fit(rows, eff);
    GpuFit fit{
        "embedding",
        format("gathers reach %.3f of HBM peak for long rows, half of that at %.0f-byte rows", e,
               h)};
    std::vector<double> predicted;
    for (const double r : rows) predicted.push_back(e * r / (r + h));
    score(fit, eff, predicted);
    out.fits.push_back(fit);
    out.gpu.embedding_efficiency = std::clamp(e, 0.01, 1.0);
    out.gpu.embedding_half_row_bytes = h;
  }

  // The backward pass with its optimizer update: its fraction of HBM peak for long rows, on the
  // row curve of the gathers (least squares of eff_i = e * share(row_i); the cluster's curve, or
  // none, when no gathers were measured: the row curve comes from the gathers alone).
  std::vector<double> back_rows, back_eff;
  for (const auto& r : records) {
    if (r.bench != "embedding_backward") continue;
    back_rows.push_back(r.dim * dtype_bytes(*parse_dtype(r.dtype)));
    back_eff.push_back(r.bytes / r.time_s / gpu.hbm_bandwidth_bytes_per_s);
  }
  if (!back_rows.empty()) {
    double num = 0.0, den = 0.0;
    for (std::size_t i = 0; i < back_rows.size(); ++i) {
      const double share = out.gpu.row_share(back_rows[i]);
      num += back_eff[i] * share;
      den += share * share;
    }
    const double e = num / den;
    GpuFit fit{"embedding backward",
               format("updates with the optimizer reach %.3f of HBM peak for long rows", e)};
    std::vector<double> predicted;
    for (const double r : back_rows) predicted.push_back(e * out.gpu.row_share(r));
    score(fit, back_eff, predicted);
    out.fits.push_back(fit);
    out.gpu.embedding_backward_efficiency = std::clamp(e, 0.01, 1.0);
  }

  // Host to device: the best bandwidth seen (large pinned copies saturate the link).
  double best = 0.0;
  int h2d = 0;
  for (const auto& r : records) {
    if (r.bench == "h2d") {
      best = std::max(best, r.bytes / r.time_s);
      ++h2d;
    }
  }
  if (h2d) {
    GpuFit fit{"h2d", format("pinned host-to-device copies reach %.1f GB/s", best / 1e9)};
    fit.samples = h2d;
    out.fits.push_back(fit);
    out.gpu.host_to_device_bytes_per_s = best;
  }

  // NCCL results: one collective run per (source, op, ranks), rows in size order.
  std::map<std::tuple<std::string, std::string, int>, MeasuredRun> runs;
  for (const auto& r : records) {
    if (r.bench != "nccl") continue;
    MeasuredRun& m = runs[{r.source, r.op, r.ranks}];
    if (m.run.rows.empty()) {
      m.source = r.source;
      m.run.op = *parse_collective(r.op);
      m.run.ranks = r.ranks;
      m.run.first_line = r.line;
      m.run.hosts = {"local"};
      m.run.gpu = r.gpu;
    }
    NcclTestsRow row;
    row.line = r.line;
    row.size_bytes = static_cast<long long>(r.bytes);
    row.time_us = r.time_s * 1e6;
    row.algbw_gb_per_s = r.bytes / r.time_s / 1e9;
    row.busbw_gb_per_s = row.algbw_gb_per_s * bus_bandwidth_factor(m.run.op, r.ranks);
    m.run.rows.push_back(row);
  }
  for (auto& [key, m] : runs) {
    std::sort(
        m.run.rows.begin(), m.run.rows.end(),
        [](const NcclTestsRow& a, const NcclTestsRow& b) { return a.size_bytes < b.size_bytes; });
    out.nccl.push_back(std::move(m));
  }
  return out;
}

}  // namespace trainsim::models
