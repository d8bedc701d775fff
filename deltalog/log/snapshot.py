"""A table's state at one version."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from deltalog.errors import InvalidSchemaError, UnsupportedFeatureError
from deltalog.lazy import lazy_module
from deltalog.log.file_actions import PendingFiles
from deltalog.protocol.actions import DomainMetadata, Metadata, Protocol, Txn
from deltalog.protocol.features import check_writable
from deltalog.protocol.schema import StructType

if TYPE_CHECKING:  # the files are Arrow, but version, protocol and metadata need no pyarrow
    import pyarrow as pa
    import pyarrow.compute as pc
else:
    pa = lazy_module("pyarrow")
    pc = lazy_module("pyarrow.compute")


@dataclass(frozen=True)
class Snapshot:
    """Protocol, metadata and live files of a table at ``version``.

    Attributes:
        version: The table version.
        protocol: The protocol in force.
        metadata: The table metadata in force.
        file_state: Live files and tombstones, merged on first use (``raw_files`` and
            ``tombstones`` read it). ``raw_files`` has the ``FILES_SCHEMA`` columns, where rows
            that came from a checkpoint may have no ``stats`` yet, plus ``_cp_row`` (the row's
            position among the checkpoint's adds) when ``stats_loader`` is set; ``tombstones``
            holds remove actions still kept as tombstones (``TOMBSTONES_SCHEMA``).
        txns: Latest ``txn`` per application id.
        domains: Latest non-removed domain metadata per domain.
        timestamp: Commit time of ``version`` in ms (in-commit timestamp where the table has
            them, else the commit file's modification time).
        checkpoint_version: Version of the checkpoint the replay started from, if any.
        stats_loader: Reads the checkpoint's ``add.stats`` column, in checkpoint row order, the
            first time a caller asks for statistics.
        parsed_stats_loader: Reads the checkpoint's typed ``add.stats_parsed``, in checkpoint
            row order (``None`` from it when the checkpoint has none).
        json_typed_loader: Parses the checkpoint's JSON statistics into the same typed form,
            for a schema string and partition columns (kept per schema).
    """

    version: int
    protocol: Protocol
    metadata: Metadata
    file_state: PendingFiles = field(repr=False, compare=False)
    txns: Mapping[str, Txn] = field(default_factory=dict)
    domains: Mapping[str, DomainMetadata] = field(default_factory=dict)
    timestamp: int = 0
    checkpoint_version: int | None = None
    stats_loader: Callable[[], pa.ChunkedArray] | None = None
    parsed_stats_loader: Callable[[], pa.ChunkedArray | None] | None = None
    json_typed_loader: Callable[[str, tuple[str, ...], bool], pa.ChunkedArray | None] | None = None

    @property
    def raw_files(self) -> pa.Table:
        """Live files as replay keeps them (see the class docstring)."""
        return self.file_state.get()[0].table

    @property
    def tombstones(self) -> pa.Table:
        """Remove actions still kept as tombstones."""
        return self.file_state.get()[1].table

    @cached_property
    def files(self) -> pa.Table:
        """Live files (``FILES_SCHEMA``) with statistics, read from the checkpoint on first use."""
        raw = self.raw_files
        if "_cp_row" not in raw.column_names:
            return raw
        stats = raw.column("stats")
        if self.stats_loader is not None and raw.num_rows:
            stats = _fill_stats(stats, raw.column("_cp_row"), self.stats_loader())
        at = raw.column_names.index("stats")
        return raw.drop_columns(["_cp_row"]).set_column(at, "stats", stats)

    def check_writable(self, enforced: frozenset[str] = frozenset()) -> None:
        """Refuse writing at this snapshot's protocol and metadata (checked once, then cached).

        ``enforced``: features the writer enforces itself (see
        :func:`deltalog.protocol.features.check_writable`).

        Raises:
            UnsupportedFeatureError: Naming the feature deltalog cannot honour.
        """
        if enforced:
            check_writable(self.protocol, self.metadata, enforced)
            return
        outcome = self.__dict__.get("_write_check")
        if outcome is None:
            try:
                check_writable(self.protocol, self.metadata)
                outcome = ()
            except UnsupportedFeatureError as exc:
                outcome = (exc,)
            self.__dict__["_write_check"] = outcome
        if outcome:
            raise outcome[0]

    def files_without_stats(self) -> pa.Table:
        """Live files without the ``stats`` column (never reads statistics from a checkpoint)."""
        raw = self.raw_files
        return raw.drop_columns([c for c in ("stats", "_cp_row") if c in raw.column_names])

    def parsed_stats(self) -> pa.ChunkedArray | None:
        """The checkpoint's typed statistics (``stats_parsed``), one row per live file.

        Null for files added since the checkpoint; ``None`` when the checkpoint has no typed
        statistics (or there is no checkpoint). Rows line up with :attr:`raw_files` and
        :attr:`files`.
        """
        from deltalog.stats.parsed_stats import aligned

        raw = self.raw_files
        if self.parsed_stats_loader is None or "_cp_row" not in raw.column_names:
            return None
        parsed = self.parsed_stats_loader()
        return None if parsed is None else aligned(parsed, raw.column("_cp_row"))

    def typed_stats(self, *, build: bool = True) -> pa.ChunkedArray | None:
        """Typed statistics of the checkpoint's files, one row per live file.

        The checkpoint's ``stats_parsed`` (:meth:`parsed_stats`) where it has them, else its
        JSON statistics parsed once and kept (the JSON itself is not kept); with
        ``build=False`` only if they were parsed already. Null for files added since the
        checkpoint; ``None`` without a checkpoint.
        """
        from deltalog.stats.parsed_stats import aligned

        parsed = self.parsed_stats()
        if parsed is not None or self.json_typed_loader is None:
            return parsed
        raw = self.raw_files
        if "_cp_row" not in raw.column_names:
            return None
        partition_columns = tuple(self.metadata.partition_columns)
        schema = self.metadata.schema_string or ""
        typed = self.json_typed_loader(schema, partition_columns, build)
        return None if typed is None else aligned(typed, raw.column("_cp_row"))

    def typed_for_every_checkpoint_row(self, parsed: pa.ChunkedArray) -> bool:
        """Whether ``parsed`` (:meth:`parsed_stats`) has a struct for every checkpoint row.

        Otherwise the rows without one need the checkpoint's JSON statistics (:attr:`files`).
        """
        raw = self.raw_files
        return (
            "_cp_row" in raw.column_names and parsed.null_count == raw.column("_cp_row").null_count
        )

    def files_with_commit_stats(self) -> pa.Table:
        """Live files with only the ``stats`` logged since the checkpoint.

        The checkpoint's rows have null ``stats``: what typed statistics need beside
        :meth:`parsed_stats`, without reading the checkpoint's JSON.
        """
        raw = self.raw_files
        return raw.drop_columns(["_cp_row"]) if "_cp_row" in raw.column_names else raw

    def paths(self) -> pa.ChunkedArray:
        """The ``path`` of every live file, as logged (no statistics are loaded)."""
        return self.raw_files.column("path")

    @cached_property
    def schema(self) -> StructType:
        """The table schema.

        Raises:
            InvalidSchemaError: The metadata has no (or an invalid) schema string.
        """
        if not self.metadata.schema_string:
            raise InvalidSchemaError(f"table metadata at version {self.version} has no schema")
        return StructType.from_json_string(self.metadata.schema_string)

    @property
    def partition_columns(self) -> list[str]:
        """Partition column names, in order."""
        return list(self.metadata.partition_columns)

    @property
    def configuration(self) -> Mapping[str, str | None]:
        """Table properties."""
        return self.metadata.configuration

    @property
    def num_files(self) -> int:
        """Number of live logical files."""
        adds = self.file_state.live_adds()  # a small table just opened: no Arrow needed
        return len(adds) if adds is not None else int(self.raw_files.num_rows)

    @property
    def size_in_bytes(self) -> int:
        """Total size of live files."""
        adds = self.file_state.live_adds()
        if adds is not None:
            return sum(a.size for a in adds)
        if not self.raw_files.num_rows:
            return 0
        total = pc.sum(self.raw_files.column("size")).as_py()
        return int(total or 0)


def _fill_stats(
    stats: pa.ChunkedArray, cp_row: pa.ChunkedArray, from_checkpoint: pa.ChunkedArray
) -> pa.ChunkedArray:
    """Checkpoint statistics where ``cp_row`` points into the checkpoint, ``stats`` elsewhere.

    Usually every checkpoint row is still live and in order, followed by rows from commits: then
    the checkpoint column is reused as it is, without a copy.
    """
    from deltalog.stats.parsed_stats import checkpoint_rows_first

    if checkpoint_rows_first(cp_row, len(from_checkpoint)):
        chunks = [*from_checkpoint.chunks, *stats.slice(len(from_checkpoint)).chunks]
        return pa.chunked_array(chunks, type=pa.string())
    return pc.coalesce(stats, from_checkpoint.take(cp_row))
