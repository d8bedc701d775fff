"""DELETE, MERGE and OPTIMIZE without Spark: deltalog against delta-rs, side by side in one run.

Usage::

    .venv/bin/python benchmarks/bench_dml.py [--quick] [--repeat N] [--scale F] [--only NAME ...]
                                            [--out DIR]

Workloads (each run in a fresh child process on a fresh copy of the same master table, engines
alternating, median of ``--repeat``; ``--scale`` shrinks every size for a smoke run):

* ``delete``: a table of 10,000,000 rows in 100 files (6 columns: ``id`` long, ``k`` int in
  0..99, ``x`` double, ``y`` long, ``s`` string, ``ts`` timestamp); ``DELETE WHERE k = 7``
  removes 1% of the rows, spread over every file. delta-rs (which writes no deletion vectors)
  rewrites the 100 files; deltalog runs twice, on the same data with
  ``delta.enableDeletionVectors=true`` (``deletion-vectors``: it writes one DV file) and
  without (``copy-on-write``).
* ``merge``: the same 10,000,000-row target; a 1,000,000-row source whose ids match 10% of its
  rows (100,000 target rows, spread over every file) and are new for the rest; ``MERGE ... ON
  t.id = s.id WHEN MATCHED UPDATE SET * WHEN NOT MATCHED INSERT *``. deltalog runs with and
  without deletion vectors, delta-rs without.
* ``optimize``: 1,000 small files of 1,000 rows each (one append each, no partitions),
  compacted into one file (``optimize.compact()`` for both engines).

Reported per engine and variant: wall seconds and CPU seconds of the operation (opening the
table included; user + system of the child), peak RSS of the child, the rows the other engine
reads afterwards (checked), and the ratios deltalog / delta-rs. The machine's CPU use by
everything else during each run and the load average are reported too: the 2-core machine is
shared. Results go to ``<out>/dml.json`` and ``.md``.
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

#: (workload, variant) -> engine that runs it; delta-rs runs the plain table.
RUNS = {
    "delete": [("deltalog", "deletion-vectors"), ("deltalog", "copy-on-write"), ("delta-rs", "")],
    "merge": [("deltalog", "deletion-vectors"), ("deltalog", "copy-on-write"), ("delta-rs", "")],
    "optimize": [("deltalog", ""), ("delta-rs", "")],
}
TARGETS = {
    ("delete", "deletion-vectors"): 0.2,
    ("delete", "copy-on-write"): 1.0,
    ("merge", "deletion-vectors"): 0.3,
    ("merge", "copy-on-write"): 1.0,
    ("optimize", ""): 1.0,
}


def _rows(np: Any, pa: Any, start: int, n: int, seed: int) -> Any:
    rng = np.random.default_rng(seed)
    ids = np.arange(start, start + n)
    return pa.table(
        {
            "id": pa.array(ids),
            "k": pa.array(rng.integers(0, 100, n).astype("int32")),
            "x": pa.array(rng.random(n)),
            "y": pa.array(rng.integers(0, 1000, n)),
            "s": pa.array(rng.integers(0, 100_000, n)).cast(pa.string()),
            "ts": pa.array(ids * 1000, pa.timestamp("us", tz="UTC")),
        }
    )


def build_masters(data: Path, scale: float) -> dict[str, Any]:
    """The master tables (reused while the sizes match) and the merge source."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    import deltalog

    rows = int(10_000_000 * scale)
    files = 100
    small_files = max(2, int(1000 * scale))
    params = {"rows": rows, "files": files, "small_files": small_files, "v": 2}
    marker = data / "params.json"
    if marker.exists() and json.loads(marker.read_text()) == params:
        return params
    shutil.rmtree(data, ignore_errors=True)
    data.mkdir(parents=True)
    per_file = rows // files
    for name, config in (("plain", None), ("dv", {"delta.enableDeletionVectors": "true"})):
        root = str(data / name)
        for f in range(files):
            chunk = _rows(np, pa, f * per_file, per_file, seed=f)
            deltalog.write_table(
                root, chunk, mode="append", configuration=config if f == 0 else None
            )
    rng = np.random.default_rng(99)
    matched = rng.choice(rows, size=rows // 100, replace=False)  # 10% of the 1M-row source
    source = _rows(np, pa, rows, rows // 10, seed=123)
    ids = np.concatenate([np.sort(matched), np.arange(rows, rows + rows // 10 - len(matched))])
    source = source.set_column(0, "id", pa.array(ids))
    pq.write_table(source, data / "source.parquet")
    small = str(data / "small")
    for f in range(small_files):
        deltalog.write_table(small, _rows(np, pa, f * 1000, 1000, seed=f), mode="append")
    marker.write_text(json.dumps(params))
    return params


def child(workload: str, engine: str, variant: str, table: str, data: str) -> None:
    """Run one operation, print one JSON line of measurements."""
    import pyarrow.parquet as pq

    source = pq.read_table(Path(data) / "source.parquet") if workload == "merge" else None
    import deltalake

    import deltalog
    import deltalog.table  # imported before timing, as deltalake is

    cpu0, wall0 = harness.self_cpu_s(), time.perf_counter()
    if engine == "deltalog":
        dl = deltalog.DeltaTable(table)
        if workload == "delete":
            out = dict(dl.delete("k = 7").metrics)
        elif workload == "merge":
            out = dict(
                dl.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
                .metrics
            )
        else:
            result = dl.optimize.compact()
            out = {"numAddedFiles": result.files_added, "numRemovedFiles": result.files_removed}
    else:
        rs = deltalake.DeltaTable(table)
        if workload == "delete":
            out = rs.delete("k = 7")
        elif workload == "merge":
            out = (
                rs.merge(source, "t.id = s.id", source_alias="s", target_alias="t")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
            )
        else:
            out = rs.optimize.compact()
    wall, cpu = time.perf_counter() - wall0, harness.self_cpu_s() - cpu0
    keep = {k: v for k, v in out.items() if isinstance(v, int | float | str)}
    print(json.dumps({"wall": wall, "cpu": cpu, "peak_kib": harness.maxrss_kib(), "out": keep}))


def run_one(
    workload: str, engine: str, variant: str, data: Path, scratch: Path, expected: int
) -> dict[str, Any]:
    master = data / ("small" if workload == "optimize" else "dv" if variant == "deletion-vectors"
                     else "plain")  # fmt: skip
    table = harness.fresh_copy(master, scratch / "table", sync=True)
    busy0, t0, kids0 = harness.system_busy_s(), time.perf_counter(), harness.children_cpu_s()
    command = [sys.executable, __file__, "--child", workload, engine, variant or "-"]
    done = subprocess.run(
        [*command, str(table), str(data)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    busy = harness.system_busy_s() - busy0
    child_cpu = harness.children_cpu_s() - kids0
    if done.returncode != 0:
        harness.log(f"{workload} {engine} {variant} failed:\n{done.stderr[-3000:]}")
        return {"error": done.stderr[-500:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result["others_cpu_s"] = max(0.0, busy - child_cpu)
    result["elapsed"] = time.perf_counter() - t0
    result["rows_read_by_other"] = _other_reads(engine, table)
    result["rows_ok"] = result["rows_read_by_other"] == expected
    shutil.rmtree(table, ignore_errors=True)
    return result


def _other_reads(engine: str, table: Path) -> int:
    """The other engine counts the rows (delta-rs through DataFusion: it applies DVs)."""
    import deltalake
    import pyarrow as pa

    import deltalog

    if engine == "deltalog":
        builder = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(table)))
        batch = pa.table(builder.execute("SELECT count(*) AS n FROM t").read_all())
        return int(batch.column("n")[0].as_py())
    return deltalog.DeltaTable(str(table)).to_pyarrow_table(columns=["id"]).num_rows


def _expected(workload: str, data: Path, params: dict[str, Any]) -> int:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    import deltalog

    if workload == "optimize":
        return int(params["small_files"]) * 1000
    rows = int(params["rows"])
    if workload == "merge":
        source = pq.read_table(data / "source.parquet", columns=["id"])
        return rows + int(pc.sum(pc.greater_equal(source.column("id"), rows)).as_py())
    k = deltalog.DeltaTable(str(data / "plain")).to_pyarrow_table(columns=["k"]).column("k")
    return rows - int(pc.sum(pc.equal(k, 7)).as_py())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true", help="a smoke run: --scale 0.01 --repeat 1")
    parser.add_argument("--only", nargs="*", choices=sorted(RUNS), default=None)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    parser.add_argument("--data", default=None)
    parser.add_argument("--child", nargs=5, metavar=("WORKLOAD", "ENGINE", "VARIANT", "T", "D"))
    args = parser.parse_args()
    if args.child:
        workload, engine, variant, table, data = args.child
        child(workload, engine, "" if variant == "-" else variant, table, data)
        return
    if args.quick:
        args.scale, args.repeat = 0.01, 1
    out = Path(args.out)
    data = Path(args.data) if args.data else out / f"dml_data_{args.scale:g}"
    harness.log(f"building the master tables in {data} (reused while the sizes match)")
    params = build_masters(data, args.scale)
    env = harness.environment()
    env["load_before"] = os.getloadavg()
    env["params"] = params
    results: dict[str, dict[str, list[dict[str, Any]]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-dml-", dir=out) as tmp:
        for workload in [w for w in RUNS if args.only is None or w in args.only]:
            expected = _expected(workload, data, params)
            runs = RUNS[workload]
            results[workload] = {_key(e, v): [] for e, v in runs}
            for i in range(args.repeat):
                for engine, variant in runs if i % 2 == 0 else runs[::-1]:
                    harness.log(f"{workload} run {i + 1}/{args.repeat}: {engine} {variant}")
                    found = run_one(workload, engine, variant, data, Path(tmp), expected)
                    found["load"] = os.getloadavg()[0]
                    results[workload][_key(engine, variant)].append(found)
    env["load_after"] = os.getloadavg()
    report(results, env, out)


def _key(engine: str, variant: str) -> str:
    return f"{engine} {variant}".strip()


def _median(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [r[key] for r in runs if key in r]
    return statistics.median(values) if values else None


def report(results: dict[str, Any], env: dict[str, Any], out: Path) -> None:
    head = ["workload", "engine", "wall s", "cpu s", "peak RSS MiB", "others' cpu s",
            "load 1m", "runs", "rows ok"]  # fmt: skip
    rows, ratios = [], []
    for workload, by_engine in results.items():
        med = {}
        for name, runs in by_engine.items():
            m = {k: _median(runs, k) for k in ("wall", "cpu", "peak_kib", "others_cpu_s", "load")}
            med[name] = m
            rows.append([
                workload, name, harness.fmt(m["wall"], ".2f"), harness.fmt(m["cpu"], ".2f"),
                harness.fmt(None if m["peak_kib"] is None else m["peak_kib"] / 1024, ".0f"),
                harness.fmt(m["others_cpu_s"], ".1f"), harness.fmt(m["load"], ".2f"),
                str(len([r for r in runs if "wall" in r])),
                str(bool(runs) and all(r.get("rows_ok") for r in runs)),
            ])  # fmt: skip
        theirs = med.get("delta-rs", {})
        for name, m in med.items():
            if name == "delta-rs":
                continue
            variant = name.removeprefix("deltalog").strip()
            target = TARGETS.get((workload, variant))
            for key, measure in (("wall", "time"), ("cpu", "cpu"), ("peak_kib", "peak RSS")):
                if m.get(key) and theirs.get(key):
                    ratio = m[key] / theirs[key]
                    goal = f"<= {target}x" if target and key == "wall" else ""
                    met = "" if not goal else ("met" if ratio <= (target or 0) else "missed")
                    ratios.append([workload, name, measure, f"{ratio:.2f}x", goal, met])
    ratio_head = ["workload", "engine", "measure", "deltalog / delta-rs", "target", ""]
    text = harness.text_table(head, rows) + "\n\n" + harness.text_table(ratio_head, ratios)
    print(text)
    print(f"load average before {env['load_before']}, after {env['load_after']}")
    out.mkdir(parents=True, exist_ok=True)
    dump = json.dumps({"env": env, "results": results}, indent=1, default=str)
    (out / "dml.json").write_text(dump)
    (out / "dml.md").write_text(
        harness.md_table(head, rows) + "\n\n" + harness.md_table(ratio_head, ratios)
        + f"\n\nload average before {env['load_before']}, after {env['load_after']}\n"
    )  # fmt: skip


if __name__ == "__main__":
    main()
