"""Log replay: a :class:`LogSegment` (checkpoint + commits) becomes a :class:`Snapshot`.

Live files stay columnar: the checkpoint's ``add`` rows are read as an Arrow table with only the
projected fields, commits after it are applied by key, and the checkpoint rows those commits
touched are filtered out with one vectorised ``is_in``. After deltalog's own commit the snapshot
advances with :func:`advance` instead of replaying.

Files are keyed by the protocol's ``(path, deletion vector id)``. Paths are compared in
canonical form as delta-spark does: an absolute path without a scheme is qualified with the
table's scheme (``/x`` → ``file:/x``), and ``file:///x`` is the same as ``file:/x``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from checkpoints.errors import CheckpointError
from checkpoints.reader import read_checkpoint
from checkpoints.schema import ADD, REMOVE
from deltalog.actions import (
    Action,
    AddFile,
    CommitInfo,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
    parse_action,
    parse_actions,
)
from deltalog.errors import (
    CorruptCheckpointError,
    MalformedCommitError,
    MissingMetadataError,
    MissingProtocolError,
    StorageError,
    VersionNotFoundError,
)
from deltalog.features import check_readable
from deltalog.paths import parse_log_name
from deltalog.segment import LogListing, LogSegment, build_segment, list_log
from deltalog.snapshot import Snapshot
from deltalog.storage import TableStorage, storage_errors


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name)


ADD_FIELDS = tuple(f.name for f in ADD)
TOMBSTONE_FIELDS = (
    "path",
    "deletionTimestamp",
    "dataChange",
    "extendedFileMetadata",
    "partitionValues",
    "size",
    "deletionVector",
)
#: Columns of ``Snapshot.files``: the ``add`` action's fields in snake_case.
FILES_SCHEMA = pa.schema([pa.field(_snake(f.name), f.type) for f in ADD])
#: Columns of ``Snapshot.tombstones``.
TOMBSTONES_SCHEMA = pa.schema(
    [pa.field(_snake(REMOVE.field(n).name), REMOVE.field(n).type) for n in TOMBSTONE_FIELDS]
)


def scheme_prefix(root: str) -> str:
    """What qualifies an absolute, scheme-less path under ``root``: ``file:`` or ``s3://b``."""
    if "://" not in root:
        return "file:"
    scheme, _, rest = root.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


def canonical_path(path: str, prefix: str) -> str:
    """The form of ``path`` used to match adds with removes."""
    if path.startswith("file:///"):
        return "file:/" + path[8:]
    if path.startswith("/") and not path.startswith("//"):
        return prefix + path
    return path


def _file_key(path: str, dv_id: str | None, prefix: str) -> str:
    key = canonical_path(path, prefix)
    return key if dv_id is None else f"{key}\x00{dv_id}"


def _arrow_keys(table: pa.Table, prefix: str) -> pa.Array:
    """Vectorised :func:`_file_key` over a files/tombstones table."""
    path = table.column("path").combine_chunks()
    if pc.any(pc.starts_with(path, "/")).as_py() or pc.any(pc.starts_with(path, "file:")).as_py():
        fixed = pc.replace_substring_regex(path, "^file:///", "file:/")
        qualified = pc.binary_join_element_wise(prefix, fixed, "")
        is_abs = pc.and_(pc.starts_with(fixed, "/"), pc.invert(pc.starts_with(fixed, "//")))
        path = pc.if_else(is_abs, qualified, fixed)
    dv = table.column("deletion_vector").combine_chunks()
    if dv.null_count == len(dv):
        return path
    offset = pc.cast(dv.field("offset"), pa.string())
    dv_id = pc.binary_join_element_wise(
        dv.field("storageType"),
        dv.field("pathOrInlineDv"),
        pc.if_else(pc.is_null(offset), "", pc.binary_join_element_wise("@", offset, "")),
        "",
    )
    return pc.if_else(pc.is_null(dv), path, pc.binary_join_element_wise(path, dv_id, "\x00"))


def _dv_row(dv: dict[str, Any] | None) -> dict[str, Any] | None:
    return (
        None
        if dv is None
        else {f.name: dv.get(f.name) for f in FILES_SCHEMA.field("deletion_vector").type}
    )


def adds_to_table(adds: Sequence[AddFile]) -> pa.Table:
    """Arrow table (``FILES_SCHEMA``) of add actions."""
    if not adds:
        return FILES_SCHEMA.empty_table()
    cols: dict[str, list[Any]] = {
        "path": [a.path for a in adds],
        "partition_values": [a.partition_values for a in adds],
        "size": [a.size for a in adds],
        "modification_time": [a.modification_time for a in adds],
        "data_change": [a.data_change for a in adds],
        "tags": [a.tags for a in adds],
        "deletion_vector": [_dv_row(a.deletion_vector) for a in adds],
        "base_row_id": [a.base_row_id for a in adds],
        "default_row_commit_version": [a.default_row_commit_version for a in adds],
        "clustering_provider": [a.clustering_provider for a in adds],
        "stats": [a.stats for a in adds],
    }
    return pa.Table.from_pydict(cols, schema=FILES_SCHEMA)


def removes_to_table(removes: Sequence[RemoveFile]) -> pa.Table:
    """Arrow table (``TOMBSTONES_SCHEMA``) of remove actions."""
    if not removes:
        return TOMBSTONES_SCHEMA.empty_table()
    cols: dict[str, list[Any]] = {
        "path": [r.path for r in removes],
        "deletion_timestamp": [r.deletion_timestamp for r in removes],
        "data_change": [r.data_change for r in removes],
        "extended_file_metadata": [r.extended_file_metadata for r in removes],
        "partition_values": [r.partition_values for r in removes],
        "size": [r.size for r in removes],
        "deletion_vector": [_dv_row(r.deletion_vector) for r in removes],
    }
    return pa.Table.from_pydict(cols, schema=TOMBSTONES_SCHEMA)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Rename camelCase checkpoint columns to ``schema`` and cast their types."""
    table = table.rename_columns([_snake(n) for n in table.column_names])
    arrays = [
        table.column(f.name).cast(f.type)
        if f.name in table.column_names
        else pa.nulls(table.num_rows, f.type)
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


@dataclass
class _State:
    """Mutable replay state, applied commit by commit."""

    prefix: str
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, Txn] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    touched: dict[str, AddFile | RemoveFile] = field(default_factory=dict)
    last_commit_info: CommitInfo | None = None

    def apply(self, actions: Iterable[Action]) -> None:
        for action in actions:
            if isinstance(action, AddFile | RemoveFile):
                self.touched[_file_key(action.path, action.dv_id, self.prefix)] = action
            elif isinstance(action, Protocol):
                self.protocol = action
            elif isinstance(action, Metadata):
                self.metadata = action
            elif isinstance(action, Txn):
                self.txns[action.app_id] = action
            elif isinstance(action, DomainMetadata):
                if action.removed:
                    self.domains.pop(action.domain, None)
                else:
                    self.domains[action.domain] = action
            elif isinstance(action, CommitInfo):
                self.last_commit_info = action

    def merge(self, base_files: pa.Table, base_tombstones: pa.Table) -> tuple[pa.Table, pa.Table]:
        """Live files and tombstones: base rows not touched since, plus the touched ones."""
        if not self.touched:
            return base_files, base_tombstones
        touched = pa.array(list(self.touched), pa.string())
        if base_files.num_rows:
            base_files = base_files.filter(
                pc.invert(pc.is_in(_arrow_keys(base_files, self.prefix), value_set=touched))
            )
        if base_tombstones.num_rows:
            base_tombstones = base_tombstones.filter(
                pc.invert(pc.is_in(_arrow_keys(base_tombstones, self.prefix), value_set=touched))
            )
        adds = [a for a in self.touched.values() if isinstance(a, AddFile)]
        removes = [a for a in self.touched.values() if isinstance(a, RemoveFile)]
        files = pa.concat_tables([base_files, adds_to_table(adds)]) if adds else base_files
        tombstones = (
            pa.concat_tables([base_tombstones, removes_to_table(removes)])
            if removes
            else base_tombstones
        )
        return files, tombstones


def read_commit(storage: TableStorage, name: str, version: int) -> list[Action]:
    """Read and parse one commit file.

    Raises:
        MalformedCommitError: The file does not parse.
    """
    data = storage.read_log_file(name)
    return parse_actions(data, version=version, path=f"{storage.log_path}/{name}")


def _load_checkpoint(
    storage: TableStorage, segment: LogSegment, state: _State
) -> tuple[pa.Table, pa.Table]:
    assert segment.checkpoint is not None
    paths = [f.path for f in segment.checkpoint.files]
    with storage_errors(f"cannot read checkpoint {segment.checkpoint.version}"):
        data = read_checkpoint(
            storage.store, paths, add_fields=ADD_FIELDS, remove_fields=TOMBSTONE_FIELDS
        )
    try:
        state.apply(parse_action({name: body}) for name, body in data.actions)
    except MalformedCommitError as exc:
        raise CorruptCheckpointError(
            f"checkpoint {segment.checkpoint.version}: {exc}", version=segment.checkpoint.version
        ) from exc
    files = [_conform(t, FILES_SCHEMA) for t in data.adds]
    tombstones = [_conform(t, TOMBSTONES_SCHEMA) for t in data.removes]
    return (
        pa.concat_tables(files) if files else FILES_SCHEMA.empty_table(),
        pa.concat_tables(tombstones) if tombstones else TOMBSTONES_SCHEMA.empty_table(),
    )


def commit_timestamp(info: CommitInfo | None, metadata: Metadata, file_mtime: int) -> int:
    """Commit time: the in-commit timestamp where enabled and present, else the file's mtime."""
    if (
        info is not None
        and info.in_commit_timestamp is not None
        and metadata.configuration.get("delta.enableInCommitTimestamps") == "true"
    ):
        return info.in_commit_timestamp
    return file_mtime


def replay_segment(storage: TableStorage, segment: LogSegment) -> Snapshot:
    """Rebuild the snapshot a segment describes.

    Raises:
        CheckpointError: The segment's checkpoint cannot be read (callers fall back).
        MalformedCommitError: A commit does not parse.
        MissingProtocolError: No protocol in the replayed history.
        MissingMetadataError: No metadata in the replayed history.
        UnsupportedFeatureError: The protocol needs a reader feature deltalog lacks.
    """
    state = _State(prefix=scheme_prefix(storage.root))
    if segment.checkpoint is not None:
        base_files, base_tombstones = _load_checkpoint(storage, segment, state)
    else:
        base_files, base_tombstones = FILES_SCHEMA.empty_table(), TOMBSTONES_SCHEMA.empty_table()
    for status in segment.commits:
        parsed = parse_log_name(status.name)
        assert parsed is not None
        actions = read_commit(storage, status.name, parsed.version)
        if parsed.version == 0:
            _check_first_commit(actions, status.path)
        state.apply(actions)
    if state.protocol is None:
        raise MissingProtocolError(
            f"no protocol action found rebuilding version {segment.version}",
            version=segment.version,
        )
    if state.metadata is None:
        raise MissingMetadataError(
            f"no metaData action found rebuilding version {segment.version}",
            version=segment.version,
        )
    check_readable(state.protocol)
    files, tombstones = state.merge(base_files, base_tombstones)
    last_file = segment.commits[-1] if segment.commits else segment.checkpoint.files[0]  # type: ignore[union-attr]
    info = state.last_commit_info if segment.commits else None
    return Snapshot(
        version=segment.version,
        protocol=state.protocol,
        metadata=state.metadata,
        files=files,
        tombstones=tombstones,
        txns=dict(state.txns),
        domains=dict(state.domains),
        timestamp=commit_timestamp(info, state.metadata, last_file.modification_time),
        checkpoint_version=segment.checkpoint.version if segment.checkpoint else None,
    )


def _check_first_commit(actions: list[Action], path: str) -> None:
    if not any(isinstance(a, Protocol) for a in actions):
        raise MissingProtocolError(
            f"version 0 has no protocol action: {path}", version=0, path=path
        )
    if not any(isinstance(a, Metadata) for a in actions):
        raise MissingMetadataError(
            f"version 0 has no metaData action: {path}", version=0, path=path
        )


def replay(storage: TableStorage, listing: LogListing, version: int | None = None) -> Snapshot:
    """Rebuild ``version`` (latest when ``None``), falling back past unreadable checkpoints.

    Raises:
        VersionNotFoundError, VersionGapError: No complete path to the version exists.
        CorruptLogError: The log breaks the protocol.
    """
    excluded: set[int] = set()
    while True:
        try:
            segment = build_segment(listing, version, exclude=frozenset(excluded))
        except VersionNotFoundError:
            if listing.complete or not excluded:
                raise
            listing = list_log(storage, use_hint=False)
            continue
        try:
            return replay_segment(storage, segment)
        except (CheckpointError, CorruptCheckpointError, StorageError) as exc:
            if segment.checkpoint is None or (
                isinstance(exc, StorageError) and not _is_checkpoint_error(exc)
            ):
                raise
            excluded.add(segment.checkpoint.version)


def _is_checkpoint_error(exc: BaseException) -> bool:
    cause = exc.__cause__
    return isinstance(cause, CheckpointError)


def advance(
    snapshot: Snapshot, version: int, actions: Sequence[Action], mtime: int, prefix: str
) -> Snapshot:
    """The snapshot after applying one more commit of ``actions`` at ``version``."""
    state = _State(prefix=prefix, protocol=snapshot.protocol, metadata=snapshot.metadata)
    state.txns = dict(snapshot.txns)
    state.domains = dict(snapshot.domains)
    state.apply(actions)
    files, tombstones = state.merge(snapshot.files, snapshot.tombstones)
    assert state.protocol is not None and state.metadata is not None
    return Snapshot(
        version=version,
        protocol=state.protocol,
        metadata=state.metadata,
        files=files,
        tombstones=tombstones,
        txns=state.txns,
        domains=state.domains,
        timestamp=commit_timestamp(state.last_commit_info, state.metadata, mtime),
        checkpoint_version=snapshot.checkpoint_version,
    )
