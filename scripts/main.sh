#!/usr/bin/env bash
# The main job: set up (first run only), then run the pipeline demo against a local table.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
exec python "$ROOT/scripts/main_job.py" "$@"
