"""Reading rows with filters: deltalog against delta-rs, side by side in one run.

Usage::

    .venv/bin/python benchmarks/bench_read.py [--quick] [--repeat N] [--scale F] [--only NAME ...]
                                             [--out DIR] [--data DIR]

The table: 15,000,000 rows in 200 files, 20 partitions (``p`` int 0..19, 10 files each, written
as 10 appends of 1,500,000 rows), columns ``id`` long (ascending: each file holds one range of
75,000 ids), ``p``, ``x`` double in [0, 1), ``y`` long, ``s`` string, ``ts`` timestamp. The DV
table is the same data with ``delta.enableDeletionVectors=true``, after deltalog's
``delete("y % 10 = 3")`` (10% of the rows, a deletion vector on every file). ``--scale``
shrinks the row count (files and partitions stay).

Workloads (``deltalog.DeltaTable(path).to_pyarrow_table(columns=..., filter=...)`` against
``deltalake.DeltaTable(path).to_pyarrow_table(columns=..., filters=...)``, the same DNF tuples):

* ``full``: every row and column.
* ``partition``: ``p = 7`` (10 files).
* ``partition_data_3cols``: ``p = 7 AND x < 0.5``, columns ``id, x, s``.
* ``data_range``: ``id`` in a range of 1,000 ids that straddles two files (statistics skip
  the other 198).
* ``dv_full``: every row of the DV table (deletion vectors applied).
* ``dv_data_range``: the ``data_range`` filter on the DV table.

delta-rs's ``to_pyarrow_table`` refuses tables with deletion vectors; for the DV rows it runs
``QueryBuilder`` (DataFusion) ``SELECT * FROM t [WHERE ...]`` instead, which applies them.

Each run is a fresh child process (both engines imported before timing: deltalog's read modules
too, :data:`READ_MODULES`, which it otherwise imports on first use), engines alternating,
median of ``--repeat``; wall and CPU seconds of the read (opening the table included), the
child's peak RSS, the rows read (both engines must agree), the machine's load and the CPU time
used by everything else during the run. Results go to ``<out>/read.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

FILES_PER_PARTITION = 10
PARTITIONS = 20
TARGET = 1.0  # deltalog / delta-rs, wall time and (data_range) peak RSS
#: What ``DeltaTable(path).to_pyarrow_table(...)`` imports on first use.
READ_MODULES = (
    "pyarrow.json",
    "deltalog.table",
    "deltalog.read",
    "deltalog.checkpoints.reader",
    "deltalog.log.commit_parser",
    "deltalog.logstores.plugin_scan",
    "deltalog.stats.parsed_stats",
    "deltalog.stats.predicate_sql",
)


def workloads(rows: int) -> dict[str, dict[str, Any]]:
    per_file = rows // (FILES_PER_PARTITION * PARTITIONS)
    low = 7 * per_file * PARTITIONS + 3 * per_file - 500  # the end of one file, the next's start
    data_range = [("id", ">=", low), ("id", "<", low + 1000)]
    return {
        "full": {"table": "plain", "filters": None, "columns": None},
        "partition": {"table": "plain", "filters": [("p", "=", 7)], "columns": None},
        "partition_data_3cols": {
            "table": "plain",
            "filters": [("p", "=", 7), ("x", "<", 0.5)],
            "columns": ["id", "x", "s"],
        },
        "data_range": {"table": "plain", "filters": data_range, "columns": None},
        "dv_full": {"table": "dv", "filters": None, "columns": None},
        "dv_data_range": {"table": "dv", "filters": data_range, "columns": None},
    }


def build(data: Path, rows: int) -> dict[str, Any]:
    """The plain and DV tables (reused while the sizes match)."""
    import numpy as np
    import pyarrow as pa

    import deltalog

    params = {"rows": rows, "files": FILES_PER_PARTITION * PARTITIONS, "v": 1}
    marker = data / "params.json"
    if marker.exists() and json.loads(marker.read_text()) == params:
        return params
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    per_file = rows // (FILES_PER_PARTITION * PARTITIONS)
    batch = per_file * PARTITIONS
    for name, config in (("plain", None), ("dv", {"delta.enableDeletionVectors": "true"})):
        root = str(data / name)
        for f in range(FILES_PER_PARTITION):
            harness.log(f"  {name}: append {f + 1}/{FILES_PER_PARTITION}")
            rng = np.random.default_rng(f)
            ids = np.arange(f * batch, (f + 1) * batch)
            chunk = pa.table(
                {
                    "id": ids,
                    "p": (np.arange(batch) // per_file).astype("int32"),
                    "x": rng.random(batch),
                    "y": rng.integers(0, 1_000_000, batch),
                    "s": pa.array(rng.integers(0, 100_000, batch)).cast(pa.string()),
                    "ts": pa.array(ids * 1000, pa.timestamp("us", tz="UTC")),
                }
            )
            deltalog.write_table(
                root,
                chunk,
                mode="append",
                partition_by=["p"],
                configuration=config if f == 0 else None,
            )
        if name == "dv":
            harness.log("  dv: delete y % 10 = 3")
            deltalog.DeltaTable(root).delete("y % 10 = 3")
    marker.write_text(json.dumps(params))
    return params


def child(workload: str, engine: str, table: str, rows: int) -> None:
    """Run one read, print one JSON line of measurements."""
    import deltalake
    import pyarrow as pa
    import pyarrow.compute
    import pyarrow.dataset
    import pyarrow.parquet

    import deltalog

    # imported before timing, as ``import deltalake`` loads all of delta-rs: deltalog loads
    # the modules of opening a table and reading on first use, which is import time, not read
    # time (bench_import.py measures it; without bytecode caches it was ~0.06 s of CPU here)
    for name in READ_MODULES:
        importlib.import_module(name)

    spec = workloads(rows)[workload]
    filters, columns = spec["filters"], spec["columns"]
    cpu0, wall0 = harness.self_cpu_s(), time.perf_counter()
    if engine == "deltalog":
        out = deltalog.DeltaTable(table).to_pyarrow_table(columns=columns, filter=filters)
    elif spec["table"] == "dv":
        where = " AND ".join(f"{c} {op} {v!r}" for c, op, v in filters or [])
        sql = "SELECT * FROM t" + (f" WHERE {where}" if where else "")
        builder = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(table))
        out = pa.table(builder.execute(sql).read_all())
    else:
        out = deltalake.DeltaTable(table).to_pyarrow_table(columns=columns, filters=filters)
    wall, cpu = time.perf_counter() - wall0, harness.self_cpu_s() - cpu0
    print(
        json.dumps(
            {"wall": wall, "cpu": cpu, "peak_kib": harness.maxrss_kib(), "rows": out.num_rows}
        )
    )


def run_one(workload: str, engine: str, data: Path, rows: int) -> dict[str, Any]:
    table = data / workloads(rows)[workload]["table"]
    busy0, kids0 = harness.system_busy_s(), harness.children_cpu_s()
    done = subprocess.run(
        [sys.executable, __file__, "--child", workload, engine, str(table), str(rows)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    busy = harness.system_busy_s() - busy0
    child_cpu = harness.children_cpu_s() - kids0
    if done.returncode != 0:
        harness.log(f"{workload} {engine} failed:\n{done.stderr[-3000:]}")
        return {"error": done.stderr[-500:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["others_cpu_s"] = max(0.0, busy - child_cpu)
    return result


def _warm(table: Path) -> None:
    """Every file of the table read once: both engines read from the page cache."""
    for path in table.rglob("*"):
        if path.is_file():
            with path.open("rb") as fh:
                while fh.read(1 << 24):
                    pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true", help="a smoke run: --scale 0.01 --repeat 1")
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    parser.add_argument("--data", default=None)
    parser.add_argument("--child", nargs=4, metavar=("WORKLOAD", "ENGINE", "TABLE", "ROWS"))
    args = parser.parse_args()
    if args.child:
        workload, engine, table, rows = args.child
        child(workload, engine, table, int(rows))
        return
    if args.quick:
        args.scale, args.repeat = 0.01, 1
    rows = int(15_000_000 * args.scale) // 200 * 200
    out = Path(args.out)
    data = Path(args.data) if args.data else out / f"read_data_{args.scale:g}"
    harness.log(f"building the tables in {data} (reused while the sizes match)")
    params = build(data, rows)
    env = harness.environment()
    env["load_before"] = os.getloadavg()
    env["params"] = params
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for workload in workloads(rows):
        if args.only is not None and workload not in args.only:
            continue
        _warm(data / workloads(rows)[workload]["table"])
        engines = ["deltalog", "delta-rs"]
        results[workload] = {e: [] for e in engines}
        for i in range(args.repeat):
            for engine in engines if i % 2 == 0 else engines[::-1]:
                harness.log(f"{workload} run {i + 1}/{args.repeat}: {engine}")
                found = run_one(workload, engine, data, rows)
                found["load"] = os.getloadavg()[0]
                results[workload][engine].append(found)
    env["load_after"] = os.getloadavg()
    report(results, env, out)


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if key in r]
    return statistics.median(values) if values else None


def report(results: dict[str, Any], env: dict[str, Any], out: Path) -> None:
    head = ["workload", "engine", "wall s", "cpu s", "peak RSS MiB", "rows", "others' cpu s",
            "load 1m", "runs"]  # fmt: skip
    ratio_head = ["workload", "wall", "cpu", "peak RSS", "rows agree", "target (wall)"]
    rows, ratios = [], []
    for workload, by_engine in results.items():
        med: dict[str, dict[str, float | None]] = {}
        for name, runs in by_engine.items():
            keys = ("wall", "cpu", "peak_kib", "others_cpu_s", "load", "rows")
            m = {k: _median(runs, k) for k in keys}
            med[name] = m
            rows.append([
                workload, name, harness.fmt(m["wall"], ".3f"), harness.fmt(m["cpu"], ".3f"),
                harness.fmt(None if m["peak_kib"] is None else m["peak_kib"] / 1024, ".0f"),
                harness.fmt(m["rows"], ".0f"), harness.fmt(m["others_cpu_s"], ".1f"),
                harness.fmt(m["load"], ".2f"), str(len([r for r in runs if "wall" in r])),
            ])  # fmt: skip
        ours, theirs = med.get("deltalog", {}), med.get("delta-rs", {})

        def ratio(key: str, ours: Any = ours, theirs: Any = theirs) -> float | None:
            if ours.get(key) and theirs.get(key):
                return float(ours[key]) / float(theirs[key])
            return None

        wall = ratio("wall")
        met = "" if wall is None else ("met" if wall <= TARGET else "missed")
        ratios.append([
            workload, harness.fmt(wall, ".2f"), harness.fmt(ratio("cpu"), ".2f"),
            harness.fmt(ratio("peak_kib"), ".2f"), str(ours.get("rows") == theirs.get("rows")),
            f"<= {TARGET}x {met}",
        ])  # fmt: skip
    text = harness.text_table(head, rows) + "\n\n" + harness.text_table(ratio_head, ratios)
    print(text)
    print(f"load average before {env['load_before']}, after {env['load_after']}")
    out.mkdir(parents=True, exist_ok=True)
    dump = json.dumps({"env": env, "results": results}, indent=1, default=str)
    (out / "read.json").write_text(dump)
    (out / "read.md").write_text(
        harness.md_table(head, rows) + "\n\n" + harness.md_table(ratio_head, ratios)
        + f"\n\nload average before {env['load_before']}, after {env['load_after']}\n"
    )  # fmt: skip


if __name__ == "__main__":
    main()
