"""Group commit benchmark: threads of one process committing one caller-built add each.

Usage::

    .venv/bin/python benchmarks/bench_group_commit.py [--threads 32] [--per-thread 500]
        [--off-per-thread 20] [--single 300] [--s3-threads 16] [--s3-per-thread 30]
        [--s3-single 60] [--no-s3] [--out benchmarks/out]

Workloads (each on a fresh table, every transaction a blind append of one ``AddFile`` the
caller built; no Parquet is read or written):

* ``single``: one thread, group commit off: the commit rate of one writer (on local disk the
  fsync floor: every commit fsyncs its file and the log directory); and delta-rs's single
  writer for reference (``create_write_transaction`` + ``update_incremental``, no fsync;
  delta-rs has no group commit, and its threads racing for versions fail after 15 retries).
* ``group off``: ``--threads`` threads, each with its own ``DeltaTable``, group commit off
  (every transaction races for its own version).
* ``group on``: the same with ``DeltaTable(uri, group_commit=True)``.
* On the moto S3 test server (``tests/servers``): one writer, and ``--s3-threads`` threads with
  group commit on.

After each run the log is checked: every acknowledged transaction's add is in the version it
was told, exactly once, the live file count is the number of transactions, and
``DeltaTable.check`` is clean. Reported: transactions/s (wall), p50/p99 latency of one
transaction (start to acknowledged), commits written, CPU seconds of the process, and the
load average before the run (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from harness import ROOT, md_table, percentile, text_table

TESTS = ROOT / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

BUCKET = "deltalog-bench-group"


def run(
    uri: str,
    options: dict[str, str],
    *,
    threads: int,
    per_thread: int,
    group: bool,
) -> dict[str, Any]:
    """``threads`` x ``per_thread`` one-add transactions on a fresh table at ``uri``."""
    import pyarrow as pa

    from deltalog import AddFile, DeltaTable

    DeltaTable.create(uri, pa.schema([("x", pa.int64())]), storage_options=options)
    barrier = threading.Barrier(threads + 1)
    latencies: list[list[float]] = [[] for _ in range(threads)]
    told: list[dict[str, int]] = [{} for _ in range(threads)]
    errors: list[str] = []

    def writer(n: int) -> None:
        table = DeltaTable(uri, storage_options=options, group_commit=group)
        barrier.wait()
        for i in range(per_thread):
            path = f"w{n}-{i}.parquet"
            start = time.perf_counter()
            try:
                with table.transaction() as tx:
                    tx.add(AddFile(path, {}, 100, 0, True, stats='{"numRecords":1}'))
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
                continue
            latencies[n].append((time.perf_counter() - start) * 1000)
            assert tx.version is not None
            told[n][path] = tx.version

    workers = [threading.Thread(target=writer, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    load = os.getloadavg()[0]
    cpu0 = time.process_time()
    barrier.wait()
    t0 = time.perf_counter()
    for w in workers:
        w.join()
    wall = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    acknowledged = {p: v for d in told for p, v in d.items()}
    final = DeltaTable(uri, storage_options=options)
    final.wait_for_checkpoints()
    lost, duplicated = _audit(final, acknowledged)
    ms = [x for lat in latencies for x in lat]
    report = final.check(data_files=False)
    return {
        "threads": threads,
        "transactions": len(acknowledged),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "commits": final.version(),
        "wall_s": wall,
        "tx_per_s": len(acknowledged) / wall,
        "p50_ms": statistics.median(ms) if ms else None,
        "p99_ms": percentile(ms, 99) if ms else None,
        "cpu_s": cpu,
        "load_before": load,
        "lost": lost,
        "duplicated": duplicated,
        "check_ok": report.ok,
    }


def run_delta_rs(uri: str, commits: int) -> dict[str, Any]:
    """delta-rs, one writer: ``create_write_transaction([AddAction])`` per commit (reference)."""
    import deltalake
    import pyarrow as pa
    from deltalake.transaction import AddAction

    deltalake.write_deltalake(uri, pa.table({"x": pa.array([], pa.int64())}))
    dt = deltalake.DeltaTable(uri)
    schema = dt.schema()
    load = os.getloadavg()[0]
    ms: list[float] = []
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    for i in range(commits):
        start = time.perf_counter()
        add = AddAction(f"rs-{i}.parquet", 100, {}, 0, True, '{"numRecords":1}')
        dt.create_write_transaction([add], mode="append", schema=schema)
        dt.update_incremental()
        ms.append((time.perf_counter() - start) * 1000)
    wall = time.perf_counter() - t0
    final = deltalake.DeltaTable(uri)
    return {
        "threads": 1,
        "transactions": commits,
        "errors": 0,
        "first_error": None,
        "commits": final.version(),
        "wall_s": wall,
        "tx_per_s": commits / wall,
        "p50_ms": statistics.median(ms),
        "p99_ms": percentile(ms, 99),
        "cpu_s": time.process_time() - cpu0,
        "load_before": load,
        "lost": commits - len(final.file_uris()),
        "duplicated": 0,
        "check_ok": True,
    }


def _audit(table: Any, acknowledged: dict[str, int]) -> tuple[int, int]:
    """(lost, duplicated): acknowledged adds missing from their version, adds logged twice."""
    from deltalog.log.storage import TableStorage
    from deltalog.protocol.paths import commit_name

    storage: TableStorage = table._storage
    seen: dict[str, int] = {}
    duplicated = 0
    for version in range(1, table.version() + 1):
        for line in storage.read_log_file(commit_name(version)).splitlines():
            action = json.loads(line)
            if "add" in action:
                path = action["add"]["path"]
                duplicated += path in seen
                seen[path] = version
    lost = sum(1 for p, v in acknowledged.items() if seen.get(p) != v)
    live = len(table.files())
    return lost + max(0, len(acknowledged) - live), duplicated


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--per-thread", type=int, default=500)
    parser.add_argument("--off-per-thread", type=int, default=20)
    parser.add_argument("--single", type=int, default=300)
    parser.add_argument("--s3-threads", type=int, default=16)
    parser.add_argument("--s3-per-thread", type=int, default=30)
    parser.add_argument("--s3-single", type=int, default=60)
    parser.add_argument("--no-s3", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    args = parser.parse_args(argv)
    scratch = Path(tempfile.mkdtemp(prefix="bench-group-"))
    rows: list[tuple[str, dict[str, Any]]] = []
    try:

        def local(name: str, **kw: Any) -> None:
            result = run(str(scratch / uuid.uuid4().hex), {}, **kw)
            rows.append((name, result))
            print(name, json.dumps(result), flush=True)

        local("local single writer", threads=1, per_thread=args.single, group=False)
        rs = run_delta_rs(str(scratch / uuid.uuid4().hex), args.single)
        rows.append(("local delta-rs single writer", rs))
        print("local delta-rs single writer", json.dumps(rs), flush=True)
        local(
            "local group off",
            threads=args.threads,
            per_thread=args.off_per_thread,
            group=False,
        )
        local("local group on", threads=args.threads, per_thread=args.per_thread, group=True)
        if not args.no_s3:
            _s3(args, scratch, rows)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    head = ["run", "threads", "tx", "tx/s", "p50 ms", "p99 ms", "commits", "cpu s", "load",
            "lost", "dup", "check"]  # fmt: skip
    table = [
        [
            name,
            str(r["threads"]),
            str(r["transactions"]),
            f"{r['tx_per_s']:.0f}",
            f"{r['p50_ms']:.1f}",
            f"{r['p99_ms']:.1f}",
            str(r["commits"]),
            f"{r['cpu_s']:.1f}",
            f"{r['load_before']:.1f}",
            str(r["lost"]),
            str(r["duplicated"]),
            "ok" if r["check_ok"] else "FAILED",
        ]
        for name, r in rows
    ]
    by = dict(rows)
    ratios = {
        "group on / single writer (local)": by["local group on"]["tx_per_s"]
        / by["local single writer"]["tx_per_s"],
        "group on / group off (local)": by["local group on"]["tx_per_s"]
        / by["local group off"]["tx_per_s"],
        "group on / delta-rs single writer (local)": by["local group on"]["tx_per_s"]
        / by["local delta-rs single writer"]["tx_per_s"],
    }
    if "s3 group on" in by:
        ratios["group on / single writer (S3)"] = (
            by["s3 group on"]["tx_per_s"] / by["s3 single writer"]["tx_per_s"]
        )
    print(text_table(head, table))
    for name, value in ratios.items():
        print(f"{name}: {value:.1f}x")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "group_commit.json").write_text(json.dumps({"runs": dict(rows), **ratios}))
    (args.out / "group_commit.md").write_text(
        md_table(head, table) + "\n" + "".join(f"\n- {n}: {v:.1f}x" for n, v in ratios.items())
    )


def _s3(args: argparse.Namespace, scratch: Path, rows: list[tuple[str, dict[str, Any]]]) -> None:
    import boto3
    from servers import harness
    from servers.fixtures import s3_options

    server = harness.start_moto(scratch)
    try:
        boto3.client(
            "s3",
            endpoint_url=server.endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket=BUCKET)
        options = s3_options(server.endpoint)
        for name, kw in (
            ("s3 single writer", {"threads": 1, "per_thread": args.s3_single, "group": False}),
            (
                "s3 group on",
                {"threads": args.s3_threads, "per_thread": args.s3_per_thread, "group": True},
            ),
        ):
            result = run(f"s3://{BUCKET}/{uuid.uuid4().hex[:8]}", options, **kw)
            rows.append((name, result))
            print(name, json.dumps(result), flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
