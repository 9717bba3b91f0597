#!/usr/bin/env python3
"""configs/README.md's key tables, generated from the tables the config readers run.

Every table in configs/README.md sits between `<!-- keys: TITLE -->` and `<!-- /keys -->`, where
TITLE is the start of a table's title as `trainsim describe --markdown` prints it ("Cluster",
"Dense model", ...). `--check` (what ctest runs) requires each block to be exactly what
`trainsim describe --markdown` prints for it, and every table to appear; `--update` rewrites the
blocks.

Usage: config_tables.py --check|--update [--trainsim PATH]   (run from anywhere)
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "configs", "README.md")
BLOCK = re.compile(r"(<!-- keys: (.+?) -->\n)(.*?)(<!-- /keys -->)", re.S)


def tables(trainsim):
    text = subprocess.run([trainsim, "describe", "--markdown"], check=True, capture_output=True,
                          text=True).stdout
    out = {}
    for part in text.split("### ")[1:]:
        title, body = part.split("\n", 1)
        out[title] = body.strip("\n") + "\n"
    return out


def main():
    parser = argparse.ArgumentParser()
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--update", action="store_true")
    parser.add_argument("--trainsim", default=os.path.join(ROOT, "build", "tools", "trainsim"))
    args = parser.parse_args()
    generated = tables(args.trainsim)
    readme = open(README).read()
    used, problems = set(), []

    def replace(match):
        wanted = [t for t in generated if t.startswith(match.group(2))]
        if len(wanted) != 1:
            problems.append(f"'{match.group(2)}' names {len(wanted)} tables of trainsim describe")
            return match.group(0)
        used.add(wanted[0])
        body = generated[wanted[0]]
        if match.group(3) != body:
            problems.append(f"the {match.group(2)} table differs from trainsim describe")
        return match.group(1) + body + match.group(4)

    updated = BLOCK.sub(replace, readme)
    for title in generated:
        if title not in used:
            problems.append(f"no block for the table '{title}'")
    if args.update:
        open(README, "w").write(updated)
        problems = [p for p in problems if "differs" not in p]
    for p in problems:
        print(f"FAIL {p}")
    if problems:
        print("after a change to a config table: tools/scripts/config_tables.py --update")
        return 1
    print(f"{len(used)} key table(s) of configs/README.md match trainsim describe")
    return 0


if __name__ == "__main__":
    sys.exit(main())
