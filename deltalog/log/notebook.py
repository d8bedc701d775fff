"""How a table and its history show in Jupyter: ``_repr_html_`` as small HTML tables.

``DeltaTable`` shows its location, version, protocol, partition columns, files and schema;
``DeltaTable.history()`` returns a :class:`History` (a ``list`` of the same dicts) that shows
as a table of commits with their files, rows and bytes (:mod:`deltalog.log.operation_metrics`).
Plain markup, no script: notebooks that strip scripts still show them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import Any

import orjson

from deltalog.log.operation_metrics import summarize
from deltalog.log.snapshot import Snapshot
from deltalog.units import human_size, timestamp

#: Commits a notebook shows (the list holds them all).
MAX_ROWS = 50
_STYLE = "border-collapse:collapse;font-size:12px"
_CELL = "padding:2px 8px;border-bottom:1px solid #ddd"


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def html_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """An HTML table of text cells (escaped); numbers right-aligned."""
    head = "".join(f'<th style="{_CELL};text-align:left">{_e(h)}</th>' for h in headers)
    body = []
    for row in rows:
        cells = []
        for cell in row:
            align = "right" if isinstance(cell, int) else "left"
            shown = f"{cell:,}" if isinstance(cell, int) and not isinstance(cell, bool) else cell
            cells.append(f'<td style="{_CELL};text-align:{align}">{_e(shown)}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    rows_html = "".join(body)
    return (
        f'<table style="{_STYLE}"><thead><tr>{head}</tr></thead><tbody>{rows_html}</tbody></table>'
    )


def history_html(entries: Sequence[Mapping[str, Any]]) -> str:
    """History entries (newest first) as an HTML table."""
    rows = []
    for e in entries[:MAX_ROWS]:
        m = summarize(e.get("operationMetrics"))
        params = e.get("operationParameters")
        shown = (
            ", ".join(f"{k}={v}" for k, v in params.items() if v is not None)
            if isinstance(params, Mapping)
            else ""
        )
        rows.append(
            [
                e.get("version"),
                timestamp(e.get("timestamp")),
                e.get("operation") or "-",
                "-" if m.files_added is None else m.files_added,
                "-" if m.files_removed is None else m.files_removed,
                "-" if m.rows is None else m.rows,
                "-" if m.bytes_added is None else human_size(m.bytes_added),
                e.get("engineInfo") or "-",
                shown,
            ]
        )
    more = (
        f"<p>... and {len(entries) - MAX_ROWS:,} older commits</p>"
        if len(entries) > MAX_ROWS
        else ""
    )
    headers = ["version", "timestamp (UTC)", "operation", "+files", "-files", "rows", "bytes"]
    return html_table([*headers, "engine", "parameters"], rows) + more


class History(list[dict[str, Any]]):
    """``DeltaTable.history()``: a list of commit dicts, newest first, shown as a table."""

    def _repr_html_(self) -> str:
        return history_html(self)


def snapshot_html(uri: str, snapshot: Snapshot) -> str:
    """A table version as HTML: what ``deltalog describe`` prints, schema as a table."""
    p = snapshot.protocol
    features = ", ".join([*(p.reader_features or []), *(p.writer_features or [])])
    facts = [
        ("table", uri),
        ("version", f"{snapshot.version:,} ({timestamp(snapshot.timestamp)})"),
        (
            "protocol",
            f"reader {p.min_reader_version}, writer {p.min_writer_version}"
            + (f"; features: {features}" if features else ""),
        ),
        ("partitioned by", ", ".join(snapshot.partition_columns) or "-"),
        ("files", f"{snapshot.num_files:,} ({human_size(snapshot.size_in_bytes)})"),
    ]
    facts += [(k, str(v)) for k, v in sorted(snapshot.configuration.items())]
    schema = []
    for f in snapshot.schema.fields:
        t = f.type.to_json()
        schema.append([f.name, t if isinstance(t, str) else orjson.dumps(t).decode(), f.nullable])
    return (
        "<div><strong>DeltaTable</strong>"
        + html_table(["", ""], facts)
        + "<p><em>schema</em></p>"
        + html_table(["column", "type", "nullable"], schema)
        + "</div>"
    )
