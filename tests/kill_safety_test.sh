#!/usr/bin/env bash
# A predict interrupted mid-run (SIGTERM, SIGHUP; SIGINT alike, but a script's background jobs
# ignore it) leaves no output and no temporary file: its outputs are held in memory until the run
# succeeds.
# Usage: kill_safety_test.sh TRAINSIM JOB
set -euo pipefail
trainsim=$1
job=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for signal in TERM HUP; do
  "$trainsim" predict --job "$job" --nodes 16,32,64 --output "$dir/out.txt" --trace "$dir/t.json" \
    --plot "$dir/p.svg" &
  pid=$!
  sleep 1
  kill -s "$signal" "$pid"
  status=0
  wait "$pid" || status=$?
  if [[ $status -eq 0 ]]; then
    echo "predict finished before SIG$signal could interrupt it: use a longer run" >&2
    exit 1
  fi
  left=$(ls -A "$dir")
  if [[ -n $left ]]; then
    echo "after SIG$signal (exit $status) the run left: $left" >&2
    exit 1
  fi
  echo "SIG$signal: exit $status, nothing left behind"
done
