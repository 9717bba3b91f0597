// Fuzz harness: an access-count histogram file of a table (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  write("hist.txt", input(data, size));
  static const std::string model = write(
      "model.yaml",
      "name: h\nkind: recsys\ndense_features: 4\nembedding:\n  dim: 16\n  tables:\n"
      "    - {name: t, rows: 100000, pooling: 2, access: {distribution: histogram, file: "
      "hist.txt}}\n    - {name: u, rows: 1000, pooling: 1}\ninteraction: {type: dot}\n"
      "top_mlp: [16, 1]\n");
  static const std::string job = write(
      "job.yaml", "name: j\nmodel: " + model + "\nbatch_per_gpu: 64\nsharding: {strategy: row_wise}\n");
  run(quick_predict({"predict", "--job", job, "--nodes", "1"}));
  return 0;
}
