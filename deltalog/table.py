"""``DeltaTable``: the public façade for creating, reading and appending to a table."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import orjson

from deltalog.dml.table_methods import RowChanges
from deltalog.errors import (
    AppendOnlyError,
    DuplicateFileError,
    InvalidInputError,
    InvalidPredicateError,
    ReplaceWhereMismatchError,
    TableAlreadyExistsError,
    TableNotFoundError,
)
from deltalog.log.replay import replay
from deltalog.log.segment import classify, list_log
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.log.time_travel import TimestampLike, to_millis, version_at
from deltalog.protocol.actions import Metadata, Protocol, serialize_actions
from deltalog.protocol.user_input import (
    as_items,
    check_version_number,
    is_long,
    renamed_keyword,
)
from deltalog.write.commit import ENGINE_INFO, RetryPolicy

# Opening a table and reading its version needs none of the modules below (nor pyarrow):
# each method imports what it uses, so a short script or a CLI command starts fast.
if TYPE_CHECKING:
    import pandas as pd  # type: ignore[import-untyped]
    import pyarrow as pa
    import pyarrow.dataset as ds

    from deltalog.check import CheckReport
    from deltalog.checkpoints.last_checkpoint import LastCheckpoint
    from deltalog.maintenance.after_commit import Maintenance
    from deltalog.maintenance.vacuum import Progress, VacuumMode, VacuumResult
    from deltalog.protocol.schema import StructType
    from deltalog.stats.predicate_input import PredicateLike
    from deltalog.stats.predicates import Predicate
    from deltalog.write.transaction import Transaction

__all__ = ["AppendOnlyError", "DeltaTable", "DuplicateFileError", "TimestampLike"]

#: How a write may change the table schema: ``merge`` adds the data's new columns.
SchemaMode = Literal["merge", "overwrite"]
_MAINTENANCE_LOCK = threading.Lock()


class DeltaTable(RowChanges):
    """A Delta table at one version.

    ``DeltaTable(uri)`` opens the latest version; ``version=`` or ``timestamp=`` open an older
    one. Writes (``append_files``, ``overwrite_files``) always commit on top of the latest
    version and move the object to the version they created.

    Args:
        uri: Table location: a path, ``file://``, ``memory://`` or any registered scheme.
        version: Open this version instead of the latest.
        timestamp: Open the latest version committed at or before this time (a datetime, an
            ISO-8601 string, or milliseconds since the epoch).
        storage_options: Options for the log store (e.g. ``s3.endpoint``).
        retry: How this object's transactions retry after losing a version to another writer
            (default :class:`~deltalog.write.commit.RetryPolicy`). A transaction may override it.
        background_checkpoints: Write the checkpoints that commits make due on a background
            thread (see :meth:`wait_for_checkpoints`); ``False`` writes them before ``commit``
            returns.

    Raises:
        TableNotFoundError: No Delta table at ``uri``.
        VersionNotFoundError: ``version`` does not exist or cannot be rebuilt.
        TimestampOutOfRangeError: ``timestamp`` is before the first available commit or after
            the latest one (as delta-spark refuses it).
        CorruptLogError: The log violates the protocol (gap, malformed line, ...).
    """

    def __init__(
        self,
        uri: str,
        *,
        version: int | None = None,
        timestamp: TimestampLike | None = None,
        storage_options: Mapping[str, str] | None = None,
        retry: RetryPolicy | None = None,
        background_checkpoints: bool = True,
        group_commit: bool | None = None,
    ) -> None:
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise InvalidInputError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
        self._retry = retry or RetryPolicy()
        self._background_checkpoints = background_checkpoints
        if group_commit is None:  # e.g. for the DeltaTable objects deltalog.spark opens
            flag = os.environ.get("DELTALOG_GROUP_COMMIT", "").strip().lower()
            group_commit = flag in ("1", "true", "yes", "on")
        if not isinstance(group_commit, bool):
            raise InvalidInputError(f"group_commit must be a bool, not {group_commit!r}")
        self._group_commit = group_commit
        if version is not None and timestamp is not None:
            raise InvalidInputError("give version or timestamp, not both")
        if version is not None:
            check_version_number(version, "version")
        self._storage = TableStorage.open(uri, storage_options)
        if timestamp is not None:
            listing = list_log(self._storage, use_hint=False)
            version = version_at(self._storage, listing, to_millis(timestamp))
        else:
            listing = list_log(self._storage, use_hint=version is None)
            if (
                version is not None
                and version not in listing.commits
                and (listing.checkpoints and version < min(listing.checkpoints))
            ):
                listing = list_log(self._storage, use_hint=False)
        self._snapshot = replay(self._storage, listing, version)
        self._maintenance_thread: Maintenance | None = None

    @property
    def _maintenance(self) -> Maintenance:
        """Checkpoints and log cleanup after this object's commits (set up on first commit)."""
        with _MAINTENANCE_LOCK:  # two threads may commit through one object
            if self._maintenance_thread is None:
                from deltalog.maintenance.after_commit import Maintenance

                self._maintenance_thread = Maintenance(
                    self._storage, background=self._background_checkpoints
                )
            return self._maintenance_thread

    # ----------------------------------------------------------------- creation
    @classmethod
    def create(
        cls,
        uri: str,
        schema: StructType | pa.Schema | Mapping[str, Any] | str,
        *,
        partition_by: Sequence[str] = (),
        configuration: Mapping[str, str] | None = None,
        storage_options: Mapping[str, str] | None = None,
        name: str | None = None,
        description: str | None = None,
    ) -> DeltaTable:
        """Create a new, empty table (version 0).

        Args:
            uri: Where to create it.
            schema: A ``StructType``, a pyarrow schema, or Delta schema JSON.
            partition_by: Partition columns, in order.
            configuration: Table properties (``delta.*``).
            storage_options: Log store options.
            name: Optional table name recorded in the metadata.
            description: Optional description recorded in the metadata.

        Raises:
            TableAlreadyExistsError: A table already exists at ``uri``.
            InvalidSchemaError: The schema is invalid.
            InvalidInputError: A partition column is not in the schema, or has a complex type.
            UnsupportedFeatureError: A property enables a feature deltalog cannot write.
        """
        from deltalog.log import in_commit_timestamps as ict
        from deltalog.log.checksum import write_first_checksum
        from deltalog.log.clock import now_ms
        from deltalog.write.commit import make_commit_info, try_write
        from deltalog.write.first_commit import new_table_actions

        storage = TableStorage.open(uri, storage_options)
        metadata, protocol = new_table_actions(
            schema,
            partition_by=partition_by,
            configuration=configuration,
            name=name,
            description=description,
        )
        _refuse_existing(storage)
        info = make_commit_info(
            operation="CREATE TABLE",
            parameters={
                "isManaged": "false",
                "description": description,
                "partitionBy": orjson.dumps(metadata.partition_columns).decode(),
                "properties": orjson.dumps(metadata.configuration).decode(),
            },
            read_version=None,
            is_blind_append=True,
        )
        if ict.enabled(metadata):
            info = ict.stamp(info, now_ms())
        if not try_write(storage, 0, serialize_actions([info, metadata, protocol])):
            raise TableAlreadyExistsError(f"a Delta table was created at {uri} concurrently")
        write_first_checksum(storage, info, metadata, protocol)
        return cls(uri, storage_options=storage_options)

    # ------------------------------------------------------------------ reading
    @property
    def uri(self) -> str:
        """The table URI as given."""
        return self._storage.uri

    @property
    def snapshot(self) -> Snapshot:
        """The snapshot this object reads."""
        return self._snapshot

    def version(self) -> int:
        """The version this object reads."""
        return self._snapshot.version

    def schema(self) -> StructType:
        """The table schema (``.to_arrow()`` for pyarrow)."""
        return self._snapshot.schema

    def protocol(self) -> Protocol:
        """The protocol action in force."""
        return self._snapshot.protocol

    def metadata(self) -> Metadata:
        """The metaData action in force."""
        return self._snapshot.metadata

    def files(
        self,
        *,
        with_stats: bool = True,
        filter: PredicateLike | None = None,
        flatten_stats: bool = False,
    ) -> pa.Table:
        """Live files: path, size, partition_values, modification_time, data_change, stats, ...

        Args:
            with_stats: Include the ``stats`` column. Statistics of files that come from a
                checkpoint are read only when asked for, so ``with_stats=False`` lists a table
                without touching them (and leaves the column out).
            filter: Only files that may hold rows matching this predicate (the forms
                :meth:`to_pyarrow_table` accepts, on any columns): files are pruned by partition
                values and by their statistics (see :mod:`deltalog.stats.skipping`); a file without
                statistics is kept.
            flatten_stats: Append typed columns as delta-rs's ``get_add_actions(flatten=True)``:
                ``num_records``, ``null_count.<col>``, ``min.<col>``, ``max.<col>`` (nested
                fields as ``min.a.b``) and ``partition.<col>`` (see
                :mod:`deltalog.stats.file_stats`).

        Raises:
            InvalidPredicateError: ``filter`` names a column the table lacks or a value that
                does not fit its column.
        """
        from deltalog.stats.file_stats import UnusableParsedStats
        from deltalog.stats.predicate_input import as_predicate

        snap = self._snapshot
        if not flatten_stats:
            from deltalog.read import files_matching

            return files_matching(snap, filter, with_stats=with_stats)
        # Flattened: the typed statistics of the checkpoint's files, from its stats_parsed or
        # its JSON parsed whole (and kept for later calls), filtered along with the files.
        predicate = None if filter is None else as_predicate(filter)
        if predicate is not None:
            unknown = sorted(predicate.columns() - set(snap.schema.names))
            if unknown:
                raise InvalidPredicateError(
                    f"the table has no column(s) {unknown} (columns: {snap.schema.names})"
                )
        on_partitions = predicate is not None and predicate.columns() <= set(snap.partition_columns)
        parsed = snap.typed_stats(build=True)
        try:
            return self._flattened(with_stats, predicate, on_partitions, parsed)
        except UnusableParsedStats:
            return self._flattened(with_stats, predicate, on_partitions, None)

    def _flattened(
        self,
        with_stats: bool,
        predicate: Predicate | None,
        on_partitions: bool,
        parsed: pa.ChunkedArray | None,
    ) -> pa.Table:
        from deltalog.stats.file_stats import flatten_stats as flatten
        from deltalog.stats.skipping import prune_mask

        snap = self._snapshot
        if not with_stats and parsed is not None and snap.typed_for_every_checkpoint_row(parsed):
            files = snap.files_with_commit_stats()
        else:
            files = snap.files
        if predicate is not None:
            typed = None if on_partitions else parsed
            keep = prune_mask(files, predicate, snap.schema, snap.partition_columns, typed)
            files = files.filter(keep)
            parsed = None if parsed is None else parsed.filter(keep)
        files = flatten(files, snap.schema, snap.partition_columns, parsed=parsed)
        return (
            files
            if with_stats or "stats" not in files.column_names
            else files.drop_columns(["stats"])
        )

    def to_pyarrow_table(
        self, *, columns: Sequence[str] | None = None, filter: PredicateLike | None = None
    ) -> pa.Table:
        """The rows of this version, with deletion vectors applied (see :mod:`deltalog.read`).

        Partition columns are typed from the Delta schema, column-mapped files are read by
        their physical names, and rows that a deletion vector invalidates are left out.

        Args:
            columns: Only these columns, in this order (default: all, in schema order).
            filter: Only rows matching this predicate (``col("p") == "a"``, SQL text, DNF
                tuples, a pyarrow expression), on any columns. Files whose partition values or
                statistics rule it out are not read, nor row groups whose Parquet statistics
                do (see :func:`deltalog.read.files_matching`); the rows are the same as without
                skipping.

        Raises:
            InvalidPredicateError: An unknown column.
            UnsupportedFeatureError: Something this reader cannot apply (nested column mapping).
            StorageError: A data or deletion-vector file cannot be read.
        """
        from deltalog.read import read_rows

        return read_rows(self._storage, self._snapshot, columns=columns, filter=filter)

    def to_pandas(
        self, *, columns: Sequence[str] | None = None, filter: PredicateLike | None = None
    ) -> pd.DataFrame:
        """The rows of :meth:`to_pyarrow_table` as a pandas DataFrame (pandas must be installed).

        ``filter`` also takes a pyarrow expression and SQL ``LIKE``/``IN``/``BETWEEN``/``IS NULL``.
        """
        return self.to_pyarrow_table(columns=columns, filter=filter).to_pandas()

    def to_pyarrow_dataset(
        self, *, columns: Sequence[str] | None = None, filter: PredicateLike | None = None
    ) -> ds.Dataset:
        """The rows of this version as an in-memory ``pyarrow.dataset.Dataset``.

        The same rows as :meth:`to_pyarrow_table` (deletion vectors applied), for code that
        wants a dataset; they are read eagerly.
        """
        import pyarrow.dataset as pads

        return pads.dataset(self.to_pyarrow_table(columns=columns, filter=filter))

    def file_uris(self) -> list[str]:
        """Locations of the live data files, decoded, in the store's notation.

        Relative paths are joined to the table root; absolute ones (``file:/x``, ``s3://b/k``)
        are decoded and given as the store would address them.
        """
        import pyarrow.compute as pc

        from deltalog.arrow import values as av

        root = self._storage.root.rstrip("/")
        paths = self._snapshot.paths()
        plain = pc.invert(
            pc.or_(
                pc.or_(pc.match_substring(paths, "%"), pc.starts_with(paths, "/")),
                pc.match_substring(paths, ":"),
            )
        )
        if pc.all(plain).as_py() is not False:
            joined: list[str] = pc.binary_join_element_wise(
                av.string(root + "/"), paths, av.string("")
            ).to_pylist()
            return joined
        return [self._storage.locate(path) for path in paths.to_pylist()]

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Commit information, newest first: ``version``, ``timestamp`` and the commitInfo fields.

        ``timestamp`` is the commit file's modification time, made monotonic across versions,
        as delta-spark's ``DESCRIBE HISTORY`` reports it and as time travel by timestamp uses
        it (``DeltaTable(uri, timestamp=entry["timestamp"])`` opens ``entry["version"]``); the
        writer's own clock is in ``commitInfo``'s ``timestamp``, kept as ``commitTimestamp``.
        On a table with in-commit timestamps, ``timestamp`` is the commit's
        ``inCommitTimestamp`` from the version that enabled them on.

        Args:
            limit: At most this many entries.
        """
        from deltalog.log import in_commit_timestamps as ict
        from deltalog.log.history import read_history

        if limit is not None:
            check_version_number(limit, "limit")
        listing = list_log(self._storage, use_hint=False)
        ict_from = ict.commit_time_source(self._snapshot.metadata)
        return read_history(self._storage, listing, self.version(), limit, ict_from)

    # ------------------------------------------------------------------ writing
    def transaction(
        self,
        operation: str = "WRITE",
        *,
        parameters: Mapping[str, Any] | None = None,
        isolation_level: str | None = None,
        retry: RetryPolicy | None = None,
        engine_info: str = ENGINE_INFO,
        user_metadata: str | None = None,
    ) -> Transaction:
        """Start a transaction on the snapshot this object holds.

        The transaction does not re-list the log: it starts from this object's snapshot (which
        advances after every commit made through it). Call :meth:`update` first to start from
        the newest version; either way, commits that landed since are checked for conflicts.

        Args:
            operation: ``commitInfo.operation`` (``WRITE``, ``DELETE``, ``OPTIMIZE``, ...).
            parameters: ``commitInfo.operationParameters``.
            isolation_level: ``Serializable`` or ``WriteSerializable``; default the table's
                ``delta.isolationLevel``, else ``WriteSerializable``.
            retry: Overrides this object's retry policy.
            engine_info: ``commitInfo.engineInfo``.
            user_metadata: ``commitInfo.userMetadata`` (delta-spark's ``userMetadata`` option).

        Raises:
            InvalidInputError: Unknown isolation level or empty operation.
        """
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise InvalidInputError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
        if not isinstance(engine_info, str):
            raise InvalidInputError(f"engine_info must be a str, not {type(engine_info).__name__}")
        from deltalog.write.transaction import Transaction

        group = None
        if self._group_commit:
            from deltalog.write.group_commit import committer_for

            group = committer_for(self._storage).commit
        return Transaction(
            storage=self._storage,
            snapshot=self._snapshot,
            operation=operation,
            parameters=parameters,
            isolation_level=isolation_level,
            retry=retry or self._retry,
            engine_info=engine_info,
            on_advance=self._advanced,
            user_metadata=user_metadata,
            group=group,
        )

    def _advanced(self, snapshot: Snapshot, committed: bool) -> None:
        """A transaction learned of newer versions (and, if ``committed``, made the newest)."""
        if snapshot.version <= self._snapshot.version:
            return
        self._snapshot = snapshot
        if committed:
            self._after_commit()

    def append_files(
        self,
        paths: Iterable[str],
        *,
        data_change: bool = True,
        schema_mode: SchemaMode | None = None,
    ) -> int:
        """Commit existing Parquet files as a blind append; returns the new version.

        Paths are relative to the table root, or absolute URIs on the table's store. A directory
        stands for the data files under it, read as Spark reads an output directory (markers
        such as ``_SUCCESS``, ``.crc`` checksums and hidden files skipped; Hive-style
        ``col=value`` subdirectories give partition values), so the output of
        ``df.write.parquet(...)`` becomes one commit. Every file is checked (schema, partition
        values from Hive-style directories) before anything is written. Appends never conflict
        with each other.

        Args:
            paths: Files or directories.
            data_change: ``dataChange`` of the add actions.
            schema_mode: ``"merge"`` adds the files' new columns (nested ones too) to the table
                schema in the same commit, with delta-spark's ``mergeSchema`` rules (see
                :mod:`deltalog.write.schema_merge`); ``None`` refuses files with columns the table
                lacks.

        Raises:
            SchemaMismatchError: A file's columns do not fit the table.
            SchemaEvolutionError: With ``schema_mode="merge"``: a column changes type (without
                an allowed widening) or a partition column would change.
            PartitionValueError: A file's directories do not give valid partition values.
            InvalidPathError: A path escapes the table or is on another store, is the table root,
                is a Spark output directory whose job has not committed (``_temporary``), or
                passes through ``_delta_log`` or another name starting with ``_`` or ``.``.
            DuplicateFileError: A path is given twice or is already in the table.
            UnsupportedFeatureError: The table needs a writer feature deltalog lacks.
            MetadataChangedError, ProtocolChangedError: A concurrent commit changed the table.
            ConcurrentVacuumError: A VACUUM ran while this commit was in flight and may delete
                a file older than its cutoff (see :mod:`deltalog.maintenance.vacuum`).
        """
        if schema_mode not in (None, "merge"):
            raise InvalidInputError(
                f"append_files takes schema_mode='merge' or None, not {schema_mode!r} (an "
                "append cannot replace the schema; use overwrite_files)"
            )
        tx = self.transaction("WRITE", parameters=self._write_parameters("Append"))
        if schema_mode == "merge":
            paths = self._merge_file_schemas(tx, paths)
        if not tx.add(paths, data_change=data_change):
            raise InvalidInputError("no files given")
        return tx.commit()

    def _merge_file_schemas(self, tx: Transaction, paths: Iterable[str]) -> list[str]:
        """Stage the table schema merged with the files' columns; the files to add.

        Raises:
            SchemaEvolutionError: The files' columns cannot be merged in.
        """
        from deltalog.write.data_files import data_schemas, expand
        from deltalog.write.schema_merge import merge_schemas, type_widening_enabled
        from deltalog.write.table_changes import protocol_for_schema

        snap = self._snapshot
        given = as_items(paths, (str,), "paths")
        files = expand(self._storage, given)
        merged = snap.schema
        widening = type_widening_enabled(snap.protocol, snap.metadata)
        for data in data_schemas(self._storage, files, merged, snap.partition_columns):
            merged = merge_schemas(
                merged, data, partition_columns=snap.partition_columns, type_widening=widening
            )
        if merged != snap.schema:
            upgrade = protocol_for_schema(snap, merged)
            if upgrade is not None:
                tx.update_protocol(upgrade)
            tx.update_metadata(schema=merged)
        return [path for path, _status in files]

    def overwrite_files(
        self,
        paths: Iterable[str],
        *,
        predicate: PredicateLike | None = None,
        schema_mode: Literal["merge"] | None = None,
        where: PredicateLike | None = None,
    ) -> int:
        """Replace live files with the given Parquet files; returns the new version.

        Without ``predicate`` every live file is replaced. With ``predicate`` (on partition
        columns: SQL text, ``col(...)`` or any form ``files(filter=...)`` takes) only the files
        it matches are, and every new file must satisfy it. An empty ``paths`` deletes what
        would be replaced. Concurrent overwrites of disjoint partitions do not conflict.
        ``schema_mode="merge"`` evolves the schema as in :meth:`append_files`.
        ``where=`` is the deprecated spelling of ``predicate=`` (a ``DeprecationWarning``).

        Raises:
            AppendOnlyError: The table is append-only.
            ReplaceWhereMismatchError: A new file does not satisfy ``predicate``.
            ConflictingOptionsError: Both ``predicate`` and ``where`` were given.
            ConcurrentAppendError, ConcurrentDeleteReadError: A concurrent commit changed the
                files this overwrite replaces.
            DeltaLogError: Otherwise, those :meth:`append_files` raises.
        """
        from deltalog.stats.predicate_input import as_predicate
        from deltalog.stats.predicates import matches, partition_table

        given = renamed_keyword(
            "DeltaTable.overwrite_files", "predicate", predicate, "where", where
        )
        if schema_mode not in (None, "merge"):
            raise InvalidInputError(f"overwrite_files takes schema_mode='merge' or None, not "
                                    f"{schema_mode!r}")  # fmt: skip
        self.update()
        if str(self._snapshot.configuration.get("delta.appendOnly")).lower() == "true":
            raise AppendOnlyError("the table is append-only (delta.appendOnly=true)")
        params = self._write_parameters("Overwrite")
        chosen = None if given is None else as_predicate(given)
        if chosen is not None:
            params["predicate"] = str(chosen)  # SQL text, as delta-spark 3.x records it
        tx = self.transaction("WRITE", parameters=params)
        old = tx.read_whole_table() if chosen is None else tx.read_files(chosen)
        if schema_mode == "merge":
            paths = self._merge_file_schemas(tx, paths)
        adds = tx.add(paths)
        if chosen is not None and adds:
            snap = self._snapshot
            table = partition_table(
                [a.partition_values for a in adds], snap.schema, snap.partition_columns
            )
            for add, ok in zip(adds, matches(chosen, table).to_pylist(), strict=True):
                if not ok:
                    raise ReplaceWhereMismatchError(
                        f"{add.path} (partition {add.partition_values}) does not satisfy the "
                        f"overwrite predicate {chosen}"
                    )
        tx.remove(old)
        return tx.commit()

    def _write_parameters(self, mode: str) -> dict[str, Any]:
        return {
            "mode": mode,
            "partitionBy": orjson.dumps(self._snapshot.partition_columns).decode(),
        }

    def _after_commit(self) -> None:
        """Checkpoint every ``delta.checkpointInterval`` versions; never fails the commit."""
        self._maintenance.after_commit(self._snapshot)

    def wait_for_checkpoints(self, timeout: float | None = None) -> bool:
        """Wait until checkpoints (and log cleanup) due after this object's commits are written.

        With ``background_checkpoints=True`` (the default) a commit returns as soon as its log
        entry is durable, and the checkpoint it makes due is written on a background thread.

        Args:
            timeout: Seconds to wait at most; ``None`` waits as long as it takes.

        Returns:
            ``False`` if the timeout ran out first.
        """
        if timeout is not None and (not isinstance(timeout, int | float) or timeout != timeout):
            raise InvalidInputError(f"timeout must be a number of seconds, not {timeout!r}")
        if self._maintenance_thread is None:  # nothing committed through this object
            return True
        return self._maintenance.wait(timeout)

    def cleanup_log(self) -> list[str]:
        """Delete log files older than ``delta.logRetentionDuration`` (default 30 days).

        Only commits and checkpoints older than the newest checkpoint written before the cutoff
        are deleted; every version from that checkpoint on stays readable.

        Returns:
            The names of the deleted files.
        """
        from deltalog.maintenance.retention import cleanup_log
        from deltalog.protocol.property_keys import TableProperties

        return cleanup_log(self._storage, TableProperties(self._snapshot.configuration))

    def vacuum(
        self,
        retention_hours: float | None = None,
        *,
        dry_run: bool = True,
        mode: VacuumMode = "full",
        enforce_retention_duration: bool = True,
        progress: Progress | None = None,
        now_ms: int | None = None,
    ) -> VacuumResult:
        """Delete data files the latest version no longer needs (VACUUM).

        See :mod:`deltalog.maintenance.vacuum` for the rules and the design.

        Moves this object to the latest version first; a real run adds the ``VACUUM START`` and
        ``VACUUM END`` commits.

        Args:
            retention_hours: Keep files younger than this many hours (fractions honoured to
                the millisecond); default the table's ``delta.deletedFileRetentionDuration``
                (one week unless set).
            dry_run: Only report what would be deleted (the default, as in delta-rs).
            mode: ``"full"`` lists the table directory (also finds files no commit named);
                ``"lite"`` reads the removed files from the log instead.
            enforce_retention_duration: Refuse a retention shorter than the table's.
            progress: Called with ``(deleted, total)`` after each batch of deletes.
            now_ms: The current time in ms (default: the clock).

        Returns:
            The files deleted (or to delete), their size, and the commits written.

        Raises:
            InvalidRetentionError: A negative retention.
            RetentionTooShortError: Shorter than the table's while the check is enforced.
            CannotVacuumLiteError: ``mode="lite"`` needs commits that were cleaned up.
            UnsupportedFeatureError: The table needs a writer feature deltalog lacks.
            ConcurrentVacuumError: Another vacuum is running on the table.
            StorageError: The store failed.
        """
        from deltalog.maintenance.vacuum import vacuum as run_vacuum

        if now_ms is not None and not is_long(now_ms):
            raise InvalidInputError(f"now_ms must be an int, not {type(now_ms).__name__}")
        if progress is not None and not callable(progress):
            raise InvalidInputError("progress must be callable")
        if list_log(self._storage).latest_version != self.version():
            self.update()
        return run_vacuum(
            self._storage,
            self._snapshot,
            retention_hours=retention_hours,
            dry_run=dry_run,
            mode=mode,
            enforce_retention_duration=enforce_retention_duration,
            now_ms=now_ms,
            progress=progress,
            retry=self._retry,
            on_commit=lambda snapshot: self._advanced(snapshot, True),
        )

    def check(self, *, data_files: bool = True) -> CheckReport:
        """Validate the table's log, checkpoints and data files (see :mod:`deltalog.check`).

        The whole log is checked as it is now on storage, not only up to the version this
        object reads.

        Args:
            data_files: Also check that live files exist with their logged sizes, and report
                orphans.

        Returns:
            The findings; ``report.ok`` is true when there is no error.
        """
        from deltalog.check import check_storage  # a large module, loaded when used

        return check_storage(self._storage, data_files=data_files)

    def checkpoint(self) -> LastCheckpoint:
        """Write a checkpoint of the version this object reads and point ``_last_checkpoint`` at it.

        Raises:
            StorageError: The log store failed.
        """
        from deltalog.maintenance.checkpointing import write_snapshot_checkpoint

        return write_snapshot_checkpoint(self._storage, self._snapshot)

    def __repr__(self) -> str:
        return f"DeltaTable({self.uri!r}, version={self.version()})"

    def _repr_html_(self) -> str:
        """How the table shows in Jupyter: version, protocol, files, schema."""
        from deltalog.log.notebook import snapshot_html

        return snapshot_html(self.uri, self._snapshot)


def _refuse_existing(storage: TableStorage) -> None:
    """Raise :class:`TableAlreadyExistsError` when ``storage`` holds a table."""
    try:
        existing = storage.list_log()
    except TableNotFoundError:
        existing = []
    if classify(existing).latest_version is not None:
        raise TableAlreadyExistsError(f"a Delta table already exists at {storage.uri}")
