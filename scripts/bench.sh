#!/usr/bin/env bash
# Benchmarks against delta-rs (not part of CI): set up (first run only), then run them.
#
#   bash scripts/bench.sh [ARGS]          all three: replay/checkpoint, commit throughput, shapes. ARGS go
#                                         to both, so use options both accept (--quick,
#                                         --repeat N, --out DIR, --data DIR, --profile,
#                                         --prime-gib G); exit status is the worse of the two.
#   bash scripts/bench.sh replay [ARGS]   only benchmarks/bench_replay.py (e.g. --workload cp_1m)
#   bash scripts/bench.sh commit [ARGS]   only benchmarks/bench_commit.py (e.g. --workload single)
#   bash scripts/bench.sh shapes [ARGS]   only benchmarks/bench_shapes.py: issue 16's rows (log
#                                         formats, time travel, history, 1M-file commits, CLI)
#   bash scripts/bench.sh soak [ARGS]     only benchmarks/soak.py, the long-run soak (8 writers x
#                                         2,000 commits; e.g. --store both); never part of the
#                                         default run above, nor of CI
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
dev_env
cd "$ROOT"
# Byte-compile the package as installing the wheel does. With PYTHONDONTWRITEBYTECODE set (as
# on these machines) every benchmark child would otherwise compile deltalog's modules again
# (~70 ms) in the CLI rows, a cost an installed wheel never has and delta-rs's never pays.
python -m compileall -q deltalog logstores checkpoints benchmarks >/dev/null
case "${1:-}" in
  replay) shift; exec python benchmarks/bench_replay.py "$@" ;;
  commit) shift; exec python benchmarks/bench_commit.py "$@" ;;
  shapes) shift; exec python benchmarks/bench_shapes.py "$@" ;;
  soak) shift; exec python benchmarks/soak.py "$@" ;;
  all) shift ;;
esac
# Scratch copies are deleted only when every benchmark is done: deleting tens of thousands of
# small files slows every file created in the next minutes (see benchmarks/scratch.py).
export DELTALOG_BENCH_TRASH="$ROOT/benchmarks/out/_trash"
rm -rf "$DELTALOG_BENCH_TRASH"  # an interrupted run's; the replay rows come first and create few files
trap 'rm -rf "$DELTALOG_BENCH_TRASH"' EXIT
status=0
python benchmarks/bench_replay.py "$@" || status=$?
rc=0
python benchmarks/bench_commit.py "$@" || rc=$?
[ "$rc" -gt "$status" ] && status=$rc
rc=0
python benchmarks/bench_shapes.py "$@" || rc=$?
[ "$rc" -gt "$status" ] && status=$rc
exit "$status"
