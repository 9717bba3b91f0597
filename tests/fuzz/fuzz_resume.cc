// Fuzz harness: a sweep output file that a sweep resumes into (tests/fuzz/harness.h).
#include "tests/fuzz/harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace trainsim::fuzz;
  const std::string text = input(data, size);
  for (const char* name : {"rows.csv", "rows.jsonl"}) {
    const std::string f = write(name, text);
    run({"sweep", source("tests/data/small_sweep.yaml"), "--threads", "1", "-o", f});
  }
  // A CSV's header in its side file: the input as both (the rows and the metadata it is read
  // with), resumed into and merged.
  const std::string csv = write("meta.csv", text);
  write("meta.csv.meta.json", text);
  run({"sweep", source("tests/data/small_sweep.yaml"), "--threads", "1", "-o", csv});
  run({"sweep", source("tests/data/small_sweep.yaml"), "--merge", write("slice.csv", text), "-o",
       write("merged.csv", "")});
  return 0;
}
