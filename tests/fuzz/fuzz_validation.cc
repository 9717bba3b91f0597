// Fuzz harness: a validation case YAML file (collectives or training) (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  const std::string f = write("case.yaml", input(data, size));
  run({"validate", "--case", f}, /*verdict=*/true);  // exit 1: a case misses its tolerance
  return 0;
}
