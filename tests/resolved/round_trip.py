#!/usr/bin/env python3
"""`predict --resolved` prints documents that load back to the same scenario.

For each shipped scenario (every cluster and dense model with the defaults, every job), the resolved
cluster, model and job are written to files and predicted again; the prediction must equal the
one from the original files byte for byte. A key the writer drops or writes differently from how
the reader reads it changes the prediction (or fails to load), so this checks the writer against
the reader on every shipped config.
"""
import pathlib
import subprocess
import sys
import tempfile

trainsim, root = str(pathlib.Path(sys.argv[1]).resolve()), pathlib.Path(sys.argv[2])


def run(args):
    done = subprocess.run([trainsim, "predict", "--nodes", "1,2", *args], capture_output=True,
                          text=True, cwd=root)
    if done.returncode != 0:
        sys.exit(f"FAIL: trainsim predict {' '.join(args)}: {done.stderr}")
    return done.stdout


def shipped(kind):
    return [str(p.relative_to(root)) for p in sorted((root / "configs" / kind).glob("*.yaml"))]


scenarios = ([[]] + [["--cluster", c] for c in shipped("clusters")] +
             [["--model", m] for m in shipped("models")
              if "kind: recsys" not in (root / m).read_text()] +
             [["--job", j] for j in shipped("jobs")])
failures = 0
with tempfile.TemporaryDirectory() as tmp:
    for args in scenarios:
        docs = run(args + ["--resolved"]).split("\n--- ")[1:]
        kinds = [d.split("\n", 1)[0].split()[1].rstrip(",") for d in docs]
        files = []
        for kind, doc in zip(kinds, docs):
            path = pathlib.Path(tmp) / f"{kind}.yaml"
            path.write_text(doc.split("\n", 1)[1])
            files += [f"--{kind}", str(path)]
        # A second --resolved from the written files prints the same documents.
        again = run(files + ["--resolved"]).split("\n--- ")[1:]
        same_docs = [d.split("\n", 1)[1] for d in docs] == [d.split("\n", 1)[1] for d in again]
        same_prediction = run(args + ["--format", "csv"]) == run(files + ["--format", "csv"])
        name = " ".join(args) or "(defaults)"
        if not (same_docs and same_prediction):
            failures += 1
            print(f"FAIL {name}: documents {'same' if same_docs else 'differ'}, "
                  f"prediction {'same' if same_prediction else 'differs'}")
        else:
            print(f"ok {name}: {', '.join(kinds)} load back to the same prediction")
sys.exit(1 if failures else 0)
