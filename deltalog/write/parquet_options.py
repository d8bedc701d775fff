"""How data files are written: codec, row groups, pages, dictionary encoding, file size.

As delta-spark writes Parquet through parquet-mr: snappy unless asked otherwise, row groups of
up to 128 MiB (``parquet.block.size``), data pages of 1 MiB or 20,000 values
(``parquet.page.size``, ``parquet.page.row.count.limit``), and dictionary encoding where it
pays (:mod:`deltalog.write.dictionary_encoding`: parquet-mr's first-page test, and one over
the row group that parquet-mr lacks), falling back to plain for the rest of a row group once
a dictionary outgrows 1 MiB (``parquet.dictionary.page.size``). pyarrow's own default, a
dictionary for every column with that fallback, costs a unique id column a 1 MiB dictionary
and its indices per row group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from deltalog.errors import InvalidOptionError
from deltalog.write.dictionary_encoding import (
    DICTIONARY_PAGE_BYTES,
    PAGE_ROWS,
    dictionary_columns,
)

__all__ = [
    "CODECS",
    "DICTIONARY_PAGE_BYTES",
    "PAGE_ROWS",
    "ParquetOptions",
    "dictionary_columns",
    "writer_arguments",
]

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
        "use_dictionary": dictionary_columns(first, codec),
        "dictionary_pagesize_limit": DICTIONARY_PAGE_BYTES,
        "data_page_size": PAGE_BYTES,
        "max_rows_per_page": PAGE_ROWS,
        "write_statistics": True,
    }
