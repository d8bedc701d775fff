"""In-commit timestamps and row tracking written by deltalog (log level, no Spark)."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import threading
import time
import traceback
from pathlib import Path
from typing import Any, NamedTuple

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from spawned import run_writers
from tableutil import one_row_add

from deltalog import DeltaTable
from deltalog.errors import MissingRowCountError, RowTrackingRewriteError, UnsupportedFeatureError
from deltalog.log.history import table_history
from deltalog.protocol.actions import Protocol

SCHEMA = pa.schema([("x", pa.int64())])
ICT = {"delta.enableInCommitTimestamps": "true"}
ROWS = {"delta.enableRowTracking": "true"}


def _commits(root: Path) -> list[list[dict[str, Any]]]:
    """Every commit's actions, parsed with json (not deltalog), in version order."""
    log = root / "_delta_log"
    names = sorted(p.name for p in log.iterdir() if p.name.endswith(".json"))
    assert names == [f"{v:020d}.json" for v in range(len(names))]
    return [[json.loads(line) for line in (log / n).read_text().splitlines()] for n in names]


def _add(path: str, rows: int) -> Any:
    return dataclasses.replace(one_row_add(path), stats=json.dumps({"numRecords": rows}))


def test_ict_commit_info_first_increasing_and_used_by_history(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), SCHEMA, configuration=ICT)
    assert "inCommitTimestamp" in (table.protocol().writer_features or [])
    assert table.protocol().min_writer_version == 7
    for i in range(3):
        tx = table.transaction()
        tx.add(_add(f"f{i}.parquet", 1))
        tx.commit()
    commits = _commits(root)
    icts = []
    for actions in commits:
        first = actions[0]
        assert "commitInfo" in first
        icts.append(first["commitInfo"]["inCommitTimestamp"])
        assert first["commitInfo"]["timestamp"] == icts[-1]
    assert icts == sorted(set(icts))  # strictly increasing
    history = table.history()
    assert [h["timestamp"] for h in reversed(history)] == icts
    assert [h["timestamp"] for h in reversed(table_history(str(root)))] == icts
    # enabled at creation: no enablement properties
    assert "delta.inCommitTimestampEnablementVersion" not in table.metadata().configuration
    # time travel by in-commit timestamp
    for version, ts in enumerate(icts):
        assert DeltaTable(str(root), timestamp=ts).version() == version
    assert DeltaTable(str(root)).snapshot.timestamp == icts[-1]


def test_enabling_ict_records_enablement_version_and_timestamp(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), SCHEMA)
    tx = table.transaction()
    tx.add(_add("a.parquet", 1))
    tx.commit()
    # Commits 0 and 1 a second apart: both can land within one millisecond, and time travel
    # by modification time then makes version 1's timestamp version 0's plus one.
    start_ns = time.time_ns() - 10_000_000_000
    for v in (0, 1):
        stamp = start_ns + v * 1_000_000_000
        os.utime(root / "_delta_log" / f"{v:020d}.json", ns=(stamp, stamp))
    old = table.protocol()
    tx = table.transaction("SET TBLPROPERTIES")
    tx.update_protocol(
        Protocol(1, 7, writer_features=sorted({"appendOnly", "invariants", "inCommitTimestamp"}))
    )
    tx.update_metadata(configuration=ICT)
    version = tx.commit()
    assert old.min_writer_version < 7
    info = _commits(root)[version][0]["commitInfo"]
    config = table.metadata().configuration
    assert config["delta.inCommitTimestampEnablementVersion"] == str(version)
    assert config["delta.inCommitTimestampEnablementTimestamp"] == str(info["inCommitTimestamp"])
    mtime = (root / "_delta_log" / f"{version - 1:020d}.json").stat().st_mtime_ns // 1_000_000
    assert info["inCommitTimestamp"] > mtime
    tx = table.transaction()
    tx.add(_add("b.parquet", 1))
    later = tx.commit()
    history = {h["version"]: h for h in table.history()}
    later_ict = _commits(root)[later][0]["commitInfo"]["inCommitTimestamp"]
    assert history[later]["timestamp"] == later_ict
    assert history[version]["timestamp"] == info["inCommitTimestamp"]
    assert DeltaTable(str(root), timestamp=later_ict).version() == later
    assert DeltaTable(str(root), timestamp=later_ict - 1).version() == version
    # before the enablement timestamp: file modification times
    assert DeltaTable(str(root), timestamp=mtime).version() == version - 1


def test_row_tracking_assigns_ids_and_advances_high_water_mark(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), SCHEMA, configuration=ROWS)
    features = set(table.protocol().writer_features or [])
    assert {"rowTracking", "domainMetadata"} <= features
    config = table.metadata().configuration
    assert config["delta.rowTracking.materializedRowIdColumnName"]
    tx = table.transaction()
    tx.add([_add("a.parquet", 3), _add("b.parquet", 5)])
    v1 = tx.commit()
    tx = table.transaction()
    tx.add(_add("c.parquet", 2))
    v2 = tx.commit()
    commits = _commits(root)
    adds = {a["add"]["path"]: a["add"] for c in commits for a in c if "add" in a}
    assert (adds["a.parquet"]["baseRowId"], adds["b.parquet"]["baseRowId"]) == (0, 3)
    assert adds["c.parquet"]["baseRowId"] == 8
    assert adds["a.parquet"]["defaultRowCommitVersion"] == v1
    assert adds["c.parquet"]["defaultRowCommitVersion"] == v2
    marks = [
        json.loads(a["domainMetadata"]["configuration"])["rowIdHighWaterMark"]
        for c in commits
        for a in c
        if "domainMetadata" in a and a["domainMetadata"]["domain"] == "delta.rowTracking"
    ]
    assert marks == [7, 9]
    # removes keep the row-tracking fields of the add
    tx = table.transaction("DELETE")
    tx.remove("b.parquet")
    v3 = tx.commit()
    remove = next(a["remove"] for a in _commits(root)[v3] if "remove" in a)
    assert (remove["baseRowId"], remove["defaultRowCommitVersion"]) == (3, v1)


def test_recommitted_file_keeps_its_row_ids(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), SCHEMA, configuration=ROWS)
    tx = table.transaction()
    tx.add([_add("a.parquet", 3), _add("b.parquet", 4)])
    first = tx.commit()
    # a DELETE with a deletion vector: remove b and add it again (with a DV, no baseRowId given)
    dv = {
        "storageType": "i",
        "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=",
        "offset": None,
        "sizeInBytes": 20,
        "cardinality": 1,
    }
    tx = table.transaction("DELETE")
    tx.remove("b.parquet")
    tx.add(dataclasses.replace(_add("b.parquet", 4), deletion_vector=dv))
    v = tx.commit()
    add = next(a["add"] for a in _commits(root)[v] if "add" in a)
    assert (add["baseRowId"], add["defaultRowCommitVersion"]) == (3, first)
    assert not any("domainMetadata" in a for a in _commits(root)[v])  # no fresh row ids


def test_row_tracking_refusals(tmp_path: Path) -> None:
    root = tmp_path / "t"
    table = DeltaTable.create(str(root), SCHEMA, configuration=ROWS)
    tx = table.transaction()
    tx.add(dataclasses.replace(one_row_add("nostats.parquet"), stats=None))
    with pytest.raises(MissingRowCountError) as info:
        tx.commit()
    assert info.value.path == "nostats.parquet"
    assert table.update() == 0
    tx = table.transaction()
    tx.add(_add("a.parquet", 2))
    tx.commit()
    tx = table.transaction("OPTIMIZE")
    tx.remove("a.parquet", data_change=False)
    tx.add(dataclasses.replace(_add("big.parquet", 2), data_change=False))
    with pytest.raises(RowTrackingRewriteError) as refused:
        tx.commit()
    assert refused.value.feature == "rowTracking"
    # enabling on an existing table needs a backfill: refused
    plain = DeltaTable.create(str(tmp_path / "plain"), SCHEMA)
    with pytest.raises(UnsupportedFeatureError) as enabling:
        plain.transaction().update_metadata(configuration=ROWS)
    assert enabling.value.feature == "rowTracking"


def test_racing_writers_keep_timestamps_increasing_and_row_ids_unique(tmp_path: Path) -> None:
    root = tmp_path / "t"
    DeltaTable.create(str(root), SCHEMA, configuration={**ICT, **ROWS})
    rounds, writers = 25, 2
    barrier = threading.Barrier(writers, timeout=60)
    attempts: list[int] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def writer(w: int) -> None:
        table = DeltaTable(str(root), background_checkpoints=False)
        try:
            for r in range(rounds):
                table.update()
                tx = table.transaction()
                tx.add(_add(f"w{w}-r{r}.parquet", 1 + (r + w) % 4))
                barrier.wait()  # both read the same version: one of them loses the race
                tx.commit()
                with lock:
                    attempts.append(tx.attempts)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(attempts) == rounds * writers
    assert sum(a > 1 for a in attempts) >= rounds  # every round one writer retried
    commits = _commits(root)
    icts = [c[0]["commitInfo"]["inCommitTimestamp"] for c in commits]
    assert all(b > a for a, b in itertools.pairwise(icts))
    ranges = []
    for version, actions in enumerate(commits):
        for a in actions:
            if "add" in a:
                add = a["add"]
                n = json.loads(add["stats"])["numRecords"]
                ranges.append((add["baseRowId"], add["baseRowId"] + n))
                assert add["defaultRowCommitVersion"] == version
    ranges.sort()
    assert all(prev[1] <= nxt[0] for prev, nxt in itertools.pairwise(ranges))
    final = DeltaTable(str(root))
    mark = json.loads(final.snapshot.domains["delta.rowTracking"].configuration)
    assert mark["rowIdHighWaterMark"] == ranges[-1][1] - 1
    report = final.check(data_files=False)  # the checksums written while racing agree
    assert report.ok, report.findings
    assert report.checked.get("checksums", 0) >= rounds


class RaceReport(NamedTuple):
    """What one racing writer process sends back."""

    writer: int
    attempts: list[int]
    crashed: str | None


def _race_writer(root: str, writer: int, rounds: int, barrier: Any, results: Any) -> None:
    attempts: list[int] = []
    crashed = None
    try:
        table = DeltaTable(root, background_checkpoints=False)
        for r in range(rounds):
            table.update()
            tx = table.transaction()
            tx.add(_add(f"p{writer}-r{r}.parquet", 1 + (r * 7 + writer) % 5))
            barrier.wait(60)  # all read the same version: all but one lose the race
            tx.commit()
            attempts.append(tx.attempts)
    except BaseException:
        crashed = traceback.format_exc()
        barrier.abort()
    results.put(RaceReport(writer, attempts, crashed))


def test_racing_processes_keep_timestamps_increasing_and_row_ids_unique(tmp_path: Path) -> None:
    root = tmp_path / "t"
    DeltaTable.create(str(root), SCHEMA, configuration={**ICT, **ROWS})
    writers, rounds = 3, 15
    reports = run_writers(
        _race_writer, lambda w, b, q: (str(root), w, rounds, b, q), writers, timeout=300
    )
    attempts = [a for r in reports for a in r.attempts]
    assert len(attempts) == writers * rounds
    assert sum(a > 1 for a in attempts) >= rounds * (writers - 1)
    commits = _commits(root)
    assert len(commits) == 1 + writers * rounds
    icts = [c[0]["commitInfo"]["inCommitTimestamp"] for c in commits]
    assert all(b > a for a, b in itertools.pairwise(icts))
    ranges = sorted(
        (a["add"]["baseRowId"], a["add"]["baseRowId"] + json.loads(a["add"]["stats"])["numRecords"])
        for c in commits
        for a in c
        if "add" in a
    )
    assert all(p[1] <= n[0] for p, n in itertools.pairwise(ranges))
    assert DeltaTable(str(root)).check(data_files=False).ok


def test_spark_write_creating_a_table_stamps_and_assigns_the_first_commit(
    spark: Any, tmp_path: Path
) -> None:
    import deltalog.spark

    root = tmp_path / "t"
    frame = spark.createDataFrame([(1,), (2,), (3,)], "x long")
    deltalog.spark.write(frame, str(root), configuration={**ICT, **ROWS})
    deltalog.spark.write(frame, str(root), mode="append")
    commits = _commits(root)
    icts = [c[0]["commitInfo"]["inCommitTimestamp"] for c in commits]
    assert len(icts) == 2 and icts[1] > icts[0]
    ranges = sorted(
        (a["add"]["baseRowId"], a["add"]["baseRowId"] + json.loads(a["add"]["stats"])["numRecords"])
        for c in commits
        for a in c
        if "add" in a
    )
    assert ranges[0][0] == 0 and ranges[-1][1] == 6
    assert all(p[1] == n[0] for p, n in itertools.pairwise(ranges))


def test_optimize_refuses_a_row_tracking_table_before_writing(spark: Any, tmp_path: Path) -> None:
    from deltalog.spark import optimize

    root = tmp_path / "t"
    table = DeltaTable.create(str(root), SCHEMA, configuration=ROWS)
    for i in range(2):
        pq.write_table(pa.table({"x": pa.array([i], pa.int64())}), root / f"f{i}.parquet")
        table.append_files([f"f{i}.parquet"])
    before = sorted(p.name for p in root.iterdir())
    with pytest.raises(RowTrackingRewriteError) as info:
        optimize(spark, str(root))
    assert info.value.feature == "rowTracking"
    assert sorted(p.name for p in root.iterdir()) == before
    assert DeltaTable(str(root)).version() == 2
