#!/usr/bin/env bash
# The whole test suite: set up (first run only), lint, type-check, then every test.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$ROOT"
echo "[test] ruff" >&2
targets=()
for d in deltalog logstores checkpoints tests interop_tests benchmarks scripts; do
  [ -d "$d" ] && targets+=("$d")
done
ruff check "${targets[@]}"
ruff format --check "${targets[@]}"
echo "[test] mypy --strict" >&2
mypy
echo "[test] pytest" >&2
export DELTALOG_REQUIRE_SERVERS=1
exec python -m pytest "$@"
