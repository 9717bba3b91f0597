// Fuzz harness: a --set value (KEY=VALUE) (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  const std::string setting = input(data, size);
  run(quick_predict({"predict", "--set", setting, "--nodes", "1"}));
  run(quick_predict({"predict", "--job", source("configs/jobs/dlrm-dcnv2.yaml"), "--set", setting,
                     "--nodes", "1"}));
  return 0;
}
