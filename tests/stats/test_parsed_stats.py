"""Typed statistics from a checkpoint's ``add.stats_parsed`` (delta-spark writes it by default).

The checkpoints here are deltalog's, rewritten the way delta-spark lays them out: the ``add``
struct gains ``partitionValues_parsed`` and ``stats_parsed`` (typed as the table's columns),
and with ``delta.checkpoint.writeStatsAsJson=false`` loses ``stats``. Every answer is compared
with the one the JSON statistics give on the same table.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import random
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from tableutil import write_parquet
from test_file_stats import SCHEMA, _rows

from deltalog import DeltaTable
from deltalog.stats.parsed_stats import stats_json
from deltalog.stats.predicates import map_value

UTC = dt.UTC
#: The data columns' types in stats_parsed, as delta-spark writes them (the partition ``p`` has
#: no statistics).
VALUES = pa.struct([f for f in SCHEMA if f.name != "p"])
COUNTS = pa.struct(
    [
        pa.field(f.name, pa.struct([("a", pa.int64()), ("b", pa.struct([("c", pa.int64())]))]))
        if f.name == "n"
        else pa.field(f.name, pa.int64())
        for f in VALUES
    ]
)
PARSED = pa.struct(
    [
        ("numRecords", pa.int64()),
        ("minValues", VALUES),
        ("maxValues", VALUES),
        ("nullCount", COUNTS),
    ]
)
PREDICATES = [
    "i >= 10 AND i < 20",
    "s IS NULL",
    "s = 's23'",
    "d >= DATE '2024-01-07'",
    "dec > 2.40",
    "p = 'x' AND i > 20",
    "ts > TIMESTAMP '2024-01-01 00:00:04.000100' AND ts < TIMESTAMP '2024-01-02 00:00:00'",
    "flag = true",
]


def _typed(value: Any, t: pa.DataType) -> Any:
    """A JSON statistic as a Python value of Arrow type ``t`` (how delta-spark types it)."""
    if value is None:
        return None
    if pa.types.is_struct(t):
        return {f.name: _typed(value.get(f.name), f.type) for f in t}
    if pa.types.is_timestamp(t):
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if pa.types.is_date(t):
        return dt.date.fromisoformat(value)
    if pa.types.is_decimal(t):
        return decimal.Decimal(str(value))
    return value


def _with_stats_parsed(
    root: Path,
    *,
    json_stats: bool = True,
    bad_type: bool = False,
    int96: bool = False,
    drop_struct_of: str | None = None,
) -> None:
    """Rewrite the table's latest checkpoint as delta-spark lays one out."""
    log = root / "_delta_log"
    (cp,) = sorted(log.glob("*.checkpoint.parquet"))[-1:]
    table = pq.read_table(cp)
    add = table.column("add").combine_chunks()
    parsed_type = PARSED
    if bad_type:  # a bound whose type cannot be cast: the JSON must be used instead
        values = pa.struct([("i", pa.string())])
        parsed_type = pa.struct([("numRecords", pa.int64()), ("minValues", values)])
    stats, parts = [], []
    for row in add.to_pylist():
        if row is None:
            stats.append(None)
            parts.append(None)
            continue
        obj = json.loads(row["stats"])
        if bad_type:
            obj = {"numRecords": obj["numRecords"], "minValues": {"i": "not a number"}}
        stats.append(None if row["path"] == drop_struct_of else _typed(obj, parsed_type))
        parts.append(dict(row["partitionValues"]))
    fields = [add.type.field(i) for i in range(add.type.num_fields)]
    arrays = [add.field(i) for i in range(add.type.num_fields)]
    if not json_stats:
        at = add.type.get_field_index("stats")
        del fields[at], arrays[at]
    pv_parsed = pa.array(parts, pa.struct([("p", pa.string())]))
    fields += [
        pa.field("partitionValues_parsed", pv_parsed.type),
        pa.field("stats_parsed", parsed_type),
    ]
    arrays += [pv_parsed, pa.array(stats, parsed_type)]
    rebuilt = pa.StructArray.from_arrays(arrays, fields=fields, mask=add.is_null())
    table = table.set_column(table.schema.get_field_index("add"), "add", rebuilt)
    # delta-spark writes timestamps as Spark's default INT96 (zone-less nanoseconds to pyarrow)
    pq.write_table(table, cp, use_deprecated_int96_timestamps=int96)


def _table(root: Path, files: int = 6) -> DeltaTable:
    t = DeltaTable.create(str(root), SCHEMA, partition_by=["p"])
    for k in range(files):
        t.append_files([write_parquet(root, f"p={'xy'[k % 2]}/f{k}.parquet", _rows(k))])
    t.checkpoint()
    return t


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def _flat(root: Path, **kwargs: Any) -> pa.Table:
    return DeltaTable(str(root)).files(with_stats=False, flatten_stats=True, **kwargs)


def _paths(root: Path, predicate: str) -> list[str]:
    return sorted(DeltaTable(str(root)).files(filter=predicate).column("path").to_pylist())


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    _table(tmp_path / "plain")
    return tmp_path / "plain"


def test_typed_statistics_come_from_stats_parsed_and_equal_the_json(
    plain: Path, tmp_path: Path
) -> None:
    spark_like = _copy(plain, tmp_path / "spark")
    _with_stats_parsed(spark_like)
    fresh = DeltaTable(str(spark_like))
    assert fresh.snapshot.parsed_stats() is not None
    flat = fresh.files(with_stats=False, flatten_stats=True)
    assert "files" not in fresh.snapshot.__dict__  # the JSON statistics were never loaded
    assert flat.equals(_flat(plain))
    assert flat.column("min.n.b.c").to_pylist()[:2] == ["c0", "c1"]
    assert flat.column("max.ts").type == pa.timestamp("us", tz="UTC")
    for predicate in PREDICATES:
        assert _paths(spark_like, predicate) == _paths(plain, predicate), predicate
    with_filter = fresh.files(filter="i >= 10 AND i < 30", flatten_stats=True, with_stats=False)
    assert with_filter.column("min.i").to_pylist() == [10, 20]


def test_commits_after_the_checkpoint_mix_typed_and_json_statistics(
    plain: Path, tmp_path: Path
) -> None:
    spark_like = _copy(plain, tmp_path / "spark")
    _with_stats_parsed(spark_like)
    advanced = []
    for root in (plain, spark_like):
        t = DeltaTable(str(root))
        t.append_files([write_parquet(root, "p=y/late.parquet", _rows(7))])
        with t.transaction("DELETE") as tx:
            tx.remove(["p=x/f2.parquet"])  # a checkpoint row goes
        advanced.append(t.files(with_stats=False, flatten_stats=True))  # the writer's snapshot
    parsed = DeltaTable(str(spark_like)).snapshot.parsed_stats()
    assert parsed is not None and parsed.null_count == 1  # the late file has JSON only
    late = ["modification_time"]  # the late file was written twice, once per table
    assert _flat(spark_like).drop_columns(late).equals(_flat(plain).drop_columns(late))
    assert advanced[1].drop_columns(late).equals(advanced[0].drop_columns(late))
    assert advanced[1].num_rows == 6
    for predicate in PREDICATES:
        assert _paths(spark_like, predicate) == _paths(plain, predicate), predicate


def test_checkpoint_without_json_statistics_still_lists_them(plain: Path, tmp_path: Path) -> None:
    """``delta.checkpoint.writeStatsAsJson=false``: the JSON is written from stats_parsed."""
    struct_only = _copy(plain, tmp_path / "struct_only")
    _with_stats_parsed(struct_only, json_stats=False)
    ours = DeltaTable(str(struct_only)).files()
    assert ours.column("stats").null_count == 0
    assert ours.drop_columns(["stats"]).equals(
        DeltaTable(str(plain)).files().drop_columns(["stats"])
    )
    # the written JSON parses to the same typed statistics as delta-spark's own JSON
    from_json = DeltaTable(str(struct_only)).files(flatten_stats=True).drop_columns(["stats"])
    assert from_json.equals(_flat(plain))
    for predicate in PREDICATES:
        assert _paths(struct_only, predicate) == _paths(plain, predicate), predicate


def test_stats_parsed_of_an_unusable_type_falls_back_to_the_json(
    plain: Path, tmp_path: Path
) -> None:
    odd = _copy(plain, tmp_path / "odd")
    _with_stats_parsed(odd, bad_type=True)  # only numRecords and a string minValues.i
    assert _flat(odd).equals(_flat(plain))
    for predicate in PREDICATES:
        kept, exact = set(_paths(odd, predicate)), set(_paths(plain, predicate))
        if " i " in f" {predicate} ":
            assert kept == exact, predicate  # min.i cannot be cast: the JSON is used
        else:  # columns stats_parsed lacks are unknown there: never pruned on
            assert kept >= exact, predicate


def test_stats_json_writes_what_delta_spark_writes() -> None:
    t = pa.struct(
        [
            ("numRecords", pa.int64()),
            (
                "minValues",
                pa.struct(
                    [
                        ("ts", pa.timestamp("us", tz="UTC")),
                        ("ntz", pa.timestamp("us")),
                        ("d", pa.date32()),
                        ("dec", pa.decimal128(10, 2)),
                        ("x", pa.float64()),
                        ("s", pa.string()),
                        ("b", pa.bool_()),
                    ]
                ),
            ),
        ]
    )
    row = {
        "numRecords": 3,
        "minValues": {
            "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678000, tzinfo=UTC),
            "ntz": dt.datetime(2024, 1, 2, 3, 4, 5),
            "d": dt.date(2024, 1, 2),
            "dec": decimal.Decimal("12.30"),
            "x": math.nan,
            "s": 'a"b\\c\n',
            "b": None,
        },
    }
    (text, empty) = stats_json(pa.array([row, None], t)).to_pylist()
    assert empty is None
    assert text == (
        '{"numRecords":3,"minValues":{"ts":"2024-01-02T03:04:05.678Z",'
        '"ntz":"2024-01-02T03:04:05.000","d":"2024-01-02","dec":12.30,"x":"NaN",'
        '"s":"a\\"b\\\\c\\n"}}'
    )


def test_map_value_equals_map_lookup() -> None:
    """The by-position read of partition values answers as ``pc.map_lookup`` does."""
    rng = random.Random(7)
    for _ in range(400):
        width, n = rng.randint(1, 3), rng.randint(1, 30)
        keys = ["a", "b", "c"][:width]
        rows = []
        for i in range(n):
            ks = list(keys)
            if rng.random() < 0.1:
                rng.shuffle(ks)
            if rng.random() < 0.05:
                ks = ks[:-1]
            if rng.random() < 0.05:
                ks = [*ks, "a"]
            rows.append(
                None if rng.random() < 0.02 else [(k, rng.choice([None, "v", str(i)])) for k in ks]
            )
        values = pa.array(rows, pa.map_(pa.string(), pa.string()))
        if n > 2 and rng.random() < 0.5:
            start = rng.randint(0, n - 2)
            values = values.slice(start, rng.randint(1, n - start))
        for key in ["a", "b", "c", "z"]:
            expected = pc.map_lookup(values, pa.scalar(key), "first")
            assert map_value(values, key).to_pylist() == expected.to_pylist(), (rows, key)


def test_int96_timestamps_and_no_json(plain: Path, tmp_path: Path) -> None:
    """INT96 bounds (delta-spark's) are UTC instants; the JSON written from them says so."""
    root = tmp_path / "int96"
    t = DeltaTable.create(
        str(root), pa.schema([("id", pa.int64()), ("ts", SCHEMA.field("ts").type)])
    )
    far = dt.datetime(9999, 12, 31, tzinfo=UTC)  # past 2262: wraps around as nanoseconds
    rows = pa.table({"id": [1, 2], "ts": pa.array([dt.datetime(2024, 5, 1, tzinfo=UTC), far])})
    t.append_files([write_parquet(root, "a.parquet", rows)])
    t.checkpoint()
    expected = DeltaTable(str(root)).files().column("stats").to_pylist()
    global PARSED
    saved = PARSED
    bounds = pa.struct([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))])
    counts = pa.struct([("id", pa.int64()), ("ts", pa.int64())])
    PARSED = pa.struct(
        [
            ("numRecords", pa.int64()),
            ("minValues", bounds),
            ("maxValues", bounds),
            ("nullCount", counts),
        ]
    )
    try:
        _with_stats_parsed(root, json_stats=False, int96=True)
    finally:
        PARSED = saved
    fresh = DeltaTable(str(root))
    assert fresh.files().column("stats").to_pylist() == expected  # "9999-12-31T00:00:00.000Z"
    assert fresh.files(filter="ts >= TIMESTAMP '2025-01-01 00:00:00'").num_rows == 1
    flat = DeltaTable(str(root)).files(with_stats=False, flatten_stats=True)
    assert flat.column("max.ts").to_pylist() == [far]


def test_a_checkpoint_row_without_the_struct_keeps_its_json(plain: Path, tmp_path: Path) -> None:
    partial = _copy(plain, tmp_path / "partial")
    _with_stats_parsed(partial, drop_struct_of="p=x/f2.parquet")
    assert _flat(partial).equals(_flat(plain))
    for predicate in PREDICATES:
        assert _paths(partial, predicate) == _paths(plain, predicate), predicate


def test_json_v2_checkpoint_with_inline_adds(tmp_path: Path) -> None:
    """Rows inline in a JSON checkpoint have no stats_parsed: the JSON is used."""
    root = tmp_path / "v2json"
    config = {"delta.checkpointPolicy": "v2", "delta.checkpointInterval": "1000"}
    t = DeltaTable.create(str(root), SCHEMA, partition_by=["p"], configuration=config)
    for k in range(3):
        t.append_files([write_parquet(root, f"p=x/f{k}.parquet", _rows(k))])
    t.checkpoint()
    log = root / "_delta_log"
    (top,) = log.glob("*.checkpoint.*.json")  # deltalog's V2 checkpoint: JSON + sidecars
    lines = []
    for line in top.read_text().splitlines():
        action = json.loads(line)
        if "sidecar" not in action:
            lines.append(action)
            continue
        for add in pq.read_table(log / "_sidecars" / action["sidecar"]["path"]).column("add"):
            row = {k: v for k, v in add.as_py().items() if v is not None}
            row["partitionValues"] = dict(row["partitionValues"])
            lines.append({"add": row})
    top.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    (log / "_last_checkpoint").unlink()
    for commit in log.glob("*.json"):
        if ".checkpoint." not in commit.name and int(commit.name[:20]) < 3:
            commit.unlink()
    fresh = DeltaTable(str(root))
    assert fresh.snapshot.checkpoint_version == 3
    assert fresh.snapshot.parsed_stats() is None
    assert fresh.files(filter="i >= 10 AND i < 20").column("path").to_pylist() == ["p=x/f1.parquet"]
    assert fresh.files(flatten_stats=True).column("min.i").to_pylist() == [0, 10, 20]


def test_mapped_partitioned_table_with_one_row_group_checkpoint(tmp_path: Path) -> None:
    """Adds after protocol and metaData in one row group (delta-spark's layout) are a slice."""
    root = tmp_path / "mapped"
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    config = {"delta.columnMapping.mode": "name"}
    t = DeltaTable.create(str(root), schema, partition_by=["p"], configuration=config)
    physical = t.schema().field("id").metadata["delta.columnMapping.physicalName"]
    for k in range(2):
        t.append_files([write_parquet(root, f"p={k}/f{k}.parquet", pa.table({physical: [k]}))])
    t.checkpoint()
    (cp,) = (root / "_delta_log").glob("*.checkpoint.parquet")
    pq.write_table(pq.read_table(cp), cp)  # one row group: protocol, metaData, add, add
    fresh = DeltaTable(str(root))
    assert fresh.files(filter="p = '1'").column("path").to_pylist() == ["p=1/f1.parquet"]
    flat = fresh.files(flatten_stats=True)
    assert flat.column("partition.p").to_pylist() == ["0", "1"]
    assert flat.column("min.id").to_pylist() == [0, 1]


def test_json_statistics_are_typed_once_and_their_json_not_kept(
    plain: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without stats_parsed, typed statistics parse the checkpoint's JSON batch by batch."""
    import deltalog.stats.parsed_stats as ps
    from deltalog.log import replay
    from deltalog.stats.file_stats import flatten_stats
    from deltalog.stats.predicate_input import as_predicate
    from deltalog.stats.skipping import prune_files

    reads: list[object] = []
    real = ps.read_checkpoint

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(kwargs.get("add_transform"))
        return real(*args, **kwargs)

    monkeypatch.setattr(ps, "read_checkpoint", counted)
    # a checkpoint this small is read whole when the table opens: make it "big"
    monkeypatch.setattr(replay, "SMALL_CHECKPOINT_BYTES", 0)
    t = DeltaTable(str(plain))
    snap = t.snapshot
    flat = t.files(with_stats=False, flatten_stats=True)
    assert "files" not in snap.__dict__  # the JSON statistics were not materialised
    for predicate in PREDICATES:
        t.files(filter=predicate, with_stats=False)
    assert sum(r is not None for r in reads) == 1  # parsed once, reused by every filter
    # the same answers as parsing the JSON of the listed files
    reference = flatten_stats(snap.files, snap.schema, snap.partition_columns)
    assert flat.equals(reference.drop_columns(["stats"]))
    for predicate in PREDICATES:
        expected = prune_files(snap.files, as_predicate(predicate), snap.schema, ["p"])
        assert _paths(plain, predicate) == sorted(expected.column("path").to_pylist())


def _logged(root: Path, schema: pa.Schema, stats: dict[str, str]) -> DeltaTable:
    """A table whose files (not on disk) carry these statistics, then a checkpoint."""
    from deltalog import AddFile

    t = DeltaTable.create(str(root), schema)
    with t.transaction() as tx:
        tx.add(
            [
                AddFile(
                    path=p,
                    partition_values={},
                    size=1,
                    modification_time=1,
                    data_change=True,
                    stats=s,
                )
                for p, s in stats.items()
            ]
        )
    t.checkpoint()
    return DeltaTable(str(root))


def test_statistics_only_a_lossy_fallback_parses_do_not_spoil_other_columns(
    tmp_path: Path,
) -> None:
    """A NaN bound (as Spark logs it) in one file must not route an exact 38-digit decimal of
    another file through a double: a filter on it would then drop the file holding it."""
    exact = "1234567890123456789.12"
    t = _logged(
        tmp_path,
        pa.schema([("y", pa.decimal128(38, 2)), ("d", pa.float64()), ("b", pa.int64())]),
        {
            "a.parquet": f'{{"numRecords":1,"minValues":{{"y":{exact},"d":1.0}},'
            f'"maxValues":{{"y":{exact},"d":1.0}},"nullCount":{{"y":0,"d":0}}}}',
            "b.parquet": '{"numRecords":1,"minValues":{"d":"NaN","b":1},'
            '"maxValues":{"d":"NaN","b":1180591620717411303424},"nullCount":{"d":0}}',
        },
    )
    t.files(flatten_stats=True)  # typed statistics asked for first: kept for the filters
    kept = t.files(filter=f"y = {exact}").column("path").to_pylist()
    assert kept == ["a.parquet", "b.parquet"]  # b has no bound for y: kept
    assert t.files(filter="b = 1").column("path").to_pylist() == ["a.parquet", "b.parquet"]


def test_a_column_named_like_a_nested_field(tmp_path: Path) -> None:
    """A top-level column "a.b" and a struct a's field b are two leaves with one dotted name."""
    schema = pa.schema([("a.b", pa.int64()), ("a", pa.struct([("b", pa.int64())]))])
    stats = (
        '{"numRecords":1,"minValues":{"a.b":1,"a":{"b":100}},'
        '"maxValues":{"a.b":1,"a":{"b":100}},"nullCount":{"a.b":0,"a":{"b":0}}}'
    )
    t = _logged(tmp_path, schema, {"f.parquet": stats})
    flat = t.files(with_stats=False, flatten_stats=True)
    mins = [flat.column(i).to_pylist() for i, n in enumerate(flat.column_names) if n == "min.a.b"]
    assert mins == [[1], [100]]
    assert t.files(filter="`a.b` = 1").num_rows == 1
    assert t.files(filter="`a.b` > 50").num_rows == 0
