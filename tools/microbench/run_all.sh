#!/usr/bin/env bash
# Runs every microbenchmark found in a build directory and collects the JSON lines.
#
# usage: tools/microbench/run_all.sh [BUILD_DIR] [OUT_DIR]
#   BUILD_DIR  directory holding the microbench_* programs (default build/tools/microbench)
#   OUT_DIR    results directory (default microbench-results/), created if missing
# environment:
#   NCCL_TESTS  optional path to an nccl-tests checkout or build; its *_perf programs are run
#               with -b 8 -e 8G -f 2 -g <number of GPUs> and their logs saved under
#               OUT_DIR/nccl-tests/
#
# Writes OUT_DIR/<bench>.jsonl (stdout of each program: JSON lines), OUT_DIR/<bench>.log (its
# stderr) and OUT_DIR/environment.json. Exits 2 without running anything when no GPU is
# present, 1 when a benchmark failed, 0 otherwise.
set -uo pipefail

build_dir=${1:-build/tools/microbench}
out_dir=${2:-microbench-results}
benches=(gemm hbm embedding copy nccl)

die() {
  echo "run_all.sh: $*" >&2
  exit 2
}

json_escape() {
  local s=$1
  s=${s//\\/\\\\}
  s=${s//\"/\\\"}
  s=${s//$'\t'/\\t}
  s=${s//$'\r'/}
  s=${s//$'\n'/\\n}
  printf '%s' "$s"
}

# ---- is there a GPU? ----------------------------------------------------------------------
gpu_count=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu_count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
elif compgen -G '/proc/driver/nvidia/gpus/*' >/dev/null; then
  gpu_count=$(find /proc/driver/nvidia/gpus -mindepth 1 -maxdepth 1 | wc -l)
fi
if [[ -n ${CUDA_VISIBLE_DEVICES+x} && $gpu_count -gt 0 ]]; then
  if [[ -z $CUDA_VISIBLE_DEVICES ]]; then
    gpu_count=0
  else
    IFS=, read -r -a visible <<<"$CUDA_VISIBLE_DEVICES"
    ((${#visible[@]} < gpu_count)) && gpu_count=${#visible[@]}
  fi
fi
if ((gpu_count == 0)); then
  die "no NVIDIA GPU found (nvidia-smi -L lists none, or no driver is loaded); nothing to run"
fi

# ---- which programs? ----------------------------------------------------------------------
[[ -d $build_dir ]] || die "build directory '$build_dir' not found (build the project with CUDA first)"
found=()
for b in "${benches[@]}"; do
  if [[ -x $build_dir/microbench_$b ]]; then
    found+=("$b")
  else
    echo "run_all.sh: $build_dir/microbench_$b not built, skipped" >&2
  fi
done
((${#found[@]} > 0)) || die "no microbench_* programs in '$build_dir'"

mkdir -p "$out_dir" || die "cannot create '$out_dir'"
echo "run_all.sh: $gpu_count GPU(s); results in $out_dir" >&2

# ---- run them -----------------------------------------------------------------------------
status=0
for b in "${found[@]}"; do
  echo "run_all.sh: running microbench_$b" >&2
  start=$(date +%s)
  "$build_dir/microbench_$b" >"$out_dir/$b.jsonl" 2>"$out_dir/$b.log"
  rc=$?
  end=$(date +%s)
  lines=$(wc -l <"$out_dir/$b.jsonl")
  if ((rc != 0)); then
    echo "run_all.sh: microbench_$b FAILED (exit $rc) after $((end - start)) s, $lines lines; see $out_dir/$b.log:" >&2
    tail -n 5 "$out_dir/$b.log" >&2
    status=1
  else
    echo "run_all.sh: microbench_$b done in $((end - start)) s, $lines lines" >&2
  fi
done

# ---- nccl-tests (optional) ----------------------------------------------------------------
nccl_tests_dir=""
if [[ -n ${NCCL_TESTS:-} ]]; then
  if [[ -d $NCCL_TESTS/build ]]; then
    nccl_tests_dir=$NCCL_TESTS/build
  else
    nccl_tests_dir=$NCCL_TESTS
  fi
  mkdir -p "$out_dir/nccl-tests"
  ran=0
  for t in all_reduce all_gather reduce_scatter alltoall broadcast sendrecv; do
    exe=$nccl_tests_dir/${t}_perf
    if [[ ! -x $exe ]]; then
      echo "run_all.sh: $exe not found, skipped" >&2
      continue
    fi
    echo "run_all.sh: running ${t}_perf -b 8 -e 8G -f 2 -g $gpu_count" >&2
    if ! "$exe" -b 8 -e 8G -f 2 -g "$gpu_count" >"$out_dir/nccl-tests/${t}_perf.log" 2>&1; then
      echo "run_all.sh: ${t}_perf FAILED; see $out_dir/nccl-tests/${t}_perf.log" >&2
      status=1
    fi
    ran=$((ran + 1))
  done
  if ((ran == 0)); then
    echo "run_all.sh: no *_perf programs in $nccl_tests_dir" >&2
    status=1
  fi
fi

# ---- environment.json ---------------------------------------------------------------------
field_from_results() {  # first value of a string field in the JSON lines
  local key=$1 f v
  for f in "$out_dir"/*.jsonl; do
    [[ -s $f ]] || continue
    v=$(head -n 1 "$f" | sed -n "s/.*\"$key\":\"\\([^\"]*\\)\".*/\\1/p")
    if [[ -n $v ]]; then
      printf '%s' "$v"
      return
    fi
  done
}

gpu_name="" driver_version="" smi="" topo=""
if command -v nvidia-smi >/dev/null 2>&1; then
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
  driver_version=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
  smi=$(nvidia-smi 2>&1)
  topo=$(nvidia-smi topo -m 2>&1)
fi
[[ -n $gpu_name ]] || gpu_name=$(field_from_results gpu)
cuda_driver=$(field_from_results driver)
cuda_runtime=$(field_from_results runtime)

{
  printf '{\n'
  printf '  "gpu": "%s",\n' "$(json_escape "$gpu_name")"
  printf '  "gpu_count": %d,\n' "$gpu_count"
  printf '  "driver": "%s",\n' "$(json_escape "$driver_version")"
  printf '  "cuda_driver": "%s",\n' "$(json_escape "$cuda_driver")"
  printf '  "cuda_runtime": "%s",\n' "$(json_escape "$cuda_runtime")"
  printf '  "date": "%s",\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  printf '  "hostname": "%s",\n' "$(json_escape "$(hostname 2>/dev/null || true)")"
  printf '  "build_dir": "%s",\n' "$(json_escape "$build_dir")"
  printf '  "benches": "%s",\n' "$(json_escape "${found[*]}")"
  printf '  "nccl_tests": "%s",\n' "$(json_escape "$nccl_tests_dir")"
  printf '  "nvidia_smi": "%s",\n' "$(json_escape "$smi")"
  printf '  "nvidia_smi_topo": "%s"\n' "$(json_escape "$topo")"
  printf '}\n'
} >"$out_dir/environment.json"

echo "run_all.sh: wrote $out_dir/environment.json" >&2
exit "$status"
