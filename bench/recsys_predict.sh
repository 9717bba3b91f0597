#!/usr/bin/env bash
# Times `trainsim predict` on the recommender jobs (flow mode; one thread, then the 1..128-node
# studies again on every core, as predict runs by default) and prints wall time and peak memory per
# run. Usage: bash bench/recsys_predict.sh [path/to/trainsim]
set -euo pipefail
cd "$(dirname "$0")/.."
trainsim=${1:-build/tools/trainsim}
[[ -x $trainsim ]] || { echo "build first: bash tools/scripts/setup.sh" >&2; exit 2; }
command -v /usr/bin/time >/dev/null || { echo "needs /usr/bin/time (Debian package: time)" >&2; exit 2; }

run() {
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o /tmp/trainsim_bench_time "$trainsim" "$@" ${threads:+--threads $threads} \
    >/dev/null
  read -r seconds kib </tmp/trainsim_bench_time
  printf '%-58s %8.2f s %8.0f MiB\n' "$label" "$seconds" "$((kib / 1024))"
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
printf '%-58s %10s %12s\n' "run" "wall" "peak RSS"
threads=1  # predict's node counts one after another (shard has no --threads)
run "dlrm-dcnv2, dgx-h100, 1,2,4,...,128 nodes (target < 5 s)" \
  predict --job configs/jobs/dlrm-dcnv2.yaml --nodes 1,2,4,8,16,32,64,128
# The same without the job's dataloader and checkpoint sections: what the input pipeline and
# checkpoint models add (target: at most twice the step-only time).
step_only=$(mktemp --suffix=.yaml)
trap 'rm -f "$step_only"' EXIT
sed '/^dataloader:/,$d' configs/jobs/dlrm-dcnv2.yaml >"$step_only"
run "the same, step only (no dataloader or checkpoints)" \
  predict --job "$step_only" --cluster configs/clusters/dgx-h100.yaml \
  --model configs/models/dlrm-dcnv2.yaml --nodes 1,2,4,8,16,32,64,128
for n in 32 64 128; do
  run "dlrm-dcnv2, dgx-h100, $n nodes" predict --job configs/jobs/dlrm-dcnv2.yaml --nodes "$n"
done
# The MLPerf job as the submissions run it: HugeCTR's per-node plan (every GPU exchanges with
# every other), evaluation phases, the next batch's ids on a prefetch stream (target < 5 s).
run "dlrm-dcnv2-mlperf (HugeCTR's plan), 1,2,4,...,128 nodes" \
  predict --job configs/jobs/dlrm-dcnv2-mlperf.yaml --nodes 1,2,4,8,16,32,64,128
run "dlrm-dcnv2-mlperf, greedy plan, 1,2,4,...,128 nodes" \
  predict --job configs/jobs/dlrm-dcnv2-mlperf.yaml --nodes 1,2,4,8,16,32,64,128 --sharding greedy
run "dlrm-dcnv2-mlperf (HugeCTR's plan), 128 nodes" \
  predict --job configs/jobs/dlrm-dcnv2-mlperf.yaml --nodes 128
run "foundation-baseline, cloud-a100-4x100g, 1,2,4,8 nodes" \
  predict --job configs/jobs/foundation-baseline.yaml --nodes 1,2,4,8
run "foundation-optimized, cloud-a100-4x100g, 1,2,4,8 nodes" \
  predict --job configs/jobs/foundation-optimized.yaml --nodes 1,2,4,8
# A replica per node: node 0's ranks stand for every node's (README, `predict`), on a copy of the
# cluster with 2,048 nodes.
big_cluster=$(mktemp --suffix=.yaml)
trap 'rm -f "$step_only" "$big_cluster"' EXIT
sed 's/^nodes:.*/nodes: 2048/' configs/clusters/cloud-a100-4x100g.yaml >"$big_cluster"
run "foundation-optimized, 2,048 nodes (node 0's ranks for all)" \
  predict --job configs/jobs/foundation-optimized.yaml --cluster "$big_cluster" --nodes 2048
threads=
run "shard, dlrm-dcnv2, 16 nodes (analytic ranking)" \
  shard --job configs/jobs/dlrm-dcnv2.yaml --nodes 16
# predict as it runs by default: node counts at once on every core, largest first.
run "dlrm-dcnv2, 1,2,4,...,128 nodes, all $(nproc) cores" \
  predict --job configs/jobs/dlrm-dcnv2.yaml --nodes 1,2,4,8,16,32,64,128
run "dlrm-dcnv2-mlperf (HugeCTR's plan), 1..128 nodes, all $(nproc) cores" \
  predict --job configs/jobs/dlrm-dcnv2-mlperf.yaml --nodes 1,2,4,8,16,32,64,128
rm -f /tmp/trainsim_bench_time
