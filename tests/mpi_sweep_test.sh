#!/usr/bin/env bash
# A sweep gives the same file with one thread, with all threads and over MPI ranks (rank 0 hands
# points out, rank 1 simulates), on this machine. Usage: mpi_sweep_test.sh TRAINSIM SWEEP_FILE
set -euo pipefail
trainsim=$1
sweep=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$trainsim" sweep "$sweep" --threads 1 -o "$dir/one.csv"
"$trainsim" sweep "$sweep" -o "$dir/all.csv"
mpirun --allow-run-as-root --oversubscribe -np 2 "$trainsim" sweep "$sweep" -o "$dir/mpi.csv"
cmp "$dir/one.csv" "$dir/all.csv"
cmp "$dir/one.csv" "$dir/mpi.csv"
# Array-job slices, concatenated in order, give the same rows.
"$trainsim" sweep "$sweep" --sweep-range 0:5 -o "$dir/slices.csv"
"$trainsim" sweep "$sweep" --sweep-range 5:1000 -o "$dir/slices.csv"
cmp "$dir/one.csv" "$dir/slices.csv"
# Resumed over MPI: rank 0 reads the file and hands out only the missing points.
"$trainsim" sweep "$sweep" --sweep-range 0:3 -o "$dir/resumed.csv"
mpirun --allow-run-as-root --oversubscribe -np 3 "$trainsim" sweep "$sweep" -o "$dir/resumed.csv"
cmp "$dir/one.csv" "$dir/resumed.csv"
echo "identical: 1 thread, all threads, 2 MPI ranks, 2 slices, resumed on 3 ranks ($(($(wc -l <"$dir/one.csv") - 1)) points)"
