"""Log replay: a :class:`LogSegment` (checkpoint + commits) becomes a :class:`Snapshot`.

Live files stay columnar: the checkpoint's ``add`` rows are read as an Arrow table, commits after
it are parsed into Arrow by :mod:`deltalog.log.commit_parser` (falling back to the exact parser when
needed), and :class:`~deltalog.log.file_actions.FileActionLog` applies them by key, last action
winning, with one vectorised ``is_in`` against the checkpoint rows. After deltalog's own commit
the snapshot advances with :func:`advance` instead of replaying.

Files are keyed by the protocol's ``(path, deletion vector id)``, paths compared in delta-spark's
canonical form (see :func:`deltalog.log.file_actions.canonical_path`).

A small log without a checkpoint (up to :data:`_EXACT_MAX_BYTES` of commits) is parsed by the
exact parser instead, and its files are merged into Arrow only when first asked for: opening
such a table and reading its version, protocol or metadata loads no pyarrow.
"""

from __future__ import annotations

import functools
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from deltalog.checkpoints.errors import CheckpointError
from deltalog.checkpoints.last_checkpoint import count_problems
from deltalog.errors import (
    CorruptCheckpointError,
    MalformedCommitError,
    MissingMetadataError,
    MissingProtocolError,
    StorageError,
    VersionNotFoundError,
)
from deltalog.lazy import lazy_module
from deltalog.log.file_actions import (
    TOMBSTONE_FIELDS,
    FileActionLog,
    Keyed,
    PendingFiles,
    arrow_keys,
    scheme_prefix,
    snake,
)
from deltalog.log.segment import LISTING_ATTEMPTS, LogListing, LogSegment, build_segment, list_log
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.logstores import LogFileNotFoundError
from deltalog.protocol.actions import (
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
    require_actions,
)
from deltalog.protocol.features import check_readable
from deltalog.protocol.paths import parse_log_name
from deltalog.worker_pool import worker_pool

if TYPE_CHECKING:
    from concurrent.futures import Future

    import pyarrow as pa
    import pyarrow.compute as pc

    from deltalog.log.commit_parser import ParsedCommits, Text
    from deltalog.log.file_actions import FILES_SCHEMA, TOMBSTONES_SCHEMA
else:
    pa = lazy_module("pyarrow")
    pc = lazy_module("pyarrow.compute")

__all__ = [
    "FILES_SCHEMA",
    "TOMBSTONES_SCHEMA",
    "advance",
    "commit_timestamp",
    "read_commit",
    "replay",
    "replay_segment",
    "scheme_prefix",
]


#: Commit bytes up to which a log without a checkpoint is parsed by the exact parser, with no
#: pyarrow (importing it costs more than parsing this much exactly).
_EXACT_MAX_BYTES = 256 << 10


def __getattr__(name: str) -> Any:
    """``FILES_SCHEMA`` and ``TOMBSTONES_SCHEMA`` of :mod:`deltalog.log.file_actions` (PEP 562)."""
    if name in ("FILES_SCHEMA", "TOMBSTONES_SCHEMA"):
        from deltalog.log import file_actions

        return getattr(file_actions, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_commits(
    commits: Iterable[tuple[int, Text]], partition_columns: Sequence[str] | None
) -> ParsedCommits | None:
    """:func:`deltalog.log.commit_parser.parse_commits` (imported with pyarrow when first used)."""
    from deltalog.log.commit_parser import parse_commits as parse

    return parse(commits, partition_columns)


def _conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """Rename camelCase checkpoint columns to ``schema`` and cast their types."""
    from deltalog.checkpoints.nulls import null_array

    table = table.rename_columns([snake(n) for n in table.column_names])
    arrays = [
        table.column(f.name).cast(f.type)
        if f.name in table.column_names
        else null_array(f.type, table.num_rows)
        for f in schema
    ]
    return pa.Table.from_arrays(arrays, schema=schema)


@dataclass
class _State:
    """Non-file table state, applied action by action; file actions go to ``files``."""

    protocol: Protocol | None = None
    metadata: Metadata | None = None
    txns: dict[str, Txn] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    last_commit_info: CommitInfo | None = None
    files: FileActionLog = field(default_factory=FileActionLog)

    def apply(self, actions: Iterable[Action]) -> None:
        file_actions: list[AddFile | RemoveFile] = []
        for action in actions:
            if isinstance(action, AddFile | RemoveFile):
                file_actions.append(action)
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
        if file_actions:
            self.files.extend_objects(file_actions)


def read_commit(storage: TableStorage, name: str, version: int) -> list[Action]:
    """Read and parse one commit file exactly.

    Raises:
        MalformedCommitError: The file does not parse.
        EmptyCommitError: The file holds no action.
    """
    data = storage.read_log_file(name)
    path = f"{storage.log_path}/{name}"
    require_actions(data, version=version, path=path)
    return parse_actions(data, version=version, path=path)


def _stats_loader(
    storage: TableStorage,
    paths: list[str],
    adds: pa.Table,
    parsed: Callable[[], pa.ChunkedArray | None],
    read_already: pa.ChunkedArray | None = None,
) -> Callable[[], pa.ChunkedArray]:
    """Reads ``add.stats`` of a checkpoint, in the order the replay read its ``adds``.

    ``read_already``: the column, when the replay read it with the rest of a small checkpoint.

    The column is read once and kept: every snapshot advanced from this replay shares the
    loader, and a writer asks for statistics at each checkpoint it writes.

    Log cleanup may delete the checkpoint before its statistics are read (another writer
    checkpointed past it and the retention allowed it). The statistics are then taken from the
    current log (:func:`_rebuilt_stats`) rather than failing from then on; a failure is never
    kept, so the next call tries again.

    Rows without JSON statistics (``delta.checkpoint.writeStatsAsJson=false``) get them
    written from the checkpoint's typed ``stats_parsed`` (``parsed``), as delta-spark does.

    The loader raises CorruptCheckpointError when the column cannot be read, or does not have
    one value per add the replay read.
    """
    from deltalog.checkpoints.reader import read_checkpoint
    from deltalog.stats.parsed_stats import fill_json

    loaded: list[pa.ChunkedArray] = []
    lock = threading.Lock()
    rows = adds.num_rows

    def load() -> pa.ChunkedArray:
        with lock:
            if not loaded and read_already is not None:
                loaded.append(
                    fill_json(read_already, parsed() if read_already.null_count else None)
                )
            if not loaded:
                try:
                    with storage_errors("cannot read checkpoint statistics"):
                        # the other actions were read when the snapshot was loaded
                        data = read_checkpoint(
                            storage.store, paths, add_fields=("stats",), actions=("sidecar",)
                        )
                except CheckpointError as exc:
                    if not _gone(storage, paths):
                        raise CorruptCheckpointError(
                            f"cannot read the statistics of checkpoint {paths[0]}: {exc}"
                        ) from exc
                    loaded.append(_rebuilt_stats(storage, adds))
                    return loaded[0]
                chunks = [c for t in data.adds for c in t.column("stats").chunks]
                stats = pa.chunked_array(chunks, type=pa.string())
                if len(stats) != rows:
                    raise CorruptCheckpointError(
                        f"checkpoint {paths[0]} has {len(stats)} statistics for {rows} adds"
                    )
                loaded.append(fill_json(stats, parsed() if stats.null_count else None))
            return loaded[0]

    return load


def _gone(storage: TableStorage, paths: Sequence[str]) -> bool:
    """Whether a file of a checkpoint no longer exists (log cleanup deleted it)."""
    with storage_errors("cannot stat a checkpoint"):
        return not all(storage.store.exists(path) for path in paths)


def _rebuilt_stats(storage: TableStorage, adds: pa.Table) -> pa.ChunkedArray:
    """Statistics for a deleted checkpoint's ``adds`` (in order), from the latest version.

    A file keeps its statistics while it is live, so the latest snapshot has them for every
    add that is still live; a file removed since has none left in the log (``null``, which
    Delta allows: statistics are optional).

    Raises:
        VersionNotFoundError, StorageError: The current log cannot be replayed either.
    """
    latest = replay(storage, list_log(storage))
    prefix = scheme_prefix(storage.root)
    files = latest.files
    at = pc.index_in(arrow_keys(adds, prefix), value_set=arrow_keys(files, prefix))
    stats = files.column("stats").combine_chunks().take(at)
    return pa.chunked_array([stats], type=pa.string())


def _with_row_numbers(files: pa.Table) -> pa.Table:
    from deltalog.arrow import values as arrow_values

    n = files.num_rows
    return files.append_column("_cp_row", arrow_values.int_range(0, n))


def _load_checkpoint(
    storage: TableStorage, segment: LogSegment, state: _State
) -> tuple[
    pa.Table,
    pa.Table,
    Callable[[], pa.ChunkedArray],
    Callable[[], pa.ChunkedArray | None],
    Callable[[str, tuple[str, ...], bool], pa.ChunkedArray | None],
]:
    from deltalog.checkpoints.nulls import empty_table
    from deltalog.checkpoints.reader import read_checkpoint
    from deltalog.checkpoints.schema import STATS_PARSED
    from deltalog.log.file_actions import ADD_FIELDS, FILES_SCHEMA, TOMBSTONES_SCHEMA
    from deltalog.stats.parsed_stats import json_typed_loader, parsed_stats_loader

    assert segment.checkpoint is not None
    paths = [f.path for f in segment.checkpoint.files]
    add_fields = tuple(f for f in ADD_FIELDS if f != "stats")
    eager = ("stats", STATS_PARSED)
    with storage_errors(f"cannot read checkpoint {segment.checkpoint.version}"):
        data = read_checkpoint(
            storage.store,
            paths,
            add_fields=add_fields,
            remove_fields=TOMBSTONE_FIELDS,
            small_file_fields=eager,
            small_file_bytes=SMALL_CHECKPOINT_BYTES,
        )
    # statistics of a small checkpoint come with the first read (not a read of their own later)
    stats: pa.ChunkedArray | None = None
    parsed_columns: list[pa.ChunkedArray] | None = None
    if data.adds and all(set(eager) <= set(t.column_names) for t in data.adds):
        stats = pa.chunked_array(
            [c for t in data.adds for c in t.column("stats").chunks], type=pa.string()
        )
        parsed_columns = [t.column(STATS_PARSED) for t in data.adds]
    data.adds = [t.drop_columns([n for n in eager if n in t.column_names]) for t in data.adds]
    version = segment.checkpoint.version
    try:
        state.apply(parse_action({name: body}) for name, body in data.actions)
    except MalformedCommitError as exc:
        raise CorruptCheckpointError(f"checkpoint {version}: {exc}", version=version) from exc
    problems = [] if state.protocol and state.metadata else ["it has no protocol or no metaData"]
    if segment.hint is not None:
        problems += [
            f"_last_checkpoint's {problem}"
            for problem in count_problems(
                segment.hint, adds=data.num_adds, rows=data.num_rows, v2=data.has_sidecars
            )
        ]
    if problems:  # the caller falls back to an older checkpoint or to the commits
        raise CorruptCheckpointError(
            f"checkpoint {version} cannot be used: {'; '.join(problems)}", version=version
        )
    files = [_conform(t, FILES_SCHEMA) for t in data.adds]
    tombstones = [_conform(t, TOMBSTONES_SCHEMA) for t in data.removes]
    adds = pa.concat_tables(files) if files else empty_table(FILES_SCHEMA)
    schema = state.metadata.schema_string if state.metadata else None
    parsed = parsed_stats_loader(
        storage.store, paths, adds.num_rows, schema, read_already=parsed_columns
    )
    if stats is not None and len(stats) != adds.num_rows:
        stats = None  # the loader reads them again and reports the mismatch
    return (
        _with_row_numbers(adds),
        pa.concat_tables(tombstones) if tombstones else empty_table(TOMBSTONES_SCHEMA),
        _stats_loader(storage, paths, adds, parsed, stats),
        parsed,
        json_typed_loader(storage.store, paths, adds.num_rows, read_already=stats),
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


#: A checkpoint file (part or sidecar) at most this big is read whole at once, statistics
#: included: a second read of a small file costs more than its statistics columns (the three
#: reads of a 62 KB checkpoint took ~12 ms of a filtered read's ~50 ms in a fresh process).
SMALL_CHECKPOINT_BYTES = 1 << 20

#: Commit bytes read ahead of the parser (at least one file is always in flight).
_READ_AHEAD_BYTES = 64 << 20
#: Commits read by one task of the pool: small commits in batches (a task per file costs more
#: than reading a small file), big ones alone.
_BATCH_FILES = 64
_BATCH_BYTES = 4 << 20


def _read_batches(segment: LogSegment) -> Iterator[list[tuple[int, str, int]]]:
    """The segment's commits ``(version, name, size)`` in read batches, in order."""
    batch: list[tuple[int, str, int]] = []
    size = 0
    for status in segment.commits:
        parsed = parse_log_name(status.name)
        assert parsed is not None
        if batch and (len(batch) >= _BATCH_FILES or size + status.size > _BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append((parsed.version, status.name, status.size))
        size += status.size
    if batch:
        yield batch


def _read_commits(storage: TableStorage, segment: LogSegment) -> Iterator[tuple[int, Text]]:
    """The segment's commits ``(version, content)`` in order, read ahead on a small pool.

    Reads overlap parsing (and each other, which matters on object stores), while the bytes
    read but not yet consumed stay below :data:`_READ_AHEAD_BYTES`.
    """

    def read(batch: list[tuple[int, str, int]]) -> list[tuple[int, Text]]:
        out = []
        for version, name, _ in batch:
            data = storage.view_log_file(name)
            require_actions(data, version=version, path=storage.log_file(name))
            out.append((version, data))
        return out

    pending: deque[tuple[int, Future[list[tuple[int, Text]]]]] = deque()
    batches = _read_batches(segment)
    in_flight = 0
    try:
        while True:
            for batch in batches:
                size = sum(s for _, _, s in batch)
                pending.append((size, worker_pool().submit(read, batch)))
                in_flight += size
                if in_flight >= _READ_AHEAD_BYTES:
                    break
            if not pending:
                return
            size, future = pending.popleft()
            in_flight -= size
            yield from future.result()
    finally:
        for _, future in pending:
            future.cancel()


def _apply_commits(storage: TableStorage, segment: LogSegment, state: _State) -> None:
    """Read the segment's commits and apply them: columnar when possible, exact otherwise.

    The columnar parser consumes the commits as they are read; when it gives up, the commits
    are read again, one at a time, for the exact parser.
    """
    columns = state.metadata.partition_columns if state.metadata else None
    fast = (
        None if _exact_first(segment) else parse_commits(_read_commits(storage, segment), columns)
    )
    if fast is not None:
        first = parse_log_name(segment.commits[0].name) if segment.commits else None
        if first is not None and first.version == 0:
            _check_first_commit([a for v, a in fast.other if v == 0], segment.commits[0].path)
        state.apply(a for _, a in fast.other)
        if fast.last_commit_info is not None:
            state.last_commit_info = fast.last_commit_info
        state.files.extend_tables(fast.order, fast.adds, fast.removes)
        return
    for status in segment.commits:
        parsed = parse_log_name(status.name)
        assert parsed is not None
        data = storage.read_log_file(status.name)
        require_actions(data, version=parsed.version, path=status.path)
        actions = parse_actions(data, version=parsed.version, path=status.path)
        if parsed.version == 0:
            _check_first_commit(actions, status.path)
        state.last_commit_info = None
        state.apply(actions)


def _exact_first(segment: LogSegment) -> bool:
    """Whether the exact parser reads the segment's commits, and its files merge when used."""
    return segment.checkpoint is None and (
        sum(status.size for status in segment.commits) <= _EXACT_MAX_BYTES
    )


def _merge_from_empty(files: FileActionLog, prefix: str) -> tuple[Keyed, Keyed]:
    """The live files and tombstones of a log without a checkpoint."""
    from deltalog.checkpoints.nulls import empty_table
    from deltalog.log.file_actions import FILES_SCHEMA, TOMBSTONES_SCHEMA

    empty = Keyed(empty_table(FILES_SCHEMA)), Keyed(empty_table(TOMBSTONES_SCHEMA))
    return files.merge(*empty, prefix)


def replay_segment(storage: TableStorage, segment: LogSegment) -> Snapshot:
    """Rebuild the snapshot a segment describes.

    Raises:
        CheckpointError: The segment's checkpoint cannot be read (callers fall back).
        MalformedCommitError: A commit does not parse.
        EmptyCommitError: A commit file holds no action.
        MissingProtocolError: No protocol in the replayed history.
        MissingMetadataError: No metadata in the replayed history.
        UnsupportedFeatureError: The protocol needs a reader feature deltalog lacks.
    """
    state = _State()
    loader = parsed = typed = None
    base: tuple[pa.Table, pa.Table] | None = None
    if segment.checkpoint is not None:
        base_files, base_tombstones, loader, parsed, typed = _load_checkpoint(
            storage, segment, state
        )
        base = base_files, base_tombstones
    _apply_commits(storage, segment, state)
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
    prefix = scheme_prefix(storage.root)
    if base is None and _exact_first(segment):
        file_state = PendingFiles.deferred(
            functools.partial(_merge_from_empty, state.files, prefix),
            prefix,
            state.files.objects(),
        )
    else:
        files, tombstones = (
            _merge_from_empty(state.files, prefix)
            if base is None
            else state.files.merge(Keyed(base[0]), Keyed(base[1]), prefix)
        )
        file_state = PendingFiles.merged(files, tombstones, prefix)
    if segment.commits:
        last_mtime, info = segment.commits[-1].modification_time, state.last_commit_info
    elif segment.version_commit is not None:  # the commit's time, not the checkpoint's
        last_mtime, info = segment.version_commit.modification_time, None
    else:
        assert segment.checkpoint is not None
        last_mtime, info = segment.checkpoint.files[0].modification_time, None
    return Snapshot(
        version=segment.version,
        protocol=state.protocol,
        metadata=state.metadata,
        file_state=file_state,
        txns=dict(state.txns),
        domains=dict(state.domains),
        timestamp=commit_timestamp(info, state.metadata, last_mtime),
        checkpoint_version=segment.checkpoint.version if segment.checkpoint else None,
        stats_loader=loader,
        parsed_stats_loader=parsed,
        json_typed_loader=typed,
    )


def _check_first_commit(actions: Sequence[Action], path: str) -> None:
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

    A file the listing showed may be gone by the time it is read (log cleanup deleted it behind
    a newer checkpoint): the replay then starts again from a fresh listing, a bounded number of
    times.

    Raises:
        VersionNotFoundError: The version cannot be rebuilt (too new, or cleaned up, also
            while it was being read).
        VersionGapError: A commit needed for the version is missing.
        CorruptLogError: The log breaks the protocol.
    """
    for _ in range(LISTING_ATTEMPTS):
        try:
            return _replay_listing(storage, listing, version)
        except LogFileNotFoundError as exc:
            vanished = exc
        listing = list_log(storage, use_hint=version is None)
    target = "the latest version" if version is None else f"version {version}"
    raise VersionNotFoundError(
        f"{target} cannot be rebuilt: log files kept disappearing while they were read "
        f"(log cleanup is running), last: {vanished}",
        version=version,
    ) from vanished


def _replay_listing(storage: TableStorage, listing: LogListing, version: int | None) -> Snapshot:
    """One :func:`replay` attempt on ``listing``.

    Raises:
        LogFileNotFoundError: A file of the listing is gone (start again from a new listing).
    """
    excluded: set[str] = set()
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
            unreadable = isinstance(exc, CheckpointError | CorruptCheckpointError) or isinstance(
                exc.__cause__, CheckpointError
            )
            if segment.checkpoint is None or not unreadable:
                raise
            checkpoint = segment.checkpoint
            with storage_errors(f"cannot stat checkpoint {checkpoint.version}"):
                for status in checkpoint.files:
                    if not storage.store.exists(status.path):
                        raise LogFileNotFoundError(f"{status.name} is gone") from exc
            excluded.add(checkpoint.name)  # the next one of its version, or older


def advance(snapshot: Snapshot, commits: Sequence[tuple[int, Sequence[Action], int]]) -> Snapshot:
    """The snapshot after applying consecutive commits, each ``(version, actions, mtime)``."""
    if not commits:
        return snapshot
    state = _State(protocol=snapshot.protocol, metadata=snapshot.metadata)
    state.txns = dict(snapshot.txns)
    state.domains = dict(snapshot.domains)
    file_state = snapshot.file_state
    for _, actions, _ in commits:
        state.last_commit_info = None
        state.apply(a for a in actions if not isinstance(a, AddFile | RemoveFile))
        file_state = file_state.then([a for a in actions if isinstance(a, AddFile | RemoveFile)])
    assert state.protocol is not None and state.metadata is not None
    version, _, mtime = commits[-1]
    return Snapshot(
        version=version,
        protocol=state.protocol,
        metadata=state.metadata,
        file_state=file_state,
        txns=state.txns,
        domains=state.domains,
        timestamp=commit_timestamp(state.last_commit_info, state.metadata, mtime),
        checkpoint_version=snapshot.checkpoint_version,
        stats_loader=snapshot.stats_loader,
        parsed_stats_loader=snapshot.parsed_stats_loader,
        json_typed_loader=snapshot.json_typed_loader,
    )
