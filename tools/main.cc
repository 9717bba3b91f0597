// Entry point of the trainsim command line; everything happens in run_cli().
#include <iostream>
#include <string>
#include <vector>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "tools/cli.h"

int main(int argc, char** argv) {
#ifdef __GLIBC__
  // A simulation frees and allocates the same large arrays again and again (a step's task graph
  // and flows, the estimate's run then the steps'): keep freed memory for the next allocation
  // instead of handing it back to the kernel, which would clear every page again when it is
  // touched (a twentieth of a 2,048-node prediction; bench/README.md). Blocks up to 32 MiB come
  // from the heap (glibc's largest automatic threshold); the peak memory barely changes.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
  const std::vector<std::string> args(argv + 1, argv + argc);
  return trainsim::cli::run_cli(args, std::cout, std::cerr);
}
