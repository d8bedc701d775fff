"""A commit created below a checkpoint that does not hold it is never acknowledged (issue 29).

The interleaving, reproduced exactly through a seam between the writer's check that version
``N`` is free and its create of ``N.json``: another writer commits ``N`` and ``N + 1``,
checkpoints ``N + 1`` and runs log cleanup, which deletes ``N.json``. The create then succeeds
below a checkpoint that does not contain it. It used to be acknowledged (and lost, with ``N``
reported to two writers); now the writer sees the newer checkpoint right after its create,
withdraws the orphan, and moves a blind append on to the head, or raises
``SnapshotExpiredError`` for anything else. ``check`` reports an orphan left by older versions.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
import pytest
from servers.fixtures import cloud_location
from tableutil import commit_one, one_row_add, put_data_file

import deltalog.write.commit as commit_module
from deltalog import (
    CommitStatusUnknownError,
    DeltaTable,
    SnapshotExpiredError,
    check_table,
)
from deltalog.log.orphans import CheckpointView, LaterCommits, Verdict, judge
from deltalog.log.storage import TableStorage
from deltalog.logstores import FileAlreadyExistsError, FileStatus, LocalLogStore, LogStore
from deltalog.protocol.actions import Metadata, Protocol, RemoveFile, Txn, serialize_actions
from deltalog.write.commit import make_commit_info

SCHEMA = pa.schema([("id", pa.int64())])
NO_RETENTION = {"delta.logRetentionDuration": "interval 0 seconds"}


def _location(
    request: pytest.FixtureRequest, tmp_path: Any, kind: str
) -> tuple[str, dict[str, str]]:
    if kind == "local":
        return str(tmp_path / "t"), {}
    if kind == "memory":
        return f"memory://orphans-{tmp_path.name}", {}
    location = cloud_location(request, kind)
    return location.uri, dict(location.options)


def _name(version: int) -> str:
    return f"{version:020d}.json"


def _paths(table: DeltaTable) -> list[str]:
    return sorted(table.files(with_stats=False).column("path").to_pylist())


@pytest.fixture
def between_check_and_create(
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[[Callable[[], None]], None]:
    """Run a callback once, right after a writer found its version free and before it creates it."""
    pending: list[Callable[[], None]] = []
    real = commit_module._version_is_free

    def hooked(storage: TableStorage, version: int) -> bool:
        free = real(storage, version)
        if free and pending:
            pending.pop()()  # the callback's own commits see an empty list: no recursion
        return free

    monkeypatch.setattr(commit_module, "_version_is_free", hooked)
    return pending.append


def _others_commit_checkpoint_and_clean(other: DeltaTable, version: int) -> Callable[[], None]:
    """The winner's moves: commit ``version`` and the next, checkpoint, clean up the log."""

    def run() -> None:
        assert commit_one(other, f"b{version}.parquet") == version
        assert commit_one(other, f"b{version + 1}.parquet") == version + 1
        other.checkpoint()
        deleted = other.cleanup_log()
        assert _name(version) in deleted, deleted

    return run


@pytest.mark.parametrize("kind", ["local", "memory", "s3"])
def test_blind_append_created_below_a_fresh_checkpoint_moves_to_the_head(
    request: pytest.FixtureRequest, tmp_path: Any, kind: str, between_check_and_create: Any
) -> None:
    uri, options = _location(request, tmp_path, kind)
    DeltaTable.create(uri, SCHEMA, configuration=NO_RETENTION, storage_options=options)
    other = DeltaTable(uri, storage_options=options, background_checkpoints=False)
    assert commit_one(other, "b1.parquet") == 1
    writer = DeltaTable(uri, storage_options=options, background_checkpoints=False)
    between_check_and_create(_others_commit_checkpoint_and_clean(other, 2))

    version = commit_one(writer, put_data_file(writer, "a.parquet"))

    # Not 2: version 2 is the other writer's, acknowledged to it and held by checkpoint 3.
    assert version == 4
    fresh = DeltaTable(uri, storage_options=options)
    assert fresh.version() == 4
    assert _paths(fresh) == ["a.parquet", "b1.parquet", "b2.parquet", "b3.parquet"]
    storage = TableStorage.open(uri, options)
    assert not storage.store.exists(storage.log_file(_name(2)))  # the orphan was withdrawn
    assert writer.version() == 4 and _paths(writer) == _paths(fresh)
    report = check_table(uri, storage_options=options, data_files=False)
    assert report.clean, report.findings


@pytest.mark.parametrize("kind", ["local", "memory"])
def test_read_modify_write_created_below_a_fresh_checkpoint_is_withdrawn_and_refused(
    request: pytest.FixtureRequest, tmp_path: Any, kind: str, between_check_and_create: Any
) -> None:
    uri, options = _location(request, tmp_path, kind)
    DeltaTable.create(uri, SCHEMA, configuration=NO_RETENTION, storage_options=options)
    other = DeltaTable(uri, storage_options=options, background_checkpoints=False)
    commit_one(other, "b1.parquet")
    writer = DeltaTable(uri, storage_options=options, background_checkpoints=False)
    between_check_and_create(_others_commit_checkpoint_and_clean(other, 2))

    tx = writer.transaction()
    tx.read_whole_table()  # what it read may have changed in the commits that are gone
    tx.add(one_row_add("a.parquet"))
    with pytest.raises(SnapshotExpiredError, match="withdrawn") as err:
        tx.commit()

    assert err.value.retryable
    storage = TableStorage.open(uri, options)
    assert not storage.store.exists(storage.log_file(_name(2)))
    fresh = DeltaTable(uri, storage_options=options)
    assert fresh.version() == 3
    assert "a.parquet" not in _paths(fresh)
    assert check_table(uri, storage_options=options, data_files=False).clean


def test_blind_append_is_refused_when_the_head_changed_the_metadata(
    tmp_path: Any, between_check_and_create: Any
) -> None:
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA, configuration=NO_RETENTION)
    other = DeltaTable(uri, background_checkpoints=False)
    commit_one(other, "b1.parquet")
    writer = DeltaTable(uri, background_checkpoints=False)

    def change_metadata_and_clean() -> None:
        commit_one(other, "b2.parquet")
        with other.transaction("SET TBLPROPERTIES") as tx:
            tx.update_metadata(configuration={**NO_RETENTION, "owner": "x"})
        other.checkpoint()
        assert _name(2) in other.cleanup_log()

    between_check_and_create(change_metadata_and_clean)
    with pytest.raises(SnapshotExpiredError):
        commit_one(writer, "a.parquet")
    fresh = DeltaTable(uri)
    assert fresh.version() == 3 and "a.parquet" not in _paths(fresh)
    assert check_table(uri, data_files=False).clean


def test_undecidable_orphan_is_reported_as_status_unknown_and_kept(
    tmp_path: Any, between_check_and_create: Any
) -> None:
    """Tombstones expire at once and the commits between are gone: nothing tells."""
    uri = str(tmp_path / "t")
    config = {**NO_RETENTION, "delta.deletedFileRetentionDuration": "interval 0 seconds"}
    DeltaTable.create(uri, SCHEMA, configuration=config)
    other = DeltaTable(uri, background_checkpoints=False)
    commit_one(other, "b1.parquet")
    writer = DeltaTable(uri, background_checkpoints=False)

    def three_more_and_clean() -> None:
        for v in (2, 3, 4):
            commit_one(other, f"b{v}.parquet")
        other.checkpoint()  # version 4: commit 3 is gone after cleanup, 2 is the orphan's
        assert _name(3) in other.cleanup_log()

    between_check_and_create(three_more_and_clean)
    tx = writer.transaction()
    tx.add(one_row_add("a.parquet"))
    with pytest.raises(CommitStatusUnknownError, match="MAY be in the table") as err:
        tx.commit()
    assert err.value.version == 2 and err.value.txn_id
    assert not err.value.retryable
    storage = TableStorage.open(uri)
    assert storage.store.exists(storage.log_file(_name(2)))  # never deleted when unsure


def test_commit_landing_under_a_checkpoint_written_after_it_is_acknowledged(
    tmp_path: Any, between_check_and_create: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint above the new commit that was made from it: no false alarm."""
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA, configuration=NO_RETENTION)
    writer = DeltaTable(uri, background_checkpoints=False)
    other = DeltaTable(uri, background_checkpoints=False)
    real_write = TableStorage.open(uri).store.__class__.write
    done: list[bool] = []

    def write_then_others_move_on(store: LogStore, path: str, data: bytes, **kw: Any) -> None:
        real_write(store, path, data, **kw)
        if path.endswith(_name(1)) and not done:
            done.append(True)
            other.update()
            commit_one(other, "b2.parquet")
            other.checkpoint()  # version 2, holding the commit just made
            other.cleanup_log()  # deletes 1.json: it is below checkpoint 2, and held by it

    monkeypatch.setattr(type(writer._storage.store), "write", write_then_others_move_on)
    assert commit_one(writer, "a.parquet") == 1
    assert _paths(DeltaTable(uri)) == ["a.parquet", "b2.parquet"]


def test_orphan_whose_store_said_taken_is_found_and_moved_on(
    tmp_path: Any, between_check_and_create: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The create lands below the fresh checkpoint, but the store answers "taken" (a retried
    conditional PUT): the commit found there is the writer's own, and it is an orphan too."""
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA, configuration=NO_RETENTION)
    other = DeltaTable(uri, background_checkpoints=False)
    commit_one(other, "b1.parquet")
    writer = DeltaTable(uri, background_checkpoints=False)
    between_check_and_create(_others_commit_checkpoint_and_clean(other, 2))
    real_write = LocalLogStore.write
    lied: list[str] = []

    def write_then_say_taken(self: LocalLogStore, path: str, data: bytes, **kw: Any) -> None:
        real_write(self, path, data, **kw)
        if path.endswith(_name(2)) and b"a.parquet" in data and not lied:
            lied.append(path)
            raise FileAlreadyExistsError(path)

    monkeypatch.setattr(LocalLogStore, "write", write_then_say_taken)
    assert commit_one(writer, put_data_file(writer, "a.parquet")) == 4
    assert lied
    assert _paths(DeltaTable(uri)) == ["a.parquet", "b1.parquet", "b2.parquet", "b3.parquet"]
    assert check_table(uri, data_files=False).clean


class CountingStore(LogStore):
    """Delegates to a store and records every request: (kind, file name)."""

    def __init__(self, inner: LogStore) -> None:
        self.inner = inner
        self.requests: list[tuple[str, str]] = []

    def _note(self, kind: str, path: str) -> None:
        self.requests.append((kind, path.rsplit("/", 1)[-1]))

    def read(self, path: str) -> bytes:
        self._note("GET", path)
        return self.inner.read(path)

    def write(self, path: str, data: bytes, *, overwrite: bool = False) -> None:
        self._note("PUT", path)
        self.inner.write(path, data, overwrite=overwrite)

    def list_from(self, path: str) -> Iterator[FileStatus]:
        self._note("LIST", path)
        return self.inner.list_from(path)

    def list_tree(self, path: str) -> Iterator[FileStatus]:
        self._note("LIST", path)
        return self.inner.list_tree(path)

    def delete(self, path: str) -> None:
        self._note("DELETE", path)
        self.inner.delete(path)

    def stat(self, path: str) -> FileStatus:
        self._note("HEAD", path)
        return self.inner.stat(path)

    def exists(self, path: str) -> bool:
        self._note("HEAD", path)
        return self.inner.exists(path)


@pytest.mark.parametrize("retention", ["interval 30 days", "interval 0 seconds"])
def test_a_commit_costs_one_listing_before_and_one_after_only_when_cleanup_may_have_passed(
    tmp_path: Any, retention: str
) -> None:
    """Before the create, one listing from the previous version shows both that it exists and
    that nothing after it does (no HEAD of the previous commit besides); after it, one listing
    looks for a newer checkpoint. With a long retention neither is needed."""
    uri = str(tmp_path / "t")
    config = {"delta.logRetentionDuration": retention, "delta.checkpointInterval": "100"}
    DeltaTable.create(uri, SCHEMA, configuration=config)
    writer = DeltaTable(uri, background_checkpoints=False)
    counting = CountingStore(writer._storage.store)
    writer._storage.store = counting
    commit_one(writer, "a.parquet")
    expected = [("PUT", _name(1))]
    if retention == "interval 0 seconds":
        expected = [("LIST", _name(0)[:20]), *expected, ("LIST", _name(1)[:20])]
    assert [r for r in counting.requests if not r[1].endswith(".crc")] == expected


def _orphan_left_by_an_old_writer(uri: str) -> None:
    """What the unfixed writer left: ``2.json`` (adding a.parquet) below checkpoint 3."""
    DeltaTable.create(uri, SCHEMA, configuration=NO_RETENTION)
    other = DeltaTable(uri, background_checkpoints=False)
    for v in (1, 2, 3):
        commit_one(other, f"b{v}.parquet")
    other.checkpoint()
    other.cleanup_log()
    info = make_commit_info(operation="WRITE", parameters={}, read_version=1, is_blind_append=True)
    storage = TableStorage.open(uri)
    data = serialize_actions([info, one_row_add("a.parquet")])
    storage.store.write(storage.log_file(_name(2)), data, overwrite=False)


def test_check_reports_a_commit_below_a_checkpoint_that_does_not_hold_it(tmp_path: Any) -> None:
    uri = str(tmp_path / "t")
    _orphan_left_by_an_old_writer(uri)
    report = check_table(uri, data_files=False)
    assert not report.ok
    (finding,) = [f for f in report.findings if f.code == "orphaned-commit"]
    assert finding.severity == "error" and finding.version == 2
    assert finding.path is not None and finding.path.endswith(_name(2))


def test_check_accepts_commits_below_a_checkpoint_that_holds_them(tmp_path: Any) -> None:
    """Commits cleanup has not deleted yet: a file removed in between, one removed and restored."""
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA)
    table = DeltaTable(uri, background_checkpoints=False)
    for v in range(1, 6):
        commit_one(table, f"f{v}.parquet")
    with table.transaction("DELETE") as tx:
        tx.remove("f4.parquet")  # version 6
    with table.transaction("DELETE") as tx:
        tx.remove("f5.parquet")  # version 7: live again in the checkpoint, restored by 8
    commit_one(table, "f5.parquet")  # version 8, as RESTORE re-adds a removed file
    table.checkpoint()  # version 8
    storage = TableStorage.open(uri)
    for v in range(3):  # cleanup stopped after deleting 0..2: 3..8 remain, up to checkpoint 8
        storage.store.delete(storage.log_file(_name(v)))
    report = check_table(uri, data_files=False)
    assert report.clean, report.findings
    assert "orphaned-commit" not in report.codes()


def test_check_does_not_call_a_commit_lost_when_a_commit_that_explains_it_is_gone(
    tmp_path: Any,
) -> None:
    """Commit 2 removes a.parquet, 3 adds it back; checkpoint 4 shows it live. With commit 3
    gone (a hole: ``version-gap``), checkpoint 4 does not show that 2 is lost."""
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA)
    table = DeltaTable(uri, background_checkpoints=False)
    commit_one(table, "a.parquet")
    with table.transaction("DELETE") as tx:
        tx.remove("a.parquet")
    commit_one(table, "a.parquet")
    commit_one(table, "b.parquet")
    table.checkpoint()  # version 4
    storage = TableStorage.open(uri)
    for v in (0, 1, 3):
        storage.store.delete(storage.log_file(_name(v)))
    codes = check_table(uri, data_files=False).codes()
    assert "version-gap" in codes
    assert "orphaned-commit" not in codes


# ---------------------------------------------------------------------- the judgement itself
def _view(**changes: Any) -> CheckpointView:
    fields: dict[str, Any] = {
        "version": 3,
        "live": {},
        "tombstones": {},
        "txns": {},
        "metadata": Metadata(id="m", configuration={}),
        "protocol": Protocol(1, 2),
        "domains": {},
    }
    fields.update(changes)
    return CheckpointView(**fields)


def _judge(actions: list[Any], view: CheckpointView, **kw: Any) -> Verdict:
    # kept=False: so long after the commit that a tombstone may have expired (a week)
    elapsed = 0 if kw.pop("kept", True) else 30 * 86_400_000
    return judge(actions, view, "", elapsed_ms=elapsed, **kw)


def test_judge_by_the_files_first() -> None:
    add = one_row_add("a.parquet")
    assert _judge([add], _view(live={"a.parquet": (1, 0)})) is Verdict.LANDED
    assert _judge([add], _view(tombstones={"a.parquet": 5})) is Verdict.LANDED  # removed since
    assert _judge([add], _view()) is Verdict.ORPHANED
    assert _judge([add], _view(), kept=False) is Verdict.UNKNOWN  # its tombstone may be gone
    later = LaterCommits(removed={"a.parquet"})
    assert _judge([add], _view(), later=later) is Verdict.LANDED
    # An overwrite that also restates the (unchanged) protocol: the files decide.
    assert _judge([Protocol(1, 2), add], _view()) is Verdict.ORPHANED


def test_judge_removes_txns_and_metadata() -> None:
    remove = RemoveFile("f.parquet", deletion_timestamp=7)
    every_later = LaterCommits(complete=True)
    assert _judge([remove], _view(tombstones={"f.parquet": 7})) is Verdict.LANDED
    live = _view(live={"f.parquet": (1, 0)})
    assert _judge([remove], live, later=every_later) is Verdict.ORPHANED
    readded = LaterCommits(added={"f.parquet"}, complete=True)
    assert _judge([remove], live, later=readded) is Verdict.UNKNOWN
    txn = Txn("app", 5, last_updated=9)
    assert _judge([txn], _view(txns={"app": (5, 9)})) is Verdict.LANDED
    assert _judge([txn], _view(txns={"app": (4, 1)}), later=every_later) is Verdict.ORPHANED
    assert _judge([Metadata(id="m", configuration={})], _view()) is Verdict.LANDED
    assert _judge([Metadata(id="m", configuration={"k": "v"})], _view()) is Verdict.UNKNOWN
    info = make_commit_info(
        operation="VACUUM START", parameters={}, read_version=2, is_blind_append=True
    )
    assert _judge([info], _view()) is Verdict.LANDED  # nothing a checkpoint could show


def test_judge_a_live_removed_file_or_lower_txn_tells_nothing_while_later_commits_are_gone() -> (
    None
):
    """Cleanup removed some commits between: one of them may have re-added the file or
    rewritten the app id's txn, so only the add rule (bounded by the tombstones) decides."""
    remove = RemoveFile("f.parquet", deletion_timestamp=7)
    assert _judge([remove], _view(live={"f.parquet": (1, 0)})) is Verdict.UNKNOWN
    some_read = LaterCommits(removed={"g.parquet"})  # complete=False
    assert _judge([remove], _view(live={"f.parquet": (1, 0)}), later=some_read) is Verdict.UNKNOWN
    txn = Txn("app", 5, last_updated=9)
    assert _judge([txn], _view(txns={"app": (4, 1)})) is Verdict.UNKNOWN
    assert _judge([txn], _view(txns={"app": (4, 1)}), later=some_read) is Verdict.UNKNOWN
    # A missing add stays decisive while no tombstone can have expired.
    add = one_row_add("a.parquet")
    assert _judge([remove, add], _view(live={"f.parquet": (1, 0)})) is Verdict.ORPHANED


# ------------------------------------------- a legitimate commit is never judged an orphan
def _restore_append_checkpoint_and_clean(
    uri: str, keep: str
) -> Callable[[LogStore, str, bytes], None]:
    """After the DELETE's ``2.json`` is created: another writer restores ``a.parquet`` (3),
    checkpoints, appends (4), checkpoints and cleans up the log. ``keep``'s modification time is
    put an hour ahead first (log file times need not follow versions: another writer's clock
    or upload), so cleanup deletes 0, 1 and 3 but leaves it."""

    def run(store: LogStore, path: str, data: bytes) -> None:
        other = DeltaTable(uri, background_checkpoints=False)
        tx = other.transaction("RESTORE")
        tx.add(one_row_add("a.parquet"))
        assert tx.commit() == 3
        other.checkpoint()
        assert commit_one(other, "b.parquet") == 4
        other.checkpoint()
        if keep:
            ahead = time.time() + 3600
            os.utime(os.path.join(uri, "_delta_log", keep), (ahead, ahead))
        deleted = other.cleanup_log()
        assert _name(3) in deleted and (_name(2) in deleted) is not bool(keep), deleted

    return run


@pytest.mark.parametrize("keep", ["", _name(2)])
def test_legit_commit_whose_later_commits_cleanup_removed_is_not_withdrawn(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch, keep: str
) -> None:
    """Checkpoint 4 shows the file the DELETE removed live, and commit 3, which re-added it, is
    gone: that cannot tell the DELETE's absence from a later re-add. It used to be judged an
    orphan: its file deleted and the caller told "nothing was written" (re-running the DELETE
    then removes the file the RESTORE brought back)."""
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA, configuration=NO_RETENTION)
    writer = DeltaTable(uri, background_checkpoints=False)
    assert commit_one(writer, "a.parquet") == 1
    after_create = _restore_append_checkpoint_and_clean(uri, keep)
    real_write = LocalLogStore.write

    def write(self: LocalLogStore, path: str, data: bytes, **kw: Any) -> None:
        real_write(self, path, data, **kw)
        if path.endswith(_name(2)):
            after_create(self, path, data)

    monkeypatch.setattr(LocalLogStore, "write", write)
    tx = writer.transaction("DELETE")
    tx.remove(["a.parquet"])
    with pytest.raises(CommitStatusUnknownError) as err:
        tx.commit()
    monkeypatch.undo()

    assert err.value.version == 2
    message = str(err.value)
    assert "nothing was written" not in message and "cannot tell" in message
    # It does not claim the commit is in the history either (it may not be).
    assert "either way" not in message and "left in place" in message
    storage = TableStorage.open(uri)
    assert storage.store.exists(storage.log_file(_name(2))) is bool(keep)  # never deleted
    assert _paths(DeltaTable(uri)) == ["a.parquet", "b.parquet"]
    codes = check_table(uri, data_files=False).codes()
    assert "orphaned-commit" not in codes  # below checkpoint 4, and held by it
