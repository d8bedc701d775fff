#!/usr/bin/env bash
# Shared set-up for the scripts, sourced by them. Each environment is installed on first use and
# re-installed only when what it needs changed (pyproject.toml, the constraints, the packages):
#
#   dev_env          .venv: deltalog[dev] (PySpark + delta-spark, delta-rs, moto, the cloud SDKs,
#                    pytest, mypy, ruff): the tests and benchmarks (scripts/test.sh, bench.sh)
#   main_env         the main job's (scripts/main.sh): .venv when it is already set up, else the
#                    lean .venv-main with only deltalog[spark] (PySpark, pandas) and delta-rs
#   ensure_azurite   Azurite (Azure Blob emulator) from npm in .tools/, for the Azure tests
#   ensure_chromium  Debian's chromium, for the report's browser test (as root, with apt-get)
#
# The Spark line is fixed by a constraints file (scripts/constraints/); DELTALOG_VENV overrides
# the environment's location (then it gets deltalog[dev]).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
SPARK4="$ROOT/scripts/constraints/spark4.txt"

# venv_ready DIR CONSTRAINTS SPEC...: whether DIR holds exactly SPEC, installed after the last
# change to pyproject.toml and the constraints.
venv_ready() {
  local venv="$1" constraints="$2"; shift 2
  local stamp="$venv/.deltalog-installed"
  [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$*" ] \
    && [ ! "$ROOT/pyproject.toml" -nt "$stamp" ] && [ ! "$constraints" -nt "$stamp" ]
}

# ensure_venv DIR CONSTRAINTS SPEC...: a virtualenv at DIR with `pip install -c CONSTRAINTS SPEC...`.
ensure_venv() {
  local venv="$1" constraints="$2"; shift 2
  if [ ! -x "$venv/bin/python" ]; then
    echo "[setup] creating virtualenv $venv" >&2
    "$PY" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  fi
  if ! venv_ready "$venv" "$constraints" "$@"; then
    echo "[setup] installing $* into $venv ($(grep -v '^#' "$constraints" | tr '\n' ' '))" >&2
    local log="$venv/install.log"
    if ! "$venv/bin/python" -m pip install -c "$constraints" "$@" >"$log" 2>&1; then
      tail -40 "$log" >&2
      if grep -q "No space left on device" "$log"; then
        # The dev environment needs ~2.5 GB (PySpark, delta-spark's jars come later into ~/.ivy2).
        echo "[setup] the disk is full: free space where the checkout, ~/.cache and \$TMPDIR are" >&2
        df -h "$ROOT" "${TMPDIR:-/tmp}" "$HOME" >&2 || true
      fi
      echo "[setup] pip install failed; full log in $log" >&2
      return 1
    fi
    echo "$*" >"$venv/.deltalog-installed"
  fi
}

DEV_SPEC=(-e "$ROOT[dev]")

dev_env() {
  VENV="${DELTALOG_VENV:-$ROOT/.venv}"
  ensure_venv "$VENV" "$SPARK4" "${DEV_SPEC[@]}"
  export PATH="$VENV/bin:$PATH"
}

# The main job needs PySpark (with pandas), deltalog, and delta-rs to read the table back
# (deltalake pinned as the test extra pins it): no delta-spark, moto, cloud SDKs or linters.
MAIN_SPEC=(-e "$ROOT[spark]" "deltalake==1.6.6")

main_env() {
  if [ -n "${DELTALOG_VENV:-}" ]; then
    dev_env
    return
  fi
  if venv_ready "$ROOT/.venv" "$SPARK4" "${DEV_SPEC[@]}"; then
    VENV="$ROOT/.venv"  # the tests' environment is set up already: it has all the job needs
  else
    VENV="$ROOT/.venv-main"
    ensure_venv "$VENV" "$SPARK4" "${MAIN_SPEC[@]}"
  fi
  export PATH="$VENV/bin:$PATH"
}

# Azurite (Azure Blob emulator) from npm, for the Azure log store tests. Pinned; installed once.
AZURITE_VERSION="3.35.0"
TOOLS="$ROOT/.tools"
ensure_azurite() {
  if [ "${DELTALOG_SKIP_NPM:-0}" = "1" ] || ! command -v npm >/dev/null 2>&1; then
    return 0
  fi
  if ! grep -qs "\"version\": \"$AZURITE_VERSION\"" "$TOOLS/node_modules/azurite/package.json"; then
    echo "[setup] installing azurite@$AZURITE_VERSION into $TOOLS (npm)" >&2
    mkdir -p "$TOOLS"
    if ! npm install --prefix "$TOOLS" --no-audit --no-fund --loglevel=error \
        "azurite@$AZURITE_VERSION" >"$TOOLS/npm-install.log" 2>&1; then
      tail -20 "$TOOLS/npm-install.log" >&2
      echo "[setup] npm install azurite failed; full log in $TOOLS/npm-install.log" >&2
      exit 1
    fi
  fi
}

# Debian's chromium for tests/report/test_report_browser.py, when missing (a fresh machine has
# none). Needs root and apt-get; elsewhere the test installs nothing and says why it cannot run.
ensure_chromium() {
  if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
    return 0
  fi
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    return 0
  fi
  echo "[setup] installing chromium (apt-get) for the report's browser test" >&2
  mkdir -p "$TOOLS"
  local log="$TOOLS/apt-chromium.log"
  if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >"$log" 2>&1; then
    DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$log" 2>&1 || true
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >>"$log" 2>&1; then
      tail -20 "$log" >&2
      echo "[setup] apt-get install chromium failed; full log in $log" >&2
    fi
  fi
}
