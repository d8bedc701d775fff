"""Property test: every history deltalog commits is equivalent to a serial one.

Hypothesis generates 2-4 transactions on a small table partitioned by ``p`` and an interleaving
of their ``begin`` and ``commit`` events. Everything runs in one process, in schedule order, so
a run is deterministic: each transaction has its own ``DeltaTable`` object; "begin" re-lists the
log (``update()``), pins the head in a transaction and performs the transaction's one read at
once; "commit" stages the writes and calls ``commit()``, which either lands at the next free
version (after checking the winners that landed since the read) or raises.

A small reference model, written without looking at ``deltalog.write.conflicts``, replays the
committed transactions serially in version order and judges every commit attempt:

1. Serial order. The transaction can be placed right after the current head iff
   * Serializable: its read returns the same files on the head as on its snapshot;
   * WriteSerializable: the same, ignoring files that blind appends (``isBlindAppend``) added
     after its snapshot -- such an append can be ordered after the transaction;
   * SnapshotIsolation (compaction: only ``dataChange=false`` actions): the files it read are
     still live;
   * and, at every level, every file it removes is still live.
   A transaction that commits must pass this (soundness).
2. Per-commit conflicts. Like delta-spark, deltalog judges each winning commit on its own, so
   it also refuses two kinds of transactions that (1) would accept: one whose read some winner
   changed although a later winner undid the change (added a matching file, then removed it),
   and one that read the whole table while some winner removed any file (even a file added
   after its read). A conflict must be explained by (1) or by a winner that, alone, changed
   the transaction's read or removed a file it read or removes (precision: no made-up
   conflicts); the error must name the first such winner and a reason that winner gives.

The table -- re-read from storage, and as each writer's in-memory snapshot after its commit --
must hold exactly the model's files, at version (initial + number of commits), with an accurate
``commitInfo`` per commit.

Reproducibility: ``derandomize=True`` makes the examples a fixed function of the test, so CI and
local runs try the same cases, and ``database=None`` keeps a local example database from
changing what a run tries (and from writing ``.hypothesis/``). The ``@example`` cases pin the
classic anomalies regardless of what the generator draws. To explore beyond the fixed examples,
run with ``DELTALOG_ISOLATION_EXPLORE=<n>`` (random, n examples); a failure prints the
falsifying ``Scenario``, which can be pasted into an ``@example``.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from deltalog import DeltaTable
from deltalog.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    ConcurrentModificationError,
)
from deltalog.logstores import LogFileNotFoundError, MemoryLogStore
from deltalog.protocol.actions import AddFile
from deltalog.stats.predicate_input import PredicateLike
from deltalog.stats.predicates import col
from deltalog.write.commit import RetryPolicy
from deltalog.write.transaction import Transaction

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
VALUES = ("0", "1", "2")
SERIALIZABLE, WRITE_SERIALIZABLE, SNAPSHOT = (
    "Serializable",
    "WriteSerializable",
    "SnapshotIsolation",
)
#: Losing a version is the point here; do not sleep between attempts.
NO_BACKOFF = RetryPolicy(base_delay=0.0, max_delay=0.0)

_EXPLORE = int(os.environ.get("DELTALOG_ISOLATION_EXPLORE", "0"))
SETTINGS = settings(
    max_examples=_EXPLORE or 300,
    deadline=None,
    derandomize=not _EXPLORE,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# --------------------------------------------------------------------------- read specs
# A read is a plain tuple, so falsifying examples print readably:
#   ("none",)            no read at all              ("all",)    read_whole_table()
#   ("eq", v)            p = v                       ("ne", v)   NOT (p = v)
#   ("in", (v, ...))     p IN (...)                  ("ge", v)   p >= v
#   ("or", a, b)         p = a OR p = b              ("le", v)   [("p", "<=", v)] (filter form)
Read = tuple[Any, ...]
NONE: Read = ("none",)
ALL: Read = ("all",)


def model_matches(read: Read, value: str) -> bool:
    """Reference semantics of a read on one partition value (values are never null here)."""
    kind = read[0]
    if kind == "all":
        return True
    if kind == "eq":
        return value == read[1]
    if kind == "ne":
        return value != read[1]
    if kind == "in":
        return value in read[1]
    if kind == "ge":
        return value >= read[1]
    if kind == "le":
        return value <= read[1]
    if kind == "or":
        return value in (read[1], read[2])
    raise AssertionError(f"not a read: {read!r}")


def to_predicate(read: Read) -> PredicateLike:
    """The same read as a deltalog predicate."""
    kind = read[0]
    if kind == "eq":
        return col("p") == read[1]
    if kind == "ne":
        return ~(col("p") == read[1])
    if kind == "in":
        return col("p").isin(list(read[1]))
    if kind == "ge":
        return col("p") >= read[1]
    if kind == "le":
        return [("p", "<=", read[1])]
    if kind == "or":
        return (col("p") == read[1]) | (col("p") == read[2])
    raise AssertionError(f"no predicate for {read!r}")


# --------------------------------------------------------------------------- scenarios
@dataclass(frozen=True)
class TxSpec:
    """What one transaction does.

    Attributes:
        kind: ``"write"`` (dataChange=true actions) or ``"compact"`` (removes every file it
            read and adds one file, all dataChange=false: SnapshotIsolation).
        read: The read spec.
        remove: ``"all"`` or indexes (those past the end are ignored) into the sorted paths the
            read returned -- or, with no read, into the sorted paths of the snapshot (removing
            without reading). Unused by ``compact``.
        adds: Partition values of the files added. Unused by ``compact``.
    """

    kind: str
    read: Read
    remove: tuple[int, ...] | str = ()
    adds: tuple[str, ...] = ()


@dataclass(frozen=True)
class Scenario:
    seed: tuple[str, ...]  # partition values of the files committed before the transactions
    level: str  # requested by every transaction (compactions get SnapshotIsolation)
    specs: tuple[TxSpec, ...]
    schedule: tuple[int, ...]  # transaction ids: the first occurrence begins, the second commits


values_st = st.sampled_from(VALUES)
predicate_read_st = st.one_of(
    st.tuples(st.just("eq"), values_st),
    st.tuples(st.just("ne"), values_st),
    st.tuples(
        st.just("in"),
        st.lists(values_st, min_size=1, max_size=3, unique=True).map(lambda v: tuple(sorted(v))),
    ),
    st.tuples(st.just("ge"), values_st),
    st.tuples(st.just("le"), values_st),
    st.tuples(st.just("or"), values_st, values_st),
)
remove_st = st.one_of(
    st.just("all"),
    st.lists(st.integers(0, 4), max_size=3, unique=True).map(lambda v: tuple(sorted(v))),
)
adds_st = st.lists(values_st, max_size=2).map(tuple)
write_st = st.one_of(
    # Blind append (no read, no removes).
    st.builds(TxSpec, kind=st.just("write"), read=st.just(NONE), adds=adds_st),
    # Removes files it did not read (by path), maybe adds.
    st.builds(TxSpec, kind=st.just("write"), read=st.just(NONE), remove=remove_st, adds=adds_st),
    # Reads, removes some of what it read, maybe adds.
    st.builds(
        TxSpec,
        kind=st.just("write"),
        read=st.one_of(st.just(ALL), predicate_read_st),
        remove=remove_st,
        adds=adds_st,
    ),
)
compact_st = st.builds(
    TxSpec, kind=st.just("compact"), read=st.one_of(st.just(ALL), predicate_read_st)
)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    n = draw(st.integers(2, 4))
    specs = tuple(draw(st.one_of(write_st, compact_st)) for _ in range(n))
    schedule = draw(
        st.one_of(
            st.permutations([i for i in range(n) for _ in range(2)]).map(tuple),
            # Everyone begins before anyone commits: every later commit has winners.
            st.permutations(range(n)).map(lambda order: (*range(n), *order)),
        )
    )
    seed = tuple(draw(st.lists(values_st, max_size=6)))
    level = draw(st.sampled_from((SERIALIZABLE, WRITE_SERIALIZABLE)))
    return Scenario(seed, level, specs, schedule)


# --------------------------------------------------------------------------- reference model
@dataclass(frozen=True)
class Entry:
    """A live file in the model: its partition, and the commit that added it."""

    partition: str
    added_version: int
    added_by_blind_append: bool


State = Mapping[str, Entry]  # path -> entry; the model's table at one version


@dataclass
class Txn:
    """One transaction of the scenario: its deltalog objects and what the model knows of it."""

    index: int
    spec: TxSpec
    level: str  # effective isolation level
    requested: str  # the level it asks for (compactions get SnapshotIsolation regardless)
    table: DeltaTable
    tx: Transaction | None = None
    read_version: int = -1
    read_set: dict[str, str] = field(default_factory=dict)  # path -> partition, as read
    removes: frozenset[str] = frozenset()
    adds: dict[str, str] = field(default_factory=dict)  # path -> partition
    version: int | None = None  # committed version

    @property
    def has_read(self) -> bool:
        return self.spec.read != NONE

    @property
    def is_blind_append(self) -> bool:
        return not self.has_read and not self.removes

    @property
    def operation(self) -> str:
        return "OPTIMIZE" if self.spec.kind == "compact" else "WRITE"


def visible(t: Txn, state: State) -> frozenset[str]:
    """What ``t``'s read returns on ``state``, as far as its isolation level cares.

    WriteSerializable leaves out files blind appends added after ``t``'s snapshot.
    """
    return frozenset(
        path
        for path, e in state.items()
        if model_matches(t.spec.read, e.partition)
        and not (
            t.level == WRITE_SERIALIZABLE
            and e.added_version > t.read_version
            and e.added_by_blind_append
        )
    )


def serial_objections(t: Txn, head: State) -> list[str]:
    """Model part 1: why ``t`` cannot be ordered right after ``head`` (empty: it can)."""
    objections = []
    if t.level == SNAPSHOT:
        gone = t.read_set.keys() - head.keys()
        if gone:
            objections.append(f"files it read are gone: {sorted(gone)}")
    elif t.has_read:
        now = visible(t, head)
        if now != t.read_set.keys():
            objections.append(f"its read would return {sorted(now)}, not {sorted(t.read_set)}")
    gone = t.removes - head.keys()
    if gone:
        objections.append(f"files it removes are gone: {sorted(gone)}")
    return objections


def winner_conflicts(t: Txn, before: State, after: State) -> set[str]:
    """Model part 2: how one winning commit (``before`` -> ``after``), alone, conflicts with ``t``.

    ``"append"``: it added a file ``t``'s read would return (under ``t``'s level);
    ``"delete-read"``: it removed a file ``t`` read, or any file when ``t`` read the whole table;
    ``"delete-delete"``: it removed a file ``t`` removes.
    """
    added = after.keys() - before.keys()
    removed = before.keys() - after.keys()
    kinds = set()
    if t.level != SNAPSHOT and t.has_read and visible(t, {p: after[p] for p in added}):
        kinds.add("append")
    if removed & t.read_set.keys() or (t.spec.read == ALL and removed):
        kinds.add("delete-read")
    if removed & t.removes:
        kinds.add("delete-delete")
    return kinds


CONFLICT_KINDS = {
    ConcurrentAppendError: "append",
    ConcurrentDeleteReadError: "delete-read",
    ConcurrentDeleteDeleteError: "delete-delete",
}


def apply(t: Txn, version: int, state: State) -> dict[str, Entry]:
    """The model state after ``t`` commits as ``version``."""
    out = {path: e for path, e in state.items() if path not in t.removes}
    for path, partition in t.adds.items():
        assert path not in out, f"the test generated {path} twice"
        out[path] = Entry(partition, version, t.is_blind_append)
    return out


def partitions(state: State) -> dict[str, str]:
    return {path: e.partition for path, e in state.items()}


# --------------------------------------------------------------------------- driving deltalog
def _add(path: str, partition: str, *, data_change: bool) -> AddFile:
    return AddFile(
        path=path,
        partition_values={"p": partition},
        size=1,
        modification_time=0,
        data_change=data_change,
        stats='{"numRecords":1}',
    )


def live_files(files: pa.Table) -> dict[str, str]:
    """Path -> partition value, from a files table."""
    paths = files.column("path").to_pylist()
    values = files.column("partition_values").to_pylist()
    return {path: dict(pv)["p"] for path, pv in zip(paths, values, strict=True)}


def begin(t: Txn, state: State, head: int) -> None:
    assert t.table.update() == head
    tx = t.tx = t.table.transaction(t.operation, isolation_level=t.requested)
    t.read_version = tx.read_version
    assert t.read_version == head
    if not t.has_read:
        return
    got = tx.read_whole_table() if t.spec.read == ALL else tx.read_files(to_predicate(t.spec.read))
    t.read_set = live_files(got)
    expected = {p: e.partition for p, e in state.items() if model_matches(t.spec.read, e.partition)}
    assert t.read_set == expected, f"T{t.index}: {t.spec.read} at v{head}"


def stage(t: Txn) -> None:
    spec, tx = t.spec, t.tx
    assert tx is not None
    if spec.kind == "compact":
        read = sorted(t.read_set)
        if not read:
            return  # nothing to compact: commit() is a no-op
        t.removes = frozenset(read)
        tx.remove(read, data_change=False)
        partition = t.read_set[read[0]]
        t.adds = {f"p={partition}/t{t.index}-compacted.parquet": partition}
    else:
        pool = sorted(t.read_set) if t.has_read else sorted(live_files(tx.snapshot.files))
        chosen = pool if spec.remove == "all" else [pool[i] for i in spec.remove if i < len(pool)]
        if chosen:
            t.removes = frozenset(chosen)
            tx.remove(chosen)
        t.adds = {f"p={v}/t{t.index}-{k}.parquet": v for k, v in enumerate(spec.adds)}
    data_change = spec.kind != "compact"
    tx.add([_add(path, v, data_change=data_change) for path, v in t.adds.items()])


def run(scenario: Scenario) -> None:
    root = f"memory://prop-{uuid.uuid4().hex}/t"
    try:
        check(root, scenario)
    finally:
        # memory:// is one process-wide store whose listing scans every file: keep it small.
        store, _ = MemoryLogStore.from_uri(root, {})
        with contextlib.suppress(LogFileNotFoundError):
            for status in list(store.list_from(f"{root}/_delta_log/")):
                store.delete(status.path)


def check(root: str, scenario: Scenario) -> None:
    DeltaTable.create(root, SCHEMA, partition_by=["p"])
    seed = {f"p={v}/seed{k}.parquet": v for k, v in enumerate(scenario.seed)}
    if seed:
        with DeltaTable(root).transaction("WRITE") as seeding:
            seeding.add([_add(path, v, data_change=True) for path, v in seed.items()])
    initial = 1 if seed else 0
    # states[v] is the model's table at version v.
    states: dict[int, dict[str, Entry]] = {
        initial: {path: Entry(v, initial, True) for path, v in seed.items()}
    }
    head = initial
    observer = DeltaTable(root)
    txns = [
        Txn(i, spec, SNAPSHOT if spec.kind == "compact" else scenario.level, scenario.level,
            DeltaTable(root, retry=NO_BACKOFF))
        for i, spec in enumerate(scenario.specs)
    ]  # fmt: skip
    begun: set[int] = set()
    committed: list[Txn] = []

    for i in scenario.schedule:
        t = txns[i]
        if i not in begun:
            begun.add(i)
            begin(t, states[head], head)
            continue
        stage(t)
        assert t.tx is not None
        r = t.read_version
        where = f"T{i} {t.spec} ({t.level}, read v{r}, head v{head})"
        objections = serial_objections(t, states[head])
        conflicts = {
            v: winner_conflicts(t, states[v - 1], states[v]) for v in range(r + 1, head + 1)
        }
        conflicts = {v: kinds for v, kinds in conflicts.items() if kinds}
        try:
            version = t.tx.commit()
        except ConcurrentModificationError as exc:  # any other exception fails the test
            kind = CONFLICT_KINDS.get(type(exc), type(exc).__name__)
            assert conflicts, f"false conflict: {where} raised {exc!r}; the model accepts it"
            first = min(conflicts)
            assert exc.winning_version == first and kind in conflicts[first], (
                f"{where} raised {exc!r} naming v{exc.winning_version}; the model's first "
                f"conflicting winner is v{first} with {sorted(conflicts[first])}"
            )
            assert t.tx.attempts == 1
            assert observer.update() == head, f"{where} failed but wrote a version"
            event(f"conflict: {kind} ({t.level})")
            if not objections:
                event(f"conflict by a per-commit rule only: {kind}")
            continue
        if not t.removes and not t.adds:
            # Nothing staged: commit() writes nothing and checks nothing.
            assert t.tx.no_op and version == r, where
            assert observer.update() == head
            continue
        assert not objections, f"non-serializable commit: {where}: {'; '.join(objections)}"
        assert version == head + 1 and not t.tx.no_op, (where, version)
        assert t.tx.attempts == (1 if head == r else 2), (where, t.tx.attempts)
        event(f"commit after {min(head - r, 2)}{'+' if head - r >= 2 else ''} winner(s)")
        head = t.version = version
        states[head] = apply(t, head, states[head - 1])
        committed.append(t)
        # The writer's table object moved, in memory, to its own commit: it must agree.
        assert t.table.version() == head
        assert live_files(t.table.files()) == partitions(states[head]), where

    # The table re-read from storage is the model's serial history.
    fresh = DeltaTable(root)
    assert fresh.version() == initial + len(committed) == head
    assert live_files(fresh.files()) == partitions(states[head])
    history = {entry["version"]: entry for entry in fresh.history()}
    assert sorted(history) == list(range(head + 1))
    for t in committed:
        info = history[t.version]
        expected = {
            "operation": t.operation,
            "readVersion": t.read_version,
            "isolationLevel": t.level,
            "isBlindAppend": t.is_blind_append,
        }
        assert {k: info.get(k) for k in expected} == expected, f"T{t.index} at v{t.version}"


def _case(level: str, seed: str, schedule: str, *specs: TxSpec) -> Scenario:
    return Scenario(tuple(seed), level, specs, tuple(int(c) for c in schedule))


def _write(read: Read, remove: tuple[int, ...] | str = (), adds: str = "") -> TxSpec:
    return TxSpec("write", read, remove, tuple(adds))


S, WS = SERIALIZABLE, WRITE_SERIALIZABLE


@SETTINGS
@given(scenarios())
# Write skew: each reads one partition and writes the other; the second must fail.
@example(_case(S, "01", "0101", _write(("eq", "0"), adds="1"), _write(("eq", "1"), adds="0")))
@example(_case(WS, "01", "0101", _write(("eq", "0"), adds="1"), _write(("eq", "1"), adds="0")))
# A blind append into what a delete read: conflicts under Serializable only.
@example(_case(S, "1", "0110", _write(("eq", "1"), "all"), _write(NONE, adds="1")))
@example(_case(WS, "1", "0110", _write(("eq", "1"), "all"), _write(NONE, adds="1")))
# Two deletes of the same file without reading it.
@example(_case(WS, "0", "0101", _write(NONE, "all"), _write(NONE, "all")))
# Compaction vs a delete of a file it compacts, and vs a blind append (no conflict).
@example(_case(S, "11", "0110", TxSpec("compact", ("eq", "1")), _write(("eq", "1"), (0,))))
@example(_case(S, "11", "0110", TxSpec("compact", ("eq", "1")), _write(NONE, adds="1")))
# Per-commit conflicts the serial model would accept: an add undone by a later winner, and a
# whole-table read vs the removal of a file blind-appended after it.
@example(
    _case(
        S, "", "011220",
        _write(("eq", "1"), adds="0"), _write(("eq", "2"), adds="1"), _write(("eq", "1"), "all"),
    )
)  # fmt: skip
@example(
    _case(
        WS, "", "011220",
        _write(ALL, adds="0"), _write(NONE, adds="1"), _write(("eq", "1"), "all"),
    )
)  # fmt: skip
def test_committed_histories_are_serializable(scenario: Scenario) -> None:
    run(scenario)
