"""Action bodies (JSON-like dicts) as Arrow columns, through pyarrow's JSON reader.

``pa.array`` of Python dicts is the obvious way, but the first conversion of a Python value in a
process makes pyarrow import pandas when it is installed (~0.15 s, on a writer's checkpoint
thread, where it holds the GIL against the commits). The few non-file actions of a checkpoint
are instead written as JSON lines and read with an explicit schema. The JSON reader has no map
type, so maps travel as lists of ``{"key", "value"}`` entries and are turned back into maps
inside Arrow.
"""

from __future__ import annotations

from typing import Any

import orjson
import pyarrow as pa
import pyarrow.json as pj

from .nulls import empty_table


def _jsonable(t: pa.DataType) -> pa.DataType:
    """``t`` with every map replaced by a list of key/value structs (what JSON can carry)."""
    if pa.types.is_map(t):
        entry = pa.struct([("key", _jsonable(t.key_type)), ("value", _jsonable(t.item_type))])
        return pa.list_(entry)
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _jsonable(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(_jsonable(t.value_type))
    return t


def _entries(value: Any, t: pa.DataType) -> Any:
    """A JSON value with its maps (as ``t`` places them) written as lists of entries."""
    if value is None:
        return None
    if pa.types.is_map(t) and isinstance(value, dict):
        return [{"key": k, "value": _entries(v, t.item_type)} for k, v in value.items()]
    if pa.types.is_struct(t) and isinstance(value, dict):
        kids = {f.name: f.type for f in t}
        return {k: _entries(v, kids[k]) if k in kids else v for k, v in value.items()}
    if pa.types.is_list(t) and isinstance(value, list):
        return [_entries(v, t.value_type) for v in value]
    return value


def _typed(arr: pa.Array, t: pa.DataType) -> pa.Array:
    """``arr`` (as read for ``_jsonable(t)``) turned into type ``t``: entry lists become maps."""
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_map(t):
        entries = arr.values
        keys = _typed(entries.field("key"), t.key_type)
        items = _typed(entries.field("value"), t.item_type)
        return pa.MapArray.from_arrays(arr.offsets, keys, items, mask=mask).cast(t)
    if pa.types.is_struct(t):
        kids = [_typed(arr.field(f.name), f.type) for f in t]
        return pa.StructArray.from_arrays(kids, fields=list(t), mask=mask)
    if pa.types.is_list(t):
        values = _typed(arr.values, t.value_type)
        return pa.ListArray.from_arrays(arr.offsets, values, mask=mask).cast(t)
    return arr if arr.type == t else arr.cast(t)


def action_rows(schema: pa.Schema, actions: list[tuple[str, dict[str, Any]]]) -> pa.Table:
    """One row per ``(name, body)``: column ``name`` holds the body, every other column null.

    Fields the schema does not name are dropped (as ``pa.array`` drops them); an action name
    the schema lacks gives a row of nulls.

    Raises:
        pyarrow.ArrowInvalid: A value does not fit its field's type.
    """
    if not actions:
        return empty_table(schema)
    names = set(schema.names)
    lines = b"\n".join(
        orjson.dumps({name: _entries(body, schema.field(name).type) if name in names else None})
        for name, body in actions
    )
    read_schema = pa.schema([pa.field(f.name, _jsonable(f.type)) for f in schema])
    table = pj.read_json(
        pa.BufferReader(lines),
        read_options=pj.ReadOptions(use_threads=False, block_size=max(1 << 16, 2 * len(lines))),
        parse_options=pj.ParseOptions(
            explicit_schema=read_schema, unexpected_field_behavior="ignore"
        ),
    )
    if table.num_rows != len(actions):
        raise pa.ArrowInvalid(f"{len(actions)} actions read back as {table.num_rows} rows")
    arrays = [_typed(table.column(f.name).combine_chunks(), f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)
