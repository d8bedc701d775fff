"""A commit whose write raised is never reported as failed while it is in the log (issue 29).

The store applies the write, and then every reply fails (throttled until the store's retries
run out, or the read-back after "already taken" fails): the write raises although the commit
landed. It used to surface as a plain ``StorageError``, and re-running the write committed the
rows twice. Now the version is read back: the commit's own bytes mean it landed (acknowledged),
another writer's commit means the race was lost (the next version is tried), and when that
cannot be told the commit fails with ``CommitStatusUnknownError``, which says it may have
landed and carries the version and ``txnId``.

Store wrappers inject the failures at the unit level (local and memory stores); for the object
stores the backend's upload primitive is wrapped, so the store's own retries and read-back run
against the real test servers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from servers.fixtures import cloud_location
from tableutil import commit_one, one_row_add

from deltalog import CommitStatusUnknownError, DeltaTable, StorageError
from deltalog.log.storage import TableStorage
from deltalog.logstores import (
    FileAlreadyExistsError,
    FileStatus,
    LogStore,
    StoreThrottledError,
    StoreUnavailableError,
)
from deltalog.logstores.azure import AzureLogStore
from deltalog.logstores.dynamodb import S3DynamoDBLogStore
from deltalog.logstores.external import ExternalCommitEntry
from deltalog.logstores.gcs import GCSLogStore
from deltalog.logstores.s3 import S3LogStore
from deltalog.protocol.actions import serialize_actions
from deltalog.write.commit import make_commit_info, try_write

SCHEMA = pa.schema([("id", pa.int64())])


def _is_commit(path: str) -> bool:
    name = path.rsplit("/", 1)[-1]
    return "/_delta_log/" in path and len(name) == 25 and name.endswith(".json")


class FailingStore(LogStore):
    """Delegates to a store; commit writes fail as ``mode`` says.

    Modes: ``"lands"`` (applied, then the reply fails), ``"lost"`` (not applied),
    ``"lands-unreadable"`` (applied, then reading it back fails too), ``"rival"`` (another
    writer's commit lands there, then the reply fails).
    """

    def __init__(self, inner: LogStore, mode: str, rival: bytes = b"") -> None:
        self.inner = inner
        self.mode = mode
        self.rival = rival
        self.failed: list[str] = []

    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        if overwrite or not _is_commit(path) or self.failed:
            self.inner.write(path, data, overwrite=overwrite)
            return
        self.failed.append(path)
        if self.mode in ("lands", "lands-unreadable"):
            self.inner.write(path, data, overwrite=False)
        elif self.mode == "rival":
            self.inner.write(path, self.rival, overwrite=False)
        raise StoreThrottledError(f"throttled: PUT {path} (503)")

    def read(self, path: str) -> bytes:
        if self.mode == "lands-unreadable" and path in self.failed:
            raise StoreUnavailableError(f"service error: GET {path} (500)")
        return self.inner.read(path)

    def list_from(self, path: str) -> Iterator[FileStatus]:
        return self.inner.list_from(path)

    def list_tree(self, path: str) -> Iterator[FileStatus]:
        return self.inner.list_tree(path)

    def delete(self, path: str) -> None:
        self.inner.delete(path)

    def stat(self, path: str) -> FileStatus:
        return self.inner.stat(path)

    def local_path(self, path: str) -> str | None:
        return self.inner.local_path(path)


def _table(uri: str, options: dict[str, str] | None = None) -> DeltaTable:
    DeltaTable.create(uri, SCHEMA, storage_options=options)
    return DeltaTable(uri, storage_options=options, background_checkpoints=False)


def _uri(tmp_path: Any, kind: str) -> str:
    return str(tmp_path / "t") if kind == "local" else f"memory://outcome-{tmp_path.name}"


def _commits(table: DeltaTable) -> list[int]:
    return sorted(h["version"] for h in table.history())


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_write_that_landed_before_its_reply_failed_is_acknowledged(
    tmp_path: Any, kind: str
) -> None:
    uri = _uri(tmp_path, kind)
    writer = _table(uri)
    writer._storage.store = store = FailingStore(writer._storage.store, "lands")
    assert commit_one(writer, "a.parquet") == 1
    assert store.failed  # the write did raise
    fresh = DeltaTable(uri)
    assert fresh.version() == 1
    assert fresh.files().column("path").to_pylist() == ["a.parquet"]
    assert _commits(fresh) == [0, 1]  # once


def test_local_write_that_did_not_land_is_a_storage_error(tmp_path: Any) -> None:
    """On a filesystem a write is over when it returns: absent means nothing was written."""
    uri = _uri(tmp_path, "local")
    writer = _table(uri)
    writer._storage.store = FailingStore(writer._storage.store, "lost")
    with pytest.raises(StorageError, match="throttled") as err:
        commit_one(writer, "a.parquet")
    assert not isinstance(err.value, CommitStatusUnknownError)
    assert DeltaTable(uri).version() == 0


def test_remote_write_not_there_yet_is_status_unknown(tmp_path: Any) -> None:
    """On an object store a request still in flight may land later: unknown, not failed."""
    uri = _uri(tmp_path, "memory")
    writer = _table(uri)
    writer._storage.store = FailingStore(writer._storage.store, "lost")
    tx = writer.transaction()
    tx.add(one_row_add("a.parquet"))
    with pytest.raises(CommitStatusUnknownError) as err:
        tx.commit()
    txn_id = err.value.txn_id
    assert err.value.version == 1 and txn_id
    assert not err.value.retryable
    assert "MAY be in the table" in str(err.value) and txn_id in str(err.value)
    assert isinstance(err.value.__cause__, StorageError)


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_write_that_landed_but_cannot_be_read_back_is_status_unknown(
    tmp_path: Any, kind: str
) -> None:
    uri = _uri(tmp_path, kind)
    writer = _table(uri)
    writer._storage.store = FailingStore(writer._storage.store, "lands-unreadable")
    with pytest.raises(CommitStatusUnknownError, match=r"reading .* back failed too") as err:
        commit_one(writer, "a.parquet")
    assert err.value.version == 1
    assert DeltaTable(uri).version() == 1  # it did land: the caller was told it may have


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_rival_commit_found_after_a_failed_reply_is_a_lost_race(tmp_path: Any, kind: str) -> None:
    uri = _uri(tmp_path, kind)
    writer = _table(uri)
    info = make_commit_info(operation="WRITE", parameters={}, read_version=0, is_blind_append=True)
    rival = serialize_actions([info, one_row_add("rival.parquet")])
    writer._storage.store = FailingStore(writer._storage.store, "rival", rival)
    assert commit_one(writer, "a.parquet") == 2
    paths = DeltaTable(uri).files().column("path").to_pylist()
    assert sorted(paths) == ["a.parquet", "rival.parquet"]


def test_table_creation_that_landed_before_its_reply_failed(tmp_path: Any) -> None:
    storage = TableStorage.open(str(tmp_path / "t"))
    storage.store = FailingStore(storage.store, "lands")
    info = make_commit_info(
        operation="CREATE TABLE", parameters={}, read_version=None, is_blind_append=True
    )
    assert try_write(storage, 0, serialize_actions([info]))


# ---------------------------------------------------------------------- object stores
OBJECT_STORES = ["s3", "s3_dynamodb", "gcs", "azure"]
_PUT = {"s3": S3LogStore, "gcs": GCSLogStore, "azure": AzureLogStore}


def _attempts_option(kind: str) -> dict[str, str]:
    prefix = {"s3": "s3", "s3_dynamodb": "s3", "gcs": "gcs", "azure": "azure"}[kind]
    return {f"{prefix}.max_attempts": "3"}


def _every_reply_fails(monkeypatch: pytest.MonkeyPatch, kind: str) -> list[str]:
    """Commit creates reach the server, and every reply is throttled, retries included."""
    failed: list[str] = []
    if kind == "s3_dynamodb":
        real_entry = S3DynamoDBLogStore.put_entry

        def put_entry(self: Any, entry: ExternalCommitEntry, *, overwrite: bool) -> None:
            if overwrite:
                real_entry(self, entry, overwrite=True)
                return
            with contextlib.suppress(FileAlreadyExistsError):
                real_entry(self, entry, overwrite=False)
            failed.append(entry.file_name)
            raise StoreThrottledError(f"throttled: DynamoDB put_item {entry.file_path}")

        monkeypatch.setattr(S3DynamoDBLogStore, "put_entry", put_entry)
        return failed
    cls = _PUT[kind]
    real_put = cls._put

    def put(self: Any, key: str, data: bytes, *, if_absent: bool) -> None:
        if not (if_absent and _is_commit("/" + key)):
            real_put(self, key, data, if_absent=if_absent)
            return
        with contextlib.suppress(FileAlreadyExistsError):  # a retry's reply is lost as well
            real_put(self, key, data, if_absent=True)
        failed.append(key)
        raise StoreThrottledError(f"throttled: PUT {key} (503)")

    monkeypatch.setattr(cls, "_put", put)
    return failed


@pytest.mark.parametrize("kind", OBJECT_STORES)
def test_object_store_commit_whose_replies_all_failed_is_acknowledged(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    location = cloud_location(request, kind)
    options = {**location.options, **_attempts_option(kind)}
    writer = _table(location.uri, options)
    failed = _every_reply_fails(monkeypatch, kind)
    assert commit_one(writer, "a.parquet") == 1
    assert failed  # the store gave up on the replies
    monkeypatch.undo()
    fresh = DeltaTable(location.uri, storage_options=options)
    assert fresh.files().column("path").to_pylist() == ["a.parquet"]
    assert _commits(fresh) == [0, 1]


@pytest.mark.parametrize("kind", ["s3", "gcs", "azure"])
@pytest.mark.parametrize("read_back", ["recovers", "keeps-failing"])
def test_object_store_read_back_after_already_taken_fails(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, kind: str, read_back: str
) -> None:
    """The first upload lands with a lost reply; the retry is refused; reading back fails."""
    location = cloud_location(request, kind)
    options = {**location.options, **_attempts_option(kind)}
    writer = _table(location.uri, options)
    cls = _PUT[kind]
    real_put, real_get = cls._put, cls._get
    state = {"puts": 0, "gets": 0}

    def put(self: Any, key: str, data: bytes, *, if_absent: bool) -> None:
        real_put(self, key, data, if_absent=if_absent)
        if if_absent and _is_commit("/" + key) and not state["puts"]:
            state["puts"] += 1
            raise StoreThrottledError(f"throttled: PUT {key} (503)")

    def get(self: Any, key: str, start: int | None = None, stop: int | None = None) -> bytes:
        if state["puts"] and _is_commit("/" + key) and key.endswith("1.json"):
            state["gets"] += 1
            if read_back == "keeps-failing" or state["gets"] <= 3:  # the store's read-back
                raise StoreUnavailableError(f"service error: GET {key} (500)")
        return real_get(self, key, start, stop)

    monkeypatch.setattr(cls, "_put", put)
    monkeypatch.setattr(cls, "_get", get)
    if read_back == "recovers":
        assert commit_one(writer, "a.parquet") == 1
    else:
        with pytest.raises(CommitStatusUnknownError) as err:
            commit_one(writer, "a.parquet")
        assert err.value.version == 1
    monkeypatch.undo()
    assert DeltaTable(location.uri, storage_options=options).version() == 1


def test_spark_staged_write_keeps_its_files_when_the_commit_may_have_landed(tmp_path: Any) -> None:
    """Deleting them would break the commit if it did land: they stay for a later look."""
    from deltalog.spark.staged import StagedWrite

    uri = _uri(tmp_path, "memory")
    writer = _table(uri)
    storage = writer._storage
    storage.store.write(storage.data_file("a.parquet"), b"PAR1", overwrite=True)
    storage.store = FailingStore(storage.store, "lost")
    tx = writer.transaction()
    add = one_row_add("a.parquet")
    tx.add(add)
    staged = StagedWrite(storage, [add], table=writer, tx=tx)
    with pytest.raises(CommitStatusUnknownError):
        staged.commit()
    assert storage.store.exists(storage.data_file("a.parquet"))
