// A progress line on stderr for long runs (sweep points, predict's node counts), drawn only when
// stderr is a terminal: done / total, the rate and the time left.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ostream>
#include <string>

namespace trainsim::cli {

class Progress {
 public:
  // `unit`: what is counted ("points", "node counts").
  Progress(std::ostream& err, std::size_t total, std::string unit)
      : err_(err),
        total_(total),
        unit_(std::move(unit)),
        enabled_(::isatty(STDERR_FILENO) && total > 0),
        start_(std::chrono::steady_clock::now()) {}
  bool enabled() const { return enabled_; }
  // `note`: what was just done (e.g. "16 nodes"), shown after the counts.
  void update(std::size_t done, const std::string& note = {}) {
    if (!enabled_) return;
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double rate = seconds > 0 ? done / seconds : 0.0;
    const int width = 30;
    const int filled = static_cast<int>(width * done / total_);
    char line[200];
    std::snprintf(line, sizeof line, "\r[%s%s] %zu/%zu %s  %.1f %s/s  ETA %.0f s %s ",
                  std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), done,
                  total_, unit_.c_str(), rate, unit_.c_str(),
                  rate > 0 ? (total_ - done) / rate : 0.0, note.c_str());
    err_ << line << std::flush;
    if (done == total_) err_ << "\n";
  }

 private:
  std::ostream& err_;
  std::size_t total_;
  std::string unit_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace trainsim::cli
