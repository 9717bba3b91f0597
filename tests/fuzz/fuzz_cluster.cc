// Fuzz harness: a cluster YAML file (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  const std::string f = write("cluster.yaml", input(data, size));
  run(quick_predict({"predict", "--cluster", f, "--nodes", "1"}));
  run(quick_predict({"predict", "--cluster", f, "--nodes", "2"}));
  return 0;
}
