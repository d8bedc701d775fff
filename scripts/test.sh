#!/usr/bin/env bash
# The whole test suite: set up (first run only), lint, type-check, build the docs site, then
# every test (the docs' code blocks and the packaging checks included), on both Spark lines:
#   1. the default environment (.venv: PySpark 4.2 + delta-spark 4.4, Scala 2.13): everything;
#   2. .venv-spark35 (PySpark 3.5 + delta-spark 3.3, Scala 2.12): every Spark and delta-spark
#      test again (pytest -m spark), but those marked one_spark_line.
# Two pytest processes share the machine's cores: the default line's Spark and interop tests
# (-m "spark or interop") run in the background while the other tests, then step 2, run here;
# both outputs are printed, and the status fails if either fails.
# Arguments go to pytest and run only step 1, in one process (bash scripts/test.sh -k golden -x).
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
VENV35="${DELTALOG_VENV_SPARK35:-$ROOT/.venv-spark35}"
ensure_venv "$VENV35" "$ROOT/scripts/constraints/spark35.txt" "${DEV_SPEC[@]}"
line35="$("$VENV35/bin/python" -c 'import pyspark; print("PySpark", pyspark.__version__)')"
# Ivy's cache has no lock: download each line's jars once, before two JVMs can ask at once.
python scripts/warm_spark_jars.py
PATH="$VENV35/bin:$PATH" "$VENV35/bin/python" scripts/warm_spark_jars.py
RUNS="$(mktemp -d)"
status=0
line="$(python -c 'import pyspark; print("PySpark", pyspark.__version__)')"
echo "[test] pytest -m 'spark or interop' on $line, in the background (printed when done)" >&2
python -m pytest -m "spark or interop" -p no:cacheprovider --basetemp="$RUNS/spark" \
  > "$RUNS/spark.log" 2>&1 &
spark_pid=$!
echo "[test] pytest -m 'not spark and not interop' on $line" >&2
python -m pytest -m "not spark and not interop" -p no:cacheprovider --basetemp="$RUNS/rest" \
  || status=$?
echo "[test] pytest -m spark on $line35" >&2
PATH="$VENV35/bin:$PATH" "$VENV35/bin/python" -m pytest -m "spark and not one_spark_line" \
  -p no:cacheprovider --basetemp="$RUNS/spark35" || status=$?
spark_status=0
wait "$spark_pid" || spark_status=$?
echo "[test] pytest -m 'spark or interop' on $line (exit status $spark_status):" >&2
cat "$RUNS/spark.log"
[ "$spark_status" -eq 0 ] || status=$spark_status
rm -rf "$RUNS"
exit "$status"
