// Fuzz harness: a sweep YAML file (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  const std::string f = write("sweep.yaml", input(data, size));
  // The first points only: a sweep of thousands of points is valid, but one run is enough here.
  run(quick_predict({"sweep", f, "--threads", "1", "--sweep-range", "0:3"}));
  return 0;
}
