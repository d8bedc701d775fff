"""Requests per commit and commits/s on the object stores: deltalog and delta-rs side by side.

Usage::

    .venv/bin/python benchmarks/bench_requests.py [--commits 30] [--writers 1 4]
        [--stores s3 s3_dynamodb gcs azure] [--engines deltalog delta-rs deltalog-files]
        [--out benchmarks/out]

The test servers of ``tests/servers`` run on 127.0.0.1 (moto for S3 and DynamoDB, our GCS
server, Azurite; set ``DELTALOG_AZURITE`` if ``azurite-blob`` is not on the path), each behind
a counting proxy (``servers.fault_proxy.FaultProxy`` with ``servers.request_log.RequestLog``,
which fails nothing). For every store, engine and number of writers a fresh table is created,
then W writer processes (``--child``), started together, each append ``--commits`` times a
3-row batch through the engine's usual API on a table object kept open:

* deltalog: ``write_table(table, rows, mode="append")`` (then ``wait_for_checkpoints()``);
* delta-rs (``deltalake``): ``write_deltalake(dt, rows, mode="append")``;
* ``deltalog-files`` (when named in ``--engines``): the writer uploads a Parquet file through
  the log store, then ``table.append_files([name])`` (which reads the file's footer for its
  statistics, and does not refresh the table first).

Every request the server receives from the first append to the last writer's exit is counted
(background checkpoints and log cleanup included), and divided by the successful commits.
commits/s is the successful commits over the wall time from the start signal to the last
writer's end. delta-rs runs on S3 with ``aws_conditional_put=etag``, GCS and Azure; it has no
store for delta-spark's DynamoDB protocol. Both engines keep their default checkpoint interval
(deltalog 10, delta-rs 100), which the per-kind breakdown shows.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

from harness import ROOT, environment, log, md_table, text_table

TESTS = ROOT / "tests"
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))

STORES = ("s3", "s3_dynamodb", "gcs", "azure")
BUCKET = "deltalog-bench"
ROWS = {"x": [1, 2, 3]}
CHILD_TIMEOUT_S = 1800


# --------------------------------------------------------------------------- the writers
def _child(engine: str, uri: str, options: dict[str, str], commits: int) -> None:
    """Append ``commits`` times after a ``GO`` line on stdin; print a JSON line of results."""
    import pyarrow as pa

    rows = pa.table({"x": pa.array(ROWS["x"], pa.int64())})
    if engine == "deltalog-files":  # upload a Parquet file, then append_files it
        import io

        import pyarrow.parquet as pq

        from deltalog import DeltaTable
        from deltalog.logstores import open_store

        table = DeltaTable(uri, storage_options=options)
        store, root = open_store(uri, options)
        buffer = io.BytesIO()
        pq.write_table(rows, buffer)
        data = buffer.getvalue()

        def append() -> None:
            name = f"part-{uuid.uuid4()}.parquet"
            store.write(store.join(root, name), data, overwrite=True)
            table.append_files([name])

    elif engine == "deltalog":
        from deltalog import DeltaTable, write_table

        table = DeltaTable(uri, storage_options=options)

        def append() -> None:
            write_table(table, rows, mode="append")

    else:
        import deltalake

        dt = deltalake.DeltaTable(uri, storage_options=options)

        def append() -> None:
            deltalake.write_deltalake(dt, rows, mode="append")

    print("READY", flush=True)
    sys.stdin.readline()
    latencies, failed = [], 0
    started = time.perf_counter()
    for _ in range(commits):
        t0 = time.perf_counter()
        try:
            append()
        except Exception as exc:  # a commit that gave up is counted, not fatal
            failed += 1
            print(f"{engine}: {type(exc).__name__}: {exc}"[:300], file=sys.stderr)
            continue
        latencies.append((time.perf_counter() - t0) * 1000)
    if engine.startswith("deltalog"):
        table.wait_for_checkpoints()
    cpu = os.times()
    result = {
        "ok": len(latencies),
        "failed": failed,
        "wall_s": time.perf_counter() - started,
        "cpu_s": cpu.user + cpu.system,
        "latency_ms": latencies,
    }
    print(json.dumps(result), flush=True)


# --------------------------------------------------------------------------- servers
class Servers:
    """The test servers with the benchmark's bucket, started lazily and stopped at the end."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.running: dict[str, Any] = {}

    def endpoint(self, store: str) -> str:
        from servers import harness

        name = {"s3": "moto", "s3_dynamodb": "moto", "gcs": "gcs", "azure": "azurite"}[store]
        if name not in self.running:
            start = {"moto": harness.start_moto, "gcs": harness.start_gcs}
            server = start.get(name, harness.start_azurite)(self.log_dir)
            self.running[name] = server
            _create_bucket(name, server.endpoint)
        return str(self.running[name].endpoint)

    def stop(self) -> None:
        for server in self.running.values():
            server.stop()


def _create_bucket(name: str, endpoint: str) -> None:
    from servers import harness

    if name == "moto":
        import boto3

        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket=BUCKET)
    elif name == "gcs":
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        storage.Client(
            project="test",
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": endpoint},
        ).create_bucket(BUCKET)
    else:
        from azure.storage.blob import BlobServiceClient

        from deltalog.logstores.azure import EMULATOR_KEY

        BlobServiceClient(
            f"{endpoint}/{harness.AZURITE_ACCOUNT}",
            credential={"account_name": harness.AZURITE_ACCOUNT, "account_key": EMULATOR_KEY},
        ).create_container(BUCKET)


def _location(store: str, engine: str, endpoint: str, tmp: Path) -> tuple[str, dict[str, str]]:
    """A fresh table URI and the engine's own storage options for it (through ``endpoint``)."""
    from servers import harness
    from servers.fixtures import azure_options, gcs_options, s3_options
    from servers.gcs_server import delta_rs_service_account, delta_rs_storage_options

    from deltalog.logstores.azure import EMULATOR_KEY

    name = f"{engine}-{store}-{uuid.uuid4().hex[:8]}"
    scheme = {"s3": "s3", "s3_dynamodb": "s3", "gcs": "gs", "azure": "az"}[store]
    uri = f"{scheme}://{BUCKET}/{name}"
    if engine.startswith("deltalog"):
        if store.startswith("s3"):
            protocol = "dynamodb" if store == "s3_dynamodb" else "conditional-put"
            return uri, s3_options(endpoint, protocol)
        return uri, gcs_options(endpoint) if store == "gcs" else azure_options(endpoint)
    if store == "s3":
        return uri, {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_ALLOW_HTTP": "true",
            "aws_conditional_put": "etag",
        }
    if store == "gcs":
        path = tmp / f"gcs-{uuid.uuid4().hex[:8]}.json"
        path.write_text(json.dumps(delta_rs_service_account(endpoint)))
        return uri, delta_rs_storage_options(str(path))
    return uri, {
        "azure_storage_account_name": harness.AZURITE_ACCOUNT,
        "azure_storage_account_key": EMULATOR_KEY,
        "azure_endpoint": f"{endpoint}/{harness.AZURITE_ACCOUNT}",
        "azure_allow_http": "true",
    }


def _create(engine: str, uri: str, options: dict[str, str]) -> None:
    import pyarrow as pa

    schema = pa.schema([("x", pa.int64())])
    if engine.startswith("deltalog"):
        from deltalog import DeltaTable

        DeltaTable.create(uri, schema, storage_options=options)
    else:
        import deltalake

        deltalake.write_deltalake(
            uri, pa.table({"x": pa.array([], pa.int64())}), storage_options=options
        )


# --------------------------------------------------------------------------- one run
def run_one(
    servers: Servers, store: str, engine: str, writers: int, commits: int, tmp: Path
) -> dict[str, Any]:
    """W writers x ``commits`` appends on a fresh table, counted at the server."""
    from servers.fault_proxy import FaultProxy
    from servers.request_log import RequestLog

    upstream = servers.endpoint(store)
    counter = RequestLog()
    with FaultProxy(upstream, counter) as proxy:
        uri, options = _location(store, engine, proxy.endpoint, tmp)
        _create(engine, uri, options)
        children = [
            subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    engine,
                    uri,
                    json.dumps(options),
                    str(commits),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(writers)
        ]
        for child in children:
            assert child.stdout is not None
            line = child.stdout.readline()
            if line.strip() != "READY":
                why = child.stderr.read() if child.stderr else ""
                raise RuntimeError(f"{engine} writer did not start: {line!r} {why}")
        counter.recording = True
        started = time.perf_counter()
        for child in children:
            assert child.stdin is not None
            child.stdin.write("GO\n")
            child.stdin.flush()
        results, errors = [], Counter[str]()
        for child in children:
            out, err = child.communicate(timeout=CHILD_TIMEOUT_S)
            results.append(json.loads(out.strip().splitlines()[-1]))
            for line in err.splitlines():
                if line.startswith(f"{engine}: "):
                    errors[line[len(engine) + 2 :][:160]] += 1
        wall = time.perf_counter() - started
        counter.recording = False
    ok = sum(r["ok"] for r in results)
    kinds = counter.counts()
    total = sum(kinds.values())
    latencies = sorted(ms for r in results for ms in r["latency_ms"])
    return {
        "store": store,
        "engine": engine,
        "writers": writers,
        "commits_ok": ok,
        "commits_failed": sum(r["failed"] for r in results),
        "errors": dict(errors),
        "requests": total,
        "requests_per_commit": total / ok if ok else None,
        "by_kind_per_commit": {k: v / ok for k, v in kinds.most_common()} if ok else {},
        "commits_per_s": ok / wall,
        "wall_s": wall,
        "writers_cpu_s": sum(r["cpu_s"] for r in results),
        "latency_p50_ms": latencies[len(latencies) // 2] if latencies else None,
    }


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        _child(argv[1], argv[2], json.loads(argv[3]), int(argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--commits", type=int, default=30, help="appends per writer")
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--stores", nargs="+", default=list(STORES), choices=STORES)
    parser.add_argument(
        "--engines",
        nargs="+",
        default=["deltalog", "delta-rs"],
        choices=["deltalog", "delta-rs", "deltalog-files"],
        help="deltalog-files: upload a Parquet file with the store, then append_files it",
    )
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    args = parser.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="bench-requests-"))
    servers = Servers(tmp / "server-logs")
    rows: list[dict[str, Any]] = []
    try:
        for store in args.stores:
            for writers in args.writers:
                for engine in args.engines:
                    if engine == "delta-rs" and store == "s3_dynamodb":
                        continue  # delta-rs has no store for delta-spark's DynamoDB protocol
                    log(f"{store}: {engine}, {writers} writer(s) x {args.commits} appends")
                    row = run_one(servers, store, engine, writers, args.commits, tmp)
                    per = row["requests_per_commit"] or 0.0
                    log(f"  {per:.2f} requests/commit, {row['commits_per_s']:.1f} commits/s")
                    rows.append(row)
    finally:
        servers.stop()
    head = [
        "store",
        "engine",
        "writers",
        "ok / failed",
        "requests/commit",
        "commits/s",
        "p50 ms",
        "writers CPU s",
    ]
    table = [
        [
            r["store"],
            r["engine"],
            str(r["writers"]),
            f"{r['commits_ok']} / {r['commits_failed']}",
            f"{r['requests_per_commit']:.2f}" if r["requests_per_commit"] else "-",
            f"{r['commits_per_s']:.1f}",
            f"{r['latency_p50_ms']:.0f}" if r["latency_p50_ms"] else "-",
            f"{r['writers_cpu_s']:.1f}",
        ]
        for r in rows
    ]
    print(text_table(head, table))
    print()
    for r in rows:
        if r["writers"] == 1:
            parts = ", ".join(f"{k} {v:.2f}" for k, v in r["by_kind_per_commit"].items())
            print(f"{r['store']} {r['engine']}: {parts}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "requests.json").write_text(
        json.dumps({"environment": environment(), "load": os.getloadavg(), "rows": rows}, indent=1)
    )
    (args.out / "requests.md").write_text(md_table(head, table) + "\n")


if __name__ == "__main__":
    main()
