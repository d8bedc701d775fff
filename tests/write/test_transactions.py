"""The transaction layer: conflicts, isolation levels, commitInfo, idempotency, retries, input.

Every concurrency scenario runs two writers on two threads, each with its own ``DeltaTable``
object, ordered without sleeps:

1. both threads pin their snapshot (start a transaction) and do their reads and staging;
2. both wait at a ``threading.Barrier``;
3. the winner commits, then sets an ``Event``;
4. the loser waits for the event, then commits (and must either land after the winner or raise
   the named conflict, having written nothing).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pytest
from tableutil import log_names, write_parquet

from deltalog import AddFile, DeltaTable, Protocol
from deltalog.errors import (
    AppendOnlyError,
    CommitAttemptsExhaustedError,
    CommitFailedError,
    ConcurrentAppendError,
    ConcurrentAppendException,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteDeleteException,
    ConcurrentDeleteReadError,
    ConcurrentDeleteReadException,
    ConcurrentModificationError,
    ConcurrentModificationException,
    ConcurrentTransactionError,
    ConcurrentTransactionException,
    DuplicateFileError,
    FileNotInTableError,
    InvalidInputError,
    InvalidPredicateError,
    InvalidPropertyError,
    MetadataChangedError,
    MetadataChangedException,
    ProtocolChangedError,
    ProtocolChangedException,
    TransactionClosedError,
)
from deltalog.stats.predicates import col
from deltalog.write.commit import RetryPolicy
from deltalog.write.transaction import Transaction

pytestmark = pytest.mark.timeout(60)

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())])
WIDER = pa.schema(
    [("id", pa.int64()), ("v", pa.string()), ("p", pa.string()), ("extra", pa.string())]
)
NARROWER = pa.schema([("id", pa.int64()), ("p", pa.string())])
TIMEOUT = 20.0

Stage = Callable[[Transaction], object]


def add(path: str, *, data_change: bool = True) -> AddFile:
    """An AddFile for a file that need not exist (the log layer never opens it)."""
    part = path.split("/", 1)[0].split("=", 1)[1]
    return AddFile(
        path=path,
        partition_values={"p": part},
        size=1,
        modification_time=0,
        data_change=data_change,
        stats='{"numRecords":1}',
    )


@pytest.fixture
def uri(tmp_path: Path) -> str:
    """A table partitioned by p with p=1/a, p=1/b and p=2/c live at version 1."""
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    with table.transaction("WRITE") as tx:
        tx.add([add("p=1/a.parquet"), add("p=1/b.parquet"), add("p=2/c.parquet")])
    assert table.version() == 1
    return table.uri


BASE = {"p=1/a.parquet", "p=1/b.parquet", "p=2/c.parquet"}


# ----------------------------------------------------------------------------- the race harness


@dataclass
class Writer:
    """One transaction: how to open it and what to read and stage before committing."""

    stage: Stage
    operation: str = "WRITE"
    isolation_level: str | None = None
    retry: RetryPolicy | None = None
    parameters: dict[str, Any] | None = None


@dataclass
class RawCommit:
    """A commit written by "another engine": raw action lines at the next version."""

    lines: list[dict[str, Any]]


@dataclass
class Outcome:
    """What happened to one side."""

    versions: list[int] = field(default_factory=list)
    error: BaseException | None = None
    tx: Transaction | None = None
    table: DeltaTable | None = None

    @property
    def version(self) -> int:
        assert self.error is None, f"unexpected error: {self.error!r}"
        assert len(self.versions) == 1
        return self.versions[0]


def _open(table: DeltaTable, writer: Writer) -> Transaction:
    tx = table.transaction(
        writer.operation,
        parameters=writer.parameters,
        isolation_level=writer.isolation_level,
        retry=writer.retry,
    )
    writer.stage(tx)
    return tx


def _raw_commit(uri: str, commit: RawCommit) -> int:
    version = DeltaTable(uri).version() + 1
    data = b"".join(orjson.dumps(line) + b"\n" for line in commit.lines)
    with open(Path(uri) / "_delta_log" / f"{version:020d}.json", "xb") as fh:
        fh.write(data)
    return version


def race(
    uri: str, winner: Writer | RawCommit | list[Writer | RawCommit], loser: Writer
) -> tuple[Outcome, Outcome]:
    """Run the winner(s) and the loser on two threads; the winners commit first, in order.

    Only the first winner is prepared before the barrier (like the loser); any further winners
    start their transaction after the previous winner committed.
    """
    winners = winner if isinstance(winner, list) else [winner]
    both_read = threading.Barrier(2, timeout=TIMEOUT)
    winner_done = threading.Event()
    won, lost = Outcome(), Outcome()

    def run_winner() -> None:
        try:
            table = won.table = DeltaTable(uri)
            first = winners[0]
            tx = won.tx = _open(table, first) if isinstance(first, Writer) else None
            both_read.wait()
            for i, w in enumerate(winners):
                if isinstance(w, RawCommit):
                    won.versions.append(_raw_commit(uri, w))
                    continue
                if i > 0:
                    table.update()
                    tx = _open(table, w)
                assert tx is not None
                won.versions.append(tx.commit())
        except BaseException as exc:
            both_read.abort()
            won.error = exc
        finally:
            winner_done.set()

    def run_loser() -> None:
        try:
            table = lost.table = DeltaTable(uri)
            tx = lost.tx = _open(table, loser)
            both_read.wait()
            assert winner_done.wait(TIMEOUT), "the winner never finished"
            lost.versions.append(tx.commit())
        except BaseException as exc:
            both_read.abort()
            lost.error = exc

    threads = [threading.Thread(target=run_winner), threading.Thread(target=run_loser)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT * 2)
    assert not any(t.is_alive() for t in threads), "a writer thread hung"
    assert won.error is None, f"the winner failed: {won.error!r}"
    return won, lost


def live(uri: str) -> set[str]:
    return set(DeltaTable(uri).files().column("path").to_pylist())


def commit_lines(uri: str, version: int) -> list[dict[str, Any]]:
    data = (Path(uri) / "_delta_log" / f"{version:020d}.json").read_bytes()
    return [orjson.loads(line) for line in data.splitlines() if line.strip()]


def commit_info(uri: str, version: int) -> dict[str, Any]:
    (info,) = [line["commitInfo"] for line in commit_lines(uri, version) if "commitInfo" in line]
    return dict(info)


def assert_log(uri: str, head: int) -> None:
    """The log holds exactly versions 0..head and nothing else (no temp files either)."""
    assert log_names(uri) == [f"{v:020d}.json" for v in range(head + 1)]
    assert DeltaTable(uri).version() == head


def assert_lost(
    lost: Outcome,
    error: type[ConcurrentModificationError],
    *,
    won: Outcome,
    operation: str,
    retryable: bool = True,
    path: str | None = None,
    partition: dict[str, str | None] | None = None,
    needles: tuple[str, ...] = (),
    winner: int = 0,
) -> ConcurrentModificationError:
    """The loser raised exactly ``error``, naming the winner, the file and a fix.

    ``winner`` is the index (among the winners' versions) of the commit that conflicts.
    """
    exc = lost.error
    assert type(exc) is error, f"expected {error.__name__}, got {exc!r}"
    assert isinstance(exc, ConcurrentModificationError)
    assert isinstance(exc, CommitFailedError) and exc.conflict is True
    winning_version = won.versions[winner]
    assert exc.winning_version == winning_version
    assert exc.winning_operation == operation
    assert exc.winning_commit_info["operation"] == operation
    assert exc.retryable is retryable
    assert exc.path == path
    assert exc.partition == partition
    message = str(exc)
    assert f"version {winning_version} ({operation})" in message
    if path is not None:
        assert path in message
    if partition is not None:
        assert "in partition (" + ", ".join(f"{k}={v!r}" for k, v in partition.items()) in message
    for needle in needles:
        assert needle in message, f"{needle!r} not in {message!r}"
    assert lost.tx is not None and lost.tx.version is None and not lost.tx.no_op
    with pytest.raises(TransactionClosedError):
        lost.tx.commit()
    return exc


#: Moving a (1, 2) table to table features keeps the features writerVersion 2 implies.
DOMAIN_FEATURES = ["appendOnly", "domainMetadata", "invariants"]


def upgrade_to_domain_metadata(uri: str) -> int:
    table = DeltaTable(uri)
    with table.transaction("UPGRADE PROTOCOL") as tx:
        tx.update_protocol(Protocol(3, 7, reader_features=[], writer_features=DOMAIN_FEATURES))
    return table.version()


# ----------------------------------------------------------------------------- named conflicts


def test_protocol_changed_when_both_upgrade(uri: str) -> None:
    won, lost = race(
        uri,
        Writer(lambda tx: tx.update_protocol(Protocol(1, 3)), "UPGRADE PROTOCOL"),
        Writer(lambda tx: tx.update_protocol(Protocol(1, 4)), "SET TBLPROPERTIES"),
    )
    assert won.version == 2
    assert_lost(
        lost,
        ProtocolChangedError,
        won=won,
        operation="UPGRADE PROTOCOL",
        needles=("changed the protocol", "Re-run"),
    )
    assert_log(uri, 2)
    p = DeltaTable(uri).protocol()
    assert (p.min_reader_version, p.min_writer_version) == (1, 3)
    assert live(uri) == BASE


@pytest.mark.parametrize(
    ("protocol", "feature"),
    [
        (
            {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": [],
                "writerFeatures": ["domainMetadata", "geospatial"],
            },
            "geospatial",
        ),
        ({"minReaderVersion": 1, "minWriterVersion": 8}, "writerVersion=8"),
    ],
    ids=["geospatial", "writerVersion8"],
)
def test_protocol_changed_to_one_deltalog_cannot_write_is_not_retryable(
    uri: str, protocol: dict[str, Any], feature: str
) -> None:
    winner = RawCommit(
        [
            {"commitInfo": {"operation": "UPGRADE PROTOCOL", "readVersion": 1}},
            {"protocol": protocol},
        ]
    )
    won, lost = race(uri, winner, Writer(lambda tx: tx.add(add("p=1/new.parquet"))))
    assert won.versions == [2]
    assert_lost(
        lost,
        ProtocolChangedError,
        won=won,
        operation="UPGRADE PROTOCOL",
        retryable=False,
        needles=("cannot write", feature),
    )
    assert_log(uri, 2)
    assert live(uri) == BASE


def test_metadata_changed_fails_a_blind_append(uri: str) -> None:
    won, lost = race(
        uri,
        Writer(
            lambda tx: tx.update_metadata(schema=WIDER, configuration={"a.b": "1"}),
            "ADD COLUMNS",
        ),
        Writer(lambda tx: tx.add(add("p=1/new.parquet"))),
    )
    assert won.version == 2
    assert_lost(
        lost,
        MetadataChangedError,
        won=won,
        operation="ADD COLUMNS",
        needles=("changed the table metadata", "Re-run"),
    )
    assert_log(uri, 2)
    table = DeltaTable(uri)
    assert table.schema().names == ["id", "v", "p", "extra"]
    assert table.metadata().configuration == {"a.b": "1"}
    assert live(uri) == BASE


def test_metadata_changed_by_configuration_only(uri: str) -> None:
    won, lost = race(
        uri,
        Writer(lambda tx: tx.update_metadata(configuration={"x": "y"}), "SET TBLPROPERTIES"),
        Writer(lambda tx: tx.add(add("p=1/new.parquet"))),
    )
    assert_lost(lost, MetadataChangedError, won=won, operation="SET TBLPROPERTIES")
    assert_log(uri, 2)
    assert live(uri) == BASE


def test_concurrent_transaction_same_app_id_other_version(uri: str) -> None:
    def winner(tx: Transaction) -> None:
        tx.set_transaction("stream-1", 5)
        tx.add(add("p=1/w.parquet"))

    def loser(tx: Transaction) -> None:
        assert tx.txn_version("stream-1") is None
        tx.set_transaction("stream-1", 6)
        tx.add(add("p=2/l.parquet"))

    won, lost = race(uri, Writer(winner, "STREAMING UPDATE"), Writer(loser, "STREAMING UPDATE"))
    assert won.version == 2
    exc = assert_lost(
        lost,
        ConcurrentTransactionError,
        won=won,
        operation="STREAMING UPDATE",
        needles=("'stream-1'", "txn version 5", "Stop the duplicate"),
    )
    assert isinstance(exc, ConcurrentTransactionError)
    assert exc.app_id == "stream-1" and exc.domain is None
    assert_log(uri, 2)
    assert live(uri) == {*BASE, "p=1/w.parquet"}
    assert DeltaTable(uri).snapshot.txns["stream-1"].version == 5


def test_concurrent_transaction_when_only_the_app_id_was_read(uri: str) -> None:
    def winner(tx: Transaction) -> None:
        tx.set_transaction("stream-1", 0)
        tx.add(add("p=1/w.parquet"))

    def loser(tx: Transaction) -> None:
        assert tx.txn_version("stream-1") is None
        tx.add(add("p=2/l.parquet"))

    won, lost = race(uri, Writer(winner, "STREAMING UPDATE"), Writer(loser))
    exc = assert_lost(lost, ConcurrentTransactionError, won=won, operation="STREAMING UPDATE")
    assert isinstance(exc, ConcurrentTransactionError) and exc.app_id == "stream-1"
    assert_log(uri, 2)


def test_concurrent_transaction_same_domain(uri: str) -> None:
    head = upgrade_to_domain_metadata(uri)
    assert head == 2
    won, lost = race(
        uri,
        Writer(lambda tx: tx.domain_metadata("myapp", {"owner": "w"}), "SET DOMAIN"),
        Writer(lambda tx: tx.domain_metadata("myapp", {"owner": "l"}), "SET DOMAIN"),
    )
    assert won.version == 3
    exc = assert_lost(
        lost,
        ConcurrentTransactionError,
        won=won,
        operation="SET DOMAIN",
        needles=("'myapp'", "Re-read the domain"),
    )
    assert isinstance(exc, ConcurrentTransactionError)
    assert exc.domain == "myapp" and exc.app_id is None
    assert_log(uri, 3)
    assert orjson.loads(DeltaTable(uri).snapshot.domains["myapp"].configuration) == {"owner": "w"}


def test_different_domains_do_not_conflict(uri: str) -> None:
    upgrade_to_domain_metadata(uri)
    won, lost = race(
        uri,
        Writer(lambda tx: tx.domain_metadata("one", {"x": 1}), "SET DOMAIN"),
        Writer(lambda tx: tx.domain_metadata("two", {"x": 2}), "SET DOMAIN"),
    )
    assert (won.version, lost.version) == (3, 4)
    assert set(DeltaTable(uri).snapshot.domains) == {"one", "two"}


def test_concurrent_append_into_a_read_partition(uri: str) -> None:
    def winner(tx: Transaction) -> None:
        tx.read_files(col("p") == "1")
        tx.add(add("p=1/w.parquet"))

    def loser(tx: Transaction) -> None:
        assert tx.read_files(col("p") == "1").num_rows == 2
        tx.add(add("p=1/l.parquet"))

    won, lost = race(uri, Writer(winner, "MERGE"), Writer(loser, "UPDATE"))
    assert won.version == 2
    assert commit_info(uri, 2)["isBlindAppend"] is False
    exc = assert_lost(
        lost,
        ConcurrentAppendError,
        won=won,
        operation="MERGE",
        path="p=1/w.parquet",
        partition={"p": "1"},
        needles=("p = '1'", "WriteSerializable", "Narrow the read predicate"),
    )
    assert isinstance(exc, ConcurrentAppendError) and exc.predicate == "p = '1'"
    assert_log(uri, 2)
    assert live(uri) == {*BASE, "p=1/w.parquet"}


def test_concurrent_append_against_a_whole_table_read(uri: str) -> None:
    def winner(tx: Transaction) -> None:
        tx.read_files(col("p") == "2")
        tx.add(add("p=2/w.parquet"))

    def loser(tx: Transaction) -> None:
        assert tx.read_whole_table().num_rows == 3
        tx.add(add("p=1/l.parquet"))

    won, lost = race(uri, Writer(winner, "MERGE"), Writer(loser, "UPDATE"))
    exc = assert_lost(
        lost,
        ConcurrentAppendError,
        won=won,
        operation="MERGE",
        path="p=2/w.parquet",
        partition={"p": "2"},
    )
    assert isinstance(exc, ConcurrentAppendError) and exc.predicate == "TRUE"
    assert_log(uri, 2)


def test_concurrent_delete_read(uri: str) -> None:
    def loser(tx: Transaction) -> None:
        assert sorted(tx.read_files({"p": "1"}).column("path").to_pylist()) == [
            "p=1/a.parquet",
            "p=1/b.parquet",
        ]
        tx.add(add("p=1/l.parquet"))

    won, lost = race(
        uri, Writer(lambda tx: tx.remove("p=1/a.parquet"), "DELETE"), Writer(loser, "UPDATE")
    )
    assert won.version == 2
    assert_lost(
        lost,
        ConcurrentDeleteReadError,
        won=won,
        operation="DELETE",
        path="p=1/a.parquet",
        partition={"p": "1"},
        needles=("which this transaction read", "Re-run"),
    )
    assert_log(uri, 2)
    assert live(uri) == BASE - {"p=1/a.parquet"}


def test_concurrent_delete_delete(uri: str) -> None:
    def loser(tx: Transaction) -> None:
        tx.remove("p=1/a.parquet")
        tx.add(add("p=1/l.parquet"))

    won, lost = race(
        uri,
        Writer(lambda tx: tx.remove(["p=1/a.parquet", "p=2/c.parquet"]), "DELETE"),
        Writer(loser, "DELETE"),
    )
    assert won.version == 2
    assert_lost(
        lost,
        ConcurrentDeleteDeleteError,
        won=won,
        operation="DELETE",
        path="p=1/a.parquet",
        partition={"p": "1"},
        needles=("already removed", "removes too", "Re-run"),
    )
    assert_log(uri, 2)
    assert live(uri) == {"p=1/b.parquet"}


def test_removing_different_unread_files_does_not_conflict(uri: str) -> None:
    won, lost = race(
        uri,
        Writer(lambda tx: tx.remove("p=1/a.parquet"), "DELETE"),
        Writer(lambda tx: tx.remove("p=1/b.parquet"), "DELETE"),
    )
    assert (won.version, lost.version) == (2, 3)
    assert live(uri) == {"p=2/c.parquet"}


def test_rerun_through_the_same_table_object_after_a_conflict(uri: str) -> None:
    """A conflict is retryable: re-running the operation on the loser's table object succeeds.

    The loser read every winner up to the conflicting one, so its table object should start the
    re-run from there instead of repeating the same conflict.
    """
    mine = DeltaTable(uri)
    with DeltaTable(uri).transaction("DELETE") as other:
        other.remove("p=1/a.parquet")
    outcomes = []
    for attempt in range(2):
        try:
            with mine.transaction("UPDATE") as tx:
                tx.remove(tx.read_files({"p": "1"}))
                tx.add(add(f"p=1/new{attempt}.parquet"))
        except ConcurrentDeleteReadError as exc:
            assert exc.retryable
            outcomes.append(f"{type(exc).__name__} (table object at v{mine.version()})")
        else:
            outcomes.append(f"committed v{tx.version}")
    assert outcomes == ["ConcurrentDeleteReadError (table object at v2)", "committed v3"]
    assert live(uri) == {"p=1/new1.parquet", "p=2/c.parquet"}


# ----------------------------------------------------------------------------- isolation levels


def _read_p1_and_write(tx: Transaction) -> None:
    assert tx.read_files(col("p") == "1").num_rows == 2
    tx.add(add("p=1/l.parquet"))


def _blind_append_p1(tx: Transaction) -> None:
    tx.add(add("p=1/w.parquet"))


def test_write_serializable_admits_a_concurrent_blind_append(uri: str) -> None:
    won, lost = race(
        uri,
        Writer(_blind_append_p1),
        Writer(_read_p1_and_write, "UPDATE", isolation_level="WriteSerializable"),
    )
    assert won.version == 2
    assert commit_info(uri, 2)["isBlindAppend"] is True
    assert lost.version == 3
    assert lost.tx is not None and lost.tx.attempts == 2 and lost.tx.read_version == 1
    info = commit_info(uri, 3)
    assert info["readVersion"] == 1
    assert info["isolationLevel"] == "WriteSerializable"
    assert info["isBlindAppend"] is False
    assert info["operation"] == "UPDATE"
    assert_log(uri, 3)
    assert live(uri) == {*BASE, "p=1/w.parquet", "p=1/l.parquet"}
    assert lost.table is not None and lost.table.version() == 3


def test_serializable_rejects_a_concurrent_blind_append(uri: str) -> None:
    won, lost = race(
        uri,
        Writer(_blind_append_p1),
        Writer(_read_p1_and_write, "UPDATE", isolation_level="Serializable"),
    )
    assert_lost(
        lost,
        ConcurrentAppendError,
        won=won,
        operation="WRITE",
        path="p=1/w.parquet",
        partition={"p": "1"},
        needles=("Serializable isolation", "Under WriteSerializable isolation"),
    )
    assert_log(uri, 2)
    assert live(uri) == {*BASE, "p=1/w.parquet"}


def test_table_property_selects_serializable(tmp_path: Path) -> None:
    table = DeltaTable.create(
        str(tmp_path / "t"),
        SCHEMA,
        partition_by=["p"],
        configuration={"delta.isolationLevel": "Serializable"},
    )
    with table.transaction() as tx:
        tx.add([add("p=1/a.parquet"), add("p=1/b.parquet")])
    assert commit_info(table.uri, 1)["isolationLevel"] == "Serializable"
    won, lost = race(table.uri, Writer(_blind_append_p1), Writer(_read_p1_and_write, "UPDATE"))
    assert_lost(
        lost,
        ConcurrentAppendError,
        won=won,
        operation="WRITE",
        path="p=1/w.parquet",
        partition={"p": "1"},
        needles=("under Serializable isolation",),
    )
    assert_log(table.uri, 2)


def test_explicit_level_overrides_the_table_property(tmp_path: Path) -> None:
    table = DeltaTable.create(
        str(tmp_path / "t"),
        SCHEMA,
        partition_by=["p"],
        configuration={"delta.isolationLevel": "Serializable"},
    )
    with table.transaction() as tx:
        tx.add([add("p=1/a.parquet"), add("p=1/b.parquet")])
    won, lost = race(
        table.uri,
        Writer(_blind_append_p1),
        Writer(_read_p1_and_write, "UPDATE", isolation_level="WriteSerializable"),
    )
    assert (won.version, lost.version) == (2, 3)
    assert commit_info(table.uri, 3)["isolationLevel"] == "WriteSerializable"


def test_write_serializable_counts_blind_appends_when_the_loser_changes_metadata(
    uri: str,
) -> None:
    def loser(tx: Transaction) -> None:
        tx.read_files(col("p") == "1")
        tx.update_metadata(schema=WIDER)

    won, lost = race(
        uri,
        Writer(_blind_append_p1),
        Writer(loser, "ADD COLUMNS", isolation_level="WriteSerializable"),
    )
    assert_lost(
        lost,
        ConcurrentAppendError,
        won=won,
        operation="WRITE",
        path="p=1/w.parquet",
        partition={"p": "1"},
    )
    assert_log(uri, 2)
    assert DeltaTable(uri).schema().names == ["id", "v", "p"]


def test_unknown_isolation_level_is_refused(uri: str) -> None:
    with pytest.raises(InvalidInputError, match="isolation level"):
        DeltaTable(uri).transaction(isolation_level="SnapshotIsolation")


# ----------------------------------------------------------------------------- non-conflicts


def test_disjoint_partitions_read_modify_write_both_commit(uri: str) -> None:
    def winner(tx: Transaction) -> None:
        tx.remove(tx.read_files(col("p") == "1"))
        tx.add(add("p=1/w.parquet"))

    def loser(tx: Transaction) -> None:
        tx.remove(tx.read_files(col("p") == "2"))
        tx.add(add("p=2/l.parquet"))

    won, lost = race(uri, Writer(winner, "MERGE"), Writer(loser, "MERGE"))
    assert (won.version, lost.version) == (2, 3)
    assert lost.tx is not None and lost.tx.attempts == 2
    assert_log(uri, 3)
    assert live(uri) == {"p=1/w.parquet", "p=2/l.parquet"}
    assert commit_info(uri, 3)["readVersion"] == 1


def test_two_blind_appends_both_commit(uri: str) -> None:
    won, lost = race(
        uri,
        Writer(_blind_append_p1),
        Writer(lambda tx: tx.add(add("p=1/l.parquet")), isolation_level="Serializable"),
    )
    assert (won.version, lost.version) == (2, 3)
    assert commit_info(uri, 2)["isBlindAppend"] is True
    assert commit_info(uri, 3)["isBlindAppend"] is True
    assert live(uri) == {*BASE, "p=1/w.parquet", "p=1/l.parquet"}


def test_compaction_is_not_failed_by_an_append_into_its_partition(uri: str) -> None:
    def winner(tx: Transaction) -> None:
        tx.read_files(col("p") == "1")  # not a blind append: counts even under Serializable
        tx.add(add("p=1/w.parquet"))

    def compact(tx: Transaction) -> None:
        files = tx.read_files(col("p") == "1")
        tx.remove(files, data_change=False)
        tx.add(add("p=1/compacted.parquet", data_change=False))

    won, lost = race(
        uri,
        Writer(winner, "MERGE"),
        Writer(compact, "OPTIMIZE", isolation_level="Serializable"),
    )
    assert (won.version, lost.version) == (2, 3)
    info = commit_info(uri, 3)
    assert info["isolationLevel"] == "SnapshotIsolation"
    assert info["isBlindAppend"] is False and info["operation"] == "OPTIMIZE"
    assert live(uri) == {"p=1/compacted.parquet", "p=1/w.parquet", "p=2/c.parquet"}


def test_compaction_still_fails_when_a_compacted_file_was_deleted(uri: str) -> None:
    def compact(tx: Transaction) -> None:
        tx.remove(tx.read_files(col("p") == "1"), data_change=False)
        tx.add(add("p=1/compacted.parquet", data_change=False))

    won, lost = race(
        uri, Writer(lambda tx: tx.remove("p=1/b.parquet"), "DELETE"), Writer(compact, "OPTIMIZE")
    )
    assert_lost(
        lost,
        ConcurrentDeleteReadError,
        won=won,
        operation="DELETE",
        path="p=1/b.parquet",
        partition={"p": "1"},
    )
    assert_log(uri, 2)


# ----------------------------------------------------------------------------- commitInfo


def test_commit_info_fields(uri: str) -> None:
    table = DeltaTable(uri)
    before = int(time.time() * 1000)
    with table.transaction(
        "MERGE", parameters={"predicate": '["p = 1"]', "matchedPredicates": "[]"}
    ) as tx:
        tx.remove(tx.read_files(col("p") == "1"))
        tx.add(add("p=1/m.parquet"))
    after = int(time.time() * 1000)
    assert tx.version == 2 and tx.read_version == 1 and tx.attempts == 1 and not tx.no_op
    lines = commit_lines(uri, 2)
    assert next(iter(lines[0])) == "commitInfo"
    info = lines[0]["commitInfo"]
    assert info["operation"] == "MERGE"
    assert info["operationParameters"] == {"predicate": '["p = 1"]', "matchedPredicates": "[]"}
    assert info["readVersion"] == 1
    assert info["isolationLevel"] == "WriteSerializable"
    assert info["isBlindAppend"] is False
    assert info["engineInfo"].startswith("deltalog/")
    assert isinstance(info["timestamp"], int) and before <= info["timestamp"] <= after
    assert isinstance(info["txnId"], str) and len(info["txnId"]) == 36
    assert info["operationMetrics"]["numFiles"] == "1"
    assert info["operationMetrics"]["numRemovedFiles"] == "2"
    txn_ids = {commit_info(uri, v)["txnId"] for v in (0, 1, 2)}
    assert len(txn_ids) == 3


@pytest.mark.parametrize(
    ("stage", "blind"),
    [
        (lambda tx: tx.add(add("p=1/x.parquet")), True),
        (lambda tx: (tx.read_files(col("p") == "9"), tx.add(add("p=1/x.parquet"))), False),
        (lambda tx: (tx.txn_version("app"), tx.add(add("p=1/x.parquet"))), True),
        (lambda tx: (tx.read_whole_table(), tx.add(add("p=1/x.parquet"))), False),
        (lambda tx: tx.remove("p=1/a.parquet"), False),
        (lambda tx: (tx.remove("p=1/a.parquet"), tx.add(add("p=1/x.parquet"))), False),
        (lambda tx: (tx.update_metadata(schema=WIDER), tx.add(add("p=1/x.parquet"))), True),
    ],
    ids=[
        "add",
        "read-empty-then-add",
        "txn-version-then-add",
        "whole-table-then-add",
        "remove",
        "remove-and-add",
        "metadata-and-add",
    ],
)
def test_is_blind_append_only_without_reads_and_removes(
    uri: str, stage: Stage, blind: bool
) -> None:
    table = DeltaTable(uri)
    with table.transaction() as tx:
        stage(tx)
    assert commit_info(uri, 2)["isBlindAppend"] is blind


def test_engine_info_is_recorded(uri: str) -> None:
    table = DeltaTable(uri)
    tx = table.transaction("WRITE", engine_info="my-engine/1.0")
    tx.add(add("p=1/x.parquet"))
    tx.commit()
    assert commit_info(uri, 2)["engineInfo"] == "my-engine/1.0"


# ----------------------------------------------------------------------------- idempotent writes


def test_rerunning_the_same_app_version_is_a_no_op(uri: str) -> None:
    table = DeltaTable(uri)
    with table.transaction("STREAMING UPDATE") as tx:
        tx.set_transaction("job", 3)
        tx.add(add("p=1/x.parquet"))
    assert tx.version == 2 and not tx.no_op
    for fresh in (DeltaTable(uri), table):
        again = fresh.transaction("STREAMING UPDATE")
        assert again.txn_version("job") == 3
        again.set_transaction("job", 3)
        again.add(add("p=1/y.parquet"))
        assert again.commit() == 2
        assert again.no_op and again.version == 2 and again.attempts == 0
    assert_log(uri, 2)
    assert live(uri) == {*BASE, "p=1/x.parquet"}


def test_rerun_returns_the_commit_that_holds_the_txn_not_the_head(uri: str) -> None:
    table = DeltaTable(uri)
    with table.transaction() as tx:
        tx.set_transaction("job", 1)
        tx.add(add("p=1/x.parquet"))
    with table.transaction() as tx:
        tx.add(add("p=2/y.parquet"))
    again = DeltaTable(uri).transaction()
    again.set_transaction("job", 1)
    assert again.commit() == 2 and again.no_op
    assert_log(uri, 3)


def test_concurrent_commit_of_the_same_app_version_makes_the_loser_a_no_op(uri: str) -> None:
    def winner(tx: Transaction) -> None:
        tx.set_transaction("job", 7)
        tx.add(add("p=1/w.parquet"))

    def loser(tx: Transaction) -> None:
        assert tx.txn_version("job") is None
        tx.set_transaction("job", 7)
        tx.add(add("p=1/l.parquet"))

    won, lost = race(uri, Writer(winner, "STREAMING UPDATE"), Writer(loser, "STREAMING UPDATE"))
    assert won.version == 2
    assert lost.version == 2
    assert lost.tx is not None and lost.tx.no_op and lost.tx.version == 2
    assert lost.tx.attempts == 1
    assert_log(uri, 2)
    assert live(uri) == {*BASE, "p=1/w.parquet"}
    assert lost.table is not None and lost.table.version() == 2


def test_nothing_staged_commits_nothing(uri: str) -> None:
    tx = DeltaTable(uri).transaction()
    tx.read_whole_table()
    assert tx.commit() == 1 and tx.no_op
    assert_log(uri, 1)


# ----------------------------------------------------------------------------- retries


def test_loser_behind_several_non_conflicting_winners_lands_at_head_plus_one(uri: str) -> None:
    winners: list[Writer | RawCommit] = [
        Writer(lambda tx: tx.add(add("p=1/w1.parquet"))),
        Writer(lambda tx: tx.add(add("p=1/w2.parquet"))),
        Writer(lambda tx: (tx.read_files(col("p") == "1"), tx.add(add("p=1/w3.parquet")))),
    ]

    def loser(tx: Transaction) -> None:
        tx.remove(tx.read_files(col("p") == "2"))
        tx.add(add("p=2/l.parquet"))

    won, lost = race(uri, winners, Writer(loser, "MERGE"))
    assert won.versions == [2, 3, 4]
    assert lost.version == 5
    assert lost.tx is not None and lost.tx.attempts > 1
    assert lost.tx.attempts == 2  # one lost attempt, then straight to the head after catching up
    assert commit_info(uri, 5)["readVersion"] == 1
    assert_log(uri, 5)
    assert live(uri) == {
        "p=1/a.parquet",
        "p=1/b.parquet",
        "p=1/w1.parquet",
        "p=1/w2.parquet",
        "p=1/w3.parquet",
        "p=2/l.parquet",
    }
    assert lost.table is not None and lost.table.version() == 5
    assert set(lost.table.files().column("path").to_pylist()) == live(uri)


def test_the_conflicting_winner_is_named_not_the_first(uri: str) -> None:
    winners: list[Writer | RawCommit] = [
        Writer(lambda tx: tx.add(add("p=2/w1.parquet"))),
        Writer(lambda tx: tx.remove("p=2/c.parquet"), "DELETE"),
        Writer(lambda tx: tx.remove("p=1/a.parquet"), "DELETE"),
    ]

    def loser(tx: Transaction) -> None:
        tx.read_files(col("p") == "2")
        tx.add(add("p=2/l.parquet"))

    won, lost = race(uri, winners, Writer(loser, "UPDATE"))
    assert won.versions == [2, 3, 4]
    assert_lost(
        lost,
        ConcurrentDeleteReadError,
        won=won,
        winner=1,
        operation="DELETE",
        path="p=2/c.parquet",
        partition={"p": "2"},
    )
    assert lost.tx is not None and lost.tx.attempts == 1
    assert_log(uri, 4)


def test_max_attempts_one_gives_up_when_the_version_is_taken(uri: str) -> None:
    won, lost = race(
        uri,
        Writer(_blind_append_p1),
        Writer(lambda tx: tx.add(add("p=2/l.parquet")), retry=RetryPolicy(max_attempts=1)),
    )
    assert won.version == 2
    exc = lost.error
    assert type(exc) is CommitAttemptsExhaustedError
    assert exc.attempts == 1 and exc.last_version == 2
    assert exc.retryable is True and exc.conflict is True
    assert "max_attempts" in str(exc)
    assert_log(uri, 2)
    assert live(uri) == {*BASE, "p=1/w.parquet"}


def test_retry_policy_on_the_table_is_used(uri: str) -> None:
    table = DeltaTable(uri, retry=RetryPolicy(max_attempts=1))
    tx = table.transaction()
    tx.add(add("p=2/l.parquet"))
    with DeltaTable(uri).transaction() as other:
        other.add(add("p=1/w.parquet"))
    with pytest.raises(CommitAttemptsExhaustedError):
        tx.commit()
    assert_log(uri, 2)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"max_attempts": -1},
        {"base_delay": -0.1},
        {"max_delay": -1.0},
    ],
)
def test_retry_policy_validation(kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        RetryPolicy(**kwargs)


def test_retry_policy_delay_is_bounded() -> None:
    policy = RetryPolicy(base_delay=0.001, max_delay=0.004)
    for attempt in range(1, 100):
        assert 0 <= policy.delay(attempt) <= min(0.004, 0.001 * 2 ** (attempt - 1))
    assert RetryPolicy(base_delay=0, max_delay=0).delay(5) == 0


# ----------------------------------------------------------------------------- context manager


def test_clean_exit_commits(uri: str) -> None:
    table = DeltaTable(uri)
    with table.transaction() as tx:
        tx.add(add("p=1/x.parquet"))
    assert tx.version == 2 and table.version() == 2
    assert_log(uri, 2)
    with pytest.raises(TransactionClosedError, match="committed"):
        tx.add(add("p=1/y.parquet"))
    with pytest.raises(TransactionClosedError):
        tx.commit()
    with table.transaction() as tx:  # an explicit commit inside the block is not repeated
        tx.add(add("p=1/y.parquet"))
        assert tx.commit() == 3
    assert_log(uri, 3)


def test_exception_abandons(uri: str) -> None:
    table = DeltaTable(uri)
    with pytest.raises(RuntimeError, match="boom"), table.transaction() as tx:
        tx.add(add("p=1/x.parquet"))
        raise RuntimeError("boom")
    assert tx.version is None
    assert_log(uri, 1)
    assert table.version() == 1
    for use in (
        lambda: tx.commit(),
        lambda: tx.read_files({"p": "1"}),
        lambda: tx.read_whole_table(),
        lambda: tx.txn_version("a"),
        lambda: tx.add(add("p=1/y.parquet")),
        lambda: tx.remove("p=1/a.parquet"),
        lambda: tx.update_metadata(configuration={"a": "b"}),
        lambda: tx.update_protocol(Protocol(1, 3)),
        lambda: tx.set_transaction("a", 1),
        lambda: tx.domain_metadata("d", {}),
    ):
        with pytest.raises(TransactionClosedError, match="abandoned"):
            use()


def test_a_failed_commit_closes_the_transaction(uri: str) -> None:
    tx = DeltaTable(uri).transaction()
    tx.remove("p=1/a.parquet")
    with DeltaTable(uri).transaction("DELETE") as other:
        other.remove("p=1/a.parquet")
    with pytest.raises(ConcurrentDeleteDeleteError):
        tx.commit()
    with pytest.raises(TransactionClosedError, match="failed"):
        tx.commit()
    with pytest.raises(TransactionClosedError):
        tx.add(add("p=1/x.parquet"))


def test_conflict_inside_the_context_manager_propagates(uri: str) -> None:
    tx = DeltaTable(uri).transaction()
    with DeltaTable(uri).transaction("DELETE") as other:
        other.remove("p=1/a.parquet")
    with pytest.raises(ConcurrentDeleteReadError), tx:
        tx.read_files({"p": "1"})
        tx.add(add("p=1/x.parquet"))
    assert_log(uri, 2)


# ----------------------------------------------------------------------------- bad input


def test_predicate_on_a_non_partition_column(uri: str) -> None:
    tx = DeltaTable(uri).transaction()
    with pytest.raises(InvalidPredicateError, match="'id' is not a partition column"):
        tx.read_files(col("id") == 1)
    with pytest.raises(InvalidPredicateError):
        tx.read_files([("v", "=", "x")])
    with pytest.raises(InvalidPredicateError):
        tx.read_files([("p", "~", "1")])
    tx.add(add("p=1/x.parquet"))
    assert tx.commit() == 2
    assert commit_info(uri, 2)["isBlindAppend"] is True  # refused reads were not recorded


def test_removing_a_file_that_is_not_live(uri: str) -> None:
    table = DeltaTable(uri)
    tx = table.transaction()
    with pytest.raises(FileNotInTableError) as info:
        tx.remove(["p=1/a.parquet", "p=9/nope.parquet"])
    assert info.value.path == "p=9/nope.parquet"
    assert "'p=9/nope.parquet'" in str(info.value) and "version 1" in str(info.value)
    with table.transaction() as ok:
        ok.remove("p=1/a.parquet")
    with pytest.raises(FileNotInTableError):
        table.transaction().remove("p=1/a.parquet")
    assert_log(uri, 2)


def test_adding_the_same_file_twice(uri: str) -> None:
    tx = DeltaTable(uri).transaction()
    with pytest.raises(DuplicateFileError, match="added twice"):
        tx.add([add("p=1/x.parquet"), add("p=1/x.parquet")])
    tx.add(add("p=1/x.parquet"))
    with pytest.raises(DuplicateFileError, match="added twice"):
        tx.add(add("p=1/x.parquet"))
    with pytest.raises(DuplicateFileError, match="removed twice"):
        tx.remove(["p=1/a.parquet", "p=1/a.parquet"])
    assert tx.commit() == 2
    assert live(uri) == {*BASE, "p=1/x.parquet"}


def test_adding_a_live_parquet_file_again(uri: str) -> None:
    table = DeltaTable(uri)
    rel = write_parquet(uri, "p=1/real.parquet", pa.table({"id": [1], "v": ["a"]}))
    table.append_files([rel])
    with pytest.raises(DuplicateFileError, match="already in the table"):
        table.append_files([rel])
    assert_log(uri, 2)


def test_append_only_table_refuses_removal(tmp_path: Path) -> None:
    table = DeltaTable.create(
        str(tmp_path / "t"), SCHEMA, partition_by=["p"], configuration={"delta.appendOnly": "true"}
    )
    with table.transaction() as tx:
        tx.add([add("p=1/a.parquet"), add("p=1/b.parquet")])
    tx = table.transaction("DELETE")
    tx.remove("p=1/a.parquet")
    with pytest.raises(AppendOnlyError, match="append-only"):
        tx.commit()
    assert_log(table.uri, 1)
    # rearranging without changing data (compaction) is allowed on an append-only table
    with table.transaction("OPTIMIZE") as tx:
        tx.remove(tx.read_files({"p": "1"}), data_change=False)
        tx.add(add("p=1/c.parquet", data_change=False))
    assert tx.version == 2
    assert live(table.uri) == {"p=1/c.parquet"}


def test_overwrite_where_refuses_a_file_outside_the_predicate(uri: str) -> None:
    table = DeltaTable(uri)
    inside = write_parquet(uri, "p=1/in.parquet", pa.table({"id": [1], "v": ["a"]}))
    outside = write_parquet(uri, "p=2/out.parquet", pa.table({"id": [2], "v": ["b"]}))
    with pytest.raises(InvalidPredicateError, match=r"p=2/out\.parquet.*p = '1'"):
        table.overwrite_files([inside, outside], where=col("p") == "1")
    assert_log(uri, 1)
    assert table.overwrite_files([inside], where=col("p") == "1") == 2
    assert live(uri) == {"p=1/in.parquet", "p=2/c.parquet"}


def test_dropping_a_column_needs_every_file_removed(uri: str) -> None:
    table = DeltaTable(uri)
    tx = table.transaction("REPLACE TABLE")
    tx.update_metadata(schema=NARROWER)
    with pytest.raises(InvalidInputError, match="remove every file"):
        tx.commit()
    tx = table.transaction("REPLACE TABLE")
    tx.remove(tx.read_files({"p": "1"}))
    tx.update_metadata(schema=NARROWER)
    with pytest.raises(InvalidInputError, match="remove every file"):
        tx.commit()
    assert_log(uri, 1)
    with table.transaction("REPLACE TABLE") as tx:
        tx.remove(tx.read_whole_table())
        tx.update_metadata(schema=NARROWER)
        tx.add(add("p=1/new.parquet"))
    assert tx.version == 2
    assert DeltaTable(uri).schema().names == ["id", "p"]
    assert live(uri) == {"p=1/new.parquet"}


def test_protocol_downgrade_is_refused(uri: str) -> None:
    table = DeltaTable(uri)
    with table.transaction("UPGRADE PROTOCOL") as tx:
        tx.update_protocol(Protocol(3, 7, reader_features=[], writer_features=DOMAIN_FEATURES))
    for older in (
        Protocol(1, 2),
        Protocol(3, 6),
        Protocol(2, 7, writer_features=["domainMetadata"]),
        Protocol(3, 7, reader_features=[], writer_features=["appendOnly", "invariants"]),
    ):
        tx = table.transaction("UPGRADE PROTOCOL")
        with pytest.raises(InvalidInputError, match="downgrade"):
            tx.update_protocol(older)
        tx.add(add("p=1/x.parquet"))
    assert_log(uri, 2)


def test_moving_to_table_features_keeps_the_legacy_features(uri: str) -> None:
    """(1, 2) implies appendOnly and invariants; a (3, 7) protocol must list them."""
    table = DeltaTable(uri)
    tx = table.transaction("UPGRADE PROTOCOL")
    with pytest.raises(InvalidInputError, match=r"\['appendOnly', 'invariants'\]"):
        tx.update_protocol(Protocol(3, 7, reader_features=[], writer_features=["domainMetadata"]))
    tx.update_protocol(Protocol(3, 7, reader_features=[], writer_features=DOMAIN_FEATURES))
    assert tx.commit() == tx.read_version + 1


# ----------------------------------------------------------------------------- names


def test_delta_spark_names_are_aliases() -> None:
    assert ConcurrentModificationException is ConcurrentModificationError
    assert ProtocolChangedException is ProtocolChangedError
    assert MetadataChangedException is MetadataChangedError
    assert ConcurrentTransactionException is ConcurrentTransactionError
    assert ConcurrentAppendException is ConcurrentAppendError
    assert ConcurrentDeleteReadException is ConcurrentDeleteReadError
    assert ConcurrentDeleteDeleteException is ConcurrentDeleteDeleteError
    for cls in (
        ProtocolChangedError,
        MetadataChangedError,
        ConcurrentTransactionError,
        ConcurrentAppendError,
        ConcurrentDeleteReadError,
        ConcurrentDeleteDeleteError,
    ):
        assert issubclass(cls, ConcurrentModificationError)
        assert issubclass(cls, CommitFailedError)


# ----------------------------------------------------------------------------- review findings


def test_a_landed_commit_never_raises_afterwards(uri: str) -> None:
    """A bad delta.checkpointInterval breaks only the post-commit checkpoint, not the commit."""
    table = DeltaTable(uri)
    with pytest.raises(InvalidPropertyError), table.transaction("SET TBLPROPERTIES") as tx:
        tx.update_metadata(configuration={"delta.checkpointInterval": "ten"})
    # Another engine wrote it anyway.
    bad = dataclasses.replace(table.metadata(), configuration={"delta.checkpointInterval": "ten"})
    store = table._storage.store
    store.write(table._storage.log_file(f"{2:020d}.json"), bad.to_line() + b"\n")
    table = DeltaTable(uri)
    tx = table.transaction()
    tx.add(add("p=1/late.parquet"))
    assert tx.commit() == 3
    assert tx.version == 3
    assert "p=1/late.parquet" in live(uri)


def test_metadata_cannot_change_after_files_are_staged(uri: str) -> None:
    table = DeltaTable(uri)
    tx = table.transaction("REPLACE")
    tx.remove(tx.read_whole_table())
    tx.add(add("p=2/new.parquet"))
    with pytest.raises(InvalidInputError, match="before adding files"):
        tx.update_metadata(partition_by=["v"])
    assert_log(uri, 1)


@pytest.mark.parametrize("value", [1.5, "x"])
def test_lossy_or_unparseable_literals_are_refused(tmp_path: Path, value: object) -> None:
    schema = pa.schema([("id", pa.int64()), ("n", pa.int32())])
    table = DeltaTable.create(str(tmp_path / "t"), schema, partition_by=["n"])
    tx = table.transaction()
    with pytest.raises(InvalidPredicateError):
        tx.read_files(col("n") == value)
    assert tx.read_files(col("n") == 1.0).num_rows == 0  # exact conversions are fine


def test_a_datetime_literal_on_a_date_column_is_refused(tmp_path: Path) -> None:
    import datetime as dt

    schema = pa.schema([("id", pa.int64()), ("d", pa.date32())])
    table = DeltaTable.create(str(tmp_path / "t"), schema, partition_by=["d"])
    tx = table.transaction()
    with pytest.raises(InvalidPredicateError):
        tx.read_files(col("d") == dt.datetime(2024, 1, 1, 12))
    assert tx.read_files(col("d") == dt.date(2024, 1, 1)).num_rows == 0


def test_idempotency_needs_every_staged_app_id_covered(uri: str) -> None:
    winner, loser = DeltaTable(uri), DeltaTable(uri)
    tl = loser.transaction()
    tl.set_transaction("app1", 5)
    tl.set_transaction("app2", 1)
    tl.add(add("p=1/loser.parquet"))
    with winner.transaction() as tw:
        tw.set_transaction("app1", 5)
        tw.add(add("p=1/winner.parquet"))
    with pytest.raises(ConcurrentTransactionError) as err:
        tl.commit()
    assert err.value.app_id == "app1" and not tl.no_op
    assert_log(uri, 2)
    again = DeltaTable(uri).transaction()
    again.set_transaction("app1", 5)
    again.set_transaction("app2", 1)
    with pytest.raises(InvalidInputError, match="disagree"):
        again.commit()
    assert_log(uri, 2)


def test_a_commit_whose_store_said_taken_but_landed_is_not_written_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An object store can answer "taken" for a commit that did land (a retried conditional PUT
    # whose first attempt's reply was lost). The commit at that version is then our own: the
    # transaction must report it, not commit the same actions again at the next version.
    from deltalog.logstores import FileAlreadyExistsError, LocalLogStore

    root = tmp_path / "t"
    DeltaTable.create(str(root), pa.schema([("x", pa.int64())]))
    table = DeltaTable(str(root), retry=RetryPolicy(base_delay=0.0001, max_delay=0.0002))
    real_write = LocalLogStore.write
    lied: list[str] = []

    def write_then_say_taken(self: LocalLogStore, path: str, data: bytes, **kw: Any) -> None:
        real_write(self, path, data, **kw)
        if path.endswith(".json") and not lied:
            lied.append(path)
            raise FileAlreadyExistsError(path)

    monkeypatch.setattr(LocalLogStore, "write", write_then_say_taken)
    with table.transaction("WRITE") as tx:
        tx.add(
            AddFile(
                path="a.parquet",
                partition_values={},
                size=1,
                modification_time=0,
                data_change=True,
                stats='{"numRecords":1}',
            )
        )
    assert lied, "the store never answered 'taken'"
    assert tx.version == 1
    assert log_names(root) == ["00000000000000000000.json", "00000000000000000001.json"]
    fresh = DeltaTable(str(root))
    assert fresh.version() == 1
    assert fresh.files().column("path").to_pylist() == ["a.parquet"]


def test_user_metadata_is_recorded_in_commit_info(tmp_path: Path) -> None:
    uri = str(tmp_path / "um")
    table = DeltaTable.create(uri, pa.schema([("id", pa.int64())]))
    name = write_parquet(uri, "a.parquet", pa.table({"id": [1]}))
    with table.transaction(user_metadata="nightly load #3") as tx:
        tx.add([name])
    line = (Path(uri) / "_delta_log" / f"{tx.version:020d}.json").read_bytes().splitlines()[0]
    info = orjson.loads(line)["commitInfo"]
    assert info["userMetadata"] == "nightly load #3"
    assert list(info).index("userMetadata") < list(info).index("engineInfo")  # delta-spark order
    assert table.history(1)[0]["userMetadata"] == "nightly load #3"
    with pytest.raises(InvalidInputError):
        table.transaction(user_metadata=5)  # type: ignore[arg-type]
