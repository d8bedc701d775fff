"""The files a row-level change touches and what it writes: deletion vectors or copy-on-write.

A DELETE, UPDATE or MERGE decides, for each candidate file, which of its live rows it takes out
(deleted, or replaced by an updated copy). :class:`RowRewrite` turns that into actions the way
delta-spark does:

* **with deletion vectors** (the table has ``delta.enableDeletionVectors`` on and the
  ``deletionVectors`` feature): the file's new DV is its current one plus the rows taken out,
  written to a DV file (:class:`~deltalog.write.deletion_vector_files.DeletionVectorWriter`),
  and the file is re-committed with it (``remove`` + ``add`` of the same path,
  :func:`~deltalog.dml.dv_adds.add_with_deletion_vector`); a file whose every live row is taken
  out is removed instead. Only new rows (updated copies, inserts) are written.
* **copy-on-write** otherwise: the file is removed and the rows it keeps are written again,
  with the new rows, through the same :class:`~deltalog.write.data_writer.DataWriter`.

:meth:`RowRewrite.commit` publishes the transaction; on any failure before the commit may have
landed, every data and DV file written is deleted (:meth:`RowRewrite.abort`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.errors import CommitStatusUnknownError, StorageError
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.protocol.actions import AddFile, Metadata, Protocol
from deltalog.protocol.deletion_vector_writer import deleted_union
from deltalog.protocol.paths import decode_path
from deltalog.protocol.schema import StructType
from deltalog.read import FileRows
from deltalog.write.commit import num_records
from deltalog.write.data_writer import DataWriter
from deltalog.write.deletion_vector_files import DeletionVectorWriter, dv_prefix_length
from deltalog.write.input_data import Conformer
from deltalog.write.parquet_options import ParquetOptions
from deltalog.write.transaction import Transaction

from .dv_adds import add_with_deletion_vector
from .file_rewrites import FileRewrites

__all__ = ["RowRewrite", "Timer", "deletion_vectors_enabled"]


def deletion_vectors_enabled(protocol: Protocol, metadata: Metadata) -> bool:
    """Whether writers may add deletion vectors: the property is on and the feature there."""
    enabled = str(metadata.configuration.get("delta.enableDeletionVectors", "false")).lower()
    features = set(protocol.writer_features or ())
    return enabled == "true" and "deletionVectors" in features


class Timer:
    """Milliseconds since construction, and named laps (``scanTimeMs``, ...)."""

    def __init__(self) -> None:
        self._start = time.monotonic()
        self._lap = self._start

    def elapsed_ms(self) -> int:
        """Milliseconds since the timer started."""
        return int((time.monotonic() - self._start) * 1000)

    def lap_ms(self) -> int:
        """Milliseconds since the previous lap (or the start)."""
        now = time.monotonic()
        out, self._lap = int((now - self._lap) * 1000), now
        return out


class RowRewrite:
    """What one row-level change removes, re-commits and writes (see the module docstring).

    Args:
        storage: The table's storage.
        snapshot: The version the change reads.
        use_deletion_vectors: Mark rows in deletion vectors instead of rewriting files.
        schema: The schema new rows are written with (default the snapshot's; a merge with
            schema evolution passes the evolved one).
        configuration: The table properties the files are written under (default the
            snapshot's).
        options: File layout of the new data files.
        inline_max_bytes: DVs of at most this many bytes go inline into the log.
    """

    def __init__(
        self,
        storage: TableStorage,
        snapshot: Snapshot,
        *,
        use_deletion_vectors: bool,
        schema: StructType | None = None,
        configuration: Mapping[str, str | None] | None = None,
        options: ParquetOptions | None = None,
        inline_max_bytes: int = 0,
    ) -> None:
        self._storage = storage
        self._snapshot = snapshot
        self.use_deletion_vectors = use_deletion_vectors
        self._schema = schema or snapshot.schema
        self._configuration = dict(configuration or snapshot.configuration)
        self._options = options or ParquetOptions()
        self._writer: DataWriter | None = None
        self._rewrites: FileRewrites | None = None
        self._conformers: dict[pa.Schema, Conformer] = {}
        self._dvs = DeletionVectorWriter(
            storage,
            prefix_length=dv_prefix_length(self._configuration),
            inline_max_bytes=inline_max_bytes,
        )
        self._removes: list[str] = []
        self._dv_adds: list[AddFile] = []
        self.new_files: list[AddFile] = []
        self.removed_files = 0  # files removed whole (not re-committed with a DV)
        self.removed_bytes = 0
        self.copied_rows = 0
        self.dvs_added = 0
        self.dvs_removed = 0
        self.dvs_updated = 0
        self._finished = False

    # ------------------------------------------------------------------ changes
    @property
    def touched(self) -> int:
        """Files removed or re-committed so far."""
        return len(self._removes)

    def remove_whole(self, file: Mapping[str, Any]) -> None:
        """Remove a live file whole (every row of it goes, e.g. a partition delete)."""
        self._removes.append(file["path"])
        self.removed_files += 1
        self.removed_bytes += int(file.get("size") or 0)
        if file.get("deletion_vector"):
            self.dvs_removed += 1

    def change(
        self,
        file: Mapping[str, Any],
        found: FileRows,
        taken: pa.Array,
        replacement: pa.Table | None = None,
    ) -> int:
        """Take the rows of ``found`` where ``taken`` is true out of ``file``; how many.

        Args:
            file: The file's row of the snapshot's files.
            found: Its live rows (all columns, for copy-on-write) and their positions.
            taken: A boolean per row of ``found.rows`` (null is false).
            replacement: New rows that take their place (an update's): written with the
                file's kept rows when it is rewritten, else to the new files.
        """
        mask = pc.fill_null(taken, av.false())
        count = int(pc.sum(mask).as_py() or 0)
        if not count:
            return 0
        live = found.rows.num_rows
        if count == live:
            self.remove_whole(file)
        elif self.use_deletion_vectors:
            self._mark(file, found, found.positions.filter(mask))
        else:
            self.remove_whole(file)  # rewritten: removed, and its kept rows written again
            kept = found.rows.filter(pc.invert(mask))
            self.copied_rows += kept.num_rows
            tables = [self._conform(kept)]
            if replacement is not None:
                tables.append(self._conform(replacement))
            self._rewriter().submit(tables)
            return count
        if replacement is not None:
            self.write(replacement)
        return count

    def change_positions(self, file: Mapping[str, Any], found: FileRows, taken: pa.Array) -> int:
        """:meth:`change` given the rows' positions in the file (no mask to build); how many.

        Args:
            file: The file's row of the snapshot's files.
            found: Its live rows and their positions.
            taken: Positions (``int64``, distinct) of live rows of the file.
        """
        if not self.use_deletion_vectors:
            return self.change(file, found, pc.is_in(found.positions, value_set=taken))
        count = len(taken)
        if not count:
            return 0
        if count == found.rows.num_rows:
            self.remove_whole(file)
        else:
            self._mark(file, found, taken)
        return count

    def _mark(self, file: Mapping[str, Any], found: FileRows, positions: pa.Array) -> None:
        """Add ``positions`` to the file's deletion vector."""
        deleted = deleted_union(found.deleted, positions)
        descriptor = self._dvs.add(deleted)
        add = add_with_deletion_vector(dict(file), descriptor, found.physical_rows)
        self._dv_adds.append(add)
        self._removes.append(file["path"])
        if file.get("deletion_vector"):
            self.dvs_updated += 1
        else:
            self.dvs_added += 1

    def _rewriter(self) -> FileRewrites:
        if self._rewrites is None:
            options = dataclasses.replace(self._options, threads=1)
            self._rewrites = FileRewrites(self._storage, lambda: self._data_writer(options))
        return self._rewrites

    def _data_writer(self, options: ParquetOptions) -> DataWriter:
        partitions = (
            self._snapshot.partition_columns
            if self._schema is self._snapshot.schema
            else _partitions(self._snapshot, self._schema)
        )
        return DataWriter(
            self._storage.store,
            self._storage.root,
            self._schema,
            partitions,
            self._configuration,
            options=options,
        )

    def _conform(self, rows: pa.Table) -> pa.Table:
        conformer = self._conformers.get(rows.schema)
        if conformer is None:
            conformer = self._conformers[rows.schema] = Conformer(rows.schema, self._schema)
        batches = [conformer(b) for b in rows.to_batches()]
        if not batches:
            return rows.slice(0, 0)
        return pa.Table.from_batches(batches)

    def write(self, rows: pa.Table | pa.RecordBatch) -> None:
        """Write new rows (every column of the schema, logical names)."""
        if not rows.num_rows:
            return
        conformer = self._conformers.get(rows.schema)
        if conformer is None:
            conformer = self._conformers[rows.schema] = Conformer(rows.schema, self._schema)
        if self._writer is None:
            self._writer = self._data_writer(self._options)
        batches = rows.to_batches() if isinstance(rows, pa.Table) else [rows]
        for batch in batches:
            self._writer.write(conformer(batch))

    # ------------------------------------------------------------------ commit
    def stage(self, tx: Transaction) -> None:
        """Finish the files and stage every ``remove`` and ``add`` on ``tx``."""
        if self._writer is not None:
            self.new_files = self._writer.close()
        if self._rewrites is not None:
            self.new_files = [*self._rewrites.close(), *self.new_files]
        self._dvs.close()
        if self._removes:
            tx.remove(self._removes)
        adds = [*self._dv_adds, *self.new_files]
        if adds:
            tx.add(adds)

    @property
    def has_changes(self) -> bool:
        """Whether anything is staged: a file removed or re-committed, or new rows."""
        pending = self._writer is not None or self._rewrites is not None
        return bool(self._removes or self.new_files or pending)

    @property
    def added_bytes(self) -> int:
        """Bytes of the new data files."""
        return sum(a.size for a in self.new_files)

    @property
    def added_rows(self) -> int:
        """Rows of the new data files."""
        return sum(num_records(a) for a in self.new_files)

    def dv_metrics(self, prefix: str = "num") -> dict[str, int]:
        """Deletion-vector counts as delta-spark reports them (updated ones count in both)."""
        return {
            f"{prefix}DeletionVectorsAdded": self.dvs_added + self.dvs_updated,
            f"{prefix}DeletionVectorsRemoved": self.dvs_removed + self.dvs_updated,
            f"{prefix}DeletionVectorsUpdated": self.dvs_updated,
        }

    def commit(self, tx: Transaction, metrics: Mapping[str, int]) -> int:
        """Commit ``tx`` with ``metrics``; returns the version.

        Raises:
            Whatever :meth:`Transaction.commit` raises. The files written are deleted unless
            the commit may have landed (``StorageError``, ``CommitStatusUnknownError``).
        """
        try:
            tx.set_metrics({k: str(v) for k, v in metrics.items()})
            version = tx.commit()
        except (StorageError, CommitStatusUnknownError):
            self._finished = True
            raise  # the commit may have landed: its files must stay
        except BaseException:
            self.abort()
            raise
        self._finished = True
        return version

    def abort(self) -> None:
        """Give up: delete every data and DV file written (best effort)."""
        if self._finished:
            return
        self._finished = True
        if self._rewrites is not None:
            self._rewrites.abort()
        if self._writer is not None:
            self._writer.abort()
        for add in self.new_files:
            with contextlib.suppress(Exception):
                self._storage.store.delete(self._storage.data_file(decode_path(add.path)))
        self._dvs.abort()

    @property
    def written(self) -> list[str]:
        """Locations of the data and DV files written so far."""
        data = [] if self._writer is None else self._writer.locations
        rewritten = [] if self._rewrites is None else self._rewrites.locations
        return [*data, *rewritten, *self._dvs.locations]


def _partitions(snapshot: Snapshot, schema: StructType) -> Sequence[str]:
    names = set(schema.names)
    return [c for c in snapshot.partition_columns if c in names]
