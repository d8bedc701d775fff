"""How data files are written: codec, row groups, dictionary encoding, file size.

As delta-spark writes Parquet through parquet-mr: snappy unless asked otherwise, row groups of
up to 128 MiB (``parquet.block.size``), and dictionary encoding where it pays. parquet-mr tries
a dictionary for every column and falls back to plain encoding once the dictionary outgrows a
page; the data writer decides per column from the first rows instead (see
:func:`dictionary_columns`), which gives the same files for low-cardinality columns and spares
building a dictionary only to throw it away for unique ones (ids, timestamps, random doubles).
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import InvalidOptionError

__all__ = ["CODECS", "ParquetOptions", "dictionary_columns"]

#: Spark's codec names mapped to pyarrow's, and the infix Spark puts in file names.
CODECS = {
    "snappy": ("snappy", ".snappy"),
    "zstd": ("zstd", ".zstd"),
    "gzip": ("gzip", ".gz"),
    "lz4": ("lz4", ".lz4"),
    "lz4_raw": ("lz4", ".lz4raw"),
    "brotli": ("brotli", ".br"),
    "uncompressed": ("none", ""),
    "none": ("none", ""),
}

#: parquet-mr's ``parquet.block.size``.
ROW_GROUP_BYTES = 128 << 20
#: delta-rs's default ``target_file_size`` (``delta.targetFileSize``): 100 MiB.
TARGET_FILE_SIZE = 100 << 20
#: Rows looked at to decide whether a column gets a dictionary.
_SAMPLE_ROWS = 1 << 13
#: A column whose sample has more distinct values than this share of its rows is written plain.
_DICTIONARY_RATIO = 0.5


@dataclass(frozen=True)
class ParquetOptions:
    """How the data writer lays out files.

    Attributes:
        codec: A key of :data:`CODECS` (Spark's names).
        target_file_size: Start a new file once a file holds this many bytes (0: no limit).
        max_rows_per_file: Start a new file after this many rows (0: no limit).
        row_group_bytes: Rows of a file buffered (as Arrow) before a row group is written.
        row_group_rows: Rows buffered before a row group is written.
        buffer_bytes: Rows buffered for all open files together; past it the largest buffer
            is written out as a row group, so memory stays bounded however many partitions
            the data has.
        max_open_files: Files open at once; past it the one written to least recently is
            finished (a later row of its partition starts a new file).
        file_metadata: Key-value metadata for each file's footer.
        threads: Threads encoding row groups (files are encoded in parallel, each in order).
    """

    codec: str = "snappy"
    target_file_size: int = TARGET_FILE_SIZE
    max_rows_per_file: int = 0
    row_group_bytes: int = ROW_GROUP_BYTES
    row_group_rows: int = 1 << 20
    buffer_bytes: int = 256 << 20
    max_open_files: int = 64
    file_metadata: tuple[tuple[str, str], ...] = ()
    threads: int = 2

    def __post_init__(self) -> None:
        if self.codec not in CODECS:
            raise InvalidOptionError(
                f"compression {self.codec!r} is not one deltalog writes ({sorted(CODECS)})",
                option="compression",
            )
        for name in ("target_file_size", "max_rows_per_file"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise InvalidOptionError(
                    f"{name} must be a non-negative int, not {value!r}", option=name
                )
        if self.threads < 1 or self.max_open_files < 1:
            raise InvalidOptionError("threads and max_open_files must be at least 1")


def dictionary_columns(table: pa.Table | pa.RecordBatch) -> list[str]:
    """The columns worth a dictionary, judged from the first rows of ``table``.

    A column gets one when its sample holds at most half as many distinct values as rows
    (nested columns always do, as parquet-mr has them).
    """
    sample = table.slice(0, _SAMPLE_ROWS)
    out = []
    for name, column in zip(sample.column_names, sample.columns, strict=True):
        t = column.type
        if pa.types.is_boolean(t):
            continue
        if pa.types.is_nested(t):
            out.extend(_leaf_paths(t, name))
            continue
        if pa.types.is_dictionary(t):
            out.append(name)
            continue
        rows = len(column) - column.null_count
        if rows <= 0:
            out.append(name)
            continue
        distinct = pc.count_distinct(column).as_py()
        if distinct <= rows * _DICTIONARY_RATIO:
            out.append(name)
    return out


def _leaf_paths(t: pa.DataType, path: str) -> list[str]:
    """The Parquet column paths under a nested column (pyarrow's compliant names)."""
    if pa.types.is_struct(t):
        return [
            p
            for i in range(t.num_fields)
            for p in _leaf_paths(t.field(i).type, f"{path}.{t.field(i).name}")
        ]
    if pa.types.is_map(t):
        return [
            *_leaf_paths(t.key_type, f"{path}.key_value.key"),
            *_leaf_paths(t.item_type, f"{path}.key_value.value"),
        ]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaf_paths(t.value_type, f"{path}.list.element")
    return [path]
