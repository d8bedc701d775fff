#!/usr/bin/env bash
# The main job: set up its lean environment (first run only: PySpark, pandas, deltalog and
# delta-rs; or the tests' .venv when that is set up already), then run the pipeline demo
# against a local table. Arguments go to scripts/main_job.py (--table DIR).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
main_env
exec python "$ROOT/scripts/main_job.py" "$@"
