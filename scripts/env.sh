#!/usr/bin/env bash
# Shared set-up for the README's commands: a project-local virtualenv with deltalog (editable)
# and its development extras. Idempotent: re-running only installs what changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"

# ensure_venv DIR CONSTRAINTS: a virtualenv at DIR with deltalog (editable) and its development
# extras, the Spark line fixed by the constraints file. Re-installs only when pyproject.toml or
# the constraints changed.
ensure_venv() {
  local venv="$1" constraints="$2"
  if [ ! -x "$venv/bin/python" ]; then
    echo "[setup] creating virtualenv $venv" >&2
    "$PY" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
  fi
  local stamp="$venv/.deltalog-installed"
  if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ] || [ "$constraints" -nt "$stamp" ]; then
    echo "[setup] installing deltalog[dev] into $venv ($(grep -v '^#' "$constraints" | tr '\n' ' '))" >&2
    local log="$venv/install.log"
    if ! "$venv/bin/python" -m pip install -c "$constraints" -e "$ROOT[dev]" >"$log" 2>&1; then
      tail -40 "$log" >&2
      echo "[setup] pip install failed; full log in $log" >&2
      return 1
    fi
    touch "$stamp"
  fi
}

# The default environment: the newest Spark 4 line a released delta-spark supports.
VENV="${DELTALOG_VENV:-$ROOT/.venv}"
ensure_venv "$VENV" "$ROOT/scripts/constraints/spark4.txt"
export PATH="$VENV/bin:$PATH"

# Azurite (Azure Blob emulator) from npm, for the Azure log store tests. Pinned; installed once.
AZURITE_VERSION="3.35.0"
TOOLS="$ROOT/.tools"
if [ "${DELTALOG_SKIP_NPM:-0}" != "1" ] && command -v npm >/dev/null 2>&1; then
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
fi
