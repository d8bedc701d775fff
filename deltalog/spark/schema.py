"""A DataFrame's schema against a Delta table's: what a new table gets, what an append may write.

Spark's ``StructType.json()`` is the Delta schema format, so no type mapping is needed. As in
delta-spark, a table created from a DataFrame makes every column nullable, and a write matches
DataFrame columns to table columns by name, ignoring case (the files get the table's spelling).
"""

from __future__ import annotations

from collections.abc import Sequence

from deltalog.errors import PartitioningMismatchError, SchemaMismatchError
from deltalog.protocol.schema import ArrayType, DataType, MapType, StructField, StructType
from deltalog.write.schema_merge import fits


def as_nullable(t: DataType, *, keep_metadata: bool = True) -> DataType:
    """``t`` with every field, array element and map value nullable, recursively."""
    if isinstance(t, StructType):
        return StructType(
            tuple(
                StructField(
                    f.name,
                    as_nullable(f.type, keep_metadata=keep_metadata),
                    True,
                    dict(f.metadata) if keep_metadata else {},
                )
                for f in t.fields
            )
        )
    if isinstance(t, ArrayType):
        return ArrayType(as_nullable(t.element_type, keep_metadata=keep_metadata), True)
    if isinstance(t, MapType):
        return MapType(
            as_nullable(t.key_type, keep_metadata=keep_metadata),
            as_nullable(t.value_type, keep_metadata=keep_metadata),
            True,
        )
    return t


def schema_for_new_table(frame_schema: StructType) -> StructType:
    """The schema a table created from a DataFrame gets: the same columns, all nullable."""
    out = as_nullable(frame_schema)
    assert isinstance(out, StructType)
    return out


def match_columns(
    frame_schema: StructType,
    table_schema: StructType,
    partition_columns: Sequence[str],
    *,
    uri: str,
) -> list[tuple[str, str]]:
    """Pair each DataFrame column with its table column, or refuse the write.

    As in delta-spark, a struct column may lack nested fields the table has, or hold them in
    another order (see :func:`deltalog.write.schema_merge.fits`); with ``mergeSchema`` the caller
    passes the merged table schema.

    Returns:
        ``(frame column, table column)`` pairs in DataFrame order.

    Raises:
        SchemaMismatchError: Listing every column the DataFrame has that the table lacks, every
            type that differs, and every partition or non-nullable column the DataFrame misses.
    """
    by_lower = {f.name.lower(): f for f in table_schema.fields}
    problems: list[str] = []
    pairs: list[tuple[str, str]] = []
    for f in frame_schema.fields:
        target = by_lower.get(f.name.lower())
        if target is None:
            problems.append(f"column {f.name!r} is not in the table")
            continue
        if not fits(target.type, f.type):
            problems.append(
                f"column {f.name!r} is {_type(f.type)} in the DataFrame but {_type(target.type)} "
                "in the table"
            )
            continue
        pairs.append((f.name, target.name))
    present = {f.name.lower() for f in frame_schema.fields}
    for target in table_schema.fields:
        if target.name.lower() in present:
            continue
        if target.name in partition_columns:
            problems.append(f"partition column {target.name!r} is missing from the DataFrame")
        elif not target.nullable:
            problems.append(f"non-nullable column {target.name!r} is missing from the DataFrame")
    if problems:
        raise SchemaMismatchError(
            f"the DataFrame does not match the schema of the table at {uri}: "
            + "; ".join(problems)
            + " (write with mergeSchema to add new columns to the table)"
        )
    return pairs


def check_partitioning(requested: Sequence[str], existing: Sequence[str], *, uri: str) -> None:
    """Refuse ``partition_by`` that differs from an existing table's partitioning.

    Raises:
        PartitioningMismatchError: The partition columns differ (an empty ``requested`` never
            does).
    """
    if requested and [c.lower() for c in requested] != [c.lower() for c in existing]:
        raise PartitioningMismatchError(
            f"partition_by={list(requested)} does not match the partitioning of the table at "
            f"{uri} ({list(existing)}); only mode='overwrite' with overwriteSchema can change it"
        )


def _type(t: DataType) -> str:
    text = t.to_json()
    return text if isinstance(text, str) else str(text)
