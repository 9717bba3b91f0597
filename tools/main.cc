// Entry point of the trainsim command line; everything happens in run_cli().
#include <iostream>
#include <string>
#include <vector>

#include "tools/cli.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return trainsim::cli::run_cli(args, std::cout, std::cerr);
}
