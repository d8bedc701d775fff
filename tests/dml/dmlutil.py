"""Helpers for the DELETE/UPDATE/MERGE/OPTIMIZE tests: tables, rows, commits, files on disk."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import deltalake
import orjson
import pyarrow as pa

from deltalog import DeltaTable, write_table
from deltalog.protocol.deletion_vectors import dv_file_path

DV = {"delta.enableDeletionVectors": "true"}


def make_table(
    root: Path | str,
    *,
    dv: bool,
    partitioned: bool = False,
    files: int = 2,
    rows: int = 10,
    configuration: dict[str, str] | None = None,
) -> DeltaTable:
    """A table of ``files`` appends of ``rows`` rows each: ``id``, ``p`` ('a'/'b'), ``v``."""
    config = {**(DV if dv else {}), **(configuration or {})}
    for n in range(files):
        ids = list(range(n * rows, (n + 1) * rows))
        data = pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "p": ["a" if i % 2 == 0 else "b" for i in ids],
                "v": [float(i) for i in ids],
            }
        )
        write_table(
            str(root),
            data,
            mode="append",
            partition_by=["p"] if partitioned and n == 0 else None,
            configuration=config if n == 0 else None,
        )
    return DeltaTable(str(root))


def rows(root: Path | str, version: int | None = None) -> list[dict[str, Any]]:
    """deltalog's rows, sorted by id."""
    table = DeltaTable(str(root), version=version)
    return sorted(table.to_pyarrow_table().to_pylist(), key=lambda r: orjson.dumps(r, default=str))


def ids(root: Path | str) -> list[int]:
    """The ids deltalog reads, sorted."""
    return sorted(r["id"] for r in DeltaTable(str(root)).to_pyarrow_table().to_pylist())


def rs_rows(root: Path | str) -> list[dict[str, Any]]:
    """delta-rs's rows through DataFusion (which applies deletion vectors), sorted."""
    builder = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(root)))
    table = pa.table(builder.execute("SELECT * FROM t").read_all())
    return sorted(table.to_pylist(), key=lambda r: orjson.dumps(r, default=str))


def commit(root: Path | str, version: int) -> list[dict[str, Any]]:
    """The actions of a commit, as JSON objects."""
    path = Path(root) / "_delta_log" / f"{version:020d}.json"
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def info(root: Path | str, version: int) -> dict[str, Any]:
    """The commitInfo of a commit."""
    return next(a["commitInfo"] for a in commit(root, version) if "commitInfo" in a)


def actions(root: Path | str, version: int, kind: str) -> list[dict[str, Any]]:
    """The ``kind`` actions (``add``, ``remove``) of a commit."""
    return [a[kind] for a in commit(root, version) if kind in a]


def data_files(root: Path | str) -> set[str]:
    """Every data and DV file under a table directory (``_delta_log`` left out)."""
    out: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "_delta_log"]
        out.update(os.path.join(dirpath, f) for f in filenames if f.endswith((".parquet", ".bin")))
    return out


def live_files(root: Path | str) -> set[str]:
    """The data and DV files the table's latest version references, as ``data_files`` names them."""
    out: set[str] = set()
    for f in DeltaTable(str(root)).files().select(["path", "deletion_vector"]).to_pylist():
        out.add(os.path.join(str(root), unquote(f["path"])))
        dv = dv_file_path(f["deletion_vector"]) if f["deletion_vector"] else None
        if dv is not None:
            out.add(os.path.join(str(root), dv))
    return out
