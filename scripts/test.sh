#!/usr/bin/env bash
# The whole test suite: set up (first run only), lint, type-check, build the docs site, then
# every test (the docs' code blocks and the packaging checks included), on both Spark lines:
#   1. the default environment (.venv: PySpark 4.2 + delta-spark 4.4, Scala 2.13): everything;
#   2. .venv-spark35 (PySpark 3.5 + delta-spark 3.3, Scala 2.12): every Spark and delta-spark
#      test again (pytest -m spark), but those marked one_spark_line.
# Arguments go to pytest and run only step 1 (bash scripts/test.sh -k golden -x).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
dev_env
ensure_azurite
ensure_chromium
cd "$ROOT"
echo "[test] ruff" >&2
targets=()
# Python code blocks in the Markdown pages are formatted too (ruff formats Markdown).
for d in deltalog logstores checkpoints tests interop_tests benchmarks scripts docs \
    README.md CONTRIBUTING.md; do
  [ -e "$d" ] && targets+=("$d")
done
ruff check "${targets[@]}"
ruff format --check "${targets[@]}"
echo "[test] mypy --strict" >&2
mypy
# The docs site, warnings as errors, offline: a build that reaches for the network fails.
echo "[test] mkdocs build --strict" >&2
SITE="$(mktemp -d)"
NO_MKDOCS_2_WARNING=1 HTTP_PROXY=http://127.0.0.1:9 HTTPS_PROXY=http://127.0.0.1:9 \
  python -m mkdocs build --strict --site-dir "$SITE"
rm -rf "$SITE"
# Servers, PySpark's JVM and delta-spark's jars (spark.jars.packages, Ivy cache in ~) must be
# there: a test that cannot have them fails instead of skipping.
export DELTALOG_REQUIRE_SERVERS=1 DELTALOG_REQUIRE_DELTA_SPARK=1
if [ "$#" -gt 0 ]; then
  exec python -m pytest "$@"
fi
echo "[test] pytest on $(python -c 'import pyspark; print("PySpark", pyspark.__version__)')" >&2
status=0
python -m pytest || status=$?
VENV35="${DELTALOG_VENV_SPARK35:-$ROOT/.venv-spark35}"
ensure_venv "$VENV35" "$ROOT/scripts/constraints/spark35.txt" "${DEV_SPEC[@]}"
echo "[test] pytest -m spark on $("$VENV35/bin/python" -c 'import pyspark; print("PySpark", pyspark.__version__)')" >&2
PATH="$VENV35/bin:$PATH" "$VENV35/bin/python" -m pytest -m "spark and not one_spark_line" \
  -p no:cacheprovider || status=$?
exit "$status"
