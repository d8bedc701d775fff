"""Group commit: concurrent transactions of one process batched into one Delta commit.

The leader's own commit is held inside its write (a patched ``try_write`` waits on an Event)
while the other transactions queue; the committer's ``on_queued`` seam says when they have.
Releasing it lets the next leader commit the queue as one group, in arrival order.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import deltalog.write.transaction as transaction_module
from deltalog import (
    AddFile,
    ConcurrentAppendError,
    ConcurrentModificationError,
    DeltaTable,
    InvalidInputError,
)
from deltalog.write.group_commit import GroupCommitter, committer_for

SCHEMA = pa.schema([("x", pa.int64()), ("p", pa.string())])
WAIT = 30.0


def add(path: str) -> AddFile:
    """An add action built by the caller (the log layer never opens the file)."""
    part = path.split("/", 1)[0].split("=", 1)[1]
    return AddFile(path, {"p": part}, 1, 0, True, stats='{"numRecords":1}')


def commit_lines(root: str, version: int) -> list[dict[str, Any]]:
    """The actions of one commit file, parsed with ``json``."""
    text = (Path(root) / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line]


@pytest.fixture
def root(tmp_path: Path) -> str:
    """A table partitioned by ``p`` with ``p=1/seed.parquet`` at version 1."""
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    with table.transaction() as tx:
        tx.add(add("p=1/seed.parquet"))
    return table.uri


class Held:
    """Holds the first commit inside its write while other transactions queue behind it."""

    def __init__(self, root: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.committer: GroupCommitter = committer_for(DeltaTable(root)._storage)
        self.entered, self.gate = threading.Event(), threading.Event()
        self.queued: dict[int, threading.Event] = {}
        self.committer.on_queued = self._queued
        real = transaction_module.try_write

        def held_write(*args: Any, **kwargs: Any) -> bool:
            if not self.entered.is_set():
                self.entered.set()
                assert self.gate.wait(WAIT)
            return real(*args, **kwargs)

        monkeypatch.setattr(transaction_module, "try_write", held_write)
        self.threads: list[threading.Thread] = []
        self.results: dict[str, int | BaseException] = {}

    def _queued(self, length: int) -> None:
        self.queued.setdefault(length, threading.Event()).set()

    def start(self, name: str, body: Callable[[], int], *, queued: int | None = None) -> None:
        """Run ``body`` in a thread; wait until it holds the write or is the n-th queued."""

        def run() -> None:
            try:
                self.results[name] = body()
            except BaseException as exc:
                self.results[name] = exc

        thread = threading.Thread(target=run, name=name)
        self.threads.append(thread)
        thread.start()
        if queued is None:
            assert self.entered.wait(WAIT)
            self.queued.clear()  # it was queued (as number 1) before it took the lead
        else:
            assert self.queued.setdefault(queued, threading.Event()).wait(WAIT)

    def release(self) -> dict[str, int | BaseException]:
        self.gate.set()
        for thread in self.threads:
            thread.join(WAIT)
            assert not thread.is_alive()
        return self.results


def appender(root: str, path: str, **kwargs: Any) -> Callable[[], int]:
    """A body that commits one caller-built add with group commit on."""

    def body() -> int:
        table = DeltaTable(root, group_commit=True)
        with table.transaction(**kwargs) as tx:
            tx.add(add(path))
        assert tx.version is not None
        return tx.version

    return body


@pytest.fixture
def held(root: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Held]:
    h = Held(root, monkeypatch)
    yield h
    h.gate.set()


def test_queued_transactions_share_one_commit(root: str, held: Held) -> None:
    held.start("first", appender(root, "p=1/first.parquet"))
    for i in range(8):
        held.start(f"m{i}", appender(root, f"p={i % 3}/m{i}.parquet"), queued=i + 1)
    results = held.release()
    assert results["first"] == 2
    assert {results[f"m{i}"] for i in range(8)} == {3}
    actions = commit_lines(root, 3)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert [a["add"]["path"] for a in actions if "add" in a] == [f"p={i % 3}/m{i}.parquet"
                                                                  for i in range(8)]  # fmt: skip
    params = info["operationParameters"]
    assert params["groupCommit"] == "true" and params["numMembers"] == "8"
    assert all(isinstance(v, str) for v in params.values())  # delta-spark: Map[String, String]
    assert len(json.loads(params["members"])) == 8
    assert info["isBlindAppend"] is True and info["operationMetrics"]["numFiles"] == "8"
    table = DeltaTable(root)
    assert table.version() == 3 and len(table.files()) == 10
    assert table.check(data_files=False).ok


def test_conflicting_member_fails_alone(root: str, held: Held) -> None:
    """A reads and rewrites p=1; B read p=1 too: committing after A, B conflicts; C does not."""
    tables = {n: DeltaTable(root, group_commit=True) for n in "ABC"}

    def rewrite() -> int:
        with tables["A"].transaction("DELETE") as tx:
            tx.remove(tx.read_files({"p": "1"}))
            tx.add(add("p=1/rewritten.parquet"))
        assert tx.version is not None
        return tx.version

    def read_then_write() -> int:
        with tables["B"].transaction("MERGE") as tx:
            tx.read_files({"p": "1"})
            tx.add(add("p=1/b.parquet"))
        assert tx.version is not None
        return tx.version

    held.start("first", appender(root, "p=2/first.parquet"))
    held.start("A", rewrite, queued=1)
    held.start("B", read_then_write, queued=2)
    held.start("C", appender(root, "p=3/c.parquet"), queued=3)
    results = held.release()
    assert results["A"] == results["C"] == 3
    error = results["B"]
    assert isinstance(error, ConcurrentAppendError), error
    assert error.winning_version == 3
    paths = {f for f in DeltaTable(root).files().column("path").to_pylist()}
    assert paths == {"p=2/first.parquet", "p=1/rewritten.parquet", "p=3/c.parquet"}
    assert all("p=1/b.parquet" not in json.dumps(a) for v in (3, 4) for a in _maybe(root, v))


def _maybe(root: str, version: int) -> list[dict[str, Any]]:
    path = Path(root) / "_delta_log" / f"{version:020d}.json"
    return commit_lines(root, version) if path.exists() else []


def test_duplicate_app_ids_go_to_separate_commits(root: str, held: Held) -> None:
    def idempotent(path: str, app_version: int) -> Callable[[], int]:
        def body() -> int:
            with DeltaTable(root, group_commit=True).transaction() as tx:
                tx.set_transaction("stream-1", app_version)
                tx.add(add(path))
            assert tx.version is not None
            return tx.version if not tx.no_op else -tx.version

        return body

    held.start("first", appender(root, "p=2/first.parquet"))
    held.start("t1", idempotent("p=1/t1.parquet", 7), queued=1)
    held.start("t1-again", idempotent("p=1/t1-again.parquet", 7), queued=2)
    held.start("plain", appender(root, "p=3/plain.parquet"), queued=3)
    results = held.release()
    assert results["t1"] == results["plain"] == 3
    assert results["t1-again"] == -3  # the same (app id, version): a no-op reporting version 3
    for version in range(DeltaTable(root).version() + 1):
        apps = Counter(a["txn"]["appId"] for a in commit_lines(root, version) if "txn" in a)
        assert all(n == 1 for n in apps.values())
    assert DeltaTable(root).version() == 3
    assert "p=1/t1-again.parquet" not in DeltaTable(root).files().column("path").to_pylist()


def test_metadata_change_commits_on_its_own(root: str, held: Held) -> None:
    def change() -> int:
        with DeltaTable(root, group_commit=True).transaction("SET TBLPROPERTIES") as tx:
            tx.update_metadata(configuration={"owner": "me"})
        assert tx.version is not None
        return tx.version

    held.start("first", appender(root, "p=2/first.parquet"))
    held.start("m1", appender(root, "p=1/m1.parquet"), queued=1)
    held.start("meta", change, queued=2)
    held.start("m2", appender(root, "p=3/m2.parquet"), queued=3)
    results = held.release()
    assert results["m1"] == results["m2"] == 3
    assert results["meta"] == 4
    assert not any("metaData" in a for a in commit_lines(root, 3))
    assert DeltaTable(root).snapshot.configuration.get("owner") == "me"


def test_different_user_metadata_is_not_mixed(root: str, held: Held) -> None:
    held.start("first", appender(root, "p=2/first.parquet"))
    held.start("a", appender(root, "p=1/a.parquet", user_metadata="a"), queued=1)
    held.start("b", appender(root, "p=1/b.parquet", user_metadata="b"), queued=2)
    held.start("a2", appender(root, "p=3/a2.parquet", user_metadata="a"), queued=3)
    results = held.release()
    assert results["a"] == results["a2"] == 3 and results["b"] == 4
    infos = [next(a["commitInfo"] for a in commit_lines(root, v) if "commitInfo" in a)
             for v in (3, 4)]  # fmt: skip
    assert [i["userMetadata"] for i in infos] == ["a", "b"]


def test_off_by_default_on_with_the_flag_or_the_environment(
    root: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert DeltaTable(root).transaction()._group is None
    assert DeltaTable(root, group_commit=True).transaction()._group is not None
    monkeypatch.setenv("DELTALOG_GROUP_COMMIT", "1")  # e.g. for deltalog.spark's tables
    assert DeltaTable(root).transaction()._group is not None
    assert DeltaTable(root, group_commit=False).transaction()._group is None
    with pytest.raises(InvalidInputError):
        DeltaTable(root, group_commit="yes")  # type: ignore[arg-type]


def test_32_threads_lose_and_duplicate_nothing(root: str) -> None:
    threads, each = 32, 20
    barrier = threading.Barrier(threads)
    versions: dict[str, int] = {}
    errors: list[BaseException] = []

    def run(n: int) -> None:
        table = DeltaTable(root, group_commit=True)
        barrier.wait(WAIT)
        for i in range(each):
            path = f"p={n % 4}/w{n}-{i}.parquet"
            try:
                with table.transaction() as tx:
                    tx.add(add(path))
            except BaseException as exc:
                errors.append(exc)
                return
            assert tx.version is not None
            versions[path] = tx.version

    workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert not errors
    assert len(versions) == threads * each
    table = DeltaTable(root)
    logged: dict[str, int] = {}
    for version in range(2, table.version() + 1):
        for action in commit_lines(root, version):
            if "add" in action:
                assert action["add"]["path"] not in logged, "duplicated"
                logged[action["add"]["path"]] = version
    assert logged == versions  # every acknowledged add is in the commit it was told
    assert len(table.files()) == threads * each + 1
    assert table.check(data_files=False).ok


def test_a_conflict_with_another_process_fails_only_that_member(root: str, held: Held) -> None:
    """A commit of another writer lands between the group's read and its write."""
    reader = DeltaTable(root, group_commit=True)
    outsider = DeltaTable(root)

    def read_then_write() -> int:
        with reader.transaction("MERGE") as tx:
            tx.read_files({"p": "1"})
            tx.add(add("p=1/r.parquet"))
        assert tx.version is not None
        return tx.version

    def before_write(members: list[Any]) -> None:  # another process wins version 3
        held.committer.before_write = None
        with outsider.transaction("DELETE") as tx:
            tx.remove(tx.read_files({"p": "1"}))

    held.start("first", appender(root, "p=2/first.parquet"))
    held.start("reader", read_then_write, queued=1)
    held.start("plain", appender(root, "p=3/plain.parquet"), queued=2)
    held.committer.before_write = before_write
    results = held.release()
    assert isinstance(results["reader"], ConcurrentModificationError)
    assert results["plain"] == 4
    assert DeltaTable(root).check(data_files=False).ok


def test_row_tracking_and_in_commit_timestamps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Row ids of a group's adds do not overlap; a member an add without numRecords fails alone."""
    config = {"delta.enableInCommitTimestamps": "true", "delta.enableRowTracking": "true"}
    root = DeltaTable.create(
        str(tmp_path / "t"), SCHEMA, partition_by=["p"], configuration=config
    ).uri
    held = Held(root, monkeypatch)

    def uncounted() -> int:
        with DeltaTable(root, group_commit=True).transaction() as tx:
            tx.add(AddFile("p=1/uncounted.parquet", {"p": "1"}, 1, 0, True))
        assert tx.version is not None
        return tx.version

    try:
        held.start("first", appender(root, "p=1/first.parquet"))
        held.start("m1", appender(root, "p=1/m1.parquet"), queued=1)
        held.start("bad", uncounted, queued=2)
        held.start("m2", appender(root, "p=2/m2.parquet"), queued=3)
    finally:
        results = held.release()
    assert type(results["bad"]).__name__ == "MissingRowCountError"
    assert {results["m1"], results["m2"]} <= {2, 3}  # one by one after the group was refused
    table = DeltaTable(root)
    ids = []
    icts = []
    for version in range(1, table.version() + 1):
        actions = commit_lines(root, version)
        icts.append(actions[0]["commitInfo"]["inCommitTimestamp"])
        ids += [a["add"]["baseRowId"] for a in actions if "add" in a]
    assert len(ids) == len(set(ids)) == 3
    assert icts == sorted(set(icts))
    assert table.check(data_files=False).ok


def test_row_tracking_group_assigns_distinct_row_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = {"delta.enableInCommitTimestamps": "true", "delta.enableRowTracking": "true"}
    root = DeltaTable.create(
        str(tmp_path / "t"), SCHEMA, partition_by=["p"], configuration=config
    ).uri
    held = Held(root, monkeypatch)
    try:
        held.start("first", appender(root, "p=1/first.parquet"))
        for i in range(4):
            held.start(f"m{i}", appender(root, f"p=1/m{i}.parquet"), queued=i + 1)
    finally:
        results = held.release()
    assert {results[f"m{i}"] for i in range(4)} == {2}
    adds = [a["add"] for a in commit_lines(root, 2) if "add" in a]
    assert sorted(a["baseRowId"] for a in adds) == [1, 2, 3, 4]
    assert all(a["defaultRowCommitVersion"] == 2 for a in adds)
    assert DeltaTable(root).check(data_files=False).ok


def test_contended_read_then_write_keeps_isolation(root: str) -> None:
    """16 threads each read a partition and add its next numbered file (``n<count + 1>``).

    Members that read the same partition conflict (the earlier one's add matches the later
    one's read), so each number is taken once: if two conflicting members both committed, two
    files would carry the same number, or the numbers would not be 1..commits.
    """
    threads, rounds = 16, 12
    barrier = threading.Barrier(threads)
    won: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    lock = threading.Lock()

    def run(n: int) -> None:
        table = DeltaTable(root, group_commit=True)
        barrier.wait(WAIT)
        for i in range(rounds):
            k = str(2 + (n + i) % 4)
            table.refresh()
            try:
                with table.transaction("MERGE") as tx:
                    count = tx.read_files({"p": k}).num_rows
                    tx.add(add(f"p={k}/n{count + 1}-{n}-{i}.parquet"))
            except ConcurrentModificationError:
                with lock:
                    failed[k] += 1
                continue
            with lock:
                won[k] += 1

    workers = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    live = DeltaTable(root).files().column("path").to_pylist()
    numbers: dict[str, list[int]] = {str(k): [] for k in range(2, 6)}
    for path in live:
        part, name = path.split("/")
        if part != "p=1":
            numbers[part[2:]].append(int(name[1:].split("-", 1)[0]))
    assert {k: sorted(v) for k, v in numbers.items()} == {
        k: list(range(1, won[k] + 1)) for k in numbers
    }
    assert sum(won.values()) + sum(failed.values()) == threads * rounds
    assert DeltaTable(root).check(data_files=False).ok


def test_blind_appends_are_not_checked_against_each_other(
    root: str, held: Held, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group of blind appends skips summarising its members as winners (per-member CPU)."""
    from deltalog.write import group_commit

    built: list[str] = []
    real = group_commit._Member.as_winner

    def counting(self: Any, version: int, info: dict[str, Any]) -> Any:
        built.append(self.tx._operation)
        return real(self, version, info)

    monkeypatch.setattr(group_commit._Member, "as_winner", counting)
    held.start("first", appender(root, "p=1/first.parquet"))
    for i in range(4):
        held.start(f"m{i}", appender(root, f"p=2/m{i}.parquet"), queued=i + 1)
    results = held.release()
    assert {results[f"m{i}"] for i in range(4)} == {3}
    assert built == []


def _landed_group_of_two(root: str, held: Held) -> None:
    """``first`` alone at version 2, then ``m0`` and ``m1`` as one group at version 3."""
    held.start("first", appender(root, "p=1/first.parquet"))
    held.start("m0", appender(root, "p=1/m0.parquet"), queued=1)
    held.start("m1", appender(root, "p=1/m1.parquet"), queued=2)
    results = held.release()
    assert (results["first"], results["m0"], results["m1"]) == (2, 3, 3)


def test_members_coming_back_after_a_group_commit_together(
    root: str, held: Held, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first member of a landed group to commit again waits for the others instead of
    # committing alone (a whole write for one transaction) while they queue behind it.
    _landed_group_of_two(root, held)
    committer = held.committer
    monkeypatch.setattr("deltalog.write.group_commit.MAX_LINGER_S", WAIT, raising=False)
    committer._write_s = 2 * WAIT  # the wait ends when both are back, not by the clock
    lingering = threading.Event()
    committer.on_linger = lingering.set
    results: dict[str, int] = {}

    def run(name: str) -> None:
        results[name] = appender(root, f"p=2/{name}.parquet")()

    a = threading.Thread(target=run, args=("a",))
    a.start()
    assert lingering.wait(WAIT), "the lone leader committed without waiting for the group"
    b = threading.Thread(target=run, args=("b",))
    b.start()
    for t in (a, b):
        t.join(WAIT)
        assert not t.is_alive()
    assert results == {"a": 4, "b": 4}
    assert [x["add"]["path"] for x in commit_lines(root, 4) if "add" in x] == [
        "p=2/a.parquet",
        "p=2/b.parquet",
    ]
    assert DeltaTable(root).check(data_files=False).ok


def test_a_lone_leader_waits_no_longer_than_the_limit(
    root: str, held: Held, monkeypatch: pytest.MonkeyPatch
) -> None:
    _landed_group_of_two(root, held)
    monkeypatch.setattr("deltalog.write.group_commit.MAX_LINGER_S", 0.0, raising=False)
    held.committer._write_s = 2 * WAIT
    assert appender(root, "p=2/alone.parquet")() == 4  # the other member never comes back
    # with nobody expected (the last commit was not a group's) it does not wait at all
    held.committer.on_linger = lambda: pytest.fail("waited with nobody expected")
    assert appender(root, "p=2/next.parquet")() == 5


def test_a_group_that_landed_long_ago_is_not_waited_for(
    root: str, held: Held, monkeypatch: pytest.MonkeyPatch
) -> None:
    _landed_group_of_two(root, held)
    monkeypatch.setattr("deltalog.write.group_commit.MAX_LINGER_S", 1.0, raising=False)
    committer = held.committer
    committer._write_s = 1.0
    # it landed longer ago than its write took (and the limit): nobody is coming back
    committer._landed_at = time.monotonic() - 2.0
    committer.on_linger = lambda: pytest.fail("waited for members of an old group")
    assert appender(root, "p=2/later.parquet")() == 4
