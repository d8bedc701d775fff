"""Columnar parsing of commit files: ``add``/``remove`` lines go straight to Arrow.

Commit files are mostly file actions. Their lines are recognised by prefix and handed, all at
once, to pyarrow's JSON reader with an explicit schema, so no Python object is built per file
action. Every other line (protocol, metadata, txn, domain metadata, commitInfo, unknown
actions) is few in number and goes through :func:`deltalog.actions.parse_line`.

``partitionValues`` is read as a struct of the known partition columns and turned into the
protocol's string map without leaving Arrow. Whenever the fast result could differ from the
exact parser (an unexpected partition key, a missing required field, a type the reader rejects,
a line it cannot split), :func:`parse_commits` returns ``None`` and the caller uses the exact
parser, which also produces the precise error for malformed input. That includes anything
pyarrow's JSON reader takes but the exact parser refuses (``NaN``, invalid UTF-8, fields it does
not know with values of any depth): the fast path only accepts what it fully checked.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import orjson
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from deltalog.actions import (
    DV_REQUIRED_FIELDS,
    Action,
    AddFile,
    CommitInfo,
    Metadata,
    RemoveFile,
    parse_line,
)
from deltalog.checkpoints.schema import ADD, REMOVE
from deltalog.errors import MalformedCommitError
from deltalog.file_actions import FILES_SCHEMA, TOMBSTONES_SCHEMA, snake

_ADD = b'{"add":{'
_REMOVE = b'{"remove":{'
_COMMIT_INFO = b'{"commitInfo":'
_WHITESPACE = b" \t\r\n"  # JSON's insignificant whitespace
_HEAD = 32  # bytes of a line enough to name its action, whatever the spacing
_BLOCK = 16 << 20
_REQUIRED_ADD = ("path", "partitionValues", "size", "modificationTime", "dataChange")


class _Fallback(Exception):
    """The exact parser must run."""


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
    adds: pa.Table = field(default_factory=FILES_SCHEMA.empty_table)
    removes: pa.Table = field(default_factory=TOMBSTONES_SCHEMA.empty_table)


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
    offsets = pa.array(range(0, (n + 1) * k, k) if k else [0] * (n + 1), pa.int32())
    if k == 0:
        keys, items = pa.array([], pa.string()), pa.array([], pa.string())
    elif k == 1:
        keys = pa.repeat(pa.scalar(names[0]), n) if n else pa.array([], pa.string())
        items = arr.field(0)
    else:
        flat = pa.array(range(n * k), pa.int64())
        row = pc.divide(flat, k)
        col = pc.subtract(flat, pc.multiply(row, k))
        keys = pa.array(names, pa.string()).take(col)
        items = pa.concat_arrays([arr.field(j) for j in range(k)]).take(
            pc.add(pc.multiply(col, n), row)
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
            arrays.append(tags if tags is not None else pa.nulls(len(column), f.type))
        elif name is None:
            arrays.append(pa.nulls(len(column), f.type))
        else:
            child = column.field(name)
            if pa.types.is_struct(f.type):
                kids = [
                    child.field(k.name).cast(k.type)
                    if child.type.get_field_index(k.name) >= 0
                    else pa.nulls(len(child), k.type)
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
        return pa.array(values, type=target)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
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
    schema = _json_schema(action, partition_columns)
    data = b"\n".join(lines)
    if not data.isascii():
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return None  # pyarrow keeps invalid UTF-8 in its strings
    # One block holds everything; small inputs get a small block (allocating 16 MB is not free).
    block = min(_BLOCK, max(1 << 16, 1 << (len(data) + 1).bit_length()))
    try:
        table = pj.read_json(
            io.BytesIO(data),
            read_options=pj.ReadOptions(block_size=block),
            parse_options=pj.ParseOptions(
                explicit_schema=schema, unexpected_field_behavior="infer"
            ),
        )
    except (pa.ArrowException, ValueError):
        return None
    if table.num_rows != len(lines) or table.column_names != [action]:
        return None
    # Only the schema's fields, and tags (inferred: read again from the lines), may be there.
    # Fields pyarrow infers are not even touched: its inference can build invalid arrays.
    inferred = table.schema.field(action).type
    expected = schema.field(action).type
    tags = inferred.get_field_index("tags")
    if _unknown_fields(inferred, pa.struct([*expected, pa.field("tags", pa.null())])) or (
        tags >= 0 and not _string_struct(inferred.field(tags).type)
    ):
        return None  # the exact parser keeps unknown fields, and checks them its own way
    try:
        column = table.column(action).combine_chunks()
    except pa.ArrowException:
        return None
    if column.null_count:
        return None
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


def parse_commits(
    commits: Iterable[tuple[int, bytes]], partition_columns: Sequence[str] | None
) -> ParsedCommits | None:
    """Parse commits ``(version, content)`` in order; ``None`` when the exact parser must run.

    Args:
        commits: Commit versions and file contents, ascending.
        partition_columns: Partition columns in force before these commits, or ``None`` when
            no metadata precedes them.
    """
    try:
        return _parse_commits(commits, partition_columns)
    except (_Fallback, orjson.JSONDecodeError, MalformedCommitError):
        return None


def _parse_commits(
    commits: Iterable[tuple[int, bytes]], partition_columns: Sequence[str] | None
) -> ParsedCommits | None:
    out = ParsedCommits()
    add_lines: list[bytes] = []
    remove_lines: list[bytes] = []
    layouts = set() if partition_columns is None else {tuple(partition_columns)}
    for version, data in commits:
        out.last_commit_info = None
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
        removes = _conform(column, TOMBSTONES_SCHEMA, None)
        i = TOMBSTONES_SCHEMA.get_field_index("data_change")
        data_change = pc.fill_null(removes.column(i), True)  # RemoveFile's default
        out.removes = removes.set_column(i, TOMBSTONES_SCHEMA.field(i), data_change)
    return out
