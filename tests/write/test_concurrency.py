"""Acceptance: writers in separate processes commit to one local table and no commit is lost.

Every writer is its own process with its own ``DeltaTable(root)`` and the default
``RetryPolicy``. The start method is ``spawn``: the parent has already run pyarrow (creating the
table), whose thread pools do not survive ``fork``. The writers wait on one barrier, then commit
through the public transaction API as fast as they can. Each reports, per landed commit, the
version, the attempts it took, the version it read, the paths it read (and removed) and the path
it added; per failed commit, the exception's class. The parent checks those reports against the
``_delta_log`` JSON files (parsed with ``json``, not deltalog) and against a fresh
``DeltaTable(root)``, which replays from the checkpoints the writers wrote while racing.
"""

from __future__ import annotations

import json
import os
import re
import traceback
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pytest
from spawned import run_writers

from deltalog import AddFile, ConcurrentAppendError, ConcurrentDeleteReadError, DeltaTable, col

BARRIER_TIMEOUT = 60.0
SCHEMA = pa.schema([("x", pa.int64()), ("p", pa.string())])
_COMMIT_FILE = re.compile(r"^(\d{20})\.json$")


class Commit(NamedTuple):
    """One commit a writer landed."""

    writer: int
    seq: int
    version: int
    attempts: int
    read_version: int
    read: tuple[str, ...]
    added: tuple[str, ...]


class Failure(NamedTuple):
    """One commit that raised: the exception's class (``module.qualname``) and details."""

    writer: int
    seq: int
    error: str
    message: str
    read_version: int
    winning_version: int | None


class Report(NamedTuple):
    """Everything one writer process sends back."""

    writer: int
    commits: list[Commit]
    failures: list[Failure]
    crashed: str | None


#: A writer's commit loop: (table, writer, barrier, rounds, commits, failures) -> None.
Body = Callable[[DeltaTable, int, Any, int, list[Commit], list[Failure]], None]


def _qualname(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _file(writer: int, seq: int, partition: str) -> AddFile:
    return AddFile(
        path=f"p={partition}/w{writer}-{seq:05d}.parquet",
        partition_values={"p": partition},
        size=1,
        modification_time=0,
        data_change=True,
        stats='{"numRecords":1}',
    )


def _seed(partition: int) -> AddFile:
    return AddFile(f"p={partition}/seed.parquet", {"p": str(partition)}, 1, 0, True)


def _failure(writer: int, seq: int, read_version: int, exc: Exception) -> Failure:
    winning = getattr(exc, "winning_version", None)
    return Failure(writer, seq, _qualname(type(exc)), str(exc)[:300], read_version, winning)


def _summary(failures: list[Failure]) -> str:
    kinds = Counter(f.error for f in failures)
    return f"{len(failures)} failed commits {dict(kinds)}; first: {failures[:1]}"


# ---------------------------------------------------------------------- writer processes
def _blind_appends(
    table: DeltaTable,
    writer: int,
    barrier: Any,
    rounds: int,
    commits: list[Commit],
    failures: list[Failure],
) -> None:
    """``rounds`` blind appends of one new file each (into partition ``writer``)."""
    part = str(writer)
    for seq in range(rounds):
        add = _file(writer, seq, part)
        tx = table.transaction("WRITE", parameters={"mode": "Append"})
        try:
            with tx:
                tx.add(add)
        except Exception as exc:
            failures.append(_failure(writer, seq, tx.read_version, exc))
            continue
        assert tx.version is not None
        commits.append(
            Commit(writer, seq, tx.version, tx.attempts, tx.read_version, (), (add.path,))
        )


def _rewrite(
    table: DeltaTable,
    writer: int,
    seq: int,
    part: str,
    commits: list[Commit],
    failures: list[Failure],
) -> None:
    """One read-modify-write: read partition ``part``, remove what was read, add a new file."""
    add = _file(writer, seq, part)
    tx = table.transaction("WRITE", parameters={"mode": "Overwrite", "partition": part})
    read: tuple[str, ...] = ()
    try:
        with tx:
            old = tx.read_files(col("p") == part)
            read = tuple(old.column("path").to_pylist())
            tx.remove(old)
            tx.add(add)
    except Exception as exc:
        failures.append(_failure(writer, seq, tx.read_version, exc))
        return
    assert tx.version is not None
    commits.append(Commit(writer, seq, tx.version, tx.attempts, tx.read_version, read, (add.path,)))


def _own_partition_rewrites(
    table: DeltaTable,
    writer: int,
    barrier: Any,
    rounds: int,
    commits: list[Commit],
    failures: list[Failure],
) -> None:
    """Rewrite partition ``writer`` ``rounds`` times, never re-listing the log.

    Only this writer touches the partition, so the table object's snapshot (advanced by each of
    its commits) always holds the partition's current file, and every commit the others landed
    since must pass the conflict check.
    """
    for seq in range(rounds):
        _rewrite(table, writer, seq, str(writer), commits, failures)


def _shared_partition_rewrites(
    table: DeltaTable,
    writer: int,
    barrier: Any,
    rounds: int,
    commits: list[Commit],
    failures: list[Failure],
) -> None:
    """Each round: wait for all writers, re-list, rewrite partition 0 (so they collide)."""
    for seq in range(rounds):
        barrier.wait(timeout=BARRIER_TIMEOUT)
        table.update()
        _rewrite(table, writer, seq, "0", commits, failures)


def _child(body: Body, root: str, writer: int, barrier: Any, results: Any, rounds: int) -> None:
    """Writer process entry (module level, so that ``spawn`` can import it)."""
    commits: list[Commit] = []
    failures: list[Failure] = []
    crashed = None
    try:
        table = DeltaTable(root)
        barrier.wait(timeout=BARRIER_TIMEOUT)
        body(table, writer, barrier, rounds, commits, failures)
    except BaseException:  # reported to the parent; aborting releases writers at the barrier
        barrier.abort()
        crashed = traceback.format_exc()
    results.put(Report(writer, commits, failures, crashed))


def _run(body: Body, root: str, writers: int, rounds: int, timeout: float) -> list[Report]:
    """Run ``body`` in ``writers`` processes that start together; their reports, by writer."""
    return run_writers(
        _child,
        lambda w, barrier, results: (body, root, w, barrier, results, rounds),
        writers,
        timeout,
    )


# ---------------------------------------------------------------------- reading the result
def _log(root: str) -> dict[int, list[dict[str, Any]]]:
    """Every commit file's actions, by version, parsed with ``json`` (not deltalog)."""
    log_dir = Path(root) / "_delta_log"
    out: dict[int, list[dict[str, Any]]] = {}
    for name in os.listdir(log_dir):
        m = _COMMIT_FILE.match(name)
        if m:
            text = (log_dir / name).read_text()
            out[int(m.group(1))] = [json.loads(line) for line in text.splitlines() if line]
    return out


def _paths(actions: list[dict[str, Any]], kind: str) -> list[str]:
    return [a[kind]["path"] for a in actions if kind in a]


def _replay(log: dict[int, list[dict[str, Any]]]) -> dict[str, str]:
    """Live path -> partition ``p``, replaying the JSON commits in version order."""
    live: dict[str, str] = {}
    for version in sorted(log):
        for action in log[version]:
            if "remove" in action:
                live.pop(action["remove"]["path"], None)
            elif "add" in action:
                live[action["add"]["path"]] = action["add"]["partitionValues"]["p"]
    return live


def _live(root: str) -> tuple[int, dict[str, str]]:
    """A freshly opened table's version and live files (path -> partition ``p``)."""
    table = DeltaTable(root)
    files = table.files(with_stats=False)
    paths = files.column("path").to_pylist()
    parts = [dict(pv)["p"] for pv in files.column("partition_values").to_pylist()]
    assert len(set(paths)) == len(paths), "a file is live more than once"
    return table.version(), dict(zip(paths, parts, strict=True))


def _new_table(root: str, seed_partitions: int = 0) -> int:
    """Create the table; with ``seed_partitions``, commit ``p=<i>/seed.parquet`` for each i."""
    table = DeltaTable.create(root, SCHEMA, partition_by=["p"])
    if seed_partitions:
        with table.transaction("WRITE") as tx:
            tx.add([_seed(i) for i in range(seed_partitions)])
    return table.version()


def _check_against_log(
    root: str, commits: list[Commit], first: int, last: int, *, blind: bool
) -> dict[int, list[dict[str, Any]]]:
    """Versions ``first..last`` hold exactly the reported commits, each as reported."""
    log = _log(root)
    assert sorted(log) == list(range(last + 1)), f"commit files are not exactly 0..{last}"
    versions = sorted(c.version for c in commits)
    assert versions == list(range(first, last + 1)), (
        f"reported versions are not one commit per version {first}..{last}: "
        f"{len(versions)} reports, {len(set(versions))} distinct"
    )
    for c in commits:
        actions = log[c.version]
        assert _paths(actions, "add") == list(c.added), f"version {c.version}: adds differ"
        assert sorted(_paths(actions, "remove")) == sorted(c.read), (
            f"version {c.version}: removes differ from what writer {c.writer} read"
        )
        (info,) = [a["commitInfo"] for a in actions if "commitInfo" in a]
        assert info["readVersion"] == c.read_version, f"version {c.version}: readVersion"
        assert info["isBlindAppend"] is blind, f"version {c.version}: isBlindAppend"
        assert 1 <= c.attempts <= c.version - c.read_version, (
            f"version {c.version}: {c.attempts} attempts from read version {c.read_version}"
        )
    return log


# ---------------------------------------------------------------------- tests
def _check_blind_appends(root: str, reports: list[Report], rounds: int) -> None:
    failures = [f for r in reports for f in r.failures]
    assert not failures, _summary(failures)
    commits = [c for r in reports for c in r.commits]
    total = len(reports) * rounds
    log = _check_against_log(root, commits, 1, total, blind=True)

    expected = {
        _file(r.writer, s, str(r.writer)).path: str(r.writer)
        for r in reports
        for s in range(rounds)
    }
    assert _replay(log) == expected
    version, live = _live(root)
    assert version == total
    assert live == expected, (
        f"{len(expected.keys() - live.keys())} missing, {len(live.keys() - expected.keys())} extra"
    )
    # The writers did race: some commit lost a version and landed at a later one.
    assert any(c.attempts > 1 for c in commits), "no commit ever lost a race; nothing was tested"


@pytest.mark.timeout(120)
def test_two_processes_blind_append_1000_commits_each(tmp_path: Path) -> None:
    root = str(tmp_path / "table")
    assert _new_table(root) == 0
    reports = _run(_blind_appends, root, writers=2, rounds=1000, timeout=110)
    _check_blind_appends(root, reports, rounds=1000)


@pytest.mark.timeout(120)
def test_eight_processes_blind_append_250_commits_each(tmp_path: Path) -> None:
    root = str(tmp_path / "table")
    assert _new_table(root) == 0
    reports = _run(_blind_appends, root, writers=8, rounds=250, timeout=110)
    _check_blind_appends(root, reports, rounds=250)


@pytest.mark.timeout(90)
def test_eight_processes_rewrite_disjoint_partitions_without_conflict(tmp_path: Path) -> None:
    writers, rounds = 8, 30
    root = str(tmp_path / "table")
    seed = _new_table(root, seed_partitions=writers)
    reports = _run(_own_partition_rewrites, root, writers, rounds, timeout=80)

    failures = [f for r in reports for f in r.failures]
    assert not failures, _summary(failures)
    for r in reports:
        previous = _seed(r.writer).path
        for c in r.commits:
            # Each rewrite saw exactly the file its writer's previous rewrite left there.
            assert c.read == (previous,), f"writer {r.writer} round {c.seq} read {c.read}"
            previous = c.added[0]
    commits = [c for r in reports for c in r.commits]
    total = writers * rounds
    log = _check_against_log(root, commits, seed + 1, seed + total, blind=False)

    expected = {r.commits[-1].added[0]: str(r.writer) for r in reports}
    assert _replay(log) == expected
    version, live = _live(root)
    assert version == seed + total
    assert live == expected
    # Commits landed on top of other writers' commits (checked, found disjoint, retried).
    assert any(c.attempts > 1 for c in commits), "no commit ever lost a race; nothing was tested"


@pytest.mark.timeout(90)
def test_four_processes_rewrite_one_partition_conflicts_are_named_and_nothing_is_lost(
    tmp_path: Path,
) -> None:
    writers, rounds = 4, 25
    root = str(tmp_path / "table")
    seed = _new_table(root, seed_partitions=1)
    reports = _run(_shared_partition_rewrites, root, writers, rounds, timeout=80)

    commits = [c for r in reports for c in r.commits]
    failures = [f for r in reports for f in r.failures]
    allowed = {_qualname(ConcurrentAppendError), _qualname(ConcurrentDeleteReadError)}
    unexpected = [f for f in failures if f.error not in allowed]
    assert not unexpected, _summary(unexpected)
    version, live = _live(root)
    # Commits in the log + failed attempts = attempts (a failed attempt wrote nothing).
    assert (version - seed) + len(failures) == writers * rounds, (
        f"{version - seed} commits in the log + {len(failures)} failures != "
        f"{writers * rounds} attempts"
    )
    log = _check_against_log(root, commits, seed + 1, version, blind=False)

    landed = {c.version: c for c in commits}
    for c in commits:
        # Every commit rewrites partition 0, so one can land only right on the version it read.
        assert (c.read_version, c.attempts) == (c.version - 1, 1), f"landed over a conflict: {c}"
    for f in failures:
        # The first commit after the version a failed attempt read is the one it conflicts with.
        assert f.winning_version == f.read_version + 1, f
    # Nothing is lost: every landed add is live, or was removed by one later commit that read it.
    removed_by: dict[str, list[int]] = {}
    for c in commits:
        for path in c.read:
            removed_by.setdefault(path, []).append(c.version)
    for c in commits:
        (path,) = c.added
        if path not in live:
            assert len(removed_by.get(path, [])) == 1, f"{path}: removed by {removed_by.get(path)}"
            assert removed_by[path][0] > c.version, f"{path} removed before it was added"
    # Serial replay of the landed commits in version order: each read (and removed) exactly
    # what the one before left in partition 0; the last one's file is all that is live.
    state = {_seed(0).path}
    for v in sorted(landed):
        assert set(landed[v].read) == state, f"version {v} read {landed[v].read}, not {state}"
        state = set(landed[v].added)
    assert _replay(log) == dict.fromkeys(state, "0")
    assert live == {landed[version].added[0]: "0"}
    # The race was real: attempts did conflict.
    assert failures, "no attempt ever conflicted; the conflict path was not exercised"
