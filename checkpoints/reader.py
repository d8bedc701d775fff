"""Read classic, multi-part and V2 checkpoints with column projection.

File actions (``add``/``remove``) come back as Arrow tables holding only the requested
fields, so listing files never decodes ``stats`` unless asked. Other actions are few and come
back as JSON-like dicts in the protocol's camelCase, ready for the action parsers.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deltalog.logstores import LogFileNotFoundError, LogStore
from deltalog.logstores.errors import is_store_failure
from deltalog.logstores.thread_pool import shared_pool

from .arrow_pool import decode_pool, open_parquet
from .column_split import by_column
from .errors import CheckpointFormatError, IncompleteCheckpointError
from .nulls import empty_table, null_array
from .schema import ACTION_TYPES, NON_FILE_ACTIONS, PRESENCE_LEAVES


@dataclass(slots=True)
class CheckpointData:
    """What a checkpoint holds.

    Attributes:
        actions: Non-file actions as ``(action name, JSON body)`` pairs.
        adds: ``add`` rows, one column per requested field (absent fields come back null).
        removes: ``remove`` rows, likewise.
    """

    actions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    adds: list[pa.Table] = field(default_factory=list)
    removes: list[pa.Table] = field(default_factory=list)

    @property
    def num_adds(self) -> int:
        """Number of ``add`` rows."""
        return sum(int(t.num_rows) for t in self.adds)

    @property
    def num_rows(self) -> int:
        """Number of actions (rows), as ``_last_checkpoint``'s ``size`` counts them."""
        return len(self.actions) + self.num_adds + sum(int(t.num_rows) for t in self.removes)

    @property
    def has_sidecars(self) -> bool:
        """Whether this is a V2 checkpoint with sidecars (whose counts cover the sidecars)."""
        return any(name == "sidecar" for name, _ in self.actions)


def _conform_struct(arr: pa.Array | pa.ChunkedArray, target: pa.StructType) -> pa.StructArray:
    """Rebuild a struct array with exactly ``target``'s children (missing ones null)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    children = []
    present = {arr.type.field(i).name for i in range(arr.type.num_fields)}
    for i in range(target.num_fields):
        f = target.field(i)
        if f.name in present:
            child = arr.field(f.name)
            if child.type != f.type:
                child = _conform(child, f.type)
        else:
            child = null_array(f.type, len(arr))
        children.append(child)
    mask = arr.is_null() if arr.null_count else None
    return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)


def _conform(arr: pa.Array, target: pa.DataType) -> pa.Array:
    if pa.types.is_struct(target) and pa.types.is_struct(arr.type):
        return _conform_struct(arr, target)
    return arr.cast(target)


def _file_table(column: pa.ChunkedArray, fields: Sequence[str], action: str) -> pa.Table:
    """Flatten the non-null rows of an ``add``/``remove`` struct column to a table."""
    full = ACTION_TYPES[action]
    target = pa.struct([_field_of(full, column.type, name) for name in fields])
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    tables = []
    for chunk in chunks:
        arr = _conform_struct(_valid_rows(chunk), target)
        if len(arr):
            tables.append(pa.Table.from_arrays(arr.flatten(), names=list(fields)))
    if not tables:
        return empty_table(pa.schema([target.field(i) for i in range(target.num_fields)]))
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def _field_of(full: pa.StructType, found: pa.DataType, name: str) -> pa.Field:
    """The field ``name`` of an action: its declared type, or as the file has it.

    Fields whose type depends on the table (``stats_parsed``, ``partitionValues_parsed``) are
    not declared; a file without one reads it as nulls of type null.
    """
    if full.get_field_index(name) >= 0:
        return full.field(name)
    if pa.types.is_struct(found) and found.get_field_index(name) >= 0:
        return found.field(name)
    return pa.field(name, pa.null())


def _valid_rows(arr: pa.Array) -> pa.Array:
    """The non-null rows: a zero-copy slice when they are contiguous (the usual layout)."""
    if not arr.null_count:
        return arr
    valid = arr.is_valid()
    count = len(arr) - arr.null_count
    if count == 0:
        return arr.slice(0, 0)
    # A computed True: pc.index(valid, True) converts a Python value, which imports pandas.
    first = pc.index(valid, pc.any(valid)).as_py()
    if pc.all(valid.slice(first, count)).as_py():
        return arr.slice(first, count)
    return arr.filter(valid)


def _rows_to_dicts(arr: pa.Array) -> list[dict[str, Any]]:
    """Non-null rows of a struct column as JSON-like dicts (maps become dicts)."""
    if arr.null_count:
        arr = arr.filter(arr.is_valid())
    return [_jsonify(row, arr.type) for row in arr.to_pylist()]


def _jsonify(value: Any, t: pa.DataType) -> Any:
    """Python value of Arrow type ``t`` as JSON would hold it; null struct fields dropped."""
    if value is None:
        return None
    if pa.types.is_map(t):
        return {k: _jsonify(v, t.item_type) for k, v in value}
    if pa.types.is_struct(t):
        return {f.name: _jsonify(value[f.name], f.type) for f in t if value.get(f.name) is not None}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return [_jsonify(v, t.value_type) for v in value]
    return value


def _row_groups_with(pf: pq.ParquetFile, action: str) -> list[int]:
    """Row groups that may hold ``action`` rows (statistics prove the others all null)."""
    meta = pf.metadata
    leaf = PRESENCE_LEAVES.get(action)
    index = None
    if leaf is not None:
        for i in range(meta.num_columns):
            if meta.schema.column(i).path == leaf:
                index = i
                break
    out = []
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        if index is not None:
            stats = group.column(index).statistics
            if stats is not None and stats.has_null_count and stats.null_count == group.num_rows:
                continue
        out.append(rg)
    return out


def _never_set(pf: pq.ParquetFile, groups: list[int], leaves: list[int]) -> bool:
    """Whether the statistics show the leaf columns ``leaves`` null in every row of ``groups``.

    Such a field (deletion vectors, row ids, clustering provider on most tables) is not read:
    the reader fills it with nulls, which costs neither decoding nor memory per row.
    """
    if not leaves:
        return False
    meta = pf.metadata
    for rg in groups:
        group = meta.row_group(rg)
        for i in leaves:
            stats = group.column(i).statistics
            if stats is None or not stats.has_null_count or stats.null_count != group.num_rows:
                return False
    return True


def _leaves(pf: pq.ParquetFile, action: str, kids: dict[str, pa.DataType]) -> dict[str, list[int]]:
    """Leaf column indices of each field of ``action`` that is not a map or a list.

    Maps and lists are always read: their statistics cannot tell an empty one from a null one.
    """
    out: dict[str, list[int]] = {}
    schema = pf.metadata.schema
    for i in range(pf.metadata.num_columns):
        parts = schema.column(i).path.split(".")
        if len(parts) < 2 or parts[0] != action:
            continue
        t = kids.get(parts[1])
        if t is not None and not (
            pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t)
        ):
            out.setdefault(parts[1], []).append(i)
    return out


BATCH_ROWS = 64 * 1024
#: Bytes a local checkpoint file with big column chunks is read by, page after page.
READ_BUFFER = 1 << 20
#: Column chunks from this size on are streamed through :data:`READ_BUFFER` rather than read
#: whole: delta-rs's one row group of a million files holds 180 MiB of ``stats`` in one chunk;
#: deltalog's own chunks (a few MiB) decode faster read whole.
BIG_CHUNK = 16 << 20
#: Files of at most this many rows (and one batch) are read once for every action
#: (:func:`_read_once`).
SMALL_ROWS = BATCH_ROWS
#: Threads reading the row groups of a local checkpoint file side by side.
READERS = max(1, min(4, os.cpu_count() or 1))


def _read_buffer(meta: pq.FileMetaData) -> int:
    """:data:`READ_BUFFER` for a file with a column chunk of :data:`BIG_CHUNK` or more, else 0."""
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        if any(
            group.column(c).total_compressed_size >= BIG_CHUNK for c in range(group.num_columns)
        ):
            return READ_BUFFER
    return 0


def _repeats_a_name(t: pa.DataType) -> bool:
    """Whether a struct anywhere in ``t`` has two fields of the same name."""
    stack = [t]
    while stack:
        t = stack.pop()
        if pa.types.is_struct(t):
            names = [t.field(i).name for i in range(t.num_fields)]
            if len(set(names)) != len(names):
                return True
            stack += [t.field(i).type for i in range(t.num_fields)]
        elif pa.types.is_list(t) or pa.types.is_large_list(t):
            stack.append(t.value_type)
        elif pa.types.is_map(t):
            stack += [t.key_type, t.item_type]
    return False


def _has_struct_column(top: pa.Schema, action: str, path: str) -> bool:
    """Whether the file has an ``action`` column; it must be one struct column.

    Raises:
        CheckpointFormatError: The column is not a struct, its name repeats, or so does the
            name of a field inside it.
    """
    found = top.get_all_field_indices(action)
    if not found:
        return False
    t = top.field(found[0]).type
    if len(found) > 1 or not pa.types.is_struct(t) or _repeats_a_name(t):
        raise CheckpointFormatError(
            f"{path}: column {action!r} is not one struct column with distinct field names"
        )
    return True


def _read_columns(
    pf: pq.ParquetFile,
    columns: list[str],
    action: str,
    shared: pa.NativeFile | None = None,
    each: Callable[[pa.Table], pa.Table] | None = None,
) -> pa.Table | None:
    """The rows holding ``action``, read batch by batch from the row groups that may hold it.

    Rows of other actions are dropped batch by batch, so a checkpoint written as one huge row
    group (as delta-spark writes them) never materialises a million nulls per column at once.
    The row groups of a local file (``shared``, the open file ``pf`` reads) are read side by
    side, one thread each, all through that one open file (positional reads) with the footer
    parsed once: that keeps every core busy, where one reader decoding column by column waits
    for its biggest column (``stats``). A local file whose rows are all in one row group (as
    delta-rs and delta-spark write them) is read column by column side by side instead
    (:func:`.column_split.by_column`).
    """
    groups = _row_groups_with(pf, action)
    if not groups:
        return None
    kept = None
    if shared is not None and len(groups) > 1 and READERS > 1:
        meta = pf.metadata

        def read(group: int) -> list[pa.Table]:
            own = open_parquet(shared, metadata=meta, pre_buffer=False)
            return _kept(own, [group], columns, action, threads=False, each=each)

        try:
            parts = shared_pool("checkpoint-read", READERS).map(read, groups)
        except RuntimeError:  # no new threads at interpreter exit: read them in this one
            pass
        else:
            kept = [t for part in parts for t in part]
    elif shared is not None and len(columns) > 1 and each is None and READERS > 1:
        kept = by_column(
            pf,
            groups,
            columns,
            action,
            shared,
            batch_rows=BATCH_ROWS,
            readers=READERS,
            buffer_size=_read_buffer(pf.metadata),
            valid_rows=_valid_rows,
        )
    if kept is None:
        kept = _kept(pf, groups, columns, action, threads=True, each=each)
    if not kept:
        return None
    return pa.concat_tables(kept)


def _kept(
    pf: pq.ParquetFile,
    groups: list[int],
    columns: list[str],
    action: str,
    *,
    threads: bool,
    each: Callable[[pa.Table], pa.Table] | None = None,
) -> list[pa.Table]:
    """The rows of ``groups`` holding ``action``, one table per batch that has some.

    ``each``, if given, replaces every batch's table as soon as it is read.
    """
    kept = []
    for batch in pf.iter_batches(
        batch_size=BATCH_ROWS, row_groups=groups, columns=columns, use_threads=threads
    ):
        rows = _valid_rows(batch.column(action))
        if len(rows):
            table = pa.Table.from_arrays([rows], names=[action])
            kept.append(table if each is None else each(table))
    return kept


def _read_once(
    pf: pq.ParquetFile,
    plans: Sequence[tuple[str, list[str], Callable[[pa.Table], pa.Table] | None]],
) -> Callable[[str, Callable[[pa.Table], pa.Table] | None], pa.Table | None]:
    """Every planned action's columns read in one pass; a function giving each action's rows.

    What :func:`_read_columns` gives for the action (``None`` when no row holds it), for a
    file small enough to read whole: a checkpoint of a few hundred rows took a Parquet read
    per action (ten for a table with domain metadata), each with its own setup.
    """
    columns = [c for _, wanted, _ in plans for c in wanted]
    whole = pf.read(columns=columns, use_threads=False) if columns else None

    def rows(action: str, each: Callable[[pa.Table], pa.Table] | None) -> pa.Table | None:
        assert whole is not None  # (asked only for a planned action)
        found = _valid_rows(whole.column(action).combine_chunks())
        if not len(found):
            return None
        table = pa.Table.from_arrays([found], names=[action])
        return table if each is None else each(table)

    return rows


def _transforming(
    transform: Callable[[pa.Table], pa.Table], fields: Sequence[str]
) -> Callable[[pa.Table], pa.Table]:
    """A batch's ``add`` rows as :func:`_file_table` makes them, then ``transform``."""

    def each(batch: pa.Table) -> pa.Table:
        return transform(_file_table(batch.column("add"), fields, "add"))

    return each


def _row_marker(action: str, kids: dict[str, pa.DataType]) -> str:
    """The cheapest column that is set exactly on ``action``'s rows.

    ``size`` (8 bytes a row) where the file has it, else ``path``; both are required fields of
    file actions. The whole struct only for a file that has neither.
    """
    for name in ("size", "path"):
        if name in kids:
            return f"{action}.{name}"
    return action


def _size(fh: Any) -> float:
    """The open file's size in bytes; infinite when it cannot be told without reading."""
    try:
        if isinstance(fh, pa.NativeFile):
            return float(fh.size())
        at = fh.tell()
        end = fh.seek(0, 2)
        fh.seek(at)
        return float(end)
    except (AttributeError, OSError, ValueError):
        return math.inf


def _read_parquet(
    store: LogStore,
    path: str,
    add_fields: Sequence[str],
    remove_fields: Sequence[str],
    out: CheckpointData,
    *,
    file_actions_only: bool = False,
    add_transform: Callable[[pa.Table], pa.Table] | None = None,
    actions: Sequence[str] = NON_FILE_ACTIONS,
    small: tuple[Sequence[str], int] = ((), 0),
) -> None:
    local = store.local_path(path)
    wanted = {"add": add_fields, "remove": remove_fields}
    try:
        # The file's reads allocate from the decode pool too: its column chunks are read into
        # buffers of the file's pool (the default one would keep their pages).
        opened = pa.OSFile(local, memory_pool=decode_pool()) if local is not None else None
        with store.open_input(path) if opened is None else opened as fh:
            # Pre-buffering coalesces ranged reads of a remote file; a local one is read as
            # needed (pre-buffered column chunks would only add to peak memory), its big column
            # chunks page by page through a small buffer (:func:`_read_buffer`).
            pf = open_parquet(fh, pre_buffer=local is None)
            buffer = 0 if local is None else _read_buffer(pf.metadata)
            if buffer:
                pf = open_parquet(fh, pre_buffer=False, metadata=pf.metadata, buffer_size=buffer)
            shared = fh if local is not None and isinstance(fh, pa.NativeFile) else None
            extra, most = small
            if extra and add_fields and _size(fh) <= most:
                wanted["add"] = [*add_fields, *(f for f in extra if f not in add_fields)]
            top = pf.schema_arrow
            plans: list[tuple[str, list[str], Callable[[pa.Table], pa.Table] | None]] = []
            for action, fields in wanted.items():
                if not fields or not _has_struct_column(top, action, path):
                    continue
                kids = {f.name: f.type for f in top.field(action).type}
                groups = _row_groups_with(pf, action)
                leaves = _leaves(pf, action, kids)
                columns = [
                    f"{action}.{f}"
                    for f in fields
                    if f in kids and not _never_set(pf, groups, leaves.get(f, []))
                ] or [_row_marker(action, kids)]  # which rows hold the action, no values
                each = None
                if action == "add" and add_transform is not None:
                    each = _transforming(add_transform, fields)
                plans.append((action, columns, each))
            if not file_actions_only:
                plans += [(a, [a], None) for a in actions if _has_struct_column(top, a, path)]
            # a small file (one batch) is read once for every action, not once per action
            small = pf.metadata.num_rows <= min(SMALL_ROWS, BATCH_ROWS)
            once = _read_once(pf, plans) if small else None
            for action, columns, each in plans:
                if once is not None:
                    table = once(action, each)
                else:
                    table = _read_columns(pf, columns, action, shared, each)
                if table is None:
                    continue
                if action in wanted:
                    fields = wanted[action]
                    part = (
                        table
                        if each is not None
                        else _file_table(table.column(action), fields, action)
                    )
                    (out.adds if action == "add" else out.removes).append(part)
                    continue
                col = table.column(action).combine_chunks()
                if col.null_count < len(col):
                    out.actions += [(action, row) for row in _rows_to_dicts(col)]
    except (LogFileNotFoundError, FileNotFoundError) as exc:
        raise IncompleteCheckpointError(f"checkpoint file missing: {path}") from exc
    except (pa.ArrowException, OSError, ValueError) as exc:
        if is_store_failure(exc):  # the storage failed, not the file: the caller reports it
            raise
        raise CheckpointFormatError(f"unreadable checkpoint file {path}: {exc}") from exc


def _read_json(
    store: LogStore,
    path: str,
    add_fields: Sequence[str],
    remove_fields: Sequence[str],
    out: CheckpointData,
    add_transform: Callable[[pa.Table], pa.Table] | None = None,
) -> None:
    try:
        data = store.read(path)
    except LogFileNotFoundError as exc:
        raise IncompleteCheckpointError(f"checkpoint file missing: {path}") from exc
    rows: dict[str, list[dict[str, Any]]] = {"add": [], "remove": []}
    for lineno, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise CheckpointFormatError(f"{path} line {lineno}: not JSON") from exc
        if not isinstance(obj, dict) or len(obj) != 1:
            raise CheckpointFormatError(f"{path} line {lineno}: not a single action")
        ((name, body),) = obj.items()
        if not isinstance(body, dict):
            raise CheckpointFormatError(f"{path} line {lineno}: action body is not an object")
        if name in rows:
            rows[name].append(body)
        else:
            out.actions.append((name, body))
    for action, fields in (("add", add_fields), ("remove", remove_fields)):
        if not rows[action] or not fields:
            continue
        full = ACTION_TYPES[action]
        # Table-dependent fields (stats_parsed) have no declared type: JSON rows never hold them.
        target = pa.struct([_field_of(full, pa.null(), f) for f in fields])
        for f in fields:
            # A map must be a JSON object: pyarrow aborts the process on a list holding a null.
            if pa.types.is_map(target.field(f).type) and any(
                not isinstance(r.get(f), dict | None) for r in rows[action]
            ):
                raise CheckpointFormatError(f"{path}: {action}.{f} is not a JSON object")
        try:
            arr = pa.array([{f: r.get(f) for f in fields} for r in rows[action]], type=target)
        except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
            raise CheckpointFormatError(f"{path}: invalid {action} rows: {exc}") from exc
        table = pa.Table.from_arrays(arr.flatten(), names=list(fields))
        if action == "add" and add_transform is not None:
            table = add_transform(table)
        (out.adds if action == "add" else out.removes).append(table)


def read_checkpoint(
    store: LogStore,
    paths: Sequence[str],
    *,
    add_fields: Sequence[str],
    remove_fields: Sequence[str] = (),
    add_transform: Callable[[pa.Table], pa.Table] | None = None,
    actions: Sequence[str] = NON_FILE_ACTIONS,
    small_file_fields: Sequence[str] = (),
    small_file_bytes: int = 0,
) -> CheckpointData:
    """Read one checkpoint: all parts of a multi-part one, or a V2 one with its sidecars.

    Args:
        store: Where the log lives.
        paths: The checkpoint's files (one, or every part in order).
        add_fields: Which ``add`` fields to read (camelCase names from the checkpoint schema).
        remove_fields: Which ``remove`` fields to read; empty to skip tombstones.
        add_transform: Applied to each table of ``add_fields`` as it is read (a batch of a
            Parquet file, a JSON file's rows): what ``adds`` then holds, so that only the
            transformed rows are kept (e.g. statistics parsed, not their JSON).
        actions: The non-file actions to read from Parquet files (default all of them; a
            reader after more ``add`` fields of a checkpoint it has read before wants only
            ``sidecar``). Each is a struct column decoded over every row of the row groups
            that may hold it: in a checkpoint of one row group of a million files, ``metaData``
            alone took 40 ms.
        small_file_fields: ``add`` fields read too from a Parquet file (part or sidecar) of at
            most ``small_file_bytes``: fields a caller would otherwise read in a second pass,
            which for a small file costs more than the columns themselves. The ``adds``
            table of such a file has them (absent ones null); the others' tables do not.
        small_file_bytes: See ``small_file_fields``.

    Raises:
        IncompleteCheckpointError: A part or sidecar is missing.
        CheckpointFormatError: A file cannot be parsed.
        LogStoreError, OSError: The storage failed while reading (an ``OSError`` with an
            ``errno`` for a local file); never reported as a format error.
    """
    out = CheckpointData()
    for path in paths:
        if path.endswith(".json"):
            _read_json(store, path, add_fields, remove_fields, out, add_transform)
        else:
            _read_parquet(
                store,
                path,
                add_fields,
                remove_fields,
                out,
                add_transform=add_transform,
                actions=actions,
                small=(small_file_fields, small_file_bytes),
            )
    sidecars = [body for name, body in out.actions if name == "sidecar"]
    if sidecars:
        log_dir = paths[0].rsplit("/", 1)[0]
        for sidecar in sidecars:
            rel = sidecar.get("path")
            if not isinstance(rel, str) or not rel:
                raise CheckpointFormatError("sidecar action without a path")
            location = rel if "://" in rel else LogStore.join(log_dir, "_sidecars", rel)
            _read_parquet(
                store,
                location,
                add_fields,
                remove_fields,
                out,
                file_actions_only=True,
                add_transform=add_transform,
                small=(small_file_fields, small_file_bytes),
            )
    return out
