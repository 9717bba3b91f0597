#!/usr/bin/env bash
# Installs the Debian packages trainsim needs (only those missing), then configures and builds it.
# Usage: tools/scripts/setup.sh [BUILD_DIR [extra cmake arguments...]]
# Idempotent: with everything installed and built it only checks and returns.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build_dir="${1:-$root/build}"
shift || true

packages=(
  g++ cmake make
  libboost-graph-dev libboost-program-options-dev
  libyaml-cpp-dev nlohmann-json3-dev libtbb-dev libeigen3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libboost-mpi-dev openmpi-bin
  chromium python3
  time
  clang  # the sanitizer and fuzzing build of tools/scripts/test.sh (libFuzzer: below)
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# libFuzzer's runtime ships in the compiler-rt package of clang's own version.
clang_major="$(clang -dumpversion 2>/dev/null | cut -d. -f1)"
if [ -n "$clang_major" ] && [ ! -e "$(clang -print-file-name=libclang_rt.fuzzer-x86_64.a)" ] &&
   [ "$(uname -m)" = x86_64 ]; then
  rt="libclang-rt-$clang_major-dev"
  if ! dpkg-query -W -f='${Status}' "$rt" 2>/dev/null | grep -q "install ok installed"; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "installing: $rt" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$rt" >/dev/null
  fi
fi

jobs="$(nproc 2>/dev/null || echo 2)"
if [ ! -f "$build_dir/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
fi
# TRAINSIM_TARGETS="a b": build only those targets (default: everything).
targets=()
for t in ${TRAINSIM_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j "$jobs" "${targets[@]}"
