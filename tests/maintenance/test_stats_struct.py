"""Typed statistics (``add.stats_parsed``) in the checkpoints deltalog writes.

Each table here has a twin that differs only in ``delta.checkpoint.writeStatsAsStruct``: the
twin's checkpoints hold JSON statistics alone, so every answer read from the struct is checked
against the one the JSON gives.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tableutil import write_parquet
from test_file_stats import SCHEMA, _rows
from test_parsed_stats import PREDICATES, _with_stats_parsed

import deltalog.maintenance.stats_struct as stats_struct
from deltalog import AddFile, DeltaTable
from deltalog.stats.file_stats import stat_leaves

PROPERTY = "delta.checkpoint.writeStatsAsStruct"


def _create(root: Path, setting: str | None, **extra: str) -> DeltaTable:
    configuration = {**extra, **({PROPERTY: setting} if setting is not None else {})}
    return DeltaTable.create(str(root), SCHEMA, partition_by=["p"], configuration=configuration)


def _append(t: DeltaTable, root: Path, k: int) -> None:
    t.append_files([write_parquet(root, f"p={'xy'[k % 2]}/f{k}.parquet", _rows(k))])


def _twins(tmp_path: Path, files: int = 4, **extra: str) -> tuple[Path, Path]:
    """A table whose checkpoints write the struct and its JSON-only twin, same files."""
    roots = tmp_path / "struct", tmp_path / "json"
    for root, setting in zip(roots, ("true", None), strict=True):
        t = _create(root, setting, **extra)
        for k in range(files):
            _append(t, root, k)
        t.checkpoint()
    return roots


def _checkpoint_add_type(root: Path) -> pa.StructType:
    (cp,) = sorted((root / "_delta_log").glob("*.checkpoint.parquet"))[-1:]
    add = pq.read_schema(cp).field("add").type
    assert isinstance(add, pa.StructType)
    return add


def _has_struct(root: Path) -> bool:
    add = _checkpoint_add_type(root)
    return bool(add.get_field_index("stats_parsed") >= 0)


def _flat(root: Path) -> pa.Table:
    return DeltaTable(str(root)).files(with_stats=False, flatten_stats=True)


def _paths(root: Path, predicate: str) -> list[str]:
    return sorted(DeltaTable(str(root)).files(filter=predicate).column("path").to_pylist())


def _same_answers(a: Path, b: Path) -> None:
    """The same listing, typed statistics and pruning (the twins' files differ in mtime)."""
    drop = ["modification_time"]
    ours, theirs = _flat(a).drop_columns(drop), _flat(b).drop_columns(drop)
    assert [c for c in ours.column_names if ours[c] != theirs[c]] == []
    assert ours.equals(theirs)
    ours, theirs = DeltaTable(str(a)).files(), DeltaTable(str(b)).files()
    assert ours.drop_columns(drop).equals(theirs.drop_columns(drop))
    for predicate in PREDICATES:
        assert _paths(a, predicate) == _paths(b, predicate), predicate


def test_checkpoint_writes_typed_statistics_when_the_table_asks(tmp_path: Path) -> None:
    struct, plain = _twins(tmp_path)
    assert _has_struct(struct) and not _has_struct(plain)
    assert _checkpoint_add_type(struct).field("stats").type == pa.string()  # JSON kept too
    table = DeltaTable(str(struct))
    parsed = table.snapshot.parsed_stats()
    assert parsed is not None and parsed.null_count == 0 and len(parsed) == 4
    table.files(with_stats=False, flatten_stats=True)
    assert "files" not in table.snapshot.__dict__  # typed statistics never needed the JSON
    assert parsed.type.field("minValues").type.field("ts").type == pa.timestamp("us", tz="UTC")
    _same_answers(struct, plain)


@pytest.fixture
def parsed_rows(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The row count of every batch of JSON statistics a checkpoint parses into its struct."""
    counts: list[int] = []
    real = vars(stats_struct)["typed_from_json"]

    def counting(texts: pa.ChunkedArray, leaves: Any) -> pa.StructArray:
        counts.append(len(texts))
        return real(texts, leaves)

    monkeypatch.setattr(stats_struct, "typed_from_json", counting)
    return counts


def test_later_checkpoints_carry_the_struct_and_parse_only_new_statistics(
    tmp_path: Path, parsed_rows: list[int]
) -> None:
    struct, plain = _twins(tmp_path)
    assert parsed_rows == [4]  # the first checkpoint: every file, from its commit's JSON
    parsed_rows.clear()
    for root in (struct, plain):
        t = DeltaTable(str(root))
        for k in (4, 5):
            _append(t, root, k)
        with t.transaction("DELETE") as tx:
            tx.remove(["p=x/f2.parquet"])  # a carried row goes
        t.checkpoint()
    assert parsed_rows == [2]  # the two new files; the three kept ones were carried over
    parsed = DeltaTable(str(struct)).snapshot.parsed_stats()
    assert parsed is not None and len(parsed) == 5 and parsed.null_count == 0
    _same_answers(struct, plain)


def test_unset_property_keeps_what_the_previous_checkpoint_had(tmp_path: Path) -> None:
    """Unset: a delta-spark 4 style checkpoint's struct is carried; JSON-only stays JSON-only."""
    plain = tmp_path / "plain"
    t = _create(plain, None)
    for k in range(4):
        _append(t, plain, k)
    t.checkpoint()
    assert not _has_struct(plain)
    spark_like = tmp_path / "spark"
    shutil.copytree(plain, spark_like)
    _with_stats_parsed(spark_like, int96=True)  # delta-spark's layout, INT96 timestamps
    for root in (plain, spark_like):
        t = DeltaTable(str(root))
        _append(t, root, 4)
        t.checkpoint()
    assert not _has_struct(plain)
    assert _has_struct(spark_like)
    add = _checkpoint_add_type(spark_like)
    assert add.field("stats_parsed").type.field("maxValues").type.field("ts").type == (
        pa.timestamp("us", tz="UTC")
    )
    assert add.get_field_index("partitionValues_parsed") < 0  # not written (see the module)
    _same_answers(spark_like, plain)


def test_property_false_drops_the_struct(tmp_path: Path) -> None:
    struct, _ = _twins(tmp_path)
    t = DeltaTable(str(struct))
    with t.transaction("SET TBLPROPERTIES") as tx:
        kept = {k: v for k, v in t.metadata().configuration.items() if v is not None}
        tx.update_metadata(configuration={**kept, PROPERTY: "false"})
    t.checkpoint()
    assert not _has_struct(struct)
    assert DeltaTable(str(struct)).files().column("stats").null_count == 0


def _add(path: str, stats: str | None) -> AddFile:
    return AddFile(
        path=path,
        partition_values={"p": "x"},
        size=10,
        modification_time=1_700_000_000_000,
        data_change=True,
        stats=stats,
    )


def test_files_without_statistics_stay_without(tmp_path: Path) -> None:
    struct, plain = _twins(tmp_path, files=2)
    for root in (struct, plain):
        t = DeltaTable(str(root))
        with t.transaction("WRITE") as tx:
            tx.add([_add("p=x/bare.parquet", None)])
        t.checkpoint()
    parsed = DeltaTable(str(struct)).snapshot.parsed_stats()
    assert parsed is not None and parsed.null_count == 1  # null, not a struct of nulls
    files = DeltaTable(str(struct)).files()
    bare = files.filter(pa.compute.equal(files.column("path"), "p=x/bare.parquet"))
    assert bare.column("stats").to_pylist() == [None]  # no "{}" written from the struct
    _same_answers(struct, plain)


def test_statistics_needing_a_lossy_parse_write_no_struct(tmp_path: Path) -> None:
    struct, plain = _twins(tmp_path, files=2)
    # Spark's quoted "NaN" where the column is an integer: only the row-by-row parse reads it
    nan = orjson.dumps({"numRecords": 1, "minValues": {"i": "NaN", "s": "a"}}).decode()
    for root in (struct, plain):
        t = DeltaTable(str(root))
        with t.transaction("WRITE") as tx:
            tx.add([_add("p=x/odd.parquet", nan)])
        t.checkpoint()
    assert not _has_struct(struct)  # the JSON alone is exact
    _same_answers(struct, plain)


def test_struct_covers_the_indexed_columns(tmp_path: Path) -> None:
    leaves = stat_leaves(DeltaTable.create(str(tmp_path / "s"), SCHEMA).schema(), ["p"])
    names = [leaf.name for leaf in leaves]
    first = stats_struct.indexed_leaves(leaves, {"delta.dataSkippingNumIndexedCols": "2"})
    assert [leaf.name for leaf in first] == names[:2]
    every = stats_struct.indexed_leaves(leaves, {"delta.dataSkippingNumIndexedCols": "-1"})
    assert every == leaves
    named = stats_struct.indexed_leaves(leaves, {"delta.dataSkippingStatsColumns": "d, `n`.b"})
    assert [leaf.name for leaf in named] == ["d", "n.b.c"]
    struct, plain = _twins(tmp_path, files=2, **{"delta.dataSkippingNumIndexedCols": "2"})
    bounds = _checkpoint_add_type(struct).field("stats_parsed").type.field("minValues").type
    assert [f.name for f in bounds] == ["i", "s"]
    # columns the struct leaves out are unknown there, and the JSON still has them
    mtime = ["modification_time"]
    ours, theirs = DeltaTable(str(struct)).files(), DeltaTable(str(plain)).files()
    assert ours.drop_columns(mtime).equals(theirs.drop_columns(mtime))
    for predicate in PREDICATES:
        kept, exact = set(_paths(struct, predicate)), set(_paths(plain, predicate))
        assert kept >= exact, predicate


V2 = {"delta.checkpointPolicy": "v2"}


def test_v2_sidecars_carry_the_struct_and_are_reused(tmp_path: Path) -> None:
    struct, plain = _twins(tmp_path, files=3, **V2)
    assert not list((struct / "_delta_log").glob("*.checkpoint.parquet"))
    sidecars = sorted((struct / "_delta_log" / "_sidecars").glob("*.parquet"))
    assert len(sidecars) == 1
    add = pq.read_schema(sidecars[0]).field("add").type
    assert add.get_field_index("stats_parsed") >= 0
    parsed = DeltaTable(str(struct)).snapshot.parsed_stats()
    assert parsed is not None and parsed.null_count == 0
    for root in (struct, plain):
        t = DeltaTable(str(root))
        _append(t, root, 3)
        t.checkpoint()
    pointer = orjson.loads((struct / "_delta_log" / "_last_checkpoint").read_bytes())
    referenced = [s["path"] for s in pointer["v2Checkpoint"]["sidecarFiles"]]
    assert referenced[0] == sidecars[0].name  # the first checkpoint's sidecar, reused
    parsed = DeltaTable(str(struct)).snapshot.parsed_stats()
    assert parsed is not None and parsed.null_count == 0 and len(parsed) == 4
    _same_answers(struct, plain)


def _sidecar_structs(root: Path) -> list[bool]:
    """Whether each sidecar the latest V2 checkpoint references holds ``stats_parsed``."""
    pointer = orjson.loads((root / "_delta_log" / "_last_checkpoint").read_bytes())
    out = []
    for sidecar in pointer["v2Checkpoint"]["sidecarFiles"]:
        add = pq.read_schema(root / "_delta_log" / "_sidecars" / sidecar["path"]).field("add")
        assert isinstance(add.type, pa.StructType)
        out.append(add.type.get_field_index("stats_parsed") >= 0)
    return out


def _set(t: DeltaTable, key: str, value: str | None) -> None:
    """Set (``None``: unset) a table property."""
    with t.transaction("SET TBLPROPERTIES") as tx:
        kept = {k: v for k, v in t.metadata().configuration.items() if v is not None}
        kept.pop(key, None)
        tx.update_metadata(configuration={**kept, **({key: value} if value else {})})


@pytest.mark.parametrize("turn", ["off", "on"])
def test_v2_sidecars_of_one_checkpoint_agree_on_the_struct(tmp_path: Path, turn: str) -> None:
    """A sidecar is reused only when it holds the struct exactly as the new ones do.

    delta-rs reads the struct without falling back to the JSON: a checkpoint mixing sidecars
    with and without it would hide the statistics of the files in the ones without.
    """
    struct, plain = _twins(tmp_path, files=3, **V2)
    root = struct if turn == "off" else plain
    before = _sidecar_structs(root)
    t = DeltaTable(str(root))
    _set(t, PROPERTY, "false" if turn == "off" else "true")
    _append(t, root, 3)
    t.checkpoint()
    after = _sidecar_structs(root)
    assert before == [turn == "off"]
    assert after == [turn == "on"] * len(after)
    import deltalake

    theirs = pa.table(deltalake.DeltaTable(str(root)).get_add_actions(flatten=True))
    assert theirs.num_rows == 4 and theirs.column("num_records").null_count == 0


def test_unusable_new_statistics_do_not_mix_v2_sidecars(tmp_path: Path) -> None:
    struct, _ = _twins(tmp_path, files=2, **V2)
    t = DeltaTable(str(struct))
    _set(t, PROPERTY, None)  # unset: carried while it can be
    assert PROPERTY not in DeltaTable(str(struct)).metadata().configuration
    odd = orjson.dumps({"numRecords": 1, "minValues": {"i": "NaN", "s": "a"}}).decode()
    with t.transaction("WRITE") as tx:
        tx.add([_add("p=x/odd.parquet", odd)])
    t.checkpoint()
    assert set(_sidecar_structs(struct)) == {False}


def test_a_writer_parses_only_what_it_added(tmp_path: Path, parsed_rows: list[int]) -> None:
    """Asked for on a JSON-only table: the checkpoint's JSON is parsed once per writer."""
    root = tmp_path / "t"
    t = _create(root, None)
    for k in range(4):
        _append(t, root, k)
    t.checkpoint()
    writer = DeltaTable(str(root))
    _set(writer, PROPERTY, "true")
    writer.checkpoint()  # the checkpoint's four files: from its JSON, parsed batch by batch
    for k in (4, 5):
        _append(writer, root, k)
        writer.checkpoint()
    assert parsed_rows == [1, 2]  # files added since the checkpoint it opened, not all
    assert _has_struct(root)
    parsed = DeltaTable(str(root)).snapshot.parsed_stats()
    assert parsed is not None and parsed.null_count == 0 and len(parsed) == 6
