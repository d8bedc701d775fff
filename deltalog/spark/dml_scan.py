"""The executor side of a Spark DELETE or UPDATE: candidate files in, what changed out.

``deltalog.spark.delete`` and ``update`` hand Spark one small row per candidate file
(:data:`CANDIDATES_DDL`: its index among the candidates, path, partition values, deletion
vector) and map them with ``mapInArrow`` through :func:`dml_task`. Each task reads its files
with their row positions (deletion vectors applied), evaluates the predicate
(:func:`deltalog.stats.predicates.matches`: a row is taken when it is true, not null) and, for a
file holding matching rows:

* every live row matches: the file is removed whole (an update writes the updated rows);
* with deletion vectors: the matching positions join the file's DV, written to a DV file by the
  task; the file is re-committed with it; an update writes the updated rows to new files;
* copy-on-write: the file is removed and its other rows (with the updated ones, for an update)
  are written to a new file, as delta-spark's rewrite does.

The task reports one row per touched file and per file written (:data:`RESULT_DDL`); only those
rows travel to the driver (:mod:`deltalog.spark.dml_rewrite`), which commits them. Every file a
task writes carries the job's ``token`` in its name, so the driver can find and delete the files
of a failed job. A named deltalog error inside the task (a constraint, a cast that does not fit)
is reported as a row, not raised, so the driver can raise it by name.

Nothing here imports Spark: the functions run inside Python workers and are testable alone.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.errors import DeltaLogError, StorageError
from deltalog.log.storage import TableStorage
from deltalog.protocol.deletion_vector_writer import deleted_union
from deltalog.protocol.schema import StructType
from deltalog.read import FileRows, _read_positions
from deltalog.spark.task import TaskPlan, _task_writer, _written_schema
from deltalog.stats.expression_eval import Scope
from deltalog.stats.predicates import Predicate, matches
from deltalog.write.assignments import Assignment
from deltalog.write.data_writer import DataWriter
from deltalog.write.deletion_vector_files import DeletionVectorWriter

__all__ = [
    "CANDIDATES_DDL",
    "RESULT_DDL",
    "DmlPlan",
    "assign",
    "describe_candidates",
    "dml_task",
    "file_token",
]

#: Spark DDL of the candidate files a DML job maps over.
CANDIDATES_DDL = "idx long, path string, partition_values string, deletion_vector string"

#: Spark DDL of a task's rows. ``kind`` is ``remove`` (file ``idx`` removed whole), ``dv``
#: (file ``idx`` re-committed with ``descriptor``), ``add`` (a new data file), ``dv_file`` (a DV
#: file written, at ``path``) or ``error`` (``error`` holds ``<ErrorClass>: message``).
RESULT_DDL = (
    "kind string, idx long, taken long, copied long, physical_rows long, descriptor string, "
    "path string, partition_values string, size long, modification_time long, stats string, "
    "error string"
)
RESULT_SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        ("idx", pa.int64()),
        ("taken", pa.int64()),
        ("copied", pa.int64()),
        ("physical_rows", pa.int64()),
        ("descriptor", pa.string()),
        ("path", pa.string()),
        ("partition_values", pa.string()),
        ("size", pa.int64()),
        ("modification_time", pa.int64()),
        ("stats", pa.string()),
        ("error", pa.string()),
    ]
)


@dataclass(frozen=True)
class DmlPlan:
    """What a DML task needs, shipped from the driver (picklable, no Spark objects).

    Attributes:
        write: The plan of the data files written (as a Spark write's tasks get it).
        predicate: Rows to take (``None``: every row of a candidate file).
        assignments: An update's ``SET`` (empty for a delete).
        use_deletion_vectors: Mark taken rows in deletion vectors instead of rewriting files.
        dv_prefix_length: Random directory prefix length of new DV files.
        read_columns: Columns read (logical names, table order); empty: all.
        token: Eight hex digits every file written carries in its name.
    """

    write: TaskPlan
    predicate: Predicate | None
    assignments: tuple[Assignment, ...] = ()
    use_deletion_vectors: bool = False
    dv_prefix_length: int = 0
    read_columns: tuple[str, ...] = ()
    token: str = field(default_factory=lambda: uuid.uuid4().hex[:8])


def file_token() -> str:
    """A fresh job token: eight hex digits."""
    return uuid.uuid4().hex[:8]


def _tokened_uuid(token: str) -> uuid.UUID:
    """A random UUID whose first group is ``token``."""
    return uuid.UUID(hex=token + uuid.uuid4().hex[8:])


def describe_candidates(files: pa.Table) -> list[tuple[int, str, str, str | None]]:
    """One :data:`CANDIDATES_DDL` row per candidate file (rows of ``snapshot.files``)."""
    out: list[tuple[int, str, str, str | None]] = []
    rows = files.select(["path", "partition_values", "deletion_vector"]).to_pylist()
    for index, row in enumerate(rows):
        dv = row["deletion_vector"]
        out.append(
            (
                index,
                row["path"],
                orjson.dumps(dict(row["partition_values"] or [])).decode(),
                None if dv is None else orjson.dumps(dv).decode(),
            )
        )
    return out


class _Task:
    """One task's work: its writers and the rows it reports."""

    def __init__(self, plan: DmlPlan) -> None:
        self.plan = plan
        write = plan.write
        self.storage = TableStorage.open(write.uri, write.storage_options or None)
        self.schema = StructType.from_json_string(write.table_schema)
        self.written = _written_schema(write, pa.schema([]))
        self.partition_columns = [f.name for f in self.written.fields[len(write.data_columns) :]]
        self._writer: DataWriter | None = None
        self._dvs: DeletionVectorWriter | None = None
        self.rows: list[dict[str, Any]] = []
        wanted = set(plan.read_columns) if plan.read_columns else None
        self.target = pa.schema(
            [
                f.remove_metadata()
                for f in self.schema.to_arrow()
                if wanted is None or f.name in wanted
            ]
        )

    # ------------------------------------------------------------------ writers
    def writer(self) -> DataWriter:
        if self._writer is None:
            file_id = str(_tokened_uuid(self.plan.token))
            self._writer = _task_writer(self.plan.write, self.written, file_id=file_id)
        return self._writer

    def dvs(self) -> DeletionVectorWriter:
        if self._dvs is None:
            token = self.plan.token
            self._dvs = DeletionVectorWriter(
                self.storage,
                prefix_length=self.plan.dv_prefix_length,
                file_ids=lambda: _tokened_uuid(token),
            )
        return self._dvs

    def write(self, rows: pa.Table) -> None:
        if rows.num_rows:
            self.writer().write(rows.select(self.written.names))

    # ------------------------------------------------------------------ one file
    def change(self, index: int, found: FileRows) -> None:
        """Take the matching rows of one file (see the module docstring)."""
        plan = self.plan
        rows = found.rows
        if plan.predicate is None:
            mask = av.bools(True, rows.num_rows)
        else:
            mask = pc.fill_null(matches(plan.predicate, rows), av.false())
        taken = int(pc.sum(mask).as_py() or 0)
        if not taken:
            return
        replacement = None
        if plan.assignments:
            replacement = assign(plan.assignments, rows.filter(mask))
        row: dict[str, Any] = {"idx": index, "taken": taken, "copied": 0}
        if taken == rows.num_rows:
            self.rows.append({**row, "kind": "remove"})
        elif plan.use_deletion_vectors:
            deleted = deleted_union(found.deleted, found.positions.filter(mask))
            descriptor = self.dvs().add(deleted)
            self.rows.append(
                {
                    **row,
                    "kind": "dv",
                    "physical_rows": found.physical_rows,
                    "descriptor": orjson.dumps(descriptor).decode(),
                }
            )
        else:
            kept = rows.filter(pc.invert(mask))
            self.rows.append({**row, "kind": "remove", "copied": kept.num_rows})
            self.write(kept)
        if replacement is not None:
            self.write(replacement)

    def finish(self) -> None:
        """Close the writers; report the files written."""
        if self._dvs is not None:
            self._dvs.close()
            self.rows += [{"kind": "dv_file", "path": p} for p in self._dvs.locations]
        if self._writer is not None:
            for add in self._writer.close():
                self.rows.append(
                    {
                        "kind": "add",
                        "path": add.path,
                        "partition_values": orjson.dumps(add.partition_values).decode(),
                        "size": add.size,
                        "modification_time": add.modification_time,
                        "stats": add.stats,
                    }
                )

    def abort(self) -> None:
        if self._writer is not None:
            self._writer.abort()
        if self._dvs is not None:
            self._dvs.abort()


def dml_task(plan: DmlPlan, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Change the candidate files that arrive in ``batches``; describe what changed.

    Raises:
        MissingDataFileError, DeletionVectorError, StorageError: A file cannot be read (the
            files this task wrote are deleted first).
    """
    task = _Task(plan)
    try:
        for batch in batches:
            for row in batch.to_pylist():
                file = {
                    "path": row["path"],
                    "partition_values": orjson.loads(row["partition_values"]),
                    "deletion_vector": None
                    if row["deletion_vector"] is None
                    else orjson.loads(row["deletion_vector"]),
                }
                found = _read_positions(
                    task.storage, task.schema, task.partition_columns, task.target, file
                )
                task.change(int(row["idx"]), found)
        task.finish()
    except DeltaLogError as exc:
        task.abort()
        if not _is_user_error(exc):
            raise
        task.rows = [{"kind": "error", "error": f"{type(exc).__name__}: {exc}"}]
    except BaseException:
        task.abort()
        raise
    yield pa.RecordBatch.from_pylist(task.rows, schema=RESULT_SCHEMA)


def _is_user_error(exc: DeltaLogError) -> bool:
    """Whether the error is about the rows or the statement (not the store)."""
    return not isinstance(exc, StorageError)


def assign(assignments: tuple[Assignment, ...], rows: pa.Table) -> pa.Table:
    """``rows`` with the assigned columns replaced by their new values.

    Raises:
        InvalidExpressionError: An assignment fails or does not fit its column.
    """
    scope = Scope.of(rows)
    by_column = {a.column: a for a in assignments}
    columns = [
        rows.column(name)
        if name not in by_column
        else by_column[name].values(scope, rows.schema.field(name).type)
        for name in rows.column_names
    ]
    return pa.Table.from_arrays(columns, schema=rows.schema)
