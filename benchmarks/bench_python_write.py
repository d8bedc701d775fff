"""``deltalog.write_table`` against delta-rs's ``write_deltalake``, side by side in one run.

Usage::

    .venv/bin/python benchmarks/bench_python_write.py [--repeat N] [--rows N] [--stream-rows N]
                                                     [--only table|stream] [--out DIR]

Workloads (each run in a fresh child process, engines alternating, median of ``--repeat``):

* ``table``: a pyarrow Table of ``--rows`` (default 10,000,000) rows x 6 columns (``id`` long,
  ``part`` string with 30 values, ``x`` double, ``y`` long in 0..999, ``s`` string of 100,000
  values, ``ts`` timestamp) written as a new table partitioned by ``part``. The child builds
  the table (same seed for both engines), then times the write alone.
* ``stream``: a RecordBatchReader of ``--stream-rows`` (default 50,000,000) rows of the same
  columns, generated batch by batch (64k rows) as the writer pulls them, written as a new
  partitioned table: the data never exists whole in memory, so peak RSS is what the writer
  holds. The timings include generating the batches (the same work for both engines).

The write function is looked up before the clock starts (``deltalog.write_table`` imports the
writer's modules on first use; ``import deltalake`` has already loaded delta-rs's), so module
imports are not timed; ``bench_import.py`` measures them.

Reported per engine: wall seconds and CPU seconds of the write (user + system of the child),
peak RSS of the child (``VmHWM``: the data generation is the same for both, and for ``table``
the input table itself is ~450 MiB of it), and the ratios deltalog / delta-rs. The machine's
CPU use by everything else during the run is reported too (from ``/proc/stat``), because the
2-core machine is shared. Results go to ``<out>/python_write.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402

ENGINES = ("deltalog", "delta-rs")
PARTS = 30
BATCH = 1 << 16


def _batch(np: Any, pa: Any, rng: Any, start: int, n: int) -> Any:
    ids = np.arange(start, start + n)
    return pa.record_batch(
        [
            pa.array(ids),
            pa.array(rng.integers(0, PARTS, n)).cast(pa.string()),
            pa.array(rng.random(n)),
            pa.array(rng.integers(0, 1000, n)),
            pa.array(rng.integers(0, 100_000, n)).cast(pa.string()),
            pa.array(ids * 1000, pa.timestamp("us", tz="UTC")),
        ],
        names=["id", "part", "x", "y", "s", "ts"],
    )


def child(engine: str, workload: str, rows: int, target: str) -> None:
    """Build the data, write it with ``engine``, print one JSON line of measurements."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(7)
    if workload == "table":
        data: Any = pa.Table.from_batches([_batch(np, pa, rng, 0, rows)])
    else:
        schema = _batch(np, pa, rng, 0, 1).schema

        def batches() -> Any:
            for start in range(0, rows, BATCH):
                yield _batch(np, pa, rng, start, min(BATCH, rows - start))

        data = pa.RecordBatchReader.from_batches(schema, batches())
    import deltalake

    import deltalog

    # resolved before the clock starts, as ``import deltalake`` loads delta-rs's whole writer:
    # ``import deltalog`` loads its modules on first use (PEP 562), which is import time, not
    # write time (bench_import.py measures that)
    write = deltalog.write_table if engine == "deltalog" else deltalake.write_deltalake
    before_rss = harness.maxrss_kib()
    cpu0, wall0 = harness.self_cpu_s(), time.perf_counter()
    write(target, data, partition_by=["part"])
    wall, cpu = time.perf_counter() - wall0, harness.self_cpu_s() - cpu0
    print(
        json.dumps(
            {"wall": wall, "cpu": cpu, "peak_kib": harness.maxrss_kib(), "before_kib": before_rss}
        )
    )


def run_one(engine: str, workload: str, rows: int, scratch: Path) -> dict[str, Any]:
    target = scratch / f"{engine}-{workload}"
    shutil.rmtree(target, ignore_errors=True)
    busy0, t0, kids0 = harness.system_busy_s(), time.perf_counter(), harness.children_cpu_s()
    done = subprocess.run(
        [sys.executable, __file__, "--child", engine, workload, str(rows), str(target)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    elapsed, busy = time.perf_counter() - t0, harness.system_busy_s() - busy0
    child_cpu = harness.children_cpu_s() - kids0
    if done.returncode != 0:
        harness.log(f"{engine} {workload} failed:\n{done.stderr[-2000:]}")
        return {"error": done.stderr[-500:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["others_cpu_s"] = max(0.0, busy - child_cpu)  # the machine's other work meanwhile
    result["elapsed"] = elapsed
    check = _check(engine, target, rows)
    result.update(check)
    shutil.rmtree(target, ignore_errors=True)
    return result


def _check(engine: str, target: Path, rows: int) -> dict[str, Any]:
    """The other engine reads the table: every row there."""
    import deltalake

    import deltalog

    if engine == "deltalog":
        import pyarrow as pa

        actions = pa.table(deltalake.DeltaTable(str(target)).get_add_actions(flatten=True))
        count = sum(int(n) for n in actions.column("num_records").to_pylist())
        files = actions.num_rows
    else:
        dl = deltalog.DeltaTable(str(target))
        flat = dl.files(flatten_stats=True)
        count = sum(flat.column("num_records").to_pylist())
        files = flat.num_rows
    return {"rows_read_by_other": count, "files": files, "rows_ok": count == rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--stream-rows", type=int, default=50_000_000)
    parser.add_argument("--only", choices=["table", "stream"], default=None)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    parser.add_argument("--child", nargs=4, metavar=("ENGINE", "WORKLOAD", "ROWS", "TARGET"))
    args = parser.parse_args()
    if args.child:
        engine, workload, rows, target = args.child
        child(engine, workload, int(rows), target)
        return
    env = harness.environment()
    env["load_before"] = os.getloadavg()
    workloads = [w for w in ("table", "stream") if args.only in (None, w)]
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-python-write-") as tmp:
        for workload in workloads:
            rows = args.rows if workload == "table" else args.stream_rows
            results[workload] = {e: [] for e in ENGINES}
            for i in range(args.repeat):
                order = ENGINES if i % 2 == 0 else ENGINES[::-1]
                for engine in order:
                    harness.log(f"{workload} run {i + 1}/{args.repeat}: {engine}")
                    results[workload][engine].append(run_one(engine, workload, rows, Path(tmp)))
    env["load_after"] = os.getloadavg()
    report(results, env, Path(args.out))


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if key in r]
    return statistics.median(values) if values else None


def report(results: dict[str, Any], env: dict[str, Any], out: Path) -> None:
    head = ["workload", "engine", "wall s", "cpu s", "peak RSS MiB", "RSS before MiB",
            "others' cpu s", "files", "rows ok"]  # fmt: skip
    rows = []
    ratios = []
    for workload, by_engine in results.items():
        med = {}
        for engine, runs in by_engine.items():
            m = {k: _median(runs, k) for k in ("wall", "cpu", "peak_kib", "before_kib",
                                                "others_cpu_s", "files")}  # fmt: skip
            med[engine] = m
            ok = all(r.get("rows_ok") for r in runs)
            rows.append([
                workload, engine, harness.fmt(m["wall"], ".2f"), harness.fmt(m["cpu"], ".2f"),
                harness.fmt(None if m["peak_kib"] is None else m["peak_kib"] / 1024, ".0f"),
                harness.fmt(None if m["before_kib"] is None else m["before_kib"] / 1024, ".0f"),
                harness.fmt(m["others_cpu_s"], ".1f"), harness.fmt(m["files"], ".0f"), str(ok),
            ])  # fmt: skip
        a, b = med["deltalog"], med["delta-rs"]
        for key, name in (("wall", "time"), ("cpu", "cpu"), ("peak_kib", "peak RSS")):
            if a[key] and b[key]:
                ratios.append([workload, name, f"{a[key] / b[key]:.2f}x"])
    text = (
        harness.text_table(head, rows)
        + "\n\n"
        + harness.text_table(["workload", "measure", "deltalog / delta-rs"], ratios)
    )
    print(text)
    print(f"load average before {env['load_before']}, after {env['load_after']}")
    out.mkdir(parents=True, exist_ok=True)
    dump = json.dumps({"env": env, "results": results}, indent=1, default=str)
    (out / "python_write.json").write_text(dump)
    (out / "python_write.md").write_text(
        harness.md_table(head, rows)
        + "\n\n"
        + harness.md_table(["workload", "measure", "deltalog / delta-rs"], ratios)
        + "\n"
    )


if __name__ == "__main__":
    main()
