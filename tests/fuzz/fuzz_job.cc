// Fuzz harness: a job YAML file (its cluster and model as it names them) (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  const std::string f = write("job.yaml", input(data, size));
  run(quick_predict({"predict", "--job", f, "--nodes", "1"}));
  return 0;
}
