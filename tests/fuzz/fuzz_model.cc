// Fuzz harness: a model YAML file (dense, or a recommender with a small job) (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  const std::string f = write("model.yaml", input(data, size));
  static const std::string job =
      write("job.yaml", "name: j\nbatch_per_gpu: 64\nsharding: {strategy: table_wise}\n");
  run(quick_predict({"predict", "--model", f, "--nodes", "1"}));
  run(quick_predict({"predict", "--model", f, "--job", job, "--nodes", "1"}));
  return 0;
}
