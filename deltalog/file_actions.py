"""File actions as Arrow: conversions, keys, and the last-action-wins merge used by replay."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from checkpoints.schema import ADD, REMOVE
from deltalog.actions import AddFile, RemoveFile


def snake(name: str) -> str:
    """``modificationTime`` → ``modification_time``."""
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
FILES_SCHEMA = pa.schema([pa.field(snake(f.name), f.type) for f in ADD])
#: Columns of ``Snapshot.tombstones``.
TOMBSTONES_SCHEMA = pa.schema(
    [pa.field(snake(REMOVE.field(n).name), REMOVE.field(n).type) for n in TOMBSTONE_FIELDS]
)
_DV_FIELDS = [f.name for f in FILES_SCHEMA.field("deletion_vector").type]


def scheme_prefix(root: str) -> str:
    """What qualifies an absolute, scheme-less path under ``root``: ``file:`` or ``s3://b``."""
    if "://" not in root:
        return "file:"
    scheme, _, rest = root.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


def canonical_path(path: str, prefix: str) -> str:
    """The form of ``path`` used to match adds with removes (delta-spark's canonicalisation)."""
    if path.startswith("file:///"):
        return "file:/" + path[8:]
    if path.startswith("/") and not path.startswith("//"):
        return prefix + path
    return path


def file_key(path: str, dv_id: str | None, prefix: str) -> str:
    """The reconciliation key of a logical file: canonical path plus deletion vector id."""
    key = canonical_path(path, prefix)
    return key if dv_id is None else f"{key}\x00{dv_id}"


def canonical_paths(paths: pa.Array | pa.ChunkedArray, prefix: str) -> pa.Array:
    """Vectorised :func:`canonical_path`."""
    path = paths.combine_chunks() if isinstance(paths, pa.ChunkedArray) else paths
    if pc.any(pc.starts_with(path, "/")).as_py() or pc.any(pc.starts_with(path, "file:")).as_py():
        fixed = pc.replace_substring_regex(path, "^file:///", "file:/")
        qualified = pc.binary_join_element_wise(prefix, fixed, "")
        is_abs = pc.and_(pc.starts_with(fixed, "/"), pc.invert(pc.starts_with(fixed, "//")))
        path = pc.if_else(is_abs, qualified, fixed)
    return path


def arrow_keys(table: pa.Table, prefix: str) -> pa.Array:
    """Vectorised :func:`file_key` over a files or tombstones table."""
    path = canonical_paths(table.column("path"), prefix)
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
    return None if dv is None else {name: dv.get(name) for name in _DV_FIELDS}


def _to_table(actions: Sequence[AddFile] | Sequence[RemoveFile], schema: pa.Schema) -> pa.Table:
    """Arrow table of file actions; ``schema`` column names are the dataclass attributes."""
    if not actions:
        return schema.empty_table()
    cols: dict[str, list[Any]] = {}
    for f in schema:
        values = [getattr(a, f.name) for a in actions]
        cols[f.name] = [_dv_row(v) for v in values] if f.name == "deletion_vector" else values
    return pa.Table.from_pydict(cols, schema=schema)


def adds_to_table(adds: Sequence[AddFile]) -> pa.Table:
    """Arrow table (``FILES_SCHEMA``) of add actions."""
    return _to_table(adds, FILES_SCHEMA)


def removes_to_table(removes: Sequence[RemoveFile]) -> pa.Table:
    """Arrow table (``TOMBSTONES_SCHEMA``) of remove actions."""
    return _to_table(removes, TOMBSTONES_SCHEMA)


def _without(table: pa.Table, keys: pa.Array, prefix: str) -> pa.Table:
    """``table`` minus the rows whose key is in ``keys`` (no copy when none is)."""
    if not table.num_rows:
        return table
    hit = pc.is_in(arrow_keys(table, prefix), value_set=keys)
    if not pc.any(hit).as_py():
        return table
    return table.filter(pc.invert(hit))


@dataclass
class FileActionLog:
    """File actions in log order, kept as Arrow chunks.

    ``order`` holds one flag per action (``True`` for add, ``False`` for remove) in the order
    the actions appear in the log; ``adds``/``removes`` hold the rows of each kind in that same
    relative order.
    """

    order: list[bool] = field(default_factory=list)
    adds: list[pa.Table] = field(default_factory=list)
    removes: list[pa.Table] = field(default_factory=list)

    def extend_objects(self, actions: Sequence[AddFile | RemoveFile]) -> None:
        """Append actions given as objects."""
        adds = [a for a in actions if isinstance(a, AddFile)]
        removes = [a for a in actions if isinstance(a, RemoveFile)]
        self.order += [isinstance(a, AddFile) for a in actions]
        if adds:
            self.adds.append(adds_to_table(adds))
        if removes:
            self.removes.append(removes_to_table(removes))

    def extend_tables(self, order: list[bool], adds: pa.Table, removes: pa.Table) -> None:
        """Append actions already parsed into Arrow."""
        self.order += order
        if adds.num_rows:
            self.adds.append(adds)
        if removes.num_rows:
            self.removes.append(removes)

    def merge(
        self, base_files: pa.Table, base_tombstones: pa.Table, prefix: str
    ) -> tuple[pa.Table, pa.Table]:
        """Apply these actions, last one per key winning, on top of a base state."""
        if not self.order:
            return base_files, base_tombstones
        adds = pa.concat_tables(self.adds) if self.adds else FILES_SCHEMA.empty_table()
        removes = (
            pa.concat_tables(self.removes) if self.removes else TOMBSTONES_SCHEMA.empty_table()
        )
        add_keys = arrow_keys(adds, prefix).to_pylist() if adds.num_rows else []
        remove_keys = arrow_keys(removes, prefix).to_pylist() if removes.num_rows else []
        # Walk the log order once; the last action per key wins.
        winner: dict[str, int] = {}
        ia = ir = 0
        for is_add in self.order:
            if is_add:
                winner[add_keys[ia]] = ia
                ia += 1
            else:
                winner[remove_keys[ir]] = -1 - ir
                ir += 1
        keep_adds = sorted(i for i in winner.values() if i >= 0)
        keep_removes = sorted(-1 - i for i in winner.values() if i < 0)
        touched = pa.array(list(winner), pa.string())
        base_files = _without(base_files, touched, prefix)
        base_tombstones = _without(base_tombstones, touched, prefix)
        new_files = (
            adds if len(keep_adds) == adds.num_rows else adds.take(pa.array(keep_adds, pa.int64()))
        )
        if "_cp_row" in base_files.column_names and new_files.num_rows:
            new_files = new_files.append_column("_cp_row", pa.nulls(new_files.num_rows, pa.int64()))
        new_tombstones = removes.take(pa.array(keep_removes, pa.int64())) if keep_removes else None
        files = pa.concat_tables([base_files, new_files]) if new_files.num_rows else base_files
        tombstones = (
            pa.concat_tables([base_tombstones, new_tombstones])
            if new_tombstones is not None
            else base_tombstones
        )
        return files, tombstones
