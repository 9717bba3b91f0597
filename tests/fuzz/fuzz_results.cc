// Fuzz harness: a result file (predict JSON, sweep CSV or JSON Lines) rendered as a report (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  const std::string text = input(data, size);
  for (const char* name : {"r.json", "r.csv", "r.jsonl"}) {
    run({"report", write(name, text), "-o", (scratch() / "r.html").string()});
  }
  return 0;
}
