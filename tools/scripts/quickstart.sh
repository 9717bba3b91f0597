#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run `trainsim predict` on the
# default cluster (configs/clusters/dgx-h100.yaml) and model (configs/models/dense-mlp-1b.yaml).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
"$root/tools/scripts/setup.sh" "$root/build" >&2
"$root/build/tools/trainsim" predict "$@"
