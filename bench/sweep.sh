#!/usr/bin/env bash
# Times `trainsim sweep` on the 1,000-point benchmark sweep (bench/sweep_1000.yaml): the whole
# sweep in analytic mode on all cores (target < 10 s on 2 cores), and a slice in flow mode on 1
# and on all threads (points/s, to show it scales with cores).
# Usage: bash bench/sweep.sh [path/to/trainsim]
set -euo pipefail
cd "$(dirname "$0")/.."
trainsim=${1:-build/tools/trainsim}
[[ -x $trainsim ]] || { echo "build first: bash tools/scripts/setup.sh" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cores=$(nproc)
echo "machine: $cores cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"

timed() {  # prints seconds
  local start end
  start=$(date +%s.%N)
  "$@" >/dev/null
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}

t=$(timed "$trainsim" sweep bench/sweep_1000.yaml -o "$dir/analytic.csv")
printf '1000 points, analytic, %d threads: %.2f s (%.0f points/s)\n' "$cores" "$t" \
  "$(awk -v t="$t" 'BEGIN { print 1000 / t }')"
points=40
for threads in 1 "$cores"; do
  t=$(timed "$trainsim" sweep bench/sweep_1000.yaml --network flow --sweep-range 600:$((600 + points)) \
        --threads "$threads" -o "$dir/flow_$threads.csv")
  printf '%d points, flow, %d thread(s): %.2f s (%.2f points/s)\n' "$points" "$threads" "$t" \
    "$(awk -v p="$points" -v t="$t" 'BEGIN { print p / t }')"
done
cmp "$dir/flow_1.csv" "$dir/flow_$cores.csv" && echo "flow rows identical with 1 and $cores threads"
