"""S3 + DynamoDB: delta-spark's protocol, crash recovery, table creation, against moto.

Crash tests run the writer in a spawned process whose commit is killed with SIGKILL at one step
of the protocol (through the ``_fault`` seam of ``ExternalCoordinatedLogStore``). The parent then
inspects S3 and DynamoDB with plain boto3 and opens the table with a fresh reader.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import time
from typing import Any

import boto3
import pyarrow as pa
import pytest
from servers.fixtures import BUCKET, DYNAMO_TABLE, CloudTable, cloud_location, s3_options
from tableutil import one_row_add, put_data_file

import deltalog.write.commit as commit_module
from deltalog import CommitStatusUnknownError, DeltaTable, IncompleteCommitError, StorageError
from deltalog.log.storage import TableStorage
from deltalog.logstores import (
    FileAlreadyExistsError,
    LogFileNotFoundError,
    LogStoreError,
    StoreConfigurationError,
    StoreIOError,
    StoreUnavailableError,
    open_store,
)
from deltalog.logstores.dynamodb import S3DynamoDBLogStore, entry_to_item
from deltalog.logstores.errors import (
    OrphanedCommitEntryError,
    PreviousCommitMissingError,
    WriteNotSentError,
)
from deltalog.logstores.external import ExternalCommitEntry, ExternalCoordinatedLogStore

SCHEMA = pa.schema([("x", pa.int64())])


def _clients(options: dict[str, str]) -> tuple[Any, Any]:
    kwargs = {
        "endpoint_url": options["s3.endpoint"],
        "region_name": "us-east-1",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    return boto3.client("s3", **kwargs), boto3.client("dynamodb", **kwargs)


def _key(uri: str, *parts: str) -> str:
    return "/".join([uri.removeprefix(f"s3://{BUCKET}/"), *parts])


def _append(table: DeltaTable, name: str) -> int:
    with table.transaction("WRITE") as tx:
        tx.add(one_row_add(name))
    assert tx.version is not None
    return tx.version


def _item(dynamo: Any, table_path: str, file_name: str) -> dict[str, Any] | None:
    response = dynamo.get_item(
        TableName=DYNAMO_TABLE,
        Key={"tablePath": {"S": table_path}, "fileName": {"S": file_name}},
        ConsistentRead=True,
    )
    item: dict[str, Any] | None = response.get("Item")
    return item


def _exists(s3: Any, key: str) -> bool:
    try:
        s3.head_object(Bucket=BUCKET, Key=key)
    except s3.exceptions.ClientError:
        return False
    return True


def _temp_keys(s3: Any, uri: str) -> list[str]:
    page = s3.list_objects_v2(Bucket=BUCKET, Prefix=_key(uri, "_delta_log", ".tmp/"))
    return [item["Key"] for item in page.get("Contents", [])]


@pytest.fixture
def location(request: pytest.FixtureRequest) -> CloudTable:
    return cloud_location(request, "s3_dynamodb")


def _crashing_writer(uri: str, options: dict[str, str], step: str, name: str) -> None:
    """Child process: commit one append, and die by SIGKILL at ``step`` of the protocol."""

    def fault(self: ExternalCoordinatedLogStore, at: str) -> None:
        if at == step:
            os.kill(os.getpid(), signal.SIGKILL)

    ExternalCoordinatedLogStore._fault = fault  # type: ignore[method-assign]
    table = DeltaTable(uri, storage_options=options, background_checkpoints=False)
    _append(table, name)
    os._exit(3)  # not reached when the kill happens


def _run_crash(location: CloudTable, step: str, name: str) -> int:
    ctx = multiprocessing.get_context("spawn")
    process = ctx.Process(
        target=_crashing_writer, args=(location.uri, location.options, step, name)
    )
    process.start()
    process.join(timeout=120)
    assert process.exitcode is not None, "the writer hung"
    return process.exitcode


def _fresh_table(location: CloudTable) -> DeltaTable:
    DeltaTable.create(location.uri, SCHEMA, storage_options=location.options)
    table = DeltaTable(location.uri, storage_options=location.options)
    _append(table, "first.parquet")
    return table


def test_killed_after_the_entry_and_before_the_copy_is_repaired_by_the_next_reader(
    location: CloudTable,
) -> None:
    s3, dynamo = _clients(location.options)
    _fresh_table(location)  # versions 0 and 1
    assert _run_crash(location, "entry_written", "crashed.parquet") == -signal.SIGKILL

    name = f"{2:020d}.json"
    item = _item(dynamo, location.uri, name)
    assert item is not None and item["complete"]["S"] == "false"
    assert "expireTime" not in item
    assert not _exists(s3, _key(location.uri, "_delta_log", name)), "the copy must not have run"
    temp_key = _key(location.uri, "_delta_log", item["tempPath"]["S"])
    assert _exists(s3, temp_key)

    reader = DeltaTable(location.uri, storage_options=location.options)
    assert reader.version() == 2
    assert sorted(reader.files().column("path").to_pylist()) == [
        "crashed.parquet",
        "first.parquet",
    ]
    body = s3.get_object(Bucket=BUCKET, Key=_key(location.uri, "_delta_log", name))["Body"]
    temp = s3.get_object(Bucket=BUCKET, Key=temp_key)["Body"].read()
    assert body.read() == temp
    repaired = _item(dynamo, location.uri, name)
    assert repaired is not None and repaired["complete"]["S"] == "true"
    assert abs(int(repaired["expireTime"]["N"]) - (time.time() + 86_400)) < 600

    # The table goes on: the next writer commits version 3.
    _append(reader, "after.parquet")
    assert DeltaTable(location.uri, storage_options=location.options).version() == 3


def test_killed_before_the_entry_leaves_only_an_orphan_temp_file(location: CloudTable) -> None:
    s3, dynamo = _clients(location.options)
    _fresh_table(location)
    temps_before = _temp_keys(s3, location.uri)
    assert _run_crash(location, "temp_written", "lost.parquet") == -signal.SIGKILL

    name = f"{2:020d}.json"
    assert _item(dynamo, location.uri, name) is None
    assert not _exists(s3, _key(location.uri, "_delta_log", name))
    orphans = sorted(set(_temp_keys(s3, location.uri)) - set(temps_before))
    assert len(orphans) == 1 and orphans[0].rsplit("/", 1)[1].startswith(f"{name}.")

    reader = DeltaTable(location.uri, storage_options=location.options)
    assert reader.version() == 1
    assert reader.files().column("path").to_pylist() == ["first.parquet"]
    _append(reader, "next.parquet")
    assert DeltaTable(location.uri, storage_options=location.options).version() == 2
    log_names = [
        item["Key"].rsplit("/", 1)[1]
        for item in s3.list_objects_v2(
            Bucket=BUCKET, Prefix=_key(location.uri, "_delta_log/"), Delimiter="/"
        )["Contents"]
        if not item["Key"].endswith(".crc")
    ]
    assert log_names == [f"{v:020d}.json" for v in range(3)]


def test_killed_after_the_copy_is_acknowledged_by_the_next_reader(location: CloudTable) -> None:
    s3, dynamo = _clients(location.options)
    _fresh_table(location)
    assert _run_crash(location, "copied", "copied.parquet") == -signal.SIGKILL
    name = f"{2:020d}.json"
    item = _item(dynamo, location.uri, name)
    assert item is not None and item["complete"]["S"] == "false"
    assert _exists(s3, _key(location.uri, "_delta_log", name))

    reader = DeltaTable(location.uri, storage_options=location.options)
    assert reader.version() == 2
    repaired = _item(dynamo, location.uri, name)
    assert repaired is not None and repaired["complete"]["S"] == "true"


def test_a_writer_repairs_an_incomplete_previous_commit_before_its_own(
    location: CloudTable,
) -> None:
    # A foreign writer (written the way delta-spark's S3DynamoDBLogStore writes) prepared
    # version 2 and died: temp file + incomplete entry. Our next commit must land at 3, after
    # copying version 2 into place, not overwrite or skip it.
    s3, dynamo = _clients(location.options)
    table = _fresh_table(location)
    name = f"{2:020d}.json"
    temp = f".tmp/{name}.0b7f3c9e-0000-4000-8000-000000000000"
    commit = json.dumps({"add": one_row_add("foreign.parquet").to_json_dict()}) + "\n"
    s3.put_object(Bucket=BUCKET, Key=_key(location.uri, "_delta_log", temp), Body=commit.encode())
    dynamo.put_item(
        TableName=DYNAMO_TABLE,
        Item=entry_to_item(ExternalCommitEntry(location.uri, name, temp, complete=False)),
    )
    _append(table, "ours.parquet")  # read version 1, so it retries past 2
    assert table.update() == 3
    assert sorted(table.files().column("path").to_pylist()) == [
        "first.parquet",
        "foreign.parquet",
        "ours.parquet",
    ]
    item = _item(dynamo, location.uri, name)
    assert item is not None and item["complete"]["S"] == "true"


def _orphan_entry(dynamo: Any, uri: str, version: int) -> tuple[str, str]:
    """An incomplete entry for ``version`` whose temp file is gone; (file name, temp path)."""
    name = f"{version:020d}.json"
    temp = f".tmp/{name}.5d3c1a2b-0000-4000-8000-deletedbyrule"
    dynamo.put_item(
        TableName=DYNAMO_TABLE,
        Item=entry_to_item(ExternalCommitEntry(uri, name, temp, complete=False)),
    )
    return name, temp


def test_an_entry_whose_temp_file_is_gone_stops_readers_and_writers_with_a_named_error(
    location: CloudTable,
) -> None:
    # A writer prepared version 2 and died before the copy; then its temp file was deleted
    # (a lifecycle rule on _delta_log/.tmp/). The commit can be neither finished nor skipped.
    s3, dynamo = _clients(location.options)
    uri, options = location.uri, location.options
    DeltaTable.create(uri, SCHEMA, storage_options=options)
    stale = DeltaTable(uri, storage_options=options)  # at version 0
    table = DeltaTable(uri, storage_options=options)
    _append(table, "first.parquet")  # version 1
    name, temp = _orphan_entry(dynamo, uri, 2)
    temps_before = _temp_keys(s3, uri)

    with pytest.raises(IncompleteCommitError) as opened:
        DeltaTable(uri, storage_options=options)
    error = opened.value
    assert error.version == 2
    assert error.path == f"{uri}/_delta_log/{name}"
    assert error.temp_path == f"{uri}/_delta_log/{temp}"
    assert DYNAMO_TABLE in error.entry and uri in error.entry and name in error.entry
    for part in (uri, DYNAMO_TABLE, name, temp, "aws dynamodb delete-item", "complete"):
        assert part in str(error)
    assert isinstance(error.__cause__, OrphanedCommitEntryError)

    # Writers stop at once: one attempt, not a thousand "taken by another writer".
    for writer in (table, stale):  # commits at 2 (loses the entry), at 1 (catches up over 2)
        tx = writer.transaction()
        tx.add(one_row_add("blocked.parquet"))
        with pytest.raises(IncompleteCommitError, match="cannot be finished"):
            tx.commit()
        assert tx.attempts == 1

    # Nothing was changed or written: the entry stays for a person to decide.
    item = _item(dynamo, uri, name)
    assert item is not None and item["complete"]["S"] == "false"
    assert item["tempPath"]["S"] == temp
    assert not _exists(s3, _key(uri, "_delta_log", name))
    assert _temp_keys(s3, uri) == temps_before

    # The repair the message gives when the content is lost: delete the entry.
    dynamo.delete_item(
        TableName=DYNAMO_TABLE, Key={"tablePath": {"S": uri}, "fileName": {"S": name}}
    )
    reader = DeltaTable(uri, storage_options=options)
    assert reader.version() == 1
    assert _append(reader, "after.parquet") == 2
    assert sorted(reader.files().column("path").to_pylist()) == ["after.parquet", "first.parquet"]


def test_an_orphaned_entry_repaired_by_writing_the_commit_by_hand(location: CloudTable) -> None:
    # The other repair the message gives: write N.json, then mark the entry complete.
    s3, dynamo = _clients(location.options)
    _fresh_table(location)
    name, temp = _orphan_entry(dynamo, location.uri, 2)
    with pytest.raises(IncompleteCommitError):
        DeltaTable(location.uri, storage_options=location.options)
    commit = json.dumps({"add": one_row_add("recovered.parquet").to_json_dict()}) + "\n"
    s3.put_object(Bucket=BUCKET, Key=_key(location.uri, "_delta_log", name), Body=commit.encode())
    dynamo.put_item(
        TableName=DYNAMO_TABLE,
        Item=entry_to_item(
            ExternalCommitEntry(location.uri, name, temp, complete=False).as_complete(60)
        ),
    )
    reader = DeltaTable(location.uri, storage_options=location.options)
    assert reader.version() == 2
    assert "recovered.parquet" in reader.files().column("path").to_pylist()


def test_an_entry_copied_but_not_acknowledged_needs_no_temp_file(location: CloudTable) -> None:
    # N.json was copied, the temp file deleted, the entry never marked complete: not broken.
    s3, dynamo = _clients(location.options)
    _fresh_table(location)
    name, _ = _orphan_entry(dynamo, location.uri, 2)
    commit = json.dumps({"add": one_row_add("copied.parquet").to_json_dict()}) + "\n"
    s3.put_object(Bucket=BUCKET, Key=_key(location.uri, "_delta_log", name), Body=commit.encode())
    reader = DeltaTable(location.uri, storage_options=location.options)
    assert reader.version() == 2
    item = _item(dynamo, location.uri, name)
    assert item is not None and item["complete"]["S"] == "true"


def test_entries_have_delta_sparks_layout(location: CloudTable) -> None:
    _, dynamo = _clients(location.options)
    _fresh_table(location)
    items = dynamo.query(
        TableName=DYNAMO_TABLE,
        KeyConditionExpression="tablePath = :p",
        ExpressionAttributeValues={":p": {"S": location.uri}},
        ConsistentRead=True,
    )["Items"]
    assert [i["fileName"]["S"] for i in items] == [f"{v:020d}.json" for v in range(2)]
    for item in items:
        assert set(item) == {"tablePath", "fileName", "tempPath", "complete", "expireTime"}
        assert item["tempPath"]["S"].startswith(f".tmp/{item['fileName']['S']}.")
        assert item["complete"] == {"S": "true"}
        assert "N" in item["expireTime"]
    description = dynamo.describe_table(TableName=DYNAMO_TABLE)["Table"]
    assert description["KeySchema"] == [
        {"AttributeName": "tablePath", "KeyType": "HASH"},
        {"AttributeName": "fileName", "KeyType": "RANGE"},
    ]


def test_a_deleted_commit_cannot_be_created_again_while_its_entry_lives(
    location: CloudTable,
) -> None:
    s3, _ = _clients(location.options)
    store, root = open_store(location.uri, location.options)
    first = store.join(root, "_delta_log", f"{0:020d}.json")
    store.write(first, b"{}\n")
    s3.delete_object(Bucket=BUCKET, Key=_key(location.uri, "_delta_log", f"{0:020d}.json"))
    with pytest.raises(StoreIOError, match="still in the external store"):
        store.write(first, b"{}\n")


def test_a_commit_must_follow_its_predecessor(location: CloudTable) -> None:
    store, root = open_store(location.uri, location.options)
    with pytest.raises(StoreIOError, match="previous commit"):
        store.write(store.join(root, "_delta_log", f"{5:020d}.json"), b"{}\n")
    with pytest.raises(LogFileNotFoundError):  # nothing at all was written
        list(store.list_from(store.join(root, "_delta_log", "")))


def test_a_refusal_before_anything_is_sent_is_a_not_written_error(
    location: CloudTable,
) -> None:
    """The external store's own checks before its entry (the commit point) refuse or fail:
    nothing of the commit was sent, so it can never land later."""
    store, root = open_store(location.uri, location.options)
    with pytest.raises(PreviousCommitMissingError, match="previous commit"):
        store.write(store.join(root, "_delta_log", f"{5:020d}.json"), b"{}\n")
    first = store.join(root, "_delta_log", f"{0:020d}.json")
    assert isinstance(store, ExternalCoordinatedLogStore)
    real = store.objects.exists

    def failing_exists(path: str) -> bool:
        raise StoreUnavailableError(f"HEAD {path}: 503")

    store.objects.exists = failing_exists  # type: ignore[method-assign]
    with pytest.raises(WriteNotSentError, match="503"):
        store.write(first, b"{}\n")
    store.objects.exists = real  # type: ignore[method-assign]
    with pytest.raises(LogFileNotFoundError):  # nothing at all was written
        list(store.list_from(store.join(root, "_delta_log", "")))


def test_a_commit_whose_previous_commit_cleanup_removed_moves_on_to_the_head(
    location: CloudTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between the writer's check that version 2 is next and its create, another writer
    commits 2 and 3, checkpoints and cleans up (1 and 2 go). The store refuses 2 before sending
    anything (no 1.json): the log moved on, nothing was written, and the blind append moves on
    to the head. It used to be reported as "cannot tell whether commit 2 landed"."""
    no_retention = {"delta.logRetentionDuration": "interval 0 seconds"}
    options = location.options
    DeltaTable.create(location.uri, SCHEMA, configuration=no_retention, storage_options=options)
    other = DeltaTable(location.uri, storage_options=options, background_checkpoints=False)
    assert _append(other, "b1.parquet") == 1
    writer = DeltaTable(location.uri, storage_options=options, background_checkpoints=False)
    real = commit_module._version_is_free
    moved: list[int] = []

    def free_then_others_move_on(storage: TableStorage, version: int) -> bool:
        free = real(storage, version)
        if free and not moved:
            moved.append(version)
            assert _append(other, "b2.parquet") == 2 and _append(other, "b3.parquet") == 3
            other.checkpoint()
            assert {f"{1:020d}.json", f"{2:020d}.json"} <= set(other.cleanup_log())
        return free

    monkeypatch.setattr(commit_module, "_version_is_free", free_then_others_move_on)
    put_data_file(writer, "a.parquet")  # moved past removed commits, an append checks its file
    assert _append(writer, "a.parquet") == 4
    assert moved == [2]
    fresh = DeltaTable(location.uri, storage_options=options)
    paths = sorted(fresh.files(with_stats=False).column("path").to_pylist())
    assert paths == ["a.parquet", "b1.parquet", "b2.parquet", "b3.parquet"]


def test_a_commit_failing_before_its_entry_is_not_reported_as_status_unknown(
    location: CloudTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The temp file cannot be written: the entry, which decides the commit, was never sent.
    That is a storage error saying nothing was written, not "it MAY have landed"."""
    table = _fresh_table(location)

    def unavailable(self: ExternalCoordinatedLogStore, path: str, data: bytes) -> None:
        raise StoreUnavailableError(f"PUT {path}: 503")

    monkeypatch.setattr(ExternalCoordinatedLogStore, "_write_temp_file", unavailable)
    with pytest.raises(StorageError, match="nothing was written") as err:
        _append(table, "second.parquet")
    assert not isinstance(err.value, CommitStatusUnknownError)
    assert isinstance(err.value.__cause__, WriteNotSentError)
    monkeypatch.undo()
    assert DeltaTable(location.uri, storage_options=location.options).version() == 1


def test_a_loser_at_the_entry_finishes_the_winners_commit_and_cleans_up(
    location: CloudTable,
) -> None:
    # The winner prepared version 0 (temp file + incomplete entry) and stalled before copying.
    s3, dynamo = _clients(location.options)
    store, root = open_store(location.uri, location.options)
    name = f"{0:020d}.json"
    temp = f".tmp/{name}.winner"
    s3.put_object(Bucket=BUCKET, Key=_key(location.uri, "_delta_log", temp), Body=b"winner\n")
    dynamo.put_item(
        TableName=DYNAMO_TABLE,
        Item=entry_to_item(ExternalCommitEntry(location.uri, name, temp, complete=False)),
    )
    with pytest.raises(FileAlreadyExistsError):
        store.write(store.join(root, "_delta_log", name), b"loser\n")
    assert store.read(store.join(root, "_delta_log", name)) == b"winner\n"
    assert _temp_keys(s3, location.uri) == [_key(location.uri, "_delta_log", temp)]
    item = _item(dynamo, location.uri, name)
    assert item is not None and item["complete"]["S"] == "true"


def test_missing_dynamodb_table_is_a_named_error_unless_creation_is_asked(
    request: pytest.FixtureRequest,
) -> None:
    server = request.getfixturevalue("moto_server")
    options = s3_options(server.endpoint, "dynamodb")
    options["s3.dynamodb.table_name"] = "absent_table"
    options["s3.dynamodb.create_table"] = "false"
    with pytest.raises(StoreConfigurationError, match=r"s3\.dynamodb\.create_table=true"):
        open_store(f"s3://{BUCKET}/never", options)

    options["s3.dynamodb.table_name"] = "created_on_demand"
    options["s3.dynamodb.create_table"] = "true"
    store, _ = open_store(f"s3://{BUCKET}/created", options)
    _, dynamo = _clients(options)
    table = dynamo.describe_table(TableName="created_on_demand")["Table"]
    assert table["TableStatus"] == "ACTIVE"
    ttl = dynamo.describe_time_to_live(TableName="created_on_demand")["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expireTime"
    assert ttl["TimeToLiveStatus"] in ("ENABLED", "ENABLING")
    # Opening again finds the table and does not fail on "already exists".
    open_store(f"s3://{BUCKET}/created", options)
    assert isinstance(store, S3DynamoDBLogStore)


def test_store_errors_never_leak_sdk_exceptions(request: pytest.FixtureRequest) -> None:
    server = request.getfixturevalue("moto_server")
    options = s3_options(server.endpoint, "dynamodb")
    store, root = open_store(f"s3://no-such-bucket-{os.getpid()}/t", options)
    with pytest.raises(LogStoreError):
        store.write(store.join(root, "_delta_log", f"{0:020d}.json"), b"x")
