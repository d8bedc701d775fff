"""How data files are written: codec, row groups, pages, dictionary encoding, file size.

As delta-spark writes Parquet through parquet-mr: snappy unless asked otherwise, row groups of
up to 128 MiB (``parquet.block.size``), data pages of 1 MiB or 20,000 values
(``parquet.page.size``, ``parquet.page.row.count.limit``), and dictionary encoding where it
pays. parquet-mr dictionary-encodes a column's first page and keeps the dictionary only if
that page came out smaller than plain, then falls back to plain for the rest of the row group
once the dictionary outgrows 1 MiB (``parquet.dictionary.page.size``). pyarrow would build a
dictionary for every column and fall back only at that limit, which costs a unique id column
a 1 MiB dictionary and its indices per row group; :func:`dictionary_columns` applies
parquet-mr's first-page test up front instead, and pyarrow's ``dictionary_pagesize_limit``
does the fallback.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.errors import InvalidOptionError

__all__ = ["CODECS", "ParquetOptions", "dictionary_columns", "writer_arguments"]

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
#: parquet-mr's ``parquet.page.size``: bytes of values per data page.
PAGE_BYTES = 1 << 20
#: parquet-mr's ``parquet.page.row.count.limit``: values per data page at most.
PAGE_ROWS = 20_000
#: parquet-mr's ``parquet.dictionary.page.size``: past it a column falls back to plain.
DICTIONARY_PAGE_BYTES = 1 << 20


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


def writer_arguments(first: pa.Table, codec: str) -> dict[str, Any]:
    """Keyword arguments of ``pyarrow.parquet.ParquetWriter`` for a file of parquet-mr's layout.

    Args:
        first: The file's first row group (dictionary columns are chosen from its first rows).
        codec: pyarrow's name of the codec (the first item of a :data:`CODECS` value).
    """
    return {
        "compression": codec,
        "use_dictionary": dictionary_columns(first),
        "dictionary_pagesize_limit": DICTIONARY_PAGE_BYTES,
        "data_page_size": PAGE_BYTES,
        "max_rows_per_page": PAGE_ROWS,
        "write_statistics": True,
    }


def dictionary_columns(table: pa.Table | pa.RecordBatch) -> list[str]:
    """The columns worth a dictionary, judged as parquet-mr judges them on its first page.

    parquet-mr dictionary-encodes a column's first page (up to 20,000 values), then keeps the
    dictionary only if the dictionary plus the bit-packed indices take fewer bytes than the
    values written plain (``isCompressionSatisfying``); otherwise the whole column chunk is
    written plain. The same test runs here on the first :data:`PAGE_ROWS` rows of ``table``.
    Boolean columns never get one (parquet-mr's v1 writer has none for them), nested columns
    always do, as do Arrow dictionary columns and columns with no values in the sample.
    """
    sample = table.slice(0, PAGE_ROWS)
    out = []
    for name, column in zip(sample.column_names, sample.columns, strict=True):
        t = column.type
        if pa.types.is_boolean(t):
            continue
        if pa.types.is_nested(t):
            out.extend(_leaf_paths(t, name))
            continue
        if pa.types.is_dictionary(t) or _dictionary_pays(column):
            out.append(name)
    return out


def _dictionary_pays(column: pa.Array | pa.ChunkedArray) -> bool:
    """parquet-mr's test: dictionary + indices smaller than the plain values."""
    values = column.drop_null()
    count = len(values)
    if count == 0:
        return True
    distinct = pc.unique(values)
    width = _plain_width(values.type)
    if width is None:  # variable length: a 4-byte length before each value
        if pa.types.is_binary_view(values.type) or pa.types.is_string_view(values.type):
            values, distinct = values.cast(pa.large_binary()), distinct.cast(pa.large_binary())
        plain = 4 * count + int(pc.sum(pc.binary_length(values)).as_py() or 0)
        dictionary = 4 * len(distinct) + int(pc.sum(pc.binary_length(distinct)).as_py() or 0)
    else:
        plain, dictionary = width * count, width * len(distinct)
    bits = (len(distinct) - 1).bit_length()
    indices = 1 + (count * bits + 7) // 8
    return dictionary + indices < plain


def _plain_width(t: pa.DataType) -> int | None:
    """Bytes of one value of ``t`` written plain by pyarrow; ``None`` for variable length."""
    if pa.types.is_decimal(t):  # FIXED_LEN_BYTE_ARRAY of the fewest bytes holding the precision
        return int(math.ceil(t.precision * math.log2(10)) + 1 + 7) // 8
    if pa.types.is_float16(t):
        return 2
    if pa.types.is_fixed_size_binary(t):
        return int(t.byte_width)
    try:
        bits = int(t.bit_width)
    except ValueError:
        return None
    return 4 if bits <= 32 else bits // 8  # INT32 holds the narrower integers


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
