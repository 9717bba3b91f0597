// What every fuzz harness shares: the input written to a scratch file, trainsim's command line run
// on it in-process, and the error contract checked. Bad input must end in the typed input error
// (exit 2) or succeed (exit 0); an exit 1 (an exception that is not the input error), an exit 3
// (an internal check) or a crash is a defect: the harness aborts, so the fuzzer keeps the input.
// Built with libFuzzer (-DTRAINSIM_FUZZ=ON, clang) each harness is a fuzzer; otherwise it is a
// replayer (replay_main.cc) that runs the files given, for the corpus regression tests.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tools/cli.h"

namespace trainsim::fuzz {

// This process's scratch folder, removed at exit.
inline const std::filesystem::path& scratch() {
  static const std::filesystem::path dir = [] {
    const auto d = std::filesystem::temp_directory_path() /
                   ("trainsim_fuzz_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ignored;
      std::filesystem::remove_all(std::filesystem::temp_directory_path() /
                                      ("trainsim_fuzz_" + std::to_string(::getpid())),
                                  ignored);
    });
    return d;
  }();
  return dir;
}

// Writes `text` to the scratch file `name` and returns its path.
inline std::string write(const std::string& name, const std::string& text) {
  const std::string path = (scratch() / name).string();
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}
inline std::string input(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A file of the source tree.
inline std::string source(const std::string& relative) {
  return std::string(TRAINSIM_SOURCE_DIR) + "/" + relative;
}

// Runs `trainsim ARGS`; aborts unless it succeeded or refused its input (exit 0 or 2), or, for a
// command whose verdict can be negative (`validate`: a case misses its tolerance), exit 1.
inline void run(const std::vector<std::string>& args, bool verdict = false) {
  std::ostringstream out, err;
  const int status = cli::run_cli(args, out, err);
  if (status == 0 || status == 2 || (verdict && status == 1)) return;
  std::string command = "trainsim";
  for (const std::string& a : args) command += " " + a;
  std::fprintf(stderr, "%s\nexited %d:\n%s\n", command.c_str(), status, err.str().c_str());
  std::abort();
}

// The quick prediction every config harness runs: one step, analytic network.
inline std::vector<std::string> quick_predict(std::vector<std::string> args) {
  for (const char* a : {"--network", "analytic", "--steps", "1", "--warmup", "0"}) {
    args.emplace_back(a);
  }
  return args;
}

}  // namespace trainsim::fuzz
