#!/usr/bin/env python3
"""The flow solver's default quantum against the exact solve, on the shipped jobs.

For each shipped scenario and node count, runs `trainsim predict --format csv` twice, with the
default --solve-quantum and with --solve-quantum 0 (exact max-min at every event), and requires:
the step time within MAX_ERROR of the exact one, and every part of the breakdown (compute, comm
stall, imbalance, input, checkpoint, evaluation, and the comm stall of each collective) within
MAX_ERROR of the exact step time (a part's error as a share of the step: a part of a few
microseconds has no meaningful relative error). Prints every point's errors.

Usage: solve_quantum_check.py TRAINSIM   (run from the source tree)
"""
import csv
import io
import subprocess
import sys

MAX_ERROR = 0.005

# (label, predict arguments, node counts). The MLPerf job's exact solve at 64 and 128 nodes takes
# minutes (every completion of about 100,000 rail flows re-solved); bench/recsys_predict.sh
# compares those.
SCENARIOS = [
    ("dense default", [], "1,2,4,8,16,32,64,128"),
    ("dlrm-dcnv2", ["--job", "configs/jobs/dlrm-dcnv2.yaml"], "1,2,4,8,16,32,64,128"),
    ("dlrm-dcnv2-mlperf", ["--job", "configs/jobs/dlrm-dcnv2-mlperf.yaml"], "1,2,4,8,16,32"),
    ("foundation-baseline", ["--job", "configs/jobs/foundation-baseline.yaml"], "1,2,4,8,16"),
    ("foundation-optimized", ["--job", "configs/jobs/foundation-optimized.yaml"], "1,2,4,8,16"),
]
PARTS = ["compute_s", "communication_stall_s", "load_imbalance_s", "input_stall_s",
         "checkpoint_s", "evaluation_s", "stall_id_all_to_all_s", "stall_embedding_all_to_all_s",
         "stall_gradient_all_to_all_s", "stall_dense_all_reduce_s", "stall_embedding_sync_s"]


def predict(trainsim, args, nodes, quantum):
    command = [trainsim, "predict", *args, "--nodes", nodes, "--format", "csv"]
    if quantum is not None:
        command += ["--solve-quantum", quantum]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    rows = [line for line in out.splitlines() if not line.startswith("#")]
    return {row["nodes"]: row for row in csv.DictReader(io.StringIO("\n".join(rows)))}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    trainsim = sys.argv[1]
    failures = 0
    print(f"{'scenario':22} {'nodes':>5} {'step exact (ms)':>16} {'step error':>11} "
          f"{'worst part':>28} {'its error':>10}")
    for label, args, nodes in SCENARIOS:
        exact = predict(trainsim, args, nodes, "0")
        quantum = predict(trainsim, args, nodes, None)
        for n, e in exact.items():
            q = quantum[n]
            step = float(e["step_time_s"])
            step_error = (float(q["step_time_s"]) - step) / step
            worst, worst_error = "-", 0.0
            for part in PARTS:
                if part not in e or e[part] == "":
                    continue
                error = (float(q[part]) - float(e[part])) / step
                if abs(error) > abs(worst_error):
                    worst, worst_error = part, error
            bad = abs(step_error) > MAX_ERROR or abs(worst_error) > MAX_ERROR
            failures += bad
            print(f"{label:22} {n:>5} {step * 1e3:16.3f} {step_error * 100:10.3f}% "
                  f"{worst:>28} {worst_error * 100:9.3f}%{'  FAIL' if bad else ''}")
    if failures:
        print(f"{failures} point(s) beyond {MAX_ERROR:.1%} of the exact solve")
        sys.exit(1)
    print(f"every point within {MAX_ERROR:.1%} of the exact solve")


if __name__ == "__main__":
    main()
