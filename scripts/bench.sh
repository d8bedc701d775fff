#!/usr/bin/env bash
# Benchmarks against delta-rs (not part of CI): set up (first run only), then run the replay and
# checkpoint benchmark. Arguments go to benchmarks/bench_replay.py (e.g. --quick, --repeat 5).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
exec python benchmarks/bench_replay.py "$@"
