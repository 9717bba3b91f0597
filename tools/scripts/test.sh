#!/usr/bin/env bash
# The README's test command, also what CI runs (.ci/run): install what is missing, build, run every
# test with ctest; then build with clang, AddressSanitizer + UndefinedBehaviorSanitizer and the
# readers' libFuzzer harnesses, and run the unit tests there (each fuzz_* test fuzzes one reader
# for a few seconds); then build the CLI with ThreadSanitizer and run the commands that use
# several threads. Incremental: fast when nothing changed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
jobs="$(nproc 2>/dev/null || echo 2)"

"$root/tools/scripts/setup.sh" "$root/build"
(cd "$root/build" && ctest --output-on-failure -j "$jobs")

"$root/tools/scripts/setup.sh" "$root/build-fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DTRAINSIM_SANITIZE=ON -DTRAINSIM_FUZZ=ON \
  -DTRAINSIM_BUILD_BENCH=OFF -DTRAINSIM_BUILD_MICROBENCH=OFF
(cd "$root/build-fuzz" && ctest --output-on-failure -j "$jobs" -L unit)

# ThreadSanitizer: only the CLI and its tests, and only the commands that run threads.
TRAINSIM_TARGETS="trainsim cli_test tsan_race_probe" "$root/tools/scripts/setup.sh" "$root/build-tsan" \
  -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS="-O1 -g1" -DCMAKE_CXX_COMPILER=clang++ \
  -DTRAINSIM_TSAN=ON -DTRAINSIM_BUILD_BENCH=OFF -DTRAINSIM_BUILD_MICROBENCH=OFF
(cd "$root/build-tsan" && ctest --output-on-failure -L threads)
