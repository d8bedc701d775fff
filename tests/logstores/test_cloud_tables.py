"""Tables on every object store: Parquet stats from footers, checkpoints, refusing unsafe S3."""

from __future__ import annotations

import io
import json

import boto3
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from servers.fixtures import BUCKET, CloudTable, cloud_location, s3_options

from deltalog import DeltaTable, UnsafeStorageError, col
from deltalog.cli import main as cli_main
from deltalog.logstores import LogStore, UnsafeStoreConfigurationError, open_store

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("p", pa.string())])


def _parquet(ids: list[int]) -> bytes:
    buf = io.BytesIO()
    names = [None if i % 4 == 0 else f"n{i}" for i in ids]
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "name": names}), buf)
    return buf.getvalue()


def _put(store: LogStore, root: str, relative: str, data: bytes) -> None:
    store.write(store.join(root, relative), data, overwrite=True)


def test_appends_get_stats_from_footers_and_checkpoints_on_every_store(
    cloud_table: CloudTable,
) -> None:
    uri, options = cloud_table.uri, cloud_table.options
    store, root = open_store(uri, options)
    table = DeltaTable.create(uri, SCHEMA, partition_by=["p"], storage_options=options)
    expected = {}
    for i in range(12):
        relative = f"p=x{i % 3}/part-{i:03d}.parquet"
        ids = [i * 10 + k for k in range(5)]
        _put(store, root, relative, _parquet(ids))
        assert table.append_files([relative]) == i + 1
        expected[relative] = ids
    assert table.wait_for_checkpoints(timeout=60)

    listed = [s.name for s in store.list_from(store.join(root, "_delta_log", ""))]
    assert f"{10:020d}.checkpoint.parquet" in listed
    pointer = json.loads(store.read(store.join(root, "_delta_log", "_last_checkpoint")))
    assert pointer["version"] == 10

    fresh = DeltaTable(uri, storage_options=options)  # replays checkpoint 10 + 11, 12
    assert fresh.version() == 12
    files = fresh.files().to_pylist()
    assert sorted(f["path"] for f in files) == sorted(expected)
    for f in files:
        stats = json.loads(f["stats"])
        ids = expected[f["path"]]
        assert stats["numRecords"] == len(ids)
        assert stats["minValues"]["id"] == min(ids)
        assert stats["maxValues"]["id"] == max(ids)
        assert stats["nullCount"]["name"] == sum(1 for i in ids if i % 4 == 0)
        assert dict(f["partition_values"]) == {"p": f["path"][2:4]}

    # A partition overwrite through the same store, then time travel to before it.
    _put(store, root, "p=x0/compacted.parquet", _parquet([1, 2, 3]))
    assert fresh.overwrite_files(["p=x0/compacted.parquet"], where=col("p") == "x0") == 13
    live = sorted(DeltaTable(uri, storage_options=options).files().column("path").to_pylist())
    assert "p=x0/compacted.parquet" in live
    assert not any(p.startswith("p=x0/part-") for p in live)
    assert len(DeltaTable(uri, version=12, storage_options=options).files()) == 12


def test_s3_without_a_commit_protocol_is_refused_and_writes_nothing(
    request: pytest.FixtureRequest,
) -> None:
    server = request.getfixturevalue("moto_server")
    options = s3_options(server.endpoint)
    del options["s3.commit_protocol"]
    uri = f"s3://{BUCKET}/unsafe-table"
    with pytest.raises(UnsafeStorageError) as info:
        DeltaTable.create(uri, SCHEMA, storage_options=options)
    message = str(info.value)
    assert "conditional-put" in message and "dynamodb" in message
    assert "unsafe-single-writer" in message
    assert isinstance(info.value.__cause__, UnsafeStoreConfigurationError)
    assert options["s3.secret_access_key"] not in message
    with pytest.raises(UnsafeStorageError):
        DeltaTable(uri, storage_options=options)
    s3 = boto3.client(
        "s3",
        endpoint_url=server.endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    listing = s3.list_objects_v2(Bucket=BUCKET, Prefix="unsafe-table")
    assert listing.get("KeyCount", 0) == 0

    # The explicit single-writer opt-out works (and is the only way without a protocol).
    options["s3.commit_protocol"] = "unsafe-single-writer"
    DeltaTable.create(uri, SCHEMA, storage_options=options)
    assert DeltaTable(uri, storage_options=options).version() == 0


def test_cli_reads_a_cloud_table_with_options(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    location = cloud_location(request, "s3_dynamodb")
    DeltaTable.create(location.uri, SCHEMA, storage_options=location.options)
    args = [f"{k}={v}" for k, v in location.options.items()]
    argv = ["history", location.uri, "--json"]
    for pair in args:
        argv += ["-o", pair]
    assert cli_main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["table"] == location.uri
    assert [h["version"] for h in doc["history"]] == [0]
    assert cli_main(["describe", location.uri]) == 2  # no options: refused, named
    err = capsys.readouterr().err
    assert "UnsafeStorageError" in err
