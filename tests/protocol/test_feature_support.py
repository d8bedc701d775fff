"""Writer features honoured or refused: catalog-managed tables, identity columns, column
defaults, and checkpoint protection in log cleanup."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from tableutil import one_row_add

from deltalog import DeltaTable
from deltalog.errors import UnsupportedFeatureError
from deltalog.protocol.actions import Metadata, Protocol
from deltalog.protocol.features import check_readable, check_writable

SCHEMA_STRING = json.dumps(
    {"type": "struct", "fields": [{"name": "x", "type": "long", "nullable": True, "metadata": {}}]}
)


def _metadata(field_metadata: dict[str, object] | None = None) -> Metadata:
    schema = json.loads(SCHEMA_STRING)
    schema["fields"][0]["metadata"] = field_metadata or {}
    return Metadata(
        id="m", schema_string=json.dumps(schema), partition_columns=[], configuration={}
    )


@pytest.mark.parametrize("feature", ["catalogManaged", "catalogOwned-preview"])
def test_catalog_managed_tables_are_refused_for_reading_and_writing(feature: str) -> None:
    protocol = Protocol(3, 7, reader_features=[feature], writer_features=[feature])
    for check in (lambda: check_readable(protocol), lambda: check_writable(protocol, _metadata())):
        with pytest.raises(UnsupportedFeatureError) as info:
            check()
        assert info.value.feature == feature
        assert "filesystem-based access to catalog-managed tables is not supported" in str(
            info.value
        )


@pytest.mark.parametrize(
    ("feature", "field_metadata"),
    [
        ("identityColumns", {"delta.identity.start": 1, "delta.identity.step": 1}),
        ("allowColumnDefaults", {"CURRENT_DEFAULT": "42"}),
    ],
)
def test_features_writable_only_while_unused(
    feature: str, field_metadata: dict[str, object]
) -> None:
    protocol = Protocol(1, 7, writer_features=[feature])
    check_writable(protocol, _metadata())  # the feature is there but no column uses it
    with pytest.raises(UnsupportedFeatureError) as info:
        check_writable(protocol, _metadata(field_metadata))
    assert info.value.feature == feature


@pytest.mark.parametrize(
    "feature", ["checkpointProtection", "vacuumProtocolCheck", "inCommitTimestamp", "rowTracking"]
)
def test_features_deltalog_writes(feature: str) -> None:
    check_writable(Protocol(3, 7, reader_features=[], writer_features=[feature]), _metadata())


def _table_with_checkpoints(root: Path, protect_before: int | None) -> DeltaTable:
    config = {"delta.logRetentionDuration": "interval 1 days"}
    if protect_before is not None:
        config["delta.requireCheckpointProtectionBeforeVersion"] = str(protect_before)
    table = DeltaTable.create(str(root), pa.schema([("x", pa.int64())]), configuration=config)
    for i in range(6):
        tx = table.transaction()
        tx.add(one_row_add(f"f{i}.parquet"))
        tx.commit()
        if tx.version in (2, 4):
            table.checkpoint()
    old = 1_000_000  # every log file older than the retention
    for name in os.listdir(root / "_delta_log"):
        os.utime(root / "_delta_log" / name, (old, old))
    return table


@pytest.mark.parametrize(
    ("protect_before", "deleted"),
    [
        (None, True),  # without protection versions before checkpoint 4 go
        (4, True),  # everything before 4 can go together
        (5, False),  # commit 4 must stay (checkpoint 4 is the boundary): nothing before 5 goes
    ],
)
def test_cleanup_honours_checkpoint_protection(
    tmp_path: Path, protect_before: int | None, deleted: bool
) -> None:
    table = _table_with_checkpoints(tmp_path / "t", protect_before)
    names = table.cleanup_log()
    assert bool([n for n in names if n.endswith(".json")]) == deleted
    if deleted:
        assert f"{0:020d}.json" in names and f"{4:020d}.json" not in names
    assert DeltaTable(str(tmp_path / "t")).version() == 6


def test_a_not_null_column_on_a_table_features_protocol_lists_invariants() -> None:
    # delta-spark refuses to read (DELTA_FEATURES_PROTOCOL_METADATA_MISMATCH) a writer-7 table
    # whose schema has a NOT NULL column but whose writer features lack invariants: found by
    # the interop suite's compat sweep on test_delta_rs's tables.
    from deltalog.protocol.features import protocol_for_new_table
    from deltalog.protocol.schema import PrimitiveType, StructField, StructType

    ntz = StructField("t", PrimitiveType("timestamp_ntz"))
    for not_null in (
        StructField("id", PrimitiveType("long"), nullable=False),
        StructField("s", StructType([StructField("x", PrimitiveType("long"), nullable=False)])),
    ):
        protocol = protocol_for_new_table(StructType([ntz, not_null]), {})
        assert protocol.min_writer_version == 7
        assert "invariants" in (protocol.writer_features or [])
    nullable = protocol_for_new_table(
        StructType([ntz, StructField("id", PrimitiveType("long"))]), {}
    )
    assert "invariants" not in (nullable.writer_features or [])
    legacy = protocol_for_new_table(
        StructType([StructField("id", PrimitiveType("long"), nullable=False)]), {}
    )
    assert (legacy.min_reader_version, legacy.min_writer_version) == (1, 2)  # implies invariants
