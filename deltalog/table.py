"""``DeltaTable``: the public façade for creating, reading and appending to a table."""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from checkpoints.last_checkpoint import LastCheckpoint
from deltalog.actions import Action, AddFile, Metadata, Protocol, RemoveFile
from deltalog.checkpointing import write_snapshot_checkpoint
from deltalog.commit import make_commit_info, publish
from deltalog.config import checkpoint_interval, expired_log_cleanup
from deltalog.errors import (
    CommitFailedError,
    InvalidInputError,
    InvalidPathError,
    TableAlreadyExistsError,
    TableNotFoundError,
    TimestampOutOfRangeError,
    VersionNotFoundError,
)
from deltalog.features import check_writable, protocol_for_new_table
from deltalog.paths import check_relative, commit_name, decode_path, encode_path, has_scheme
from deltalog.replay import advance, read_commit, replay, scheme_prefix
from deltalog.retention import cleanup_log
from deltalog.schema import StructType, as_struct
from deltalog.segment import LogListing, classify, list_log
from deltalog.snapshot import Snapshot
from deltalog.stats import build_add, read_footer
from deltalog.storage import TableStorage, storage_errors
from logstores import LogFileNotFoundError, open_store, scheme_of
from logstores.local import local_path_from_uri

TimestampLike = dt.datetime | int | str
_log = logging.getLogger(__name__)


class DuplicateFileError(InvalidInputError):
    """A file is given twice, or is already live in the table."""


class AppendOnlyError(InvalidInputError):
    """The table is append-only (``delta.appendOnly``) and the operation would remove data."""


def _now_ms() -> int:
    return int(time.time() * 1000)


def _to_millis(ts: TimestampLike) -> int:
    if isinstance(ts, int) and not isinstance(ts, bool):
        return ts
    if isinstance(ts, str):
        try:
            ts = dt.datetime.fromisoformat(ts)
        except ValueError as exc:
            raise InvalidInputError(f"not an ISO-8601 timestamp: {ts!r}") from exc
    if isinstance(ts, dt.datetime):
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=dt.UTC)
        return int(ts.timestamp() * 1000)
    raise InvalidInputError(f"not a timestamp: {ts!r}")


class DeltaTable:
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

    Raises:
        TableNotFoundError: No Delta table at ``uri``.
        VersionNotFoundError: ``version`` does not exist or cannot be rebuilt.
        TimestampOutOfRangeError: ``timestamp`` is before the first commit.
        CorruptLogError: The log violates the protocol (gap, malformed line, ...).
    """

    def __init__(
        self,
        uri: str,
        *,
        version: int | None = None,
        timestamp: TimestampLike | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        if version is not None and timestamp is not None:
            raise InvalidInputError("give version or timestamp, not both")
        self._storage = TableStorage.open(uri, storage_options)
        if timestamp is not None:
            listing = list_log(self._storage, use_hint=False)
            version = _version_at(listing, _to_millis(timestamp))
        else:
            listing = list_log(self._storage, use_hint=version is None)
            if (
                version is not None
                and version not in listing.commits
                and (listing.checkpoints and version < min(listing.checkpoints))
            ):
                listing = list_log(self._storage, use_hint=False)
        self._snapshot = replay(self._storage, listing, version)

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
        struct = as_struct(schema)
        partition_columns = list(partition_by)
        _check_partition_columns(struct, partition_columns)
        config = {str(k): str(v) for k, v in (configuration or {}).items()}
        protocol = protocol_for_new_table(struct, config)
        storage = TableStorage.open(uri, storage_options)
        try:
            existing = storage.list_log()
        except TableNotFoundError:
            existing = []
        if classify(existing).latest_version is not None:
            raise TableAlreadyExistsError(f"a Delta table already exists at {uri}")
        metadata = Metadata(
            id=str(uuid.uuid4()),
            name=name,
            description=description,
            schema_string=struct.to_json_string(),
            partition_columns=partition_columns,
            configuration=dict(config),
            created_time=_now_ms(),
        )
        info = make_commit_info(
            operation="CREATE TABLE",
            parameters={
                "isManaged": "false",
                "description": description,
                "partitionBy": orjson.dumps(partition_columns).decode(),
                "properties": orjson.dumps(config).decode(),
            },
            read_version=None,
            is_blind_append=True,
        )
        try:
            publish(storage, 0, info, [metadata, protocol], rebase=None)
        except CommitFailedError as exc:
            raise TableAlreadyExistsError(
                f"a Delta table was created at {uri} concurrently"
            ) from exc
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

    def files(self, *, with_stats: bool = True) -> pa.Table:
        """Live files: path, size, partition_values, modification_time, data_change, stats, ...

        Args:
            with_stats: Include the ``stats`` column. Statistics of files that come from a
                checkpoint are read only when asked for, so ``with_stats=False`` lists a table
                without touching them (and leaves the column out).
        """
        if with_stats:
            return self._snapshot.files
        raw = self._snapshot.raw_files
        return raw.drop_columns([c for c in ("stats", "_cp_row") if c in raw.column_names])

    def file_uris(self) -> list[str]:
        """Locations of the live data files, decoded, in the store's notation.

        Relative paths are joined to the table root; absolute ones (``file:/x``, ``s3://b/k``)
        are decoded and given as the store would address them.
        """
        root = self._storage.root.rstrip("/")
        paths = self._snapshot.paths()
        plain = pc.invert(
            pc.or_(
                pc.or_(pc.match_substring(paths, "%"), pc.starts_with(paths, "/")),
                pc.match_substring(paths, ":"),
            )
        )
        if pc.all(plain).as_py() is not False:
            joined: list[str] = pc.binary_join_element_wise(root + "/", paths, "").to_pylist()
            return joined
        out = []
        for path in paths.to_pylist():
            decoded = decode_path(path)
            if decoded.startswith("file:"):
                out.append(local_path_from_uri(decoded))
            elif has_scheme(decoded) or decoded.startswith("/"):
                out.append(decoded)
            else:
                out.append(f"{root}/{decoded}")
        return out

    def update(self) -> int:
        """Move to the latest version; returns it."""
        self._snapshot = replay(self._storage, list_log(self._storage))
        return self._snapshot.version

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Commit information, newest first: ``version``, ``timestamp`` and the commitInfo fields.

        Args:
            limit: At most this many entries.
        """
        listing = list_log(self._storage, use_hint=False)
        versions = sorted((v for v in listing.commits if v <= self.version()), reverse=True)
        if limit is not None:
            versions = versions[: max(limit, 0)]
        out = []
        for v in versions:
            status = listing.commits[v]
            entry: dict[str, Any] = {"version": v, "timestamp": status.modification_time}
            try:
                actions = read_commit(self._storage, status.name, v)
            except LogFileNotFoundError:
                break  # cleaned up while we listed
            for action in actions:
                if action.KEY == "commitInfo":
                    entry.update(action.to_json_dict())
                    entry["version"] = v
                    break
            out.append(entry)
        return out

    # ------------------------------------------------------------------ writing
    def append_files(self, paths: Iterable[str], *, data_change: bool = True) -> int:
        """Commit existing Parquet files as a blind append; returns the new version.

        Paths are relative to the table root, or absolute URIs on the table's store. Every file
        is checked (schema, partition values from Hive-style directories) before anything is
        written.

        Raises:
            SchemaMismatchError: A file's columns do not fit the table.
            PartitionValueError: A file's directories do not give valid partition values.
            InvalidPathError: A path escapes the table or is on another store.
            DuplicateFileError: A path is given twice or is already in the table.
            UnsupportedFeatureError: The table needs a writer feature deltalog lacks.
        """
        adds = self._describe_files(paths, data_change=data_change)
        return self._commit_files(adds, [], mode="Append")

    def overwrite_files(self, paths: Iterable[str]) -> int:
        """Replace every live file of the table with the given Parquet files.

        Raises:
            AppendOnlyError: The table is append-only.
            Same as :meth:`append_files` otherwise.
        """
        self.update()
        if self._snapshot.configuration.get("delta.appendOnly") == "true":
            raise AppendOnlyError("the table is append-only (delta.appendOnly=true)")
        adds = self._describe_files(paths, data_change=True, replacing=True)
        removes = _removes_for(self._snapshot.files)
        return self._commit_files(adds, removes, mode="Overwrite")

    def _describe_files(
        self, paths: Iterable[str], *, data_change: bool, replacing: bool = False
    ) -> list[AddFile]:
        snap = self._snapshot
        check_writable(snap.protocol, snap.metadata)
        schema, partition_columns = snap.schema, snap.partition_columns
        seen: set[str] = set()
        live = set() if replacing else set(snap.paths().to_pylist())
        adds = []
        for given in paths:
            action_path, relative, location = self._resolve(given)
            if action_path in seen:
                raise DuplicateFileError(f"{given!r} is given more than once")
            if action_path in live:
                raise DuplicateFileError(f"{given!r} is already in the table")
            seen.add(action_path)
            store = self._storage.store
            with storage_errors(f"cannot read {location}"):
                status = store.stat(location)
                with store.open_input(location) as fh:
                    footer = read_footer(fh, location)
            adds.append(
                build_add(
                    action_path=action_path,
                    relative_for_partitions=relative,
                    size=status.size,
                    modification_time=status.modification_time,
                    footer=footer,
                    table=schema,
                    partition_columns=partition_columns,
                    configuration=snap.configuration,
                    location=location,
                    data_change=data_change,
                )
            )
        if not adds:
            raise InvalidInputError("no files given")
        return adds

    def _resolve(self, given: str) -> tuple[str, str, str]:
        """(path for the action, path for partition parsing, store location) of a data file."""
        root = self._storage.root
        if has_scheme(given) or given.startswith("/"):
            if scheme_of(given) != scheme_of(self._storage.uri):
                raise InvalidPathError(f"{given!r} is not on the table's store ({self.uri})")
            with storage_errors(f"cannot resolve {given}"):
                _, location = open_store(given, {})
            if location.startswith(root.rstrip("/") + "/"):
                relative = check_relative(location[len(root.rstrip("/")) + 1 :])
                return encode_path(relative), relative, self._storage.data_file(relative)
            if "://" not in location:  # local absolute path outside the table
                return "file://" + encode_path(location), location, location
            if scheme_prefix(location) != scheme_prefix(root):
                raise InvalidPathError(f"{given!r} is outside the table's bucket or container")
            head = scheme_prefix(location)
            return head + encode_path(location[len(head) :]), location, location
        relative = check_relative(given)
        return encode_path(relative), relative, self._storage.data_file(relative)

    def _commit_files(self, adds: list[AddFile], removes: list[RemoveFile], *, mode: str) -> int:
        snap = self._snapshot
        blind = not removes
        metrics = {
            "numFiles": str(len(adds)),
            "numOutputRows": str(sum(_num_records(a) for a in adds)),
            "numOutputBytes": str(sum(a.size for a in adds)),
        }
        if removes:
            metrics["numRemovedFiles"] = str(len(removes))
        info = make_commit_info(
            operation="WRITE",
            parameters={"mode": mode, "partitionBy": orjson.dumps(snap.partition_columns).decode()},
            read_version=snap.version,
            is_blind_append=blind,
            metrics=metrics,
        )
        winners: list[tuple[int, list[Action]]] = []

        def rebase(lost: int) -> int:
            # A blind append may move past winners that change no metadata or protocol.
            version = lost
            while True:
                try:
                    actions = read_commit(self._storage, commit_name(version), version)
                except LogFileNotFoundError:
                    return version
                if not blind or any(isinstance(a, Metadata | Protocol) for a in actions):
                    raise CommitFailedError(
                        f"version {version} changed the table concurrently; retry the operation",
                        retryable=True,
                        conflict=True,
                    )
                winners.append((version, actions))
                version += 1

        actions: list[Action] = [*removes, *adds]
        result = publish(self._storage, snap.version + 1, info, actions, rebase=rebase)
        prefix = scheme_prefix(self._storage.root)
        for version, winner_actions in winners:
            snap = advance(snap, version, winner_actions, result.modification_time, prefix)
        self._snapshot = advance(
            snap, result.version, result.actions, result.modification_time, prefix
        )
        self._after_commit()
        return result.version

    def _after_commit(self) -> None:
        """Checkpoint every ``delta.checkpointInterval`` versions; never fail the commit."""
        snap = self._snapshot
        try:
            if snap.version % checkpoint_interval(snap.configuration) == 0:
                write_snapshot_checkpoint(self._storage, snap)
                if expired_log_cleanup(snap.configuration):
                    cleanup_log(self._storage, dict(snap.configuration))
        except Exception:  # the commit is durable already; a checkpoint is an optimisation
            _log.warning("checkpoint of version %d failed", snap.version, exc_info=True)

    def cleanup_log(self) -> list[str]:
        """Delete log files older than ``delta.logRetentionDuration`` (default 30 days).

        Only commits and checkpoints older than the newest checkpoint written before the cutoff
        are deleted; every version from that checkpoint on stays readable.

        Returns:
            The names of the deleted files.
        """
        return cleanup_log(self._storage, dict(self._snapshot.configuration))

    def checkpoint(self) -> LastCheckpoint:
        """Write a checkpoint of the version this object reads and point ``_last_checkpoint`` at it.

        Raises:
            StorageError: The log store failed.
        """
        return write_snapshot_checkpoint(self._storage, self._snapshot)

    def __repr__(self) -> str:
        return f"DeltaTable({self.uri!r}, version={self.version()})"


def _num_records(add: AddFile) -> int:
    if not add.stats:
        return 0
    n = orjson.loads(add.stats).get("numRecords", 0)
    return n if isinstance(n, int) else 0


def _removes_for(files: pa.Table) -> list[RemoveFile]:
    now = _now_ms()
    rows = files.select(["path", "partition_values", "size", "deletion_vector", "tags", "stats"])
    out = []
    for row in rows.to_pylist():
        dv = row["deletion_vector"]
        out.append(
            RemoveFile(
                path=row["path"],
                deletion_timestamp=now,
                data_change=True,
                extended_file_metadata=True,
                partition_values=dict(row["partition_values"] or []),
                size=row["size"],
                tags=dict(row["tags"]) if row["tags"] else None,
                deletion_vector={k: v for k, v in dv.items() if v is not None} if dv else None,
                stats=row["stats"],
            )
        )
    return out


def _check_partition_columns(schema: StructType, partition_columns: list[str]) -> None:
    if len(set(partition_columns)) != len(partition_columns):
        raise InvalidInputError(f"partition columns repeat: {partition_columns}")
    for col in partition_columns:
        try:
            f = schema.field(col)
        except KeyError:
            raise InvalidInputError(f"partition column {col!r} is not in the schema") from None
        if f.type.to_json() in ("void", "variant") or not isinstance(f.type.to_json(), str):
            raise InvalidInputError(f"partition column {col!r} must have a primitive type")
    if partition_columns and len(partition_columns) == len(schema.fields):
        raise InvalidInputError("a table needs at least one column that is not a partition column")


def _version_at(listing: LogListing, ts: int) -> int:
    """Latest version committed at or before ``ts`` (commit file times, made monotonic)."""
    if not listing.commits:
        raise VersionNotFoundError("no commit files to time travel with")
    latest_ok: int | None = None
    previous = -1
    for v in sorted(listing.commits):
        mtime = max(listing.commits[v].modification_time, previous + 1)
        previous = mtime
        if mtime <= ts:
            latest_ok = v
        else:
            break
    if latest_ok is None:
        first = min(listing.commits)
        raise TimestampOutOfRangeError(
            f"{dt.datetime.fromtimestamp(ts / 1000, dt.UTC).isoformat()} is before the first "
            f"available commit (version {first})"
        )
    return latest_ok
