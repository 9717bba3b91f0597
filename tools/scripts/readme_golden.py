#!/usr/bin/env python3
"""The README's examples as golden outputs (tests/golden/), and the README checked against them.

Each example is a trainsim command the README shows. Its whole output is kept in
tests/golden/<id>.txt; `--check` (what ctest runs) reruns every command and requires the same bytes,
then requires every output block the README prints for it to match the golden output: its lines
appear in the output in order, a line `...` stands for any lines, and a line ending in `...` or
`(...)` for any rest of the line. `--update` rewrites the golden files from the current binary, on
purpose (say in the commit what changed and why); the README blocks are then edited to match
(`--sync-readme` rewrites each README line the output lacks with the output line most like it).

Usage: readme_golden.py --check|--update|--sync-readme [--trainsim PATH]   (run from anywhere)
"""
import argparse
import difflib
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "golden")

# id, arguments, the README text right before the example's output block (None: no block), and
# the file the command writes its result to (None: standard output). {tmp} is a scratch folder.
EXAMPLES = [
    ("predict-placement-two-teams", ["predict", "--placement", "configs/placements/two-teams.yaml"],
     "build/tools/trainsim predict --placement configs/placements/two-teams.yaml\n```", None),
    ("predict-default", ["predict"],
     "The first command prints, for the default DGX H100 cluster and a 1B-parameter\ndense model:",
     None),
    ("predict-pcie", ["predict", "--cluster", "configs/clusters/pcie-8gpu-2x100g.yaml",
                      "--nodes", "1,2,4"],
     "build/tools/trainsim predict --cluster configs/clusters/pcie-8gpu-2x100g.yaml --nodes 1,2,4\n```",
     None),
    ("shard-foundation-baseline", ["shard", "--job", "configs/jobs/foundation-baseline.yaml",
                                   "--nodes", "4"],
     "build/tools/trainsim shard --job configs/jobs/foundation-baseline.yaml --nodes 4\n```", None),
    ("predict-foundation-baseline", ["predict", "--job", "configs/jobs/foundation-baseline.yaml",
                                     "--nodes", "1,2,4,8"],
     "build/tools/trainsim predict --job configs/jobs/foundation-baseline.yaml --nodes 1,2,4,8\n```",
     None),
    ("predict-foundation-optimized", ["predict", "--job", "configs/jobs/foundation-optimized.yaml",
                                      "--nodes", "1,2,4,8"],
     "`trainsim shard` (above) ranks exactly this layout first.", None),
    ("predict-dlrm-dcnv2-analytic", ["predict", "--job", "configs/jobs/dlrm-dcnv2.yaml",
                                     "--nodes", "1,8,64", "--network", "analytic"], None, None),
    ("predict-dlrm-dcnv2-small-filesystem",
     ["predict", "--job", "configs/jobs/dlrm-dcnv2.yaml", "--network", "analytic",
      "--set", "cluster.storage.shared_read_bandwidth=40GB/s", "--nodes", "1,4,16"], None, None),
    ("calibrate-job-mlperf", ["calibrate", "--job", "configs/jobs/dlrm-dcnv2-mlperf.yaml", "--set",
                              "job.global_batch=55296", "--measured", "1:15.63M",
                              "--training-only"],
     "    --measured 1:15.63M --training-only -o my-dgx-h100.yaml\n```", None),
    ("check-claim-arithmetic", ["check-claim", "--baseline-nodes", "1", "--nodes", "4",
                                "--speedup", "3.9"],
     "build/tools/trainsim check-claim --baseline-nodes 1 --nodes 4 --speedup 3.9\n```", None),
    ("check-claim-job", ["check-claim", "--nodes", "4", "--speedup", "3.9", "--job",
                         "configs/jobs/foundation-baseline.yaml"], None, None),
    ("check-claim-runs", ["check-claim", "--run", "100000:10h", "--run", "200000:8h"],
     "build/tools/trainsim check-claim --run 100000:10h --run 200000:8h\n```", None),
    ("sweep-dlrm-what-if", ["sweep", "configs/sweeps/dlrm-what-if.yaml", "-o", "{tmp}/what-if.csv"],
     "build/tools/trainsim sweep configs/sweeps/dlrm-what-if.yaml -o what-if.csv --plot what-if.svg\n```",
     "{tmp}/what-if.csv"),
    ("plan-foundation-optimized", ["plan", "--job", "configs/jobs/foundation-optimized.yaml",
                                   "--cluster", "configs/clusters/cloud-a100-4x100g.yaml",
                                   "--cluster", "configs/clusters/dgx-a100.yaml",
                                   "--target-throughput", "400000", "--price-per-node-hour", "32",
                                   "--price-per-node-hour", "40"],
     "smallest; every prediction it used is printed, and with prices the cheapest option is named:",
     None),
    ("collective-all-reduce-16-nodes", ["collective", "--op", "all_reduce", "--nodes", "16",
                                        "-b", "8", "-e", "8G", "-f", "2"], None, None),
    ("describe-job", ["describe", "job"], "build/tools/trainsim describe job\n```", None),
    ("sweep-mlperf-new-clusters", ["sweep", "configs/sweeps/mlperf-new-clusters.yaml", "-o",
                                   "{tmp}/new-clusters.csv"],
     "build/tools/trainsim sweep configs/sweeps/mlperf-new-clusters.yaml -o new-clusters.csv\n```",
     "{tmp}/new-clusters.csv"),
    ("predict-dlrm-dcnv2-mlperf", ["predict", "--job", "configs/jobs/dlrm-dcnv2-mlperf.yaml",
                                   "--nodes", "1,8,16"],
     "build/tools/trainsim predict --job configs/jobs/dlrm-dcnv2-mlperf.yaml --nodes 1,8,16\n```",
     None),
    ("predict-mlperf-16gb-gpus", ["predict", "--job", "configs/jobs/dlrm-dcnv2-mlperf.yaml",
                                  "--nodes", "1,2", "--set", "cluster.gpu.hbm_capacity=16GB",
                                  "--set", "job.sharding.strategy=greedy"],
     "  --set cluster.gpu.hbm_capacity=16GB --set job.sharding.strategy=greedy\n```", None),
]


def run(trainsim, args, output, tmp):
    argv = [trainsim] + [a.replace("{tmp}", tmp) for a in args]
    done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr}")
    if output is None:
        return done.stdout
    with open(output.replace("{tmp}", tmp)) as f:
        return f.read()


def readme_block(readme, anchor):
    """The lines of the first plain ``` block after the anchor."""
    at = readme.find(anchor)
    if at < 0:
        raise SystemExit(f"README.md: the example's anchor is gone: {anchor!r}")
    lines = readme[at + len(anchor):].split("\n")
    start = next(i for i, line in enumerate(lines) if line == "```")
    end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    return lines[start + 1:end]


def matches(pattern, actual):
    """Whether the README's lines appear in the output in order, with its elisions."""
    i = 0
    for line in pattern:
        if line.strip() == "...":
            continue
        prefix = None
        for tail in ("(...)", "..."):
            if line.rstrip().endswith(tail):
                prefix = line.rstrip()[: -len(tail)]
                break
        while i < len(actual):
            candidate = actual[i]
            i += 1
            if (prefix is not None and candidate.startswith(prefix)) or candidate == line:
                break
        else:
            return line
    return None


def elided(line, candidate):
    """The candidate cut where the README's elided line is cut (after as many fields)."""
    for tail in ("(...)", "..."):
        if line.rstrip().endswith(tail):
            prefix = line.rstrip()[: -len(tail)]
            sep = "," if prefix.count(",") > 1 else " "
            fields = prefix.count(sep)
            parts = candidate.split(sep)
            return sep.join(parts[:fields]) + sep + tail if len(parts) > fields else candidate
    return candidate


def synced(pattern, actual):
    """The README block with each line the output lacks replaced by the output line most like
    it (after the lines already matched, keeping the line's elision)."""
    out, i = [], 0
    for line in pattern:
        if line.strip() == "..." or matches([line], actual[i:]) is None:
            if line.strip() != "...":
                rest = actual[i:]
                for k, candidate in enumerate(rest):
                    if matches([line], [candidate]) is None:
                        i += k + 1
                        break
            out.append(line)
            continue
        best = max(range(i, len(actual)), default=None,
                   key=lambda k: difflib.SequenceMatcher(None, line, actual[k]).ratio())
        if best is None:
            out.append(line)
            continue
        out.append(elided(line, actual[best]))
        i = best + 1
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--update", action="store_true")
    mode.add_argument("--sync-readme", action="store_true",
                      help="rewrite each README line its golden output lacks with the output "
                           "line most like it (review the diff)")
    parser.add_argument("--trainsim", default=os.path.join(ROOT, "build", "tools", "trainsim"))
    opts = parser.parse_args()
    with open(os.path.join(ROOT, "README.md")) as f:
        readme = f.read()
    failures = 0
    os.makedirs(GOLDEN, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, args, anchor, output in EXAMPLES:
            got = run(opts.trainsim, args, output, tmp)
            path = os.path.join(GOLDEN, name + ".txt")
            if opts.update:
                with open(path, "w") as f:
                    f.write(got)
            elif opts.sync_readme:
                if anchor is not None:
                    block = readme_block(readme, anchor)
                    at = readme.find(anchor)
                    old_text, new_text = "\n".join(block), "\n".join(synced(block, got.split("\n")))
                    head = readme[:at]
                    readme = head + readme[at:].replace(old_text, new_text, 1)
                continue
            else:
                with open(path) as f:
                    want = f.read()
                if got != want:
                    failures += 1
                    diff = difflib.unified_diff(want.splitlines(), got.splitlines(),
                                                f"tests/golden/{name}.txt", "now", lineterm="")
                    print(f"FAIL {name}: output differs from its golden file", file=sys.stderr)
                    print("\n".join(list(diff)[:40]), file=sys.stderr)
            if anchor is not None:
                missing = matches(readme_block(readme, anchor), got.split("\n"))
                if missing is not None:
                    failures += 1
                    print(f"FAIL {name}: README.md shows a line the output does not have:\n"
                          f"  {missing}", file=sys.stderr)
    if opts.sync_readme:
        with open(os.path.join(ROOT, "README.md"), "w") as f:
            f.write(readme)
        print("README.md blocks synced with the golden outputs; review the diff")
        return 0
    if failures:
        print(f"{failures} failure(s); after an intended change: {sys.argv[0]} --update, then "
              "--sync-readme (or edit the README blocks)", file=sys.stderr)
        return 1
    print(f"{len(EXAMPLES)} example(s) match their golden outputs and the README")
    return 0


if __name__ == "__main__":
    sys.exit(main())
