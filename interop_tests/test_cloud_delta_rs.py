"""Interoperability with delta-rs on the object stores: moto S3 + DynamoDB, our GCS, Azurite.

deltalog writes a partitioned table of real Parquet files on each store (through its own log
stores and options) and delta-rs (``deltalake`` 1.6.6) reads it back through delta-rs' *own*
storage options, at every version: the same version, the same ``add`` paths and partition
values, the same rows. The table reaches a checkpoint, and after the JSON commits before it are
deleted both still read it, so delta-rs is reading deltalog's checkpoint from the store. On
S3 + DynamoDB the DynamoDB items have delta-spark's ``S3DynamoDBLogStore`` layout.

In the other direction, delta-rs appends to a deltalog S3 table with conditional PUTs
(``aws_conditional_put=etag``): first in turns with deltalog, then racing a deltalog writer, so
that commits of each collide with the other's on ``If-None-Match: *``.

The servers and locations come from ``tests/servers/fixtures.py`` (through
``interop_tests/conftest.py``).
"""

from __future__ import annotations

import io
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from servers.fixtures import CloudTable, cloud_location
from servers.gcs_server import delta_rs_service_account, delta_rs_storage_options

from deltalog import DeltaTable
from deltalog.logstores import LogStore, open_store
from deltalog.logstores.azure import EMULATOR_KEY
from deltalog.protocol.partitions import hive_partition_dir

Location = CloudTable

SCHEMA = pa.schema([("x", pa.int64()), ("s", pa.string()), ("p", pa.string())])
#: Partition values: plain, one that the action path must URL-encode (space), one that the
#: directory name must Hive-escape (colon), so the object key itself holds ``%3A``.
PARTITIONS = ("a", "b c", "x:y")
COMMITS = 12
CHECKPOINT = 10
DAY = 86_400
#: Appends per writer in the deltalog / delta-rs race.
RACE_ROUNDS = 20


# --------------------------------------------------------------------------- options
def rs_options(location: Location, tmp_path: Path) -> dict[str, str]:
    """delta-rs' own storage options for ``location``."""
    options = location.options
    if location.backend in ("s3", "s3_dynamodb"):
        return {
            "AWS_ENDPOINT_URL": options["s3.endpoint"],
            "AWS_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_ALLOW_HTTP": "true",
        }
    if location.backend == "gcs":
        path = tmp_path / "gcs-service-account.json"
        path.write_text(json.dumps(delta_rs_service_account(options["gcs.endpoint"])))
        return delta_rs_storage_options(str(path))
    if location.backend == "azure":
        return {
            "azure_storage_account_name": "devstoreaccount1",
            "azure_storage_account_key": EMULATOR_KEY,
            # object_store's endpoint key: Azurite's blob URL including the account.
            "azure_endpoint": options["azure.endpoint"],
            "azure_allow_http": "true",
        }
    raise ValueError(location.backend)


# --------------------------------------------------------------------------- helpers
def parquet_bytes(data: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(data, buf)
    return buf.getvalue()


def file_rows(file_id: int) -> pa.Table:
    """Three rows (without the partition column) for file ``file_id``; ``x`` is unique."""
    xs = [file_id * 10 + i for i in range(3)]
    return pa.table({"x": pa.array(xs, pa.int64()), "s": [f"f{file_id}-{i}" for i in range(3)]})


def file_table(file_id: int) -> pa.Table:
    """``file_rows(file_id)`` with its partition column, in ``SCHEMA``."""
    rows = file_rows(file_id)
    return rows.append_column("p", pa.array([partition_of(file_id)] * rows.num_rows, pa.string()))


def partition_of(file_id: int) -> str:
    return PARTITIONS[file_id % len(PARTITIONS)]


def write_deltalog_table(
    uri: str, options: dict[str, str]
) -> tuple[DeltaTable, dict[int, pa.Table]]:
    """Versions 1..COMMITS, each ``append_files`` of one Parquet file uploaded just before.

    Returns:
        The table object and, by version, the rows (``x``, ``s``, ``p``) it added.
    """
    table = DeltaTable.create(uri, SCHEMA, partition_by=["p"], storage_options=options)
    store, root = open_store(uri, options)
    added: dict[int, pa.Table] = {}
    for version in range(1, COMMITS + 1):
        part = partition_of(version)
        rel = f"{hive_partition_dir({'p': part})}/part-{version:03d}.parquet"
        rows = file_rows(version)
        store.write(store.join(root, rel), parquet_bytes(rows), overwrite=True)
        assert table.append_files([rel]) == version
        added[version] = file_table(version)
    assert table.wait_for_checkpoints(timeout=60)
    return table, added


def expected_rows(added: dict[int, pa.Table], version: int) -> list[dict[str, Any]]:
    tables = [added[v] for v in sorted(added) if v <= version]
    if not tables:
        return []
    return pa.concat_tables(tables).sort_by("x").to_pylist()


def rs_rows(rs: deltalake.DeltaTable) -> list[dict[str, Any]]:
    """delta-rs' rows as plain Python values in ``SCHEMA``'s order and types, sorted by ``x``."""
    table = rs.to_pyarrow_table()
    assert sorted(table.column_names) == sorted(SCHEMA.names)
    return table.select(SCHEMA.names).cast(SCHEMA).sort_by("x").to_pylist()


def dl_rows(table: DeltaTable, store: LogStore) -> list[dict[str, Any]]:
    """deltalog's rows: every live file read through the log store, plus its partition value."""
    files = table.files(with_stats=False)
    parts = [dict(pv)["p"] for pv in files.column("partition_values").to_pylist()]
    tables = []
    for location, part in zip(table.file_uris(), parts, strict=True):
        data = pq.read_table(io.BytesIO(store.read(location)))
        tables.append(data.append_column("p", pa.array([part] * data.num_rows, pa.string())))
    if not tables:
        return []
    return pa.concat_tables(tables).select(SCHEMA.names).cast(SCHEMA).sort_by("x").to_pylist()


def rs_adds(rs: deltalake.DeltaTable) -> list[tuple[str, str]]:
    """delta-rs' live ``add`` actions: (path as in the log, partition value ``p``), sorted."""
    actions = pa.table(rs.get_add_actions(flatten=True)).to_pylist()
    return sorted((a["path"], a["partition.p"]) for a in actions)


def dl_adds(table: DeltaTable) -> list[tuple[str, str]]:
    """The same from deltalog's snapshot."""
    files = table.files(with_stats=False).select(["path", "partition_values"]).to_pylist()
    return sorted((f["path"], dict(f["partition_values"])["p"]) for f in files)


def assert_same_view(
    uri: str,
    options: dict[str, str],
    rs_opts: dict[str, str],
    added: dict[int, pa.Table],
    version: int | None,
) -> None:
    """delta-rs (its own options) and deltalog agree on ``version`` (``None``: latest)."""
    store, _ = open_store(uri, options)
    if version is None:
        rs = deltalake.DeltaTable(uri, storage_options=rs_opts)
        dl = DeltaTable(uri, storage_options=options)
    else:
        rs = deltalake.DeltaTable(uri, storage_options=rs_opts, version=version)
        dl = DeltaTable(uri, version=version, storage_options=options)
    at = dl.version()
    assert rs.version() == at, f"delta-rs read version {rs.version()}, deltalog {at}"
    assert rs_adds(rs) == dl_adds(dl), f"add actions differ at version {at}"
    assert len(dl_adds(dl)) == at
    rs_uris = rs.file_uris()
    assert len(rs_uris) == at
    assert all(u.startswith(uri + "/") for u in rs_uris), rs_uris[:3]
    expected = expected_rows(added, at)
    assert rs_rows(rs) == expected, f"delta-rs rows differ at version {at}"
    assert dl_rows(dl, store) == expected, f"deltalog rows differ at version {at}"


def log_names(store: LogStore, root: str) -> list[str]:
    return [s.name for s in store.list_from(store.join(root, "_delta_log", "0"))]


def check_dynamodb_items(
    location: Location, store: LogStore, root: str, before: float, after: float
) -> None:
    """The DynamoDB entries have delta-spark's layout, and each temp file holds its commit."""
    options = location.options
    client = boto3.client(
        "dynamodb",
        endpoint_url=options["s3.endpoint"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    table_path = location.uri.rstrip("/")
    items = client.scan(
        TableName=options["s3.dynamodb.table_name"],
        FilterExpression="tablePath = :t",
        ExpressionAttributeValues={":t": {"S": table_path}},
    )["Items"]
    names = sorted(item["fileName"]["S"] for item in items)
    assert names == [f"{v:020d}.json" for v in range(COMMITS + 1)]
    for item in items:
        name = item["fileName"]["S"]
        assert set(item) == {"tablePath", "fileName", "tempPath", "complete", "expireTime"}, item
        assert item["tablePath"] == {"S": table_path}
        assert item["complete"] == {"S": "true"}, item
        temp = item["tempPath"]["S"]
        assert temp.startswith(f".tmp/{name}."), temp
        assert len(temp) > len(f".tmp/{name}."), temp
        expire = int(item["expireTime"]["N"])
        assert int(before) + DAY <= expire <= int(after) + DAY + 1, (expire, before, after)
        commit = store.read(store.join(root, "_delta_log", name))
        assert store.read(store.join(root, "_delta_log", temp)) == commit, name


# --------------------------------------------------------------------------- tests
@pytest.mark.parametrize("backend", ["s3", "s3_dynamodb", "gcs", "azure"])
def test_delta_rs_reads_deltalog_table(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    location = cloud_location(request, backend)
    uri, options = location.uri, location.options
    rs_opts = rs_options(location, tmp_path)
    started = time.perf_counter()
    before = time.time()
    table, added = write_deltalog_table(uri, options)
    after = time.time()
    assert table.version() == COMMITS
    store, root = open_store(uri, options)

    names = log_names(store, root)
    assert [n for n in names if ".checkpoint." in n] == [f"{CHECKPOINT:020d}.checkpoint.parquet"]
    pointer = json.loads(store.read(store.join(root, "_delta_log", "_last_checkpoint")))
    assert pointer["version"] == CHECKPOINT
    if backend == "s3_dynamodb":
        check_dynamodb_items(location, store, root, before, after)

    for version in [None, *range(COMMITS + 1)]:
        assert_same_view(uri, options, rs_opts, added, version)
    rs = deltalake.DeltaTable(uri, storage_options=rs_opts)
    history = [h["version"] for h in rs.history()]
    assert history == list(range(COMMITS, -1, -1))
    assert [h["operation"] for h in rs.history()][-1] == "CREATE TABLE"

    # Without the JSON commits before the checkpoint, delta-rs must read deltalog's checkpoint.
    for version in range(CHECKPOINT):
        store.delete(store.join(root, "_delta_log", f"{version:020d}.json"))
    commits = [n for n in log_names(store, root) if n.endswith(".json")]
    assert commits == [f"{v:020d}.json" for v in range(CHECKPOINT, COMMITS + 1)]
    for version in (None, CHECKPOINT, CHECKPOINT + 1):
        assert_same_view(uri, options, rs_opts, added, version)
    print(f"\n[{backend}] write + compare: {time.perf_counter() - started:.1f}s")


def _engine(info: dict[str, Any]) -> str:
    """``deltalog`` or ``delta-rs``, from a commitInfo's ``engineInfo``."""
    engine = str(info.get("engineInfo", ""))
    return "deltalog" if engine.startswith("deltalog/") else engine.split(":")[0]


def test_delta_rs_appends_to_deltalog_s3_table_with_conditional_put(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    location = cloud_location(request, "s3")
    uri, options = location.uri, location.options
    rs_opts = {**rs_options(location, tmp_path), "aws_conditional_put": "etag"}
    table = DeltaTable.create(uri, SCHEMA, partition_by=["p"], storage_options=options)
    store, root = open_store(uri, options)

    def deltalog_append(file_id: int) -> int:
        rel = f"{hive_partition_dir({'p': partition_of(file_id)})}/dl-{file_id:03d}.parquet"
        store.write(store.join(root, rel), parquet_bytes(file_rows(file_id)), overwrite=True)
        return table.append_files([rel])

    def rs_append(file_id: int) -> None:
        deltalake.write_deltalake(uri, file_table(file_id), mode="append", storage_options=rs_opts)

    # Turns: deltalog, delta-rs, deltalog; each reads what the other wrote.
    assert deltalog_append(1) == 1
    rs_append(2)
    assert table.update() == 2
    assert deltalog_append(3) == 3
    ids = [1, 2, 3]
    expected = pa.concat_tables([file_table(i) for i in ids]).sort_by("x").to_pylist()
    assert dl_rows(DeltaTable(uri, storage_options=options), store) == expected
    assert rs_rows(deltalake.DeltaTable(uri, storage_options=rs_opts)) == expected

    # Race: one deltalog and one delta-rs writer append at once; the conditional PUT decides.
    started = time.perf_counter()
    barrier = threading.Barrier(2, timeout=60)
    errors: list[BaseException] = []

    def run(append: Callable[[int], object], first: int) -> None:
        try:
            barrier.wait()
            for file_id in range(first, first + RACE_ROUNDS):
                append(file_id)
        except BaseException as exc:  # reported below
            errors.append(exc)
            barrier.abort()

    threads = [
        threading.Thread(target=run, args=(deltalog_append, 100)),
        threading.Thread(target=run, args=(rs_append, 200)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not errors, errors
    assert table.wait_for_checkpoints(timeout=60)
    seconds = time.perf_counter() - started
    ids += [*range(100, 100 + RACE_ROUNDS), *range(200, 200 + RACE_ROUNDS)]
    last = 3 + 2 * RACE_ROUNDS

    # The raw log: contiguous versions, one add each, every writer's commits all there.
    names = log_names(store, root)
    assert [n for n in names if n.endswith(".json")] == [f"{v:020d}.json" for v in range(last + 1)]
    engines: Counter[str] = Counter()
    lost = 0
    for version in range(1, last + 1):
        text = store.read(store.join(root, "_delta_log", f"{version:020d}.json")).decode()
        actions = [json.loads(line) for line in text.splitlines() if line]
        (info,) = [a["commitInfo"] for a in actions if "commitInfo" in a]
        assert len([a for a in actions if "add" in a]) == 1, version
        engines[_engine(info)] += 1
        if _engine(info) == "deltalog":
            lost += info["readVersion"] < version - 1
        else:
            lost += info.get("operationMetrics", {}).get("num_retries", 0)
    assert engines == {"deltalog": 2 + RACE_ROUNDS, "delta-rs": 1 + RACE_ROUNDS}
    assert lost, "no commit attempt of either writer collided; the race was not exercised"
    print(f"\n[s3 race] {2 * RACE_ROUNDS} appends in {seconds:.1f}s, {lost} collisions")

    expected = pa.concat_tables([file_table(i) for i in ids]).sort_by("x").to_pylist()
    fresh = DeltaTable(uri, storage_options=options)
    assert fresh.version() == last
    assert [h["version"] for h in fresh.history()] == list(range(last, -1, -1))
    assert dl_rows(fresh, store) == expected
    rs = deltalake.DeltaTable(uri, storage_options=rs_opts)
    assert rs.version() == last
    assert rs_rows(rs) == expected
    assert rs_adds(rs) == dl_adds(fresh)


@pytest.mark.parametrize("backend", ["s3", "azure"])
def test_deltalog_opens_the_table_with_delta_rs_storage_options(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """The same ``storage_options`` dictionary works for both libraries (delta-rs' key names)."""
    location = cloud_location(request, backend)
    rs_opts = rs_options(location, tmp_path)
    if backend == "s3":
        rs_opts["aws_conditional_put"] = "etag"  # deltalog refuses S3 without a commit protocol
    table = DeltaTable.create(location.uri, SCHEMA, partition_by=["p"], storage_options=rs_opts)
    store, root = open_store(location.uri, rs_opts)
    rel = f"{hive_partition_dir({'p': 'a'})}/f.parquet"
    store.write(store.join(root, rel), parquet_bytes(file_rows(1)), overwrite=True)
    assert table.append_files([rel]) == 1
    # deltalog's own options see the same table; delta-rs reads it with the shared dictionary.
    assert DeltaTable(location.uri, storage_options=location.options).version() == 1
    rs = deltalake.DeltaTable(location.uri, storage_options=rs_opts)
    assert rs.version() == 1
    assert [r["x"] for r in rs_rows(rs)] == [10, 11, 12]
