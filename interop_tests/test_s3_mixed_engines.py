"""deltalog and delta-spark on one ``s3a://`` table of the moto server, coordinated by DynamoDB.

Turns, with delta-spark's default S3 store: two deltalog processes race 25 appends each into one
``s3a://`` table with ``s3.commit_protocol=dynamodb`` (delta-spark's ``S3DynamoDBLogStore``
protocol, one shared DynamoDB table). Then delta-spark, in its own process with hadoop-aws (jars
from Maven Central through ``spark.jars.packages``), takes its turn: it must see the same
version, file set and rows, append with ``INSERT``, and read that back; deltalog then reads
delta-spark's commit and commits after it through DynamoDB again. delta-spark's
``S3SingleDriverLogStore`` has no cross-process mutual exclusion, so it only takes turns.

At the same time, with delta-spark's ``S3DynamoDBLogStore`` (the ``delta-storage-s3-dynamodb``
jar from ``../shared/jars/``, which this workplace's Maven Central does not serve; see
``s3_dynamodb_spark.py`` for how its SDK v1 DynamoDB client reaches moto): two deltalog
processes x 20 commits and one delta-spark driver process with 2 threads x 10 appends commit
into one table through one DynamoDB table, started together and paced against each other so
that they overlap: no acknowledged append is lost, versions are contiguous, every DynamoDB
entry is complete, and both engines read the same version and rows. Crash recovery both ways:
a deltalog writer killed after its DynamoDB entry and before the copy to ``N.json`` is finished
by delta-spark's next read, and a delta-spark commit left at the same point (temp file and
incomplete entry, written by hand as delta-spark writes them) is finished by deltalog.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import queue
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pyspark
import pytest
from deltalog_paced import BARRIER_TIMEOUT, CRASH_WRITER, killed_after_entry, paced_writer
from s3_dynamodb_spark import START_TIMEOUT, SparkDriver, dynamodb_jar, line_label, spark_conf
from servers.fixtures import BUCKET, DYNAMO_TABLE, cloud_location, s3_options
from sparkutil import delta_package
from spawned import run_writers
from test_cloud_concurrency import SCHEMA, _child, _rel, _row

from deltalog import DeltaTable

WRITERS = 2
ROUNDS = 25
DRIVER = Path(__file__).resolve().parent / "drivers" / "spark_s3_turn.py"

pytestmark = pytest.mark.spark


def _hadoop_aws() -> str:
    """hadoop-aws matching the Hadoop client PySpark ships (it brings its AWS SDK bundle)."""
    jars = Path(pyspark.__file__).parent / "jars"
    (api,) = jars.glob("hadoop-client-api-*.jar")
    version = api.name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    return f"org.apache.hadoop:hadoop-aws:{version}"


def _spark_turn(endpoint: str, uri: str, tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "spark.json"
    packages = f"{delta_package()},{_hadoop_aws()}"
    done = subprocess.run(
        [sys.executable, str(DRIVER), endpoint, uri, str(out), packages],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, f"delta-spark driver failed:\n{done.stderr[-6000:]}"
    report: dict[str, Any] = json.loads(out.read_text())
    return report


@pytest.mark.timeout(1200)
def test_deltalog_dynamodb_writers_and_delta_spark_share_an_s3a_table(
    request: pytest.FixtureRequest, moto_server: Any, tmp_path: Path
) -> None:
    location = cloud_location(request, "s3_dynamodb")
    uri = location.uri.replace("s3://", "s3a://", 1)
    options = location.options
    assert (
        DeltaTable.create(uri, SCHEMA, partition_by=["p"], storage_options=options).version() == 0
    )

    reports = run_writers(
        _child,
        lambda w, barrier, results: (uri, options, w, barrier, results, ROUNDS),
        WRITERS,
        600,
    )
    assert not [r.failures for r in reports if r.failures]
    assert all(r.checkpoints_done for r in reports)
    versions = sorted(c.version for r in reports for c in r.commits)
    total = WRITERS * ROUNDS
    assert versions == list(range(1, total + 1)), "a commit was lost or landed twice"

    ours = DeltaTable(uri, storage_options=options)
    assert ours.version() == total
    our_files = sorted(ours.files(with_stats=False).column("path").to_pylist())
    assert our_files == sorted(_rel(w, s) for w in range(WRITERS) for s in range(ROUNDS))
    rows = sorted(_row(w, s) for w in range(WRITERS) for s in range(ROUNDS))

    spark = _spark_turn(moto_server.endpoint, uri, tmp_path)
    before, after = spark["before"], spark["after"]
    assert before["version"] == total
    assert before["files"] == our_files
    assert before["rows"] == rows
    assert after["version"] == total + 1
    assert after["rows"] == sorted([*rows, 999999])

    # deltalog reads delta-spark's commit and commits after it through DynamoDB.
    table = DeltaTable(uri, storage_options=options)
    assert table.version() == total + 1
    assert sorted(table.files(with_stats=False).column("path").to_pylist()) == after["files"]
    commits = _child_commit(uri, options)
    assert commits == total + 2
    final = DeltaTable(uri, storage_options=options)
    assert final.version() == total + 2
    # Only the DynamoDB protocol's temp files remain (deleted once the entries' TTL has passed).
    findings = final.check(data_files=False).findings
    assert {f.code for f in findings} <= {"orphan-log-file"}
    assert all("/_delta_log/.tmp/" in (f.path or "") for f in findings)


def _child_commit(uri: str, options: dict[str, str]) -> int:
    """One more deltalog append (writer 9, seq 0) in this process, through DynamoDB."""
    from test_cloud_concurrency import _commit

    from deltalog.logstores import open_store

    store, root = open_store(uri, options)
    return _commit(DeltaTable(uri, storage_options=options), store, root, 9, 0).version


# --------------------------------------------------------------------------- S3DynamoDBLogStore
SPARK_THREADS = 2
SPARK_APPENDS = 10
#: deltalog appends per writer in the race with delta-spark's appends (paced against them).
ROUNDS_AT_ONCE = 20
PROGRESS_TIMEOUT = 900.0


def _ddb_location(server: Any) -> tuple[str, dict[str, str]]:
    """A fresh ``s3a://`` table on ``server`` and deltalog's options (DynamoDB protocol)."""
    return f"s3a://{BUCKET}/t-{uuid.uuid4().hex[:12]}", s3_options(server.endpoint, "dynamodb")


def _clients(server: Any) -> tuple[Any, Any]:
    """boto3 S3 and DynamoDB clients on ``server``'s plain HTTP port."""
    import boto3

    kwargs = {
        "endpoint_url": server.endpoint,
        "region_name": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    return boto3.client("s3", **kwargs), boto3.client("dynamodb", **kwargs)


def _key(uri: str, *parts: str) -> str:
    return "/".join([uri.split("/", 3)[3], *parts])


def _log_key(uri: str, version: int) -> str:
    return _key(uri, "_delta_log", f"{version:020d}.json")


def _body(s3: Any, key: str) -> bytes | None:
    try:
        data: bytes = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    except s3.exceptions.NoSuchKey:
        return None
    return data


def _entries(dynamo: Any, uri: str) -> dict[str, dict[str, Any]]:
    """The table's DynamoDB items by file name."""
    items: dict[str, dict[str, Any]] = {}
    for page in dynamo.get_paginator("query").paginate(
        TableName=DYNAMO_TABLE,
        KeyConditionExpression="tablePath = :p",
        ExpressionAttributeValues={":p": {"S": uri}},
        ConsistentRead=True,
    ):
        items.update({i["fileName"]["S"]: i for i in page["Items"]})
    return items


def _log_versions(s3: Any, uri: str) -> dict[int, list[dict[str, Any]]]:
    """Every commit file's actions by version, read raw from S3 and parsed with ``json``."""
    out: dict[int, list[dict[str, Any]]] = {}
    prefix = _key(uri, "_delta_log", "")
    for page in s3.get_paginator("list_objects_v2").paginate(
        Bucket=BUCKET, Prefix=prefix, Delimiter="/"
    ):
        for item in page.get("Contents", []):
            name = item["Key"][len(prefix) :]
            if name.endswith(".json") and name[:20].isdigit() and len(name) == 25:
                text = _body(s3, item["Key"]) or b""
                out[int(name[:20])] = [json.loads(x) for x in text.decode().splitlines() if x]
    return out


def _rows(uri: str, options: dict[str, str]) -> tuple[int, list[list[Any]]]:
    """deltalog's fresh read: the version and its ``[x, p]`` rows, sorted."""
    table = DeltaTable(uri, storage_options=options)
    data = table.to_pyarrow_table(columns=["x", "p"]).to_pydict()
    return table.version(), sorted([x, p] for x, p in zip(data["x"], data["p"], strict=True))


def _start_driver(server: Any, tmp_path: Path, on_event: Any = None) -> SparkDriver:
    conf = spark_conf(server.endpoint, server.tls_port, DYNAMO_TABLE, tmp_path)
    return SparkDriver(conf, tmp_path, on_event)


def _assert_complete(entry: dict[str, Any] | None) -> None:
    assert entry is not None and entry["complete"]["S"] == "true"
    assert abs(int(entry["expireTime"]["N"]) - (time.time() + 86_400)) < 3600


class _SparkProgress:
    """delta-spark's finished appends, shared with the deltalog processes (``cond``)."""

    def __init__(self, ctx: Any) -> None:
        self.cond = ctx.Condition()
        self.attempts = ctx.Value("i", 0)
        self.landed: list[tuple[int, str]] = []
        self.failed: list[str] = []

    def on_event(self, event: dict[str, Any]) -> None:
        with self.cond:
            if event["event"] == "landed":
                self.landed.append((event["x"], event["p"]))
            elif event["event"] == "failed":
                self.failed.append(f"{event['thread']}/{event['seq']}: {event['error']}")
            else:  # the driver exited: release the deltalog writers
                self.attempts.value = 1 << 30
            self.attempts.value += 1
            self.cond.notify_all()


def _relay(progress: Any, driver: SparkDriver, total: int) -> None:
    """Tell delta-spark how many commit attempts deltalog has made, as they happen."""
    for n in range(1, total + 1):
        try:
            progress.get(timeout=PROGRESS_TIMEOUT)
            driver.send({"op": "progress", "n": n})
        except (queue.Empty, OSError):
            return


@pytest.mark.timeout(2400)
def test_deltalog_and_delta_spark_s3dynamodblogstore_commit_at_once(
    moto_tls_server: Any, tmp_path: Path
) -> None:
    dynamodb_jar()  # skips (fails in CI) before anything starts when the jar is missing
    uri, options = _ddb_location(moto_tls_server)
    s3, dynamo = _clients(moto_tls_server)
    ctx = multiprocessing.get_context("spawn")
    spark_progress = _SparkProgress(ctx)
    driver = _start_driver(moto_tls_server, tmp_path, spark_progress.on_event)
    try:
        created = DeltaTable.create(uri, SCHEMA, partition_by=["p"], storage_options=options)
        assert created.version() == 0
        ready = driver.answer(START_TIMEOUT)
        assert driver.call({"op": "read", "uri": uri})["version"] == 0

        barrier = ctx.Barrier(WRITERS + 1)  # the parent is the last party
        results = ctx.Queue()
        progress = ctx.Queue()
        shared = (spark_progress.attempts, spark_progress.cond, progress)
        procs = [
            ctx.Process(
                target=paced_writer,
                args=(uri, options, w, barrier, results, ROUNDS_AT_ONCE, *shared),
                name=f"writer-{w}",
                daemon=True,
            )
            for w in range(WRITERS)
        ]
        for p in procs:
            p.start()
        relay = threading.Thread(
            target=_relay, args=(progress, driver, WRITERS * ROUNDS_AT_ONCE), daemon=True
        )
        relay.start()
        barrier.wait(timeout=BARRIER_TIMEOUT)
        started = time.perf_counter()
        race = driver.call(
            {
                "op": "race",
                "uri": uri,
                "threads": SPARK_THREADS,
                "appends": SPARK_APPENDS,
                "ratio": WRITERS * ROUNDS_AT_ONCE // (SPARK_THREADS * SPARK_APPENDS),
            },
            timeout=1800,
        )
        reports = [results.get(timeout=PROGRESS_TIMEOUT) for _ in procs]
        elapsed = time.perf_counter() - started
        for p in procs:
            p.join(timeout=60)
        relay.join(timeout=60)
        assert [p.exitcode for p in procs] == [0] * WRITERS
        final_spark = driver.call({"op": "read", "uri": uri})
    finally:
        driver.close()

    reports.sort(key=lambda r: r.writer)
    assert not [r.crashed for r in reports if r.crashed]
    assert not [r.failures for r in reports if r.failures], "deltalog commits raised"
    assert not spark_progress.failed, "delta-spark appends raised"
    spark_total = SPARK_THREADS * SPARK_APPENDS
    assert race["landed"] == len(spark_progress.landed) == spark_total
    total = WRITERS * ROUNDS_AT_ONCE + spark_total

    # The log, read raw: commit files exactly 0..total, one added file each.
    log = _log_versions(s3, uri)
    assert sorted(log) == list(range(total + 1)), "versions are not contiguous"
    adds = {v: [a["add"]["path"] for a in actions if "add" in a] for v, actions in log.items()}
    assert all(len(adds[v]) == 1 for v in range(1, total + 1))
    spark_versions = [v for v in range(1, total + 1) if adds[v][0].startswith("p=s")]
    assert len(spark_versions) == spark_total
    ours = sorted(c.version for r in reports for c in r.commits)
    assert ours == sorted(set(range(1, total + 1)) - set(spark_versions))
    for r in reports:
        for c in r.commits:
            assert adds[c.version] == [c.path]
    engines = ["spark" if v in spark_versions else "deltalog" for v in range(1, total + 1)]
    switches = sum(a != b for a, b in itertools.pairwise(engines))
    assert switches >= 10, f"the engines did not interleave: {engines}"

    # Every DynamoDB entry complete, one per commit.
    entries = _entries(dynamo, uri)
    assert sorted(entries) == [f"{v:020d}.json" for v in range(total + 1)]
    for entry in entries.values():
        _assert_complete(entry)

    # Every acknowledged append is there, by writer; both engines read the same.
    version, rows = _rows(uri, options)
    assert version == total
    by_writer: dict[str, set[int]] = {}
    for x, p in rows:
        by_writer.setdefault(p, set()).add(x)
    acked = {str(r.writer): {_row(r.writer, c.seq) for c in r.commits} for r in reports}
    acked.update({f"s{t}": set() for t in range(SPARK_THREADS)})
    for x, p in spark_progress.landed:
        acked[p].add(x)
    assert by_writer == acked
    assert len(rows) == total
    assert final_spark["version"] == total
    assert final_spark["rows"] == rows
    files = DeltaTable(uri, storage_options=options).files(with_stats=False)
    assert final_spark["files"] == sorted(files.column("path").to_pylist())
    print(
        f"\n{line_label()}: {WRITERS}x{ROUNDS_AT_ONCE} deltalog + {SPARK_THREADS}x{SPARK_APPENDS} "
        f"delta-spark commits in {elapsed:.1f} s (delta-spark's {race['seconds']:.1f} s, "
        f"deltalog's {[round(r.seconds, 1) for r in reports]} s); final version {version}; "
        f"{switches} engine switches; Spark start {ready['seconds']:.1f} s"
    )


@pytest.mark.timeout(1800)
def test_crash_recovery_between_deltalog_and_delta_spark_s3dynamodblogstore(
    moto_tls_server: Any, tmp_path: Path
) -> None:
    dynamodb_jar()
    uri, options = _ddb_location(moto_tls_server)
    s3, dynamo = _clients(moto_tls_server)
    driver = _start_driver(moto_tls_server, tmp_path)
    try:
        DeltaTable.create(uri, SCHEMA, partition_by=["p"], storage_options=options)
        assert _child_append(uri, options, 0, 0) == 1
        driver.answer(START_TIMEOUT)

        # deltalog killed after its entry for version 2 is written, before the copy.
        ctx = multiprocessing.get_context("spawn")
        process = ctx.Process(target=killed_after_entry, args=(uri, options))
        process.start()
        process.join(timeout=300)
        assert process.exitcode == -signal.SIGKILL
        name = f"{2:020d}.json"
        entry = _entries(dynamo, uri)[name]
        assert entry["complete"]["S"] == "false" and "expireTime" not in entry
        assert _body(s3, _log_key(uri, 2)) is None, "the copy must not have run"
        temp = _body(s3, _key(uri, "_delta_log", entry["tempPath"]["S"]))
        assert temp is not None

        # delta-spark's next read finishes it.
        seen = driver.call({"op": "read", "uri": uri})
        assert seen["version"] == 2
        assert seen["rows"] == sorted([[_row(0, 0), "0"], [_row(CRASH_WRITER, 0), "7"]])
        assert _body(s3, _log_key(uri, 2)) == temp
        _assert_complete(_entries(dynamo, uri)[name])
        driver.call({"op": "append", "uri": uri, "x": 100000, "p": "s0"})
        assert DeltaTable(uri, storage_options=options).version() == 3

        # A delta-spark commit of version 4 left where the same crash would leave it.
        temp_name = _leave_spark_commit_incomplete(s3, dynamo, uri, options, 4)
        assert _body(s3, _log_key(uri, 4)) is None
        # deltalog's next read finishes it, and deltalog commits after it.
        version, rows = _rows(uri, options)
        assert version == 4
        assert [100999, "s9"] in rows
        assert _body(s3, _log_key(uri, 4)) == _body(s3, _key(uri, "_delta_log", temp_name))
        _assert_complete(_entries(dynamo, uri)[f"{4:020d}.json"])
        assert _child_append(uri, options, 0, 1) == 5

        final_spark = driver.call({"op": "read", "uri": uri})
    finally:
        driver.close()
    version, rows = _rows(uri, options)
    assert version == final_spark["version"] == 5
    assert final_spark["rows"] == rows
    assert len(rows) == 5  # versions 1-5, one row each
    assert sorted(_log_versions(s3, uri)) == list(range(6))
    entries = _entries(dynamo, uri)
    assert sorted(entries) == [f"{v:020d}.json" for v in range(6)]
    for entry in entries.values():
        _assert_complete(entry)


def _child_append(uri: str, options: dict[str, str], writer: int, seq: int) -> int:
    from test_cloud_concurrency import _commit

    from deltalog.logstores import open_store

    store, root = open_store(uri, options)
    table = DeltaTable(uri, storage_options=options, background_checkpoints=False)
    return _commit(table, store, root, writer, seq).version


def _leave_spark_commit_incomplete(
    s3: Any, dynamo: Any, uri: str, options: dict[str, str], version: int
) -> str:
    """Steps 1-2 of delta-spark's commit of ``version``, as S3DynamoDBLogStore does them.

    The actions are delta-spark's own previous commit (its ``commitInfo`` and ``add``), moved
    to a new one-row data file; the temp file ``.tmp/<N>.json.<uuid>`` is written first, then
    the entry with ``complete = "false"`` and no ``expireTime`` (the conditional put that
    decides the commit). Returns the temp path relative to ``_delta_log``.
    """
    from deltalog.logstores import open_store

    actions = [json.loads(x) for x in (_body(s3, _log_key(uri, version - 1)) or b"").splitlines()]
    assert {next(iter(a)) for a in actions} == {"commitInfo", "add"}, "not delta-spark's commit"
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert "Delta-Lake" in info["engineInfo"], "not delta-spark's commit"
    store, root = open_store(uri, options)
    rel = f"p=s9/part-00000-{uuid.uuid4()}.c000.snappy.parquet"
    data = _parquet_of(100999)
    store.write(store.join(root, rel), data, overwrite=True)
    lines = []
    for action in actions:
        if "commitInfo" in action:
            info = action["commitInfo"]
            info["timestamp"] = int(time.time() * 1000)
            info["readVersion"] = version - 1
            info["txnId"] = str(uuid.uuid4())
        else:
            add = action["add"]
            add.update(
                path=rel,
                partitionValues={"p": "s9"},
                size=len(data),
                modificationTime=int(time.time() * 1000),
                stats=json.dumps(
                    {
                        "numRecords": 1,
                        "minValues": {"x": 100999},
                        "maxValues": {"x": 100999},
                        "nullCount": {"x": 0},
                    }
                ),
            )
        lines.append(json.dumps(action, separators=(",", ":")))
    file_name = f"{version:020d}.json"
    temp_name = f".tmp/{file_name}.{uuid.uuid4()}"
    s3.put_object(Bucket=BUCKET, Key=_key(uri, "_delta_log", temp_name), Body="\n".join(lines))
    dynamo.put_item(
        TableName=DYNAMO_TABLE,
        Item={
            "tablePath": {"S": uri},
            "fileName": {"S": file_name},
            "tempPath": {"S": temp_name},
            "complete": {"S": "false"},
        },
        ConditionExpression="attribute_not_exists(fileName)",
    )
    return temp_name


def _parquet_of(x: int) -> bytes:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.table({"x": pa.array([x], pa.int64())}), buf)
    return buf.getvalue()
