#!/usr/bin/env python3
"""How trainsim's own cost grows with the cluster: wall time and peak memory of one run per node
count, and the exponent k of cost ~ nodes^k (least squares on log-log, and between neighbours).

Workloads (flow mode, one thread, on the DGX H100 cluster grown to --max-nodes nodes: 8 GPUs
and 8 NICs per node, a non-blocking rail-optimised fat tree):
  ring      collective all_reduce, --algo ring, 256 MiB (NCCL's ring channels as streams)
  alltoall  collective all_to_all, 64 MiB per GPU
  dlrm      predict of configs/jobs/dlrm-dcnv2.yaml (greedy plan), one node count per run;
            its JSON gives the events simulated, the measure of work

Usage: bench/scaling_exponents.py [--trainsim PATH] [--max-nodes N] [--budget SECONDS]
                                  [WORKLOAD ...]
Node counts double from 16 up to --max-nodes (default 2048); a workload stops doubling once a
run took more than --budget seconds (default 60), since the next would take about 2^k times as
long. Prints a table per workload and the fitted exponents.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def command(workload, trainsim, cluster, nodes, out):
    if workload == "ring":
        return [trainsim, "collective", "--cluster", cluster, "--op", "all_reduce", "--algo",
                "ring", "--nodes", str(nodes), "-b", "256M", "-e", "256M", "--threads", "1"]
    if workload == "alltoall":
        return [trainsim, "collective", "--cluster", cluster, "--op", "all_to_all", "--nodes",
                str(nodes), "-b", "64M", "-e", "64M", "--threads", "1"]
    return [trainsim, "predict", "--job", "configs/jobs/dlrm-dcnv2.yaml", "--cluster", cluster,
            "--nodes", str(nodes), "--format", "json", "-o", out]


def large_cluster(folder, nodes):
    """The DGX H100 cluster (non-blocking rail-optimised fat tree) grown to `nodes` nodes."""
    with open(os.path.join(ROOT, "configs", "clusters", "dgx-h100.yaml")) as f:
        lines = f.read().split("\n")
    lines = [f"nodes: {nodes}" if l.startswith("nodes:") else l for l in lines]
    path = os.path.join(folder, "dgx-h100-large.yaml")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path


def measure(cmd):
    """Wall seconds and peak RSS (MiB) of one run, by /usr/bin/time (Debian package: time)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as stats:
        start = time.perf_counter()
        subprocess.run(["/usr/bin/time", "-f", "%M", "-o", stats.name] + cmd, cwd=ROOT,
                       check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - start
        kib = float(stats.read().split()[-1])
    return wall, kib / 1024.0


def slope(xs, ys):
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx if sxx > 0 else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trainsim", default=os.path.join(ROOT, "build", "tools", "trainsim"))
    parser.add_argument("--max-nodes", type=int, default=2048)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("workloads", nargs="*", default=["ring", "alltoall", "dlrm"])
    args = parser.parse_args()
    if not os.access(args.trainsim, os.X_OK):
        sys.exit("build first: bash tools/scripts/setup.sh")
    if not os.access("/usr/bin/time", os.X_OK):
        sys.exit("needs /usr/bin/time (Debian package: time)")
    with open("/proc/cpuinfo") as f:
        model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "?")
    print(f"machine: {os.cpu_count()} cores, {model}; one thread per run")
    for workload in args.workloads:
        if workload not in ("ring", "alltoall", "dlrm"):
            sys.exit(f"unknown workload '{workload}': ring, alltoall or dlrm")
        print(f"\n{workload}\n{'nodes':>6} {'GPUs':>7} {'wall (s)':>9} {'peak (MiB)':>11} "
              f"{'events':>11}")
        rows = []
        nodes = 16
        with tempfile.TemporaryDirectory() as tmp:
            cluster = large_cluster(tmp, args.max_nodes)
            while nodes <= args.max_nodes:
                out = os.path.join(tmp, f"{nodes}.json")
                wall, peak = measure(command(workload, args.trainsim, cluster, nodes, out))
                events = ""
                if workload == "dlrm":
                    with open(out) as f:
                        events = json.load(f)["points"][0]["events"]
                rows.append((nodes, wall, peak))
                print(f"{nodes:>6} {nodes * 8:>7} {wall:>9.2f} {peak:>11.0f} {events:>11}",
                      flush=True)
                if wall > args.budget:
                    break
                nodes *= 2
        if len(rows) >= 2:
            xs = [r[0] for r in rows]
            steps = ", ".join(f"{math.log(b[1] / a[1], 2):.2f}" for a, b in zip(rows, rows[1:]))
            print(f"exponent of wall time: {slope(xs, [r[1] for r in rows]):.2f} "
                  f"(per doubling: {steps}); of peak memory: "
                  f"{slope(xs, [r[2] for r in rows]):.2f}")


if __name__ == "__main__":
    main()
