// Fuzz harness: an nccl-tests log, scored against a shipped cluster (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  const std::string f = write("run.log", input(data, size));
  run({"calibrate", "--check", source("configs/clusters/dgx-h100.yaml"), f});
  run({"calibrate", "--check", source("configs/clusters/dgx-h100.yaml"), f + "@2x8"});
  return 0;
}
