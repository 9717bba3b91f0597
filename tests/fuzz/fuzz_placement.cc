// Fuzz harness: a placement YAML file (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  const std::string f = write("placement.yaml", input(data, size));
  // One measured step; a placement runs only in the flow model.
  run({"predict", "--placement", f, "--steps", "1", "--warmup", "0"});
  return 0;
}
