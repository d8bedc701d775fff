"""Clustered tables: appends keep the clustering domain; changes that would break it are refused."""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa
import pytest
from tableutil import write_commit, write_parquet

from deltalog import (
    ClusteringChangeError,
    DeltaTable,
    InvalidInputError,
    UnsupportedFeatureError,
)
from deltalog.protocol.schema import StructType

SCHEMA_STRING = (
    '{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},'
    '{"name":"v","type":"string","nullable":true,"metadata":{}}]}'
)
CLUSTERING = '{"clusteringColumns":[["id"]]}'


def _clustered(root: Path, configuration: dict[str, str] | None = None) -> DeltaTable:
    protocol = {
        "minReaderVersion": 1,
        "minWriterVersion": 7,
        "writerFeatures": ["appendOnly", "clustering", "domainMetadata", "invariants"],
    }
    meta = {
        "id": "t",
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA_STRING,
        "partitionColumns": [],
        "configuration": configuration or {},
    }
    domain = {"domain": "delta.clustering", "configuration": CLUSTERING, "removed": False}
    write_commit(
        root,
        0,
        [
            orjson.dumps({"protocol": protocol}),
            orjson.dumps({"metaData": meta}),
            orjson.dumps({"domainMetadata": domain}),
        ],
    )
    return DeltaTable(str(root))


def test_appends_and_removes_leave_the_clustering_domain(tmp_path: Path) -> None:
    table = _clustered(tmp_path)
    rel = write_parquet(tmp_path, "a.parquet", pa.table({"id": [1], "v": ["x"]}))
    assert table.append_files([rel]) == 1
    with table.transaction("DELETE") as tx:
        tx.remove([rel])
    commits = [
        [orjson.loads(line) for line in (tmp_path / "_delta_log" / f"{v:020d}.json").open("rb")]
        for v in (1, 2)
    ]
    assert not any("domainMetadata" in a for actions in commits for a in actions)
    assert all("clusteringProvider" not in a["add"] for a in commits[0] if "add" in a)
    assert DeltaTable(str(tmp_path)).snapshot.domains["delta.clustering"].configuration == (
        CLUSTERING
    )
    with pytest.raises(InvalidInputError, match="reserved"):
        table.transaction().domain_metadata("delta.clustering", {"clusteringColumns": []})


def test_partitioning_or_dropping_a_clustering_column_is_refused(tmp_path: Path) -> None:
    table = _clustered(tmp_path)
    with pytest.raises(ClusteringChangeError, match="partitioned"):
        table.transaction().update_metadata(partition_by=["v"])
    only_v = StructType(tuple(f for f in table.schema().fields if f.name == "v"))
    with pytest.raises(ClusteringChangeError, match="'id'"):
        table.transaction().update_metadata(schema=only_v)
    # Other changes are fine: a new nullable column.
    wider = pa.schema([("id", pa.int64()), ("v", pa.string()), ("w", pa.int32())])
    with table.transaction("ADD COLUMNS") as tx:
        tx.update_metadata(schema=wider)
    assert DeltaTable(str(tmp_path)).schema().names == ["id", "v", "w"]


def test_a_clustering_column_without_statistics_is_refused(tmp_path: Path) -> None:
    # Only the first leaf column ("id") gets statistics; clustering on "v" could not be kept.
    clustered = _clustered(tmp_path / "a", {"delta.dataSkippingNumIndexedCols": "1"})
    rel = write_parquet(tmp_path / "a", "a.parquet", pa.table({"id": [1], "v": ["x"]}))
    assert clustered.append_files([rel]) == 1  # "id" is indexed
    (tmp_path / "b").mkdir()
    domain = (tmp_path / "a" / "_delta_log" / "00000000000000000000.json").read_bytes()
    write_commit(
        tmp_path / "b",
        0,
        [line.replace(b'[[\\"id\\"]]', b'[[\\"v\\"]]') for line in domain.splitlines()],
    )
    on_v = DeltaTable(str(tmp_path / "b"))
    assert "v" in on_v.snapshot.domains["delta.clustering"].configuration
    rel = write_parquet(tmp_path / "b", "a.parquet", pa.table({"id": [1], "v": ["x"]}))
    with pytest.raises(UnsupportedFeatureError, match="'v'") as info:
        on_v.append_files([rel])
    assert info.value.feature == "clustering"
