#!/usr/bin/env bash
# Coverage-guided fuzzing of every reader (tests/fuzz): builds the harnesses with clang, libFuzzer,
# AddressSanitizer and UndefinedBehaviorSanitizer in build-fuzz/, then fuzzes each for SECONDS
# (default 600), one after another on one core, from its seed corpus (the shipped configs,
# validation files and logs, tests/fuzz/seeds) with the keys-and-units dictionary. Each harness's
# corpus grows in build-fuzz/corpus/HARNESS across runs; a failing input is kept in
# build-fuzz/artifacts/ (rerun it: build-fuzz/tests/fuzz/fuzz_HARNESS FILE). Prints the execs and
# coverage per harness.
#   bash tools/scripts/fuzz.sh [SECONDS] [HARNESS...]
# The ctests fuzz_* of such a build (and CI) run one harness for a short time:
#   bash tools/scripts/fuzz.sh --run BINARY SECONDS SEED...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# One harness: SEEDs (files or folders) copied into a seed folder; new inputs go to CORPUS
# (default: a temporary folder). Exit status: the fuzzer's (0: no defect found).
run_one() {
  local binary=$1 seconds=$2
  shift 2
  local work
  work=$(mktemp -d)
  mkdir -p "$work/seeds"
  for s in "$@"; do
    if [[ -d $s ]]; then cp -r "$s/." "$work/seeds/"; else cp "$s" "$work/seeds/"; fi
  done
  local corpus=${FUZZ_CORPUS:-$work/corpus}
  local artifacts=${FUZZ_ARTIFACTS:-$work/artifacts}
  mkdir -p "$corpus" "$artifacts"
  local status=0
  # FUZZ_SEED: a fixed random seed (the ctests use one, so a run repeats what it tried).
  "$binary" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 -print_final_stats=1 \
    ${FUZZ_SEED:+-seed="$FUZZ_SEED"} \
    -dict="$root/tests/fuzz/trainsim.dict" -artifact_prefix="$artifacts/" \
    "$corpus" "$work/seeds" >"$work/log" 2>&1 || status=$?
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|#[0-9]+[[:space:]]+DONE" "$work/log" || true
  if [[ $status -ne 0 ]]; then
    tail -60 "$work/log"
    echo "defect found; inputs in $artifacts:" >&2
    ls "$artifacts" >&2
  fi
  [[ -z ${FUZZ_ARTIFACTS:-} ]] && rm -rf "$work"
  return $status
}

if [[ ${1:-} == --run ]]; then
  shift
  run_one "$@"
  exit $?
fi

seconds=${1:-600}
shift || true
build="$root/build-fuzz"
"$root/tools/scripts/setup.sh" "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++ -DTRAINSIM_SANITIZE=ON -DTRAINSIM_FUZZ=ON \
  -DTRAINSIM_BUILD_BENCH=OFF -DTRAINSIM_BUILD_MICROBENCH=OFF
harnesses=("$@")
if [[ ${#harnesses[@]} -eq 0 ]]; then
  harnesses=(cluster model job sweep validation set nccl_tests microbench histogram results resume placement)
fi
failed=0
for h in "${harnesses[@]}"; do
  # The seeds the ctest of the harness uses (tests/fuzz/CMakeLists.txt).
  mapfile -t seeds < <(cd "$build" && ctest -N -V -R "^fuzz_${h}\$" | sed -n 's/.*Test command: //p' |
                         tr -d '"' | tr ' ' '\n' | tail -n +6 | grep .)
  echo "== $h (${seconds} s)"
  FUZZ_CORPUS="$build/corpus/$h" FUZZ_ARTIFACTS="$build/artifacts/$h" \
    run_one "$build/tests/fuzz/fuzz_$h" "$seconds" "${seeds[@]}" || failed=1
  echo "corpus: $(ls "$build/corpus/$h" | wc -l) inputs"
done
exit $failed
