"""The Arrow memory pool deltalog decodes log files into.

Replay decodes hundreds of megabytes (a million-file checkpoint's columns, a commit's JSON)
that mostly live only until the result is built. pyarrow's default pool on Linux is mimalloc,
which takes memory from the kernel in huge-page-aligned segments and returns it quickly; each
fresh segment is faulted in again. On virtual machines whose memory the host backs lazily those
faults dominated: listing a million files from a checkpoint spent 0.5 s of its 0.5-0.9 s in the
kernel, and peaked 100 MiB higher than with jemalloc, which pyarrow also ships and which reuses
what it freed. So deltalog hands jemalloc to the readers it calls when pyarrow has it.

This never changes the process's default pool (``pa.set_memory_pool``): only the buffers
deltalog's readers allocate come from this pool. A user who chose an allocator keeps it:
with ``ARROW_DEFAULT_MEMORY_POOL`` set, deltalog uses pyarrow's default pool too.
``DELTALOG_ARROW_POOL`` (``jemalloc``, ``mimalloc``, ``system`` or ``default``) overrides both.
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

_BACKENDS = {
    "jemalloc": "jemalloc_memory_pool",
    "mimalloc": "mimalloc_memory_pool",
    "system": "system_memory_pool",
}


@functools.cache
def decode_pool() -> pa.MemoryPool:
    """The pool deltalog's Parquet and JSON readers allocate from (see the module docstring)."""
    choice = os.environ.get("DELTALOG_ARROW_POOL", "").strip().lower()
    if not choice:
        choice = "default" if os.environ.get("ARROW_DEFAULT_MEMORY_POOL") else "jemalloc"
    make = getattr(pa, _BACKENDS.get(choice, ""), None)
    if make is not None:
        try:
            pool: pa.MemoryPool = make()
        except NotImplementedError:  # this pyarrow was built without that allocator
            pass
        else:
            return pool
    return pa.default_memory_pool()


def open_parquet(
    source: pa.NativeFile,
    *,
    pre_buffer: bool,
    metadata: pq.FileMetaData | None = None,
    buffer_size: int = 0,
) -> pq.ParquetFile:
    """``pq.ParquetFile(source, ...)`` whose reads allocate from :func:`decode_pool`.

    ``ParquetFile`` takes no pool, but its reader does: the reader is reopened on the same open
    file with the footer already parsed and every option ``ParquetFile`` would set (only these
    are ever passed). If this pyarrow's reader cannot be built that way, the file reads
    from the default pool. ``buffer_size`` 0 reads each column chunk whole before decoding it;
    a positive size streams it through a buffer of that size, page by page.
    """
    # INT96 (delta-spark's timestamps in stats_parsed) as microseconds: as nanoseconds, years
    # past 2262 would wrap around.
    pf = pq.ParquetFile(
        source,
        pre_buffer=pre_buffer,
        metadata=metadata,
        buffer_size=buffer_size,
        coerce_int96_timestamp_unit="us",
    )
    pool = decode_pool()
    if not isinstance(source, pa.NativeFile) or (
        pool.backend_name == pa.default_memory_pool().backend_name
    ):
        return pf  # a Python file object (a remote store's) is left to read as it is
    try:
        from pyarrow._parquet import ParquetReader

        reader = ParquetReader(memory_pool=pool)
        reader.open(
            source,
            pre_buffer=pre_buffer,
            metadata=pf.metadata,
            buffer_size=buffer_size,
            coerce_int96_timestamp_unit="us",
            **_reader_defaults(),
        )
    except (ImportError, TypeError, AttributeError, pa.ArrowException, OSError):
        return pf
    pf.reader = reader
    return pf


@functools.cache
def _reader_defaults() -> dict[str, Any]:
    """Options whose default differs between ``ParquetFile`` and its reader's ``open``.

    ``ParquetFile`` turns Arrow extension types (JSON, UUID) on by default, the reader's
    ``open`` does not: without this the reopened file would read them as plain columns.
    """
    found = inspect.signature(pq.ParquetFile.__init__).parameters.get("arrow_extensions_enabled")
    if found is None or found.default is inspect.Parameter.empty:
        return {}
    return {"arrow_extensions_enabled": found.default}
