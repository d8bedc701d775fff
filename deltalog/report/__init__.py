"""``deltalog report``: one self-contained HTML page about a table, and its numbers.

:func:`build_report` gathers a :class:`TableReport` (the model: ``model``) from the table's
history, its live files, its log and ``check`` (``commits``, ``files``, ``health``);
:func:`render_html` lays it out as a page (``page``, charts from ``svg``), and
:func:`write_report` does both. On the top floor beside ``spark``: it may use the table facade
and everything below it; the CLI, one floor up, calls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from deltalog.report.model import DEFAULT_COMMITS, TableReport, build_report
from deltalog.report.page import render_html


def write_report(
    uri: str,
    output: str | Path,
    storage_options: Mapping[str, str] | None = None,
    **options: object,
) -> TableReport:
    """Build the report of the table at ``uri`` and write its page to ``output``.

    ``options`` are :func:`build_report`'s keyword arguments. Returns the report written.
    """
    report = build_report(uri, storage_options, **options)  # type: ignore[arg-type]
    Path(output).write_text(render_html(report), encoding="utf-8")
    return report


__all__ = ["DEFAULT_COMMITS", "TableReport", "build_report", "render_html", "write_report"]
