"""Liquid clustering (the ``clustering`` writer feature): what writes must leave intact.

A clustered table lists its clustering columns in the ``delta.clustering`` domain metadata
(``{"clusteringColumns": [["col"], ...]}``, physical names when columns are mapped). Appends
need no clustering: their ``add`` actions carry no ``clusteringProvider`` (only a clustering
implementation that actually clustered the rows sets it), and deltalog never writes the domain
(:meth:`Transaction.domain_metadata` refuses ``delta.*`` domains). What could break the
clustering metadata is a metadata change: partitioning a clustered table (the protocol forbids
both at once), or dropping a clustering column. Those are refused here.
"""

from __future__ import annotations

from typing import Any

import orjson

from deltalog.errors import ClusteringChangeError, UnsupportedFeatureError
from deltalog.log.snapshot import Snapshot
from deltalog.protocol.actions import Metadata
from deltalog.protocol.column_mapping import is_mapped, physical_name, physical_schema
from deltalog.protocol.config import num_indexed_cols
from deltalog.protocol.schema import ArrayType, DataType, MapType, StructType

DOMAIN = "delta.clustering"

__all__ = [
    "DOMAIN",
    "check_clustering_change",
    "check_clustering_stats",
    "clustering_columns",
    "is_clustered",
]


def is_clustered(snapshot: Snapshot) -> bool:
    """Whether the table supports the ``clustering`` writer feature."""
    return "clustering" in (snapshot.protocol.writer_features or ())


def clustering_columns(snapshot: Snapshot) -> list[tuple[str, ...]]:
    """The clustering columns as name paths (as logged: physical names when mapped)."""
    domain = snapshot.domains.get(DOMAIN)
    if domain is None:
        return []
    try:
        config: Any = orjson.loads(domain.configuration)
    except orjson.JSONDecodeError:
        return []
    columns = config.get("clusteringColumns") if isinstance(config, dict) else None
    out: list[tuple[str, ...]] = []
    for column in columns or []:
        if isinstance(column, str):
            out.append((column,))
        elif isinstance(column, list) and all(isinstance(part, str) for part in column):
            out.append(tuple(column))
    return out


def check_clustering_change(snapshot: Snapshot, metadata: Metadata, schema: StructType) -> None:
    """Refuse new metadata that a clustered table's clustering columns cannot survive.

    Raises:
        ClusteringChangeError: The new metadata partitions the table, or drops a clustering
            column.
    """
    if not is_clustered(snapshot):
        return
    if metadata.partition_columns:
        raise ClusteringChangeError(
            f"the table is clustered; it cannot also be partitioned by "
            f"{list(metadata.partition_columns)} (a Delta table is clustered or partitioned)"
        )
    for path in clustering_columns(snapshot):
        if not _has_path(schema, path):
            raise ClusteringChangeError(
                f"the new schema drops clustering column {'.'.join(path)!r}; change the "
                "clustering columns with delta-spark (ALTER TABLE ... CLUSTER BY) first"
            )


def check_clustering_stats(snapshot: Snapshot) -> None:
    """Refuse writing a clustered table whose clustering columns deltalog gives no statistics.

    The protocol requires per-column statistics for clustering columns in every ``add``.
    deltalog writes them for the first ``delta.dataSkippingNumIndexedCols`` leaf columns (it
    does not read ``delta.dataSkippingStatsColumns``), which delta-spark's ``CLUSTER BY``
    columns normally are.

    Raises:
        UnsupportedFeatureError: A clustering column is not among those leaf columns.
    """
    if not is_clustered(snapshot):
        return
    schema = snapshot.schema
    if is_mapped(snapshot.configuration):
        schema = physical_schema(schema)
    data = StructType(tuple(f for f in schema.fields if f.name not in _partition_keys(snapshot)))
    leaves: list[tuple[tuple[str, ...], bool]] = []
    _leaves(data, (), False, leaves)
    limit = num_indexed_cols(snapshot.configuration)
    indexed = {path for path, repeated in (leaves if limit < 0 else leaves[:limit]) if not repeated}
    for column in clustering_columns(snapshot):
        if column not in indexed:
            raise UnsupportedFeatureError(
                f"clustering column {'.'.join(column)!r} is not among the first {limit} leaf "
                "columns deltalog writes statistics for (delta.dataSkippingNumIndexedCols), and "
                "a clustered table needs them in every file",
                feature="clustering",
                operation="write",
            )


def _partition_keys(snapshot: Snapshot) -> set[str]:
    return {physical_name(snapshot.schema.field(c)) for c in snapshot.partition_columns}


def _leaves(
    t: DataType, path: tuple[str, ...], repeated: bool, out: list[tuple[tuple[str, ...], bool]]
) -> None:
    """Parquet leaf columns in order: (name path, inside a list or map)."""
    if isinstance(t, StructType):
        for f in t.fields:
            _leaves(f.type, (*path, f.name), repeated, out)
    elif isinstance(t, ArrayType):
        _leaves(t.element_type, (*path, "element"), True, out)
    elif isinstance(t, MapType):
        _leaves(t.key_type, (*path, "key"), True, out)
        _leaves(t.value_type, (*path, "value"), True, out)
    else:
        out.append((path, repeated))


def _has_path(schema: StructType, path: tuple[str, ...]) -> bool:
    struct: Any = schema
    for part in path:
        if not isinstance(struct, StructType):
            return False
        found = [f for f in struct.fields if part in (physical_name(f), f.name)]
        if not found:
            return False
        struct = found[0].type
    return True
