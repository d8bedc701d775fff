from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from tableutil import log_names, write_commit, write_parquet

from deltalog import (
    DeltaTable,
    InvalidPathError,
    InvalidPropertyError,
    MalformedCommitError,
    MissingMetadataError,
    MissingProtocolError,
    PartitionValueError,
    SchemaMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TimestampOutOfRangeError,
    UnsupportedFeatureError,
    VersionGapError,
    VersionNotFoundError,
)
from deltalog.log.file_actions import FILES_SCHEMA
from deltalog.protocol.partitions import hive_partition_dir
from deltalog.stats.predicate_input import as_predicate
from deltalog.stats.predicates import col
from deltalog.table import AppendOnlyError, DuplicateFileError

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.int32())])
DATA = pa.table({"id": pa.array([1, 2, None], pa.int64()), "name": ["a", None, "c"]})


@pytest.fixture
def table(tmp_path: Path) -> DeltaTable:
    return DeltaTable.create(str(tmp_path), SCHEMA, partition_by=["part"])


def _file(root: str, part: str | None, name: str = "f.parquet", data: pa.Table = DATA) -> str:
    return write_parquet(root, f"{hive_partition_dir({'part': part})}/{name}", data)


def test_create_append_read(table: DeltaTable) -> None:
    root = table.uri
    assert table.version() == 0
    assert table.protocol().min_reader_version == 1 and table.protocol().min_writer_version == 2
    v = table.append_files([_file(root, "1"), _file(root, None, "g.parquet")])
    assert v == 1
    reopened = DeltaTable(root)
    assert reopened.version() == 1
    files = reopened.files().to_pylist()
    assert sorted(dict(f["partition_values"])["part"] or "null" for f in files) == ["1", "null"]
    stats = orjson.loads(files[0]["stats"])
    assert stats == {
        "numRecords": 3,
        "minValues": {"id": 1, "name": "a"},
        "maxValues": {"id": 2, "name": "c"},
        "nullCount": {"id": 1, "name": 1},
    }
    assert reopened.schema().names == ["id", "name", "part"]
    assert reopened.metadata().partition_columns == ["part"]


def test_in_memory_snapshot_advances_like_a_replay(table: DeltaTable) -> None:
    root = table.uri
    for i in range(5):
        table.append_files([_file(root, str(i))])
    table.overwrite_files([_file(root, "9")])
    fresh = DeltaTable(root)
    assert table.version() == fresh.version() == 6
    assert table.files().to_pylist() == fresh.files().to_pylist()
    assert table.snapshot.tombstones.num_rows == fresh.snapshot.tombstones.num_rows == 5


def test_time_travel_by_version_and_timestamp(table: DeltaTable) -> None:
    root = table.uri
    table.append_files([_file(root, "1")])
    table.append_files([_file(root, "2")])
    log = Path(root) / "_delta_log"
    for v, ts in enumerate((1_000_000, 2_000_000, 3_000_000)):
        os.utime(log / f"{v:020d}.json", (ts, ts))  # seconds
    assert DeltaTable(root, version=1).files().num_rows == 1
    assert DeltaTable(root, timestamp=2_500_000_000).version() == 1
    assert DeltaTable(root, timestamp=3_000_000_000).version() == 2
    assert DeltaTable(root, timestamp=dt.datetime.fromtimestamp(2_000_000, dt.UTC)).version() == 1
    with pytest.raises(TimestampOutOfRangeError):
        DeltaTable(root, timestamp=999_999_000)
    with pytest.raises(VersionNotFoundError):
        DeltaTable(root, version=3)


def test_time_travel_after_the_latest_commit_is_refused_as_delta_spark_does(
    table: DeltaTable,
) -> None:
    root = table.uri
    table.append_files([_file(root, "1")])
    log = Path(root) / "_delta_log"
    for v, ts in enumerate((1_000_000, 2_000_000)):
        os.utime(log / f"{v:020d}.json", (ts, ts))
    assert DeltaTable(root, timestamp=2_000_000_000).version() == 1  # exactly the latest
    with pytest.raises(TimestampOutOfRangeError, match="after the latest commit"):
        DeltaTable(root, timestamp=2_000_000_001)


def test_history_newest_first(table: DeltaTable) -> None:
    table.append_files([_file(table.uri, "1")])
    history = table.history()
    assert [h["version"] for h in history] == [1, 0]
    assert history[0]["operation"] == "WRITE" and history[0]["isBlindAppend"] is True
    assert history[0]["readVersion"] == 0
    assert history[1]["operation"] == "CREATE TABLE"
    assert table.history(limit=1)[0]["version"] == 1


def test_history_timestamps_are_commit_file_times(table: DeltaTable) -> None:
    # As DESCRIBE HISTORY and time travel: the commit files' modification times, made strictly
    # increasing; the writer's clock (commitInfo.timestamp) is commitTimestamp.
    table.append_files([_file(table.uri, "1")])
    log = Path(table.uri) / "_delta_log"
    os.utime(log / f"{0:020d}.json", (2_000_000, 2_000_000))  # seconds
    os.utime(log / f"{1:020d}.json", (1_000_000, 1_000_000))  # earlier than version 0
    history = table.history()
    assert [(h["version"], h["timestamp"]) for h in history] == [
        (1, 2_000_000_001),
        (0, 2_000_000_000),
    ]
    for entry in history:
        line = (log / f"{entry['version']:020d}.json").read_bytes().splitlines()[0]
        assert entry["commitTimestamp"] == orjson.loads(line)["commitInfo"]["timestamp"]
        assert DeltaTable(table.uri, timestamp=entry["timestamp"]).version() == entry["version"]


def test_overwrite_with_where_records_the_predicate_as_sql_text(table: DeltaTable) -> None:
    table.append_files([_file(table.uri, "1"), _file(table.uri, "2")])
    table.overwrite_files([_file(table.uri, "1", "g.parquet")], where="part = 1")
    parameters = table.history(1)[0]["operationParameters"]
    assert parameters["mode"] == "Overwrite"
    # SQL text, as delta-spark 3.x records it (not a JSON list of it).
    assert parameters["predicate"] == str(as_predicate("part = 1"))
    assert not parameters["predicate"].startswith("[")
    assert sorted(table.files().column("path").to_pylist()) == [
        "part=1/g.parquet",
        "part=2/f.parquet",
    ]


def test_create_twice_is_refused(table: DeltaTable) -> None:
    with pytest.raises(TableAlreadyExistsError):
        DeltaTable.create(table.uri, SCHEMA)
    assert log_names(table.uri) == ["00000000000000000000.json"]


def test_new_table_gets_lowest_protocol(tmp_path: Path) -> None:
    ntz = DeltaTable.create(str(tmp_path / "a"), pa.schema([("t", pa.timestamp("us"))]))
    p = ntz.protocol()
    assert (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert p.reader_features == ["timestampNtz"] and p.writer_features == ["timestampNtz"]
    cdf = DeltaTable.create(
        str(tmp_path / "b"), SCHEMA, configuration={"delta.enableChangeDataFeed": "true"}
    )
    assert (cdf.protocol().min_reader_version, cdf.protocol().min_writer_version) == (1, 4)
    mapped = DeltaTable.create(
        str(tmp_path / "m"), SCHEMA, configuration={"delta.columnMapping.mode": "name"}
    )
    assert (mapped.protocol().min_reader_version, mapped.protocol().min_writer_version) == (2, 5)
    with pytest.raises(UnsupportedFeatureError) as info:
        DeltaTable.create(
            str(tmp_path / "c"), SCHEMA, configuration={"delta.enableIcebergCompatV1": "true"}
        )
    assert info.value.feature == "icebergCompatV1"
    assert not (tmp_path / "c" / "_delta_log").exists()


# ----------------------------------------------------------------------------- bad input


def _assert_unchanged(table: DeltaTable, version: int) -> None:
    assert DeltaTable(table.uri).version() == version
    assert [n for n in log_names(table.uri) if not n.startswith(".")] == [
        f"{v:020d}.json" for v in range(version + 1)
    ]


@pytest.mark.parametrize(
    ("data", "error", "needle"),
    [
        (pa.table({"id": pa.array([1], pa.int32())}), SchemaMismatchError, "'id'"),
        (pa.table({"other": [1]}), SchemaMismatchError, "not in the table"),
        (
            pa.table({"id": [1], "part": pa.array([1], pa.int32())}),
            SchemaMismatchError,
            "partition column",
        ),
    ],
)
def test_mismatched_files_are_refused(
    table: DeltaTable, data: pa.Table, error: type[Exception], needle: str
) -> None:
    good = _file(table.uri, "1")
    bad = _file(table.uri, "2", "bad.parquet", data)
    with pytest.raises(error, match=needle):
        table.append_files([good, bad])
    _assert_unchanged(table, 0)


def test_not_parquet_is_refused(table: DeltaTable) -> None:
    rel = f"{hive_partition_dir({'part': '1'})}/junk.parquet"
    (Path(table.uri) / rel).parent.mkdir(parents=True)
    (Path(table.uri) / rel).write_bytes(b"not parquet")
    with pytest.raises(SchemaMismatchError, match="not a readable Parquet"):
        table.append_files([rel])
    _assert_unchanged(table, 0)


def test_non_nullable_column_with_nulls_is_refused(tmp_path: Path) -> None:
    schema = pa.schema([pa.field("id", pa.int64(), nullable=False)])
    t = DeltaTable.create(str(tmp_path), schema)
    rel = write_parquet(tmp_path, "f.parquet", pa.table({"id": pa.array([1, None], pa.int64())}))
    with pytest.raises(SchemaMismatchError, match="non-nullable"):
        t.append_files([rel])
    _assert_unchanged(t, 0)


@pytest.mark.parametrize("rel", ["part=abc/f.parquet", "f.parquet", "other=1/f.parquet"])
def test_bad_partition_directories_are_refused(table: DeltaTable, rel: str) -> None:
    write_parquet(table.uri, rel, DATA)
    with pytest.raises(PartitionValueError):
        table.append_files([rel])
    _assert_unchanged(table, 0)


@pytest.mark.parametrize("given", ["../outside.parquet", "part=1/../../x.parquet"])
def test_paths_escaping_the_table_are_refused(table: DeltaTable, given: str) -> None:
    with pytest.raises(InvalidPathError):
        table.append_files([given])
    _assert_unchanged(table, 0)


def test_duplicates_are_refused(table: DeltaTable) -> None:
    rel = _file(table.uri, "1")
    with pytest.raises(DuplicateFileError):
        table.append_files([rel, rel])
    table.append_files([rel])
    with pytest.raises(DuplicateFileError):
        table.append_files([rel])
    _assert_unchanged(table, 1)


def test_absolute_paths_inside_the_table_become_relative(table: DeltaTable) -> None:
    rel = _file(table.uri, "1")
    table.append_files([f"file://{table.uri}/{rel}"])
    assert table.files().column("path").to_pylist() == ["part=1/f.parquet"]


def test_append_only_tables_refuse_overwrite(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path), SCHEMA, configuration={"delta.appendOnly": "true"})
    rel = write_parquet(tmp_path, "f.parquet", DATA)
    t.append_files([rel])
    with pytest.raises(AppendOnlyError):
        t.overwrite_files([write_parquet(tmp_path, "g.parquet", DATA)])
    _assert_unchanged(t, 1)


@pytest.mark.parametrize(
    ("protocol", "config", "feature"),
    [
        (
            {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": [],
                "writerFeatures": ["geospatial"],
            },
            {},
            "geospatial",
        ),
        (
            {
                "minReaderVersion": 3,
                "minWriterVersion": 7,
                "readerFeatures": [],
                "writerFeatures": ["icebergCompatV1"],
            },
            {},
            "icebergCompatV1",
        ),
        (
            {"minReaderVersion": 1, "minWriterVersion": 3},
            {"delta.constraints.positive": "id > 0"},
            "checkConstraints",
        ),
        ({"minReaderVersion": 1, "minWriterVersion": 8}, {}, "writerVersion=8"),
    ],
)
def test_unsupported_writer_features_are_refused(
    tmp_path: Path, protocol: dict[str, object], config: dict[str, str], feature: str
) -> None:
    meta = {
        "id": "x",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,'
        '"metadata":{}}]}',
        "partitionColumns": [],
        "configuration": config,
    }
    write_commit(
        tmp_path, 0, [orjson.dumps({"protocol": protocol}), orjson.dumps({"metaData": meta})]
    )
    t = DeltaTable(str(tmp_path))  # reading is fine
    rel = write_parquet(tmp_path, "f.parquet", pa.table({"id": [1]}))
    with pytest.raises(UnsupportedFeatureError) as info:
        t.append_files([rel])
    assert info.value.feature == feature and info.value.operation == "write"
    assert feature in str(info.value)
    _assert_unchanged(t, 0)


def test_unknown_reader_feature_is_refused_on_read(tmp_path: Path) -> None:
    proto = {
        "minReaderVersion": 3,
        "minWriterVersion": 7,
        "readerFeatures": ["fancyNew"],
        "writerFeatures": ["fancyNew"],
    }
    meta = {
        "id": "x",
        "format": {"provider": "parquet"},
        "schemaString": '{"type":"struct","fields":[]}',
        "partitionColumns": [],
        "configuration": {},
    }
    write_commit(tmp_path, 0, [orjson.dumps({"protocol": proto}), orjson.dumps({"metaData": meta})])
    with pytest.raises(UnsupportedFeatureError, match="fancyNew"):
        DeltaTable(str(tmp_path))


# ----------------------------------------------------------------------- broken logs

PROTO = b'{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}'
META = (
    b'{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":'
    b'"{\\"type\\":\\"struct\\",\\"fields\\":[]}","partitionColumns":[],"configuration":{}}}'
)


def test_missing_log_is_table_not_found(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        DeltaTable(str(tmp_path))
    (tmp_path / "_delta_log").mkdir()
    with pytest.raises(TableNotFoundError):
        DeltaTable(str(tmp_path))


def test_version_gap(tmp_path: Path) -> None:
    write_commit(tmp_path, 0, [PROTO, META])
    write_commit(tmp_path, 2, [b'{"commitInfo":{}}'])
    with pytest.raises(VersionGapError) as info:
        DeltaTable(str(tmp_path))
    assert info.value.version == 1
    assert DeltaTable(str(tmp_path), version=0).version() == 0


@pytest.mark.parametrize(
    ("lines", "error"),
    [
        ([META], MissingProtocolError),
        ([PROTO], MissingMetadataError),
        ([PROTO, META, b"{oops"], MalformedCommitError),
        ([PROTO, META, b'{"commitInfo":{"x":"\xc3\x28"}}'], MalformedCommitError),
    ],
)
def test_broken_first_commit(tmp_path: Path, lines: list[bytes], error: type[Exception]) -> None:
    write_commit(tmp_path, 0, lines)
    with pytest.raises(error):
        DeltaTable(str(tmp_path))


def test_protocol_at_version_one_does_not_excuse_version_zero(tmp_path: Path) -> None:
    write_commit(tmp_path, 0, [META])
    write_commit(tmp_path, 1, [PROTO])
    with pytest.raises(MissingProtocolError):
        DeltaTable(str(tmp_path))


def test_memory_tables(tmp_path: Path) -> None:
    uri = f"memory://tests/{tmp_path.name}"
    created = DeltaTable.create(uri, SCHEMA, partition_by=["part"])
    assert created.version() == 0
    assert DeltaTable(uri).version() == 0
    with pytest.raises(TableAlreadyExistsError):
        DeltaTable.create(uri, SCHEMA)


def test_file_uris_are_decoded_locations(table: DeltaTable) -> None:
    rel = _file(table.uri, "7", "a b%c.parquet")
    table.append_files([rel])
    assert table.files().column("path").to_pylist() == ["part=7/a%20b%25c.parquet"]
    (uri,) = table.file_uris()
    assert uri == f"{table.uri}/{rel}"
    assert os.path.exists(uri)


def test_listing_without_stats_never_loads_them(tmp_path: Path) -> None:
    t = DeltaTable.create(str(tmp_path), SCHEMA, partition_by=["part"])
    for i in range(3):
        t.append_files([_file(str(tmp_path), str(i))])
    t.checkpoint()
    t.append_files([_file(str(tmp_path), "9")])
    fresh = DeltaTable(str(tmp_path))
    listed = fresh.files(with_stats=False)
    assert "stats" not in listed.column_names and "_cp_row" not in listed.column_names
    assert "files" not in fresh.snapshot.__dict__  # the cached full table was not built
    full = fresh.files()
    assert full.column_names == FILES_SCHEMA.names
    assert listed.column_names == [n for n in FILES_SCHEMA.names if n != "stats"]
    assert all(orjson.loads(s)["numRecords"] == 3 for s in full.column("stats").to_pylist())
    assert sorted(fresh.file_uris()) == sorted(
        f"{tmp_path}/{p}" for p in listed.column("path").to_pylist()
    )


def test_lazy_snapshots_merge_correctly_from_many_threads(tmp_path: Path) -> None:
    """Snapshots along one chain of lazily advanced commits, read from threads at once."""
    import threading

    from deltalog import AddFile, RemoveFile, Snapshot

    def add(name: str) -> AddFile:
        return AddFile(
            path=f"part=1/{name}", partition_values={"part": "1"}, size=1,
            modification_time=0, data_change=True,
        )  # fmt: skip

    for round_ in range(10):
        root = str(tmp_path / f"t{round_}")
        DeltaTable.create(
            root, SCHEMA, partition_by=["part"],
            configuration={"delta.checkpointInterval": "1000000"},
        )  # fmt: skip
        table = DeltaTable(root)
        snapshots, expected, live = [], [], set()
        for i in range(40):
            with table.transaction() as tx:
                tx.add(add(f"f{i}"))
                if i % 3 == 2:  # also remove an earlier file, without reading the table
                    tx.remove(RemoveFile(path=f"part=1/f{i - 2}", deletion_timestamp=0))
                    live.discard(f"part=1/f{i - 2}")
            live.add(f"part=1/f{i}")
            if i % 8 == 7:
                snapshots.append(table.snapshot)
                expected.append(set(live))
        barrier = threading.Barrier(len(snapshots))
        seen: dict[int, set[str]] = {}

        def read(
            k: int, barrier: threading.Barrier, snap: Snapshot, seen: dict[int, set[str]]
        ) -> None:
            barrier.wait(timeout=30)
            seen[k] = set(snap.raw_files.column("path").to_pylist())

        threads = [
            threading.Thread(target=read, args=(k, barrier, snap, seen))
            for k, snap in enumerate(snapshots)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert seen == dict(enumerate(expected))
        assert set(DeltaTable(root).snapshot.paths().to_pylist()) == live


def test_re_overwriting_a_partition_with_the_file_it_holds_changes_nothing(
    table: DeltaTable,
) -> None:
    root = table.uri
    kept = _file(root, "1")
    other = _file(root, "1", "g.parquet")
    table.append_files([kept, other])
    before = table.version()
    # An idempotent re-run of the overwrite that wrote ``kept``: ``other`` goes, ``kept`` stays.
    version = table.overwrite_files([kept], where=col("part") == "1")
    assert version == before + 1
    commit = (Path(root) / "_delta_log" / f"{version:020d}.json").read_bytes()
    actions = [orjson.loads(line) for line in commit.splitlines()]
    assert [a["remove"]["path"] for a in actions if "remove" in a] == [other]
    assert not [a for a in actions if "add" in a]  # neither remove nor add of ``kept``
    assert DeltaTable(root).files().column("path").to_pylist() == [kept]
    assert DeltaTable(root).check().clean
    # The same through a transaction: remove then add of one live file is no change.
    tx = table.transaction()
    tx.remove(kept)
    tx.add(kept)
    assert tx.commit() == version
    assert tx.no_op
    assert DeltaTable(root).files().column("path").to_pylist() == [kept]


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("delta.appendOnly", "yes"),
        ("delta.appendOnly", "true "),
        ("delta.checkpointInterval", "0"),
        ("delta.checkpointInterval", "ten"),
        ("delta.isolationLevel", "Serialisable"),
        ("delta.logRetentionDuration", "forever"),
        # Longer than an interval can be: every checkpoint's cutoff used to overflow.
        ("delta.deletedFileRetentionDuration", "interval 1000000000000 weeks"),
    ],
)
def test_invalid_table_properties_are_refused_and_reported(
    tmp_path: Path, key: str, value: str
) -> None:
    root = tmp_path / "t"
    with pytest.raises(InvalidPropertyError, match=key):
        DeltaTable.create(str(root), SCHEMA, configuration={key: value})
    assert not (root / "_delta_log").exists() or not os.listdir(root / "_delta_log")
    table = DeltaTable.create(str(root), SCHEMA)
    tx = table.transaction("SET TBLPROPERTIES")
    with pytest.raises(InvalidPropertyError, match=key):
        tx.update_metadata(configuration={key: value})
    assert DeltaTable(str(root)).version() == 0
    # A table another engine wrote with the bad value: check reports it.
    commit = root / "_delta_log" / f"{0:020d}.json"
    lines = [orjson.loads(line) for line in commit.read_bytes().splitlines()]
    for line in lines:
        if "metaData" in line:
            line["metaData"]["configuration"] = {key: value}
    commit.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    report = DeltaTable(str(root)).check()
    assert [f.code for f in report.findings if f.code == "bad-table-property"]
    assert not report.clean


def test_a_checkpointed_version_has_its_commits_time_not_the_checkpoints(
    table: DeltaTable,
) -> None:
    root = table.uri
    table.append_files([_file(root, "1")])
    table.checkpoint()  # version 1
    log = Path(root) / "_delta_log"
    for v, ts in enumerate((1_000_000, 2_000_000)):
        os.utime(log / f"{v:020d}.json", (ts, ts))
    os.utime(log / f"{1:020d}.checkpoint.parquet", (5_000_000, 5_000_000))
    fresh = DeltaTable(root)
    assert fresh.snapshot.checkpoint_version == 1
    assert fresh.snapshot.timestamp == 2_000_000_000
    assert fresh.history(limit=1)[0]["timestamp"] == fresh.snapshot.timestamp
