// The trainsim version, printed by --version and written into JSON outputs.
#pragma once

namespace trainsim::cli {

inline constexpr const char* kTrainsimVersion = "0.1.0";

}  // namespace trainsim::cli
