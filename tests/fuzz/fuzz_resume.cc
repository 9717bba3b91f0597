// Fuzz harness: a sweep output file that a sweep resumes into (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  const std::string text = input(data, size);
  for (const char* name : {"rows.csv", "rows.jsonl"}) {
    const std::string f = write(name, text);
    run({"sweep", source("tests/data/small_sweep.yaml"), "--threads", "1", "-o", f});
  }
  return 0;
}
