// Units used everywhere in trainsim: simulated time is an integer count of picoseconds, data sizes
// are bytes, bandwidths are bytes per second, compute is FLOP and FLOP/s. Conversions live here
// only.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

namespace trainsim {

// Simulated time and durations, in picoseconds. int64 covers about 106 days of simulated time.
using Time = std::int64_t;

inline constexpr Time kPicosecond = 1;
inline constexpr Time kNanosecond = 1'000;
inline constexpr Time kMicrosecond = 1'000'000;
inline constexpr Time kMillisecond = 1'000'000'000;
inline constexpr Time kSecond = 1'000'000'000'000;
inline constexpr Time kTimeMax = std::numeric_limits<Time>::max();

inline constexpr double kPicosecondsPerSecond = 1e12;

// Decimal (SI) and binary byte multiples.
inline constexpr double kKB = 1e3;
inline constexpr double kMB = 1e6;
inline constexpr double kGB = 1e9;
inline constexpr double kTB = 1e12;
inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kTiB = 1024.0 * 1024.0 * 1024.0 * 1024.0;

// Bits per second to bytes per second.
inline constexpr double kBitsPerByte = 8.0;

inline constexpr double to_seconds(Time t) {
  return static_cast<double>(t) / kPicosecondsPerSecond;
}
inline constexpr double to_microseconds(Time t) { return static_cast<double>(t) / kMicrosecond; }
inline constexpr double to_milliseconds(Time t) { return static_cast<double>(t) / kMillisecond; }

// Largest number of seconds that converts to a Time without overflow.
inline constexpr double kMaxSeconds = 9.2e6;

// A duration or an instant the simulated clock cannot hold (negative, not a number, or beyond
// kMaxSeconds, about 106 days): it comes from the inputs (a rate near zero, a size far too large,
// a unit forgotten), so it is bad input, not a bug.
class TimeRangeError : public std::range_error {
 public:
  // `what` names the quantity and the inputs it comes from, for the message.
  explicit TimeRangeError(double seconds, std::string_view what = {})
      : std::range_error(describe(seconds, what)), seconds_(seconds) {}
  double seconds() const { return seconds_; }

 private:
  static std::string describe(double seconds, std::string_view what) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "a simulated time of %g s is out of the simulator's range (0 to %g s, about 106 "
                  "days)",
                  seconds, kMaxSeconds);
    return what.empty() ? std::string(text) : std::string(what) + ": " + text;
  }
  double seconds_;
};

// Rounds to the nearest picosecond; throws TimeRangeError outside 0..kMaxSeconds, naming `what`
// (the quantity and the inputs it comes from) when given.
inline Time time_from_seconds(double seconds, std::string_view what = {}) {
  if (!(seconds >= 0.0 && seconds <= kMaxSeconds)) [[unlikely]] {
    throw TimeRangeError(seconds, what);
  }
  return static_cast<Time>(std::llround(seconds * kPicosecondsPerSecond));
}

// `t + d` for d >= 0; throws TimeRangeError where the sum would pass the clock's largest time.
inline Time time_after(Time t, Time d) {
  if (d > std::numeric_limits<Time>::max() - t) [[unlikely]] {
    throw TimeRangeError(to_seconds(t) + to_seconds(d));
  }
  return t + d;
}

// Time to move `bytes` at `bytes_per_s`, rounded to the nearest picosecond.
inline Time transfer_time(double bytes, double bytes_per_s) {
  return time_from_seconds(bytes / bytes_per_s);
}

}  // namespace trainsim
