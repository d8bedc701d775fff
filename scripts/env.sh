#!/usr/bin/env bash
# Shared set-up for the README's commands: a project-local virtualenv with deltalog (editable)
# and its development extras. Idempotent: re-running only installs what changed.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${DELTALOG_VENV:-$ROOT/.venv}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating virtualenv $VENV" >&2
  "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null 2>&1 || true
fi
stamp="$VENV/.deltalog-installed"
if [ ! -f "$stamp" ] || [ "$ROOT/pyproject.toml" -nt "$stamp" ]; then
  echo "[setup] installing deltalog[dev] into $VENV" >&2
  log="$VENV/install.log"
  if ! "$VENV/bin/python" -m pip install -e "$ROOT[dev]" >"$log" 2>&1; then
    tail -40 "$log" >&2
    echo "[setup] pip install failed; full log in $log" >&2
    exit 1
  fi
  touch "$stamp"
fi
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
