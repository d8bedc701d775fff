"""Jupyter shows a DeltaTable and its history as HTML tables (``_repr_html_``)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pyarrow as pa
from tableutil import write_parquet

from deltalog import DeltaTable
from deltalog.log.notebook import MAX_ROWS, History, history_html


def _table(tmp_path: Path) -> DeltaTable:
    t = DeltaTable.create(
        str(tmp_path),
        pa.schema([("id", pa.int64()), ("tags", pa.list_(pa.string())), ("p", pa.string())]),
        partition_by=["p"],
        name="<events>",
    )
    t.append_files([write_parquet(tmp_path, "p=a/f.parquet", pa.table({"id": [1, 2, 3]}))])
    return t


def test_table_shows_as_html(tmp_path: Path) -> None:
    t = _table(tmp_path)
    page = t._repr_html_()
    assert page.startswith("<div><strong>DeltaTable</strong><table")
    assert "<td style" in page and str(tmp_path) in page
    assert "reader 1, writer 2" in page and ">p<" in page  # partitioned by p
    assert "1 (" in page  # one file, its size
    assert '{"type":"array","elementType":"string","containsNull":true}' in page.replace(
        "&quot;", '"'
    )


def test_history_is_a_list_that_shows_as_a_table(tmp_path: Path) -> None:
    t = _table(tmp_path)
    history = t.history()
    assert isinstance(history, History) and isinstance(history, list)
    assert [h["version"] for h in history] == [1, 0]
    assert orjson.loads(orjson.dumps(history))[0]["operation"] == "WRITE"  # plain JSON still
    page = history._repr_html_()
    rows = page.split("<tr>")[2:]  # after the header row
    assert len(rows) == 2
    assert ">WRITE<" in rows[0] and ">3<" in rows[0]  # rows written
    assert ">CREATE TABLE<" in rows[1]


def test_a_long_history_shows_its_newest_commits(tmp_path: Path) -> None:
    entries = [{"version": v, "operation": "WRITE"} for v in range(MAX_ROWS + 5, 0, -1)]
    page = history_html(entries)
    assert page.count("<tr>") == MAX_ROWS + 1
    assert "and 5 older commits" in page
