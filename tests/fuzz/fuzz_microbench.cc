// Fuzz harness: microbenchmark JSON lines, fitted (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  const std::string f = write("bench.jsonl", input(data, size));
  run({"calibrate", "--microbench", f, "-o", (scratch() / "fitted.yaml").string()});
  return 0;
}
