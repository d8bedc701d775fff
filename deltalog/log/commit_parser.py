"""Columnar parsing of commit files: ``add``/``remove`` lines go straight to Arrow.

Commit files are mostly file actions. Their lines are recognised by prefix and handed, all at
once, to pyarrow's JSON reader with an explicit schema, so no Python object is built per file
action. Every other line (protocol, metadata, txn, domain metadata, commitInfo, unknown
actions) is few in number and goes through :func:`deltalog.protocol.actions.parse_line`.

``partitionValues`` is read as a struct of the known partition columns and turned into the
protocol's string map without leaving Arrow. Whenever the fast result could differ from the
exact parser (an unexpected partition key, a missing required field, a type the reader rejects,
a line it cannot split), :func:`parse_commits` returns ``None`` and the caller uses the exact
parser, which also produces the precise error for malformed input. That includes anything
pyarrow's JSON reader takes but the exact parser refuses (``NaN``, invalid UTF-8, fields it does
not know with values of any depth): the fast path only accepts what it fully checked.
"""

from __future__ import annotations

import mmap
import re
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from deltalog.arrow import columns as arrow_columns
from deltalog.arrow import values as av
from deltalog.checkpoints.arrow_pool import decode_pool
from deltalog.checkpoints.nulls import empty_table, null_array
from deltalog.checkpoints.schema import ADD, REMOVE
from deltalog.errors import MalformedCommitError
from deltalog.log.file_actions import FILES_SCHEMA, TOMBSTONES_SCHEMA, snake
from deltalog.protocol.actions import (
    DV_REQUIRED_FIELDS,
    Action,
    AddFile,
    CommitInfo,
    Metadata,
    RemoveFile,
    parse_line,
)
from deltalog.worker_pool import worker_pool

_ADD = b'{"add":{'
_REMOVE = b'{"remove":{'
_COMMIT_INFO = b'{"commitInfo":'
# How lines start: compact (delta-spark, delta-rs, deltalog) or with json.dumps's default spacing.
_ADDS = (_ADD, b'{"add": {')
_REMOVES = (_REMOVE, b'{"remove": {')
_COMMIT_INFOS = (_COMMIT_INFO, b'{"commitInfo": ')
_NL = ord("\n")
_WHITESPACE = b" \t\r\n"  # JSON's insignificant whitespace
_HEAD = 32  # bytes of a line enough to name its action, whatever the spacing
_BLOCK = 16 << 20
_REQUIRED_ADD = ("path", "partitionValues", "size", "modificationTime", "dataChange")

#: A commit's content: bytes, or a read-only map of the file (local stores, big commits).
Text = bytes | mmap.mmap


class _Fallback(Exception):
    """The exact parser must run."""


class _RemoveLines(Exception):
    """Lines were read for adds only, but there are remove lines too: read them again."""


@dataclass
class ParsedCommits:
    """The actions of consecutive commits.

    Attributes:
        other: Non-file actions other than commitInfo, with their versions, in log order.
        last_commit_info: The commitInfo of the last commit, if it has one.
        order: One flag per file action in log order, ``True`` for add.
        adds: Add rows (``FILES_SCHEMA``), in log order.
        removes: Remove rows (``TOMBSTONES_SCHEMA``), in log order.
    """

    other: list[tuple[int, Action]] = field(default_factory=list)
    last_commit_info: CommitInfo | None = None
    order: list[bool] = field(default_factory=list)
    adds: pa.Table = field(default_factory=lambda: empty_table(FILES_SCHEMA))
    removes: pa.Table = field(default_factory=lambda: empty_table(TOMBSTONES_SCHEMA))


def _json_schema(action: str, partition_columns: Sequence[str]) -> pa.Schema:
    full = ADD if action == "add" else REMOVE
    fields = []
    for f in full:
        if f.name == "partitionValues":
            fields.append(
                pa.field(f.name, pa.struct([(c, pa.string()) for c in partition_columns]))
            )
        elif f.name != "tags":
            fields.append(f)
    if action == "remove":
        fields.append(pa.field("stats", pa.string()))
    return pa.schema([(action, pa.struct(fields))])


def _struct_to_map(arr: pa.StructArray, target: pa.DataType) -> pa.Array:
    """A struct of string columns as a ``map<string,string>`` with one entry per column."""
    n, k = len(arr), arr.type.num_fields
    names = [arr.type.field(j).name for j in range(k)]
    # Row i's entries start at i * k (no entries at all without partition columns).
    offsets = av.int_range(0, (n + 1) * k, k, width=32) if k else av.zeros(n + 1, width=32)
    if k == 0:
        keys, items = null_array(pa.string(), 0), null_array(pa.string(), 0)
    elif k == 1:
        keys = pa.repeat(av.string(names[0]), n) if n else null_array(pa.string(), 0)
        items = arr.field(0)
    else:
        flat = av.int_range(0, n * k)
        row = pc.divide(flat, av.int64(k))
        col = pc.subtract(flat, pc.multiply(row, av.int64(k)))
        keys = av.strings(names).take(col)
        items = pa.concat_arrays([arr.field(j) for j in range(k)]).take(
            pc.add(pc.multiply(col, av.int64(n)), row)
        )
    mask = arr.is_null() if arr.null_count else None
    result = pa.MapArray.from_arrays(offsets, keys, items.cast(pa.string()), mask=mask)
    return result.cast(target)


def _conform(column: pa.StructArray, schema: pa.Schema, tags: pa.Array | None) -> pa.Table:
    arrays = []
    camel = {snake(c.name): c.name for c in column.type}
    for f in schema:
        name = camel.get(f.name)
        if f.name == "partition_values":
            assert name is not None
            arrays.append(_struct_to_map(column.field(name), f.type))
        elif f.name == "tags":
            arrays.append(tags if tags is not None else null_array(f.type, len(column)))
        elif name is None:
            arrays.append(null_array(f.type, len(column)))
        else:
            child = column.field(name)
            if pa.types.is_struct(f.type):
                kids = [
                    child.field(k.name).cast(k.type)
                    if child.type.get_field_index(k.name) >= 0
                    else null_array(k.type, len(child))
                    for k in f.type
                ]
                mask = child.is_null() if child.null_count else None
                child = pa.StructArray.from_arrays(kids, fields=list(f.type), mask=mask)
            arrays.append(child.cast(f.type))
    return pa.Table.from_arrays(arrays, schema=schema)


def _tags(
    lines: list[bytes], column: pa.StructArray, action: str, target: pa.DataType
) -> pa.Array | None:
    """The lines' ``tags`` maps (``None`` when no line has one that is not ``null``).

    Whether any line has tags is known from the type the JSON reader inferred for them
    (absent, or ``null`` in every line): only then are the lines parsed one by one.

    Raises:
        _Fallback: A ``tags`` value is not a map of strings.
    """
    i = column.type.get_field_index("tags")
    if i < 0 or pa.types.is_null(column.type.field(i).type):
        return None
    values = []
    for line in lines:
        tags = orjson.loads(line)[action].get("tags")
        if tags is not None and not isinstance(tags, dict):
            raise _Fallback
        values.append(tags)
    try:
        return arrow_columns.column(values, target)
    except (TypeError, ValueError, OverflowError) as exc:  # the exact parser says what is wrong
        raise _Fallback from exc


def _unknown_fields(actual: pa.DataType, expected: pa.DataType) -> bool:
    """Whether pyarrow inferred struct fields (at any level) that ``expected`` does not name."""
    if not pa.types.is_struct(actual) or not pa.types.is_struct(expected):
        return False
    for f in actual:
        i = expected.get_field_index(f.name)
        if i < 0 or _unknown_fields(f.type, expected.field(i).type):
            return True
    return False


def _string_struct(t: pa.DataType) -> bool:
    """Whether ``t`` is what pyarrow infers for a JSON object of strings (or for null)."""
    if pa.types.is_null(t):
        return True
    return pa.types.is_struct(t) and all(
        pa.types.is_string(f.type) or pa.types.is_null(f.type) for f in t
    )


def _read(
    lines: list[bytes], action: str, partition_columns: Sequence[str]
) -> pa.StructArray | None:
    table = _read_rows(b"\n".join(lines), len(lines), {action: partition_columns})
    if table is None:
        return None
    try:
        column = table.column(action).combine_chunks()
    except pa.ArrowException:
        return None
    if column.null_count:
        return None
    return _checked(column, partition_columns)


def _read_rows(
    data: bytes | memoryview,
    rows: int | None,
    actions: dict[str, Sequence[str]],
    *,
    threads: bool = True,
) -> pa.Table | None:
    """Read lines of ``actions`` (partition keys in log order) into one table.

    ``None`` when the JSON reader cannot be trusted with them: invalid UTF-8 (checked here
    for ``bytes``; a ``memoryview`` must have been checked by the caller), a row count other
    than ``rows`` (when given) or a top-level key that differs, fields it inferred that the
    schema does not name.
    """
    schema = pa.schema([_json_schema(a, keys).field(0) for a, keys in actions.items()])
    if isinstance(data, bytes) and not _valid_utf8(data):
        return None  # pyarrow keeps invalid UTF-8 in its strings
    size = len(data) if isinstance(data, bytes) else data.nbytes
    # One block holds everything; small inputs get a small block (allocating 16 MB is not free).
    block = min(_BLOCK, max(1 << 16, 1 << (size + 1).bit_length()))
    try:
        table = pj.read_json(
            pa.BufferReader(pa.py_buffer(data)),
            read_options=pj.ReadOptions(block_size=block, use_threads=threads),
            parse_options=pj.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="infer"
            ),
            memory_pool=decode_pool(),
        )
    except (pa.ArrowException, ValueError):
        return None
    if table.column_names == [*actions, "remove"]:
        raise _RemoveLines
    if (rows is not None and table.num_rows != rows) or table.column_names != list(actions):
        return None
    # Only the schema's fields, and tags (inferred: read again from the lines), may be there.
    # Fields pyarrow infers are not even touched: its inference can build invalid arrays.
    for action in actions:
        inferred = table.schema.field(action).type
        expected = schema.field(action).type
        tags = inferred.get_field_index("tags")
        if _unknown_fields(inferred, pa.struct([*expected, pa.field("tags", pa.null())])) or (
            tags >= 0 and not _string_struct(inferred.field(tags).type)
        ):
            return None  # the exact parser keeps unknown fields, and checks them its own way
    return table


def _valid_utf8(data: Text) -> bool:
    if not isinstance(data, bytes):
        return _valid_utf8_buffer(data)
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _valid_utf8_buffer(data: mmap.mmap) -> bool:
    """Whether a mapped text is UTF-8, checked by Arrow on the map itself (no copy)."""
    offsets = pa.py_buffer(struct.pack("<qq", 0, len(data)))
    one = pa.Array.from_buffers(pa.large_binary(), 1, [None, offsets, pa.py_buffer(data)])
    try:
        one.cast(pa.large_string())
    except pa.ArrowInvalid:
        return False
    return True


def _starts(data: Text, forms: tuple[bytes, ...], at: int) -> bool:
    """``data.startswith(forms, at)``, for a map too."""
    if isinstance(data, bytes):
        return data.startswith(forms, at)
    return any(data[at : at + len(f)] == f for f in forms)


def _checked(column: pa.StructArray, partition_columns: Sequence[str]) -> pa.StructArray | None:
    """``column`` (file actions, no null rows) when it holds nothing the exact parser refuses."""
    dv = column.field("deletionVector")
    if dv.null_count < len(dv) and any(
        pc.any(pc.and_(dv.is_valid(), dv.field(name).is_null())).as_py()
        for name in DV_REQUIRED_FIELDS
    ):
        return None  # a deletion vector without a required field (the exact parser says which)
    pv = column.type.field("partitionValues").type
    if pv.num_fields != len(partition_columns):
        return None  # a partition key the table does not declare
    return column


def _key_order(line: bytes, action: str, columns: list[str]) -> list[str] | None:
    """Partition keys in the order the log writes them (taken from one line)."""
    try:
        body = orjson.loads(line)[action]
        values = body.get("partitionValues")
    except (orjson.JSONDecodeError, KeyError, TypeError, AttributeError):
        return None
    if not isinstance(values, dict):
        return columns if action == "remove" else None
    return list(values) if set(values) == set(columns) else None


#: Bytes of commit text parsed at once: commits are read and parsed in groups of about this size,
#: so peak memory holds one group's text beside the parsed rows, never the whole log's text.
GROUP_BYTES = 64 << 20


def commit_groups(
    commits: Iterable[tuple[int, Text]], limit: int | None = None
) -> Iterator[list[tuple[int, Text]]]:
    """Consecutive commits in groups of at most ``limit`` bytes (a bigger commit is alone).

    ``limit`` defaults to :data:`GROUP_BYTES`.
    """
    limit = GROUP_BYTES if limit is None else limit
    group: list[tuple[int, Text]] = []
    size = 0
    for commit in commits:
        if group and size + len(commit[1]) > limit:
            yield group
            group, size = [], 0
        group.append(commit)
        size += len(commit[1])
    if group:
        yield group


def parse_commits(
    commits: Iterable[tuple[int, Text]], partition_columns: Sequence[str] | None
) -> ParsedCommits | None:
    """Parse commits ``(version, content)`` in order; ``None`` when the exact parser must run.

    The commits are consumed group by group (:func:`commit_groups`), so an iterator that reads
    them lazily keeps at most one group's text alive.

    Args:
        commits: Commit versions and file contents, ascending.
        partition_columns: Partition columns in force before these commits, or ``None`` when
            no metadata precedes them.
    """
    columns = None if partition_columns is None else list(partition_columns)
    parts: list[ParsedCommits] = []
    try:
        for group in commit_groups(commits):
            part = _parse_compact(group, columns)
            if part is None:
                part = _parse_commits(group, columns)
            if part is None:
                return None
            for _, action in part.other:
                if isinstance(action, Metadata):
                    columns = list(action.partition_columns)
            parts.append(part)
            del group
    except (_Fallback, _RemoveLines, orjson.JSONDecodeError, MalformedCommitError):
        return None
    return _joined(parts)


def _joined(parts: list[ParsedCommits]) -> ParsedCommits:
    """The groups' results as one (tables are chunked, not copied)."""
    if len(parts) == 1:
        return parts[0]
    out = ParsedCommits()
    for part in parts:
        out.other += part.other
        out.order += part.order
    out.last_commit_info = parts[-1].last_commit_info if parts else None
    adds = [p.adds for p in parts if p.adds.num_rows]
    removes = [p.removes for p in parts if p.removes.num_rows]
    if adds:
        out.adds = pa.concat_tables(adds)
    if removes:
        out.removes = pa.concat_tables(removes)
    return out


def _pattern(forms: tuple[bytes, ...]) -> re.Pattern[bytes]:
    """One regular expression for the forms of a line head (``{"add":{`` or ``{"add": {``)."""
    pattern = _PATTERNS.get(forms)
    if pattern is None:  # (setdefault would build the expression on every call)
        pattern = _PATTERNS[forms] = re.compile(b"|".join(re.escape(f) for f in forms))
    return pattern


_PATTERNS: dict[tuple[bytes, ...], re.Pattern[bytes]] = {}


def _find(data: Text, forms: tuple[bytes, ...], end: int, start: int = 0) -> int:
    """Where the first of ``forms`` occurs in ``data[start:end]`` (-1 when none does).

    One scan for all forms: looking for each in turn would scan the whole text for every
    form a writer does not use.
    """
    found = _pattern(forms).search(data, start, end)
    return -1 if found is None else found.start()


def _rfind_line(data: Text, forms: tuple[bytes, ...], start: int) -> int:
    """Where the last line of ``data[start:]`` that starts with one of ``forms`` starts.

    ``start`` itself counts as a line start; -1 when there is no such line. Each later form
    is looked for only after the last place found so far (an absent form costs a scan of the
    text after the last line of that kind, not of all of it).
    """
    best = start if _starts(data, forms, start) else -1
    for form in forms:
        at = data.rfind(b"\n" + form, max(start, best))
        if at >= 0:
            best = at + 1
    return best


def _file_span(data: Text) -> tuple[int, int] | None:
    """Where a commit's file actions are, when they form one block of lines.

    Returns ``(start, end)`` of the block, from the first compact ``add``/``remove`` line to
    the end of the last one (``(0, 0)`` without file actions), or ``None`` when the commit has
    another shape (a file action inside another line, or one outside the block). Lines inside
    the block are not looked at here: the JSON reader refuses any that is not a file action.
    JSON strings cannot hold a raw newline, so every newline in a commit ends a line.
    """
    first_add = _find(data, _ADDS, len(data))
    first_remove = _find(data, _REMOVES, len(data) if first_add < 0 else first_add)
    found = [i for i in (first_add, first_remove) if i >= 0]
    if not found:
        return (0, 0) if data.find(b'"add"') < 0 and data.find(b'"remove"') < 0 else None
    start = min(found)
    if start and data[start - 1] != _NL:
        return None  # inside another action: the general path decides
    last = max(start, _rfind_line(data, _ADDS, start))  # the last add line (or start)
    last = max(last, _rfind_line(data, _REMOVES, last))  # a remove line after it
    end = data.find(b"\n", last)
    end = len(data) if end < 0 else end
    outside = data[:start] + data[end:]
    if outside.find(b'"add"') >= 0 or outside.find(b'"remove"') >= 0:
        return None  # maybe a spaced file action outside the block: the general path decides
    return start, end


def _parse_compact(
    commits: list[tuple[int, Text]], partition_columns: Sequence[str] | None
) -> ParsedCommits | None:
    """The commits parsed with one JSON read for all their file actions, in log order.

    Applies to commits whose file actions are compact lines in one block each (what
    delta-spark, delta-rs and deltalog write): the blocks go to the JSON reader as they are,
    without a Python object per line. ``None`` when a commit has another shape.
    """
    spans = []
    for _, data in commits:
        span = _file_span(data)
        if span is None:
            return None
        spans.append(span)
    out = ParsedCommits()
    layouts = set() if partition_columns is None else {tuple(partition_columns)}
    blocks: list[memoryview] = []
    for (version, data), (start, end) in zip(commits, spans, strict=True):
        out.last_commit_info = None
        for line in (*data[:start].split(b"\n"), *data[end:].split(b"\n")):
            if not line.strip():
                continue
            action = parse_line(line)
            if isinstance(action, CommitInfo):
                if not line.startswith(_COMMIT_INFOS):
                    return None
                out.last_commit_info = action
            elif isinstance(action, AddFile | RemoveFile):
                return None
            else:
                out.other.append((version, action))
                if isinstance(action, Metadata):
                    layouts.add(tuple(action.partition_columns))
        if end > start:
            if not _valid_utf8(data):
                return None  # the exact parser says where
            blocks.append(memoryview(data)[start:end])
    if len(layouts) > 1:
        return None  # partitioning changed within these commits: keys differ by version
    columns = list(layouts.pop()) if layouts else []
    if not blocks:
        return out
    first_add = _first_line(commits, spans, _ADDS)
    add_keys = _key_order(first_add, "add", columns) if first_add is not None else columns
    if add_keys is None:
        return None
    # The reader is told only about the kinds of lines the blocks have (a null struct column
    # for a kind that is absent costs a third of the read); any other line gets a column of
    # its own, and the reader's result is refused.
    kinds: dict[str, Sequence[str]] = {}
    if first_add is not None:
        kinds["add"] = add_keys
    if first_add is None or any(
        _ends_with_remove(data, *span) for (_, data), span in zip(commits, spans, strict=True)
    ):
        kinds["remove"] = columns  # the key order is checked below, once a remove line is read
    try:
        table = _read_blocks(blocks, kinds)
    except _RemoveLines:  # removes only in the middle of a block: rare enough to read twice
        kinds["remove"] = columns
        table = _read_blocks(blocks, kinds)
    if table is None:
        return None
    if any(_has_tags(table.schema.field(kind).type) for kind in kinds):
        table = table.combine_chunks()  # tags are read line by line, for all rows at once
    adds: list[pa.StructArray] = []
    removes: list[pa.StructArray] = []
    for batch in table.to_batches():
        if len(kinds) == 1 and batch.column(0).null_count:
            return None  # a line that is not this kind of action (say, ``{}``)
        if "remove" not in kinds:
            out.order += [True] * batch.num_rows
            adds.append(batch.column("add"))
            continue
        if "add" not in kinds:
            out.order += [False] * batch.num_rows
            removes.append(batch.column("remove"))
            continue
        add_column, remove_column = batch.column("add"), batch.column("remove")
        is_add = add_column.is_valid()
        if not pc.all(pc.xor(is_add, remove_column.is_valid())).as_py():
            return None  # a line with both or neither (the exact parser says what is wrong)
        if remove_column.null_count == len(remove_column):
            out.order += [True] * len(add_column)
            adds.append(add_column)
        else:
            out.order += is_add.to_pylist()
            adds.append(add_column.filter(is_add))
            removes.append(remove_column.filter(pc.invert(is_add)))
    if any(len(r) for r in removes):
        first_remove = _first_line(commits, spans, _REMOVES)
        if first_remove is None or _key_order(first_remove, "remove", columns) != columns:
            return None  # partition keys in another order: the general path reads them
    if first_add is None and any(len(a) for a in adds):
        return None  # add lines, none of them compact: the general path reads them
    if first_add is not None:
        tags_type = FILES_SCHEMA.field("tags").type
        parts = []
        for column in adds:
            checked = _checked(column, add_keys)
            if checked is None or any(checked.field(n).null_count for n in _REQUIRED_ADD):
                return None
            tags = None
            if _has_tags(checked.type):
                tags = _tags(_lines_of(b"\n".join(blocks), _ADDS), checked, "add", tags_type)
            if len(checked):
                parts.append(_conform(checked, FILES_SCHEMA, tags))
        if parts:
            out.adds = pa.concat_tables(parts)
    tombstones = []
    for column in removes:
        checked = _checked(column, columns)
        if checked is None or checked.field("path").null_count:
            return None
        if _has_tags(checked.type):  # checked, not kept
            target = FILES_SCHEMA.field("tags").type
            _tags(_lines_of(b"\n".join(blocks), _REMOVES), checked, "remove", target)
        if len(checked):
            tombstones.append(_tombstones(checked))
    if tombstones:
        out.removes = pa.concat_tables(tombstones)
    return out


def _tombstones(column: pa.StructArray) -> pa.Table:
    """Checked remove rows as a tombstones table (``dataChange`` defaults to true)."""
    removes = _conform(column, TOMBSTONES_SCHEMA, None)
    i = TOMBSTONES_SCHEMA.get_field_index("data_change")
    data_change = pc.fill_null(removes.column(i), av.true())  # RemoveFile's default
    return removes.set_column(i, TOMBSTONES_SCHEMA.field(i), data_change)


#: Blocks smaller than this are joined with their neighbours before the JSON reader sees them.
UNIT_BYTES = 4 << 20


def _units(blocks: list[memoryview]) -> list[memoryview]:
    """The blocks as texts of about :data:`UNIT_BYTES` or more, in order.

    A block that big is kept as it is (no copy); runs of smaller ones are joined into one text,
    so ten thousand one-line commits are one read, not ten thousand reads (each with its own
    batch to check and convert).
    """
    units: list[memoryview] = []
    run: list[memoryview] = []
    size = 0

    def close_run() -> None:
        nonlocal run, size
        if run:
            units.append(run[0] if len(run) == 1 else memoryview(b"\n".join(run)))
        run, size = [], 0

    for block in blocks:
        if block.nbytes >= UNIT_BYTES:
            close_run()
            units.append(block)
            continue
        run.append(block)
        size += block.nbytes + 1
        if size >= UNIT_BYTES:
            close_run()
    close_run()
    return units


def _read_blocks(blocks: list[memoryview], kinds: dict[str, Sequence[str]]) -> pa.Table | None:
    """The blocks' lines as one table (see :func:`_read_rows`), block order kept.

    Small blocks are joined into units of a few megabytes (:func:`_units`); several units are
    read side by side on the worker pool, one thread each: big commits are never copied, and
    both cores stay busy.
    """
    units = _units(blocks)
    if len(units) == 1:
        return _read_rows(units[0], None, kinds)
    tables = list(worker_pool().map(lambda b: _read_rows(b, None, kinds, threads=False), units))
    if any(t is None for t in tables):
        return None
    try:
        return pa.concat_tables([t for t in tables if t is not None])
    except pa.ArrowInvalid:  # inferred tags typed differently from unit to unit
        return _read_rows(memoryview(b"\n".join(blocks)), None, kinds)


def _ends_with_remove(data: Text, start: int, end: int) -> bool:
    """Whether a block of file actions starts or ends with a remove line (found without a scan)."""
    if start == end:
        return False
    if _starts(data, _REMOVES, start):
        return True
    last = data.rfind(b"\n", start, end) + 1
    return _starts(data, _REMOVES, max(last, start))


def _has_tags(t: pa.DataType) -> bool:
    """Whether some line has ``tags`` that are not ``null`` (known from the inferred type)."""
    i = t.get_field_index("tags")
    return i >= 0 and not pa.types.is_null(t.field(i).type)


def _first_line(
    commits: list[tuple[int, Text]], spans: list[tuple[int, int]], forms: tuple[bytes, ...]
) -> bytes | None:
    """The first line of the commits' file-action blocks that starts with one of ``forms``."""
    for (_, data), (start, end) in zip(commits, spans, strict=True):
        if end > start and (line := _line_at(data, start, end, forms)) is not None:
            return line
    return None


def _line_at(data: Text, start: int, end: int, forms: tuple[bytes, ...]) -> bytes | None:
    """The first line of ``data[start:end]`` (whole lines) that starts with one of ``forms``."""
    if _starts(data, forms, start):
        at = start
    else:
        at = _find(data, tuple(b"\n" + f for f in forms), end, start) + 1
        if not at:
            return None
    stop = data.find(b"\n", at, end)
    return data[at : end if stop < 0 else stop]


def _lines_of(text: bytes, forms: tuple[bytes, ...]) -> list[bytes]:
    """The lines of ``text`` that start with one of ``forms`` (only when tags must be read)."""
    return [line for line in text.split(b"\n") if line.startswith(forms)]


def _parse_commits(
    commits: Iterable[tuple[int, Text]], partition_columns: Sequence[str] | None
) -> ParsedCommits | None:
    out = ParsedCommits()
    add_lines: list[bytes] = []
    remove_lines: list[bytes] = []
    layouts = set() if partition_columns is None else {tuple(partition_columns)}
    for version, text in commits:
        out.last_commit_info = None
        data = text if isinstance(text, bytes) else text[:]
        for line in data.split(b"\n"):
            # Compact lines (delta-spark, deltalog, delta-rs) match as they are; others (spaced
            # JSON) once their head is stripped of whitespace. Whitespace inside a key in the
            # head is removed too: the reader below then sees a field it does not expect and
            # the exact parser runs.
            head = line if line.startswith(_ADD) else line[:_HEAD].translate(None, _WHITESPACE)
            if head.startswith(_ADD):
                add_lines.append(line)
                out.order.append(True)
            elif head.startswith(_REMOVE):
                remove_lines.append(line)
                out.order.append(False)
            elif head.startswith(_COMMIT_INFO):
                info = parse_line(line)
                if not isinstance(info, CommitInfo):
                    return None
                out.last_commit_info = info
            elif line.strip():
                action = parse_line(line)
                if isinstance(action, AddFile | RemoveFile | CommitInfo):
                    return None  # not written the way delta-spark writes it: the order is lost
                out.other.append((version, action))
                if isinstance(action, Metadata):
                    layouts.add(tuple(action.partition_columns))
    if len(layouts) > 1:
        return None  # partitioning changed within these commits: keys differ by version
    columns = list(layouts.pop()) if layouts else []
    if add_lines:
        order = _key_order(add_lines[0], "add", columns)
        if order is None:
            return None
        column = _read(add_lines, "add", order)
        if column is None:
            return None
        for name in _REQUIRED_ADD:
            if column.field(name).null_count:
                return None
        tags = _tags(add_lines, column, "add", FILES_SCHEMA.field("tags").type)
        out.adds = _conform(column, FILES_SCHEMA, tags)
    if remove_lines:
        order = _key_order(remove_lines[0], "remove", columns)
        if order is None:
            return None
        column = _read(remove_lines, "remove", order)
        if column is None or column.field("path").null_count:
            return None
        _tags(remove_lines, column, "remove", FILES_SCHEMA.field("tags").type)  # checked, not kept
        out.removes = _tombstones(column)
    return out
