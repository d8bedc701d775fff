"""``delta.*`` table property keys in any case, as delta-spark takes them (issue 29, item 9).

Setting a known key in another case stores it as Delta spells it and validates it; an unknown
``delta.*`` key is refused; a table another engine wrote with a key in another case is honoured
(``delta.appendonly=true`` keeps the table append-only).
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from tableutil import write_parquet

from deltalog import DeltaTable
from deltalog.errors import AppendOnlyError, InvalidPropertyError
from deltalog.protocol.config import checkpoint_interval, property_value
from deltalog.protocol.property_keys import KNOWN_KEYS, TableProperties, canonical_key

SCHEMA = pa.schema([("a", pa.int64())])
DATA = pa.table({"a": [1, 2]})


def _log_configuration(root: Path, version: int) -> dict[str, str]:
    commit = root / "_delta_log" / f"{version:020d}.json"
    for line in commit.read_bytes().splitlines():
        body = orjson.loads(line)
        if "metaData" in body:
            return dict(body["metaData"]["configuration"])
    raise AssertionError(f"no metaData in version {version}")


def _append_only_refuses_overwrite(table: DeltaTable, root: Path) -> None:
    table.append_files([write_parquet(root, "f.parquet", DATA)])
    version = table.version()
    with pytest.raises(AppendOnlyError):
        table.overwrite_files([write_parquet(root, "g.parquet", DATA)])
    tx = table.transaction()
    tx.remove(table.files().column("path").to_pylist())
    with pytest.raises(AppendOnlyError):
        tx.commit()
    assert DeltaTable(str(root)).version() == version


def test_create_stores_known_keys_spelt_as_delta_does(tmp_path: Path) -> None:
    config = {
        "delta.appendonly": "true",
        "DELTA.CHECKPOINTINTERVAL": "5",
        "Delta.LogRetentionDuration": "interval 40 days",
        "delta.constraints.Positive": "a > 0",  # kept as given, as delta-spark keeps it
        "owner": "Team A",  # keys outside delta.* are free
    }
    table = DeltaTable.create(str(tmp_path), SCHEMA, configuration=config)
    expected = {
        "delta.appendOnly": "true",
        "delta.checkpointInterval": "5",
        "delta.logRetentionDuration": "interval 40 days",
        "delta.constraints.Positive": "a > 0",
        "owner": "Team A",
    }
    assert _log_configuration(tmp_path, 0) == expected
    assert dict(table.metadata().configuration) == expected
    _append_only_refuses_overwrite(table, tmp_path)


@pytest.mark.parametrize(
    ("key", "value"), [("delta.appendonly", "yes"), ("DELTA.CHECKPOINTINTERVAL", "0")]
)
def test_known_keys_in_any_case_are_validated(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(InvalidPropertyError, match=str(canonical_key(key))):
        DeltaTable.create(str(tmp_path), SCHEMA, configuration={key: value})
    assert not (tmp_path / "_delta_log").exists() or not os.listdir(tmp_path / "_delta_log")


@pytest.mark.parametrize(
    "key",
    [
        "delta.appendOnlyy",
        "delta.foo",
        "DELTA.Unknown.Key",
        "delta.feature.deletionVectors",  # the protocol is not taken from properties
        "delta.minWriterVersion",
        "delta.minReaderVersion",
    ],
)
def test_unknown_and_protocol_keys_are_refused(tmp_path: Path, key: str) -> None:
    root = tmp_path / "t"
    with pytest.raises(InvalidPropertyError, match=key):
        DeltaTable.create(str(root), SCHEMA, configuration={key: "supported"})
    assert not (root / "_delta_log").exists() or not os.listdir(root / "_delta_log")
    table = DeltaTable.create(str(root), SCHEMA)
    tx = table.transaction("SET TBLPROPERTIES")
    with pytest.raises(InvalidPropertyError, match=key):
        tx.update_metadata(configuration={key: "supported"})
    assert DeltaTable(str(root)).version() == 0


def test_one_key_twice_in_two_cases(tmp_path: Path) -> None:
    both = {"delta.appendOnly": "true", "delta.APPENDONLY": "false"}
    with pytest.raises(InvalidPropertyError, match="given twice"):
        DeltaTable.create(str(tmp_path / "a"), SCHEMA, configuration=both)
    same = {"delta.appendOnly": "true", "delta.APPENDONLY": "true"}
    table = DeltaTable.create(str(tmp_path / "b"), SCHEMA, configuration=same)
    assert dict(table.metadata().configuration) == {"delta.appendOnly": "true"}


def test_set_properties_stores_known_keys_spelt_as_delta_does(tmp_path: Path) -> None:
    table = DeltaTable.create(str(tmp_path), SCHEMA)
    tx = table.transaction("SET TBLPROPERTIES")
    tx.update_metadata(
        configuration={"delta.APPENDONLY": "true", "delta.universalFormat.config.X": "1"}
    )
    assert tx.commit() == 1
    assert _log_configuration(tmp_path, 1) == {
        "delta.appendOnly": "true",
        "delta.universalformat.config.x": "1",
    }
    _append_only_refuses_overwrite(DeltaTable(str(tmp_path)), tmp_path)


def _foreign_table(root: Path, configuration: dict[str, str]) -> DeltaTable:
    """A table whose log (as another engine wrote it) holds ``configuration`` as given."""
    DeltaTable.create(str(root), SCHEMA)
    commit = root / "_delta_log" / f"{0:020d}.json"
    lines = [orjson.loads(line) for line in commit.read_bytes().splitlines()]
    for body in lines:
        if "metaData" in body:
            body["metaData"]["configuration"] = configuration
    commit.write_bytes(b"\n".join(orjson.dumps(body) for body in lines) + b"\n")
    for crc in (root / "_delta_log").glob("*.crc"):
        crc.unlink()
    return DeltaTable(str(root))


def test_a_foreign_lower_case_key_is_enforced(tmp_path: Path) -> None:
    table = _foreign_table(tmp_path, {"delta.appendonly": "true", "delta.checkpointinterval": "3"})
    assert table.metadata().configuration.get("delta.appendOnly") == "true"
    assert checkpoint_interval(table.snapshot.configuration) == 3
    _append_only_refuses_overwrite(table, tmp_path)
    assert table.check().clean


def test_a_foreign_unknown_key_is_kept_on_a_metadata_change(tmp_path: Path) -> None:
    config = {"delta.someEngine.setting": "1", "delta.appendonly": "false"}
    table = _foreign_table(tmp_path, config)
    tx = table.transaction("SET TBLPROPERTIES")
    tx.update_metadata(configuration={**table.metadata().configuration, "owner": "me"})
    tx.commit()
    assert _log_configuration(tmp_path, 1) == {**config, "owner": "me"}


def test_table_properties_lookup() -> None:
    props = TableProperties({"delta.appendonly": "true", "Owner": "x"})
    assert props["delta.appendOnly"] == props.get("DELTA.APPENDONLY") == "true"
    assert "delta.appendOnly" in props and "delta.checkpointInterval" not in props
    assert props.get("owner") is None and "owner" not in props  # only delta.* keys
    assert props.get("delta.checkpointInterval", "10") == "10"
    with pytest.raises(KeyError):
        props["delta.checkpointInterval"]
    assert list(props) == ["delta.appendonly", "Owner"]  # written back as the log spells them
    assert property_value({"delta.APPENDONLY": "true"}, "delta.appendOnly") == "true"
    assert all(canonical_key(key.upper()) == key for key in KNOWN_KEYS)


def test_a_new_value_replaces_a_foreign_spelling(tmp_path: Path) -> None:
    table = _foreign_table(tmp_path, {"delta.appendonly": "true"})
    tx = table.transaction("SET TBLPROPERTIES")
    tx.update_metadata(
        configuration={**table.metadata().configuration, "delta.appendOnly": "false"}
    )
    tx.commit()
    assert _log_configuration(tmp_path, 1) == {"delta.appendOnly": "false"}
    table = DeltaTable(str(tmp_path))
    table.overwrite_files([write_parquet(tmp_path, "g.parquet", DATA)])
