// Units used everywhere in trainsim: simulated time is an integer count of picoseconds, data sizes
// are bytes, bandwidths are bytes per second, compute is FLOP and FLOP/s. Conversions live here
// only.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

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

// Rounds to the nearest picosecond. Callers guarantee 0 <= seconds <= kMaxSeconds (checked by
// the TRAINSIM_ASSERT in time_from_seconds_checked for internal use).
inline Time time_from_seconds(double seconds) {
  return static_cast<Time>(std::llround(seconds * kPicosecondsPerSecond));
}

// Time to move `bytes` at `bytes_per_s`, rounded to the nearest picosecond.
inline Time transfer_time(double bytes, double bytes_per_s) {
  return time_from_seconds(bytes / bytes_per_s);
}

}  // namespace trainsim
