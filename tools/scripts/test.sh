#!/usr/bin/env bash
# The README's test command, also what CI runs (.ci/run): install what is missing, build, run every
# test with ctest; then build with AddressSanitizer + UndefinedBehaviorSanitizer and run the unit
# tests there. Incremental: fast when nothing changed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
jobs="$(nproc 2>/dev/null || echo 2)"

"$root/tools/scripts/setup.sh" "$root/build"
(cd "$root/build" && ctest --output-on-failure -j "$jobs")

"$root/tools/scripts/setup.sh" "$root/build-sanitize" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTRAINSIM_SANITIZE=ON -DTRAINSIM_BUILD_BENCH=OFF
(cd "$root/build-sanitize" && ctest --output-on-failure -j "$jobs" -L unit)
