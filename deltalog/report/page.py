"""The report as one HTML page: inline CSS and SVG, no script, nothing fetched.

A Content-Security-Policy forbids the page any request (``default-src 'none'``), so it can be
mailed, attached to a ticket or opened offline and shows the same. Every number shown is also
in a ``data-*`` attribute of its element (``data-files-added`` on a commit's row, ``data-bytes``
on a partition's), which is how the tests compare the page with ``history()`` and ``files()``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape

import deltalog.report.svg as svg
from deltalog.report.commits import CommitSummary
from deltalog.report.files import FileSummary, SizeBin
from deltalog.report.health import CheckpointHealth, RetentionHealth
from deltalog.report.model import MAX_FINDINGS, TableReport
from deltalog.units import duration, human_size, timestamp

_CSS = """
:root { color-scheme: light; --ink: #24292f; --muted: #57606a; --line: #d0d7de;
  --bg: #f6f8fa; --ok: #2e7d32; --warn: #b26a00; --bad: #c62828; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--ink); background: #fff; }
header { padding: 20px 32px 12px; border-bottom: 1px solid var(--line); background: var(--bg); }
header h1 { margin: 0 0 4px; font-size: 22px; }
header p { margin: 0; color: var(--muted); }
main { padding: 8px 32px 32px; max-width: 1200px; }
section { margin-top: 24px; }
h2 { font-size: 17px; margin: 0 0 8px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 12px 0 6px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(150px, 1fr)); gap: 10px; }
.card { border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px; }
.card b { display: block; font-size: 20px; }
.card span { color: var(--muted); font-size: 12px; }
.chart { width: 100%; height: auto; display: block; }
.chart .label { font-size: 11px; fill: var(--muted); }
.chart .added { fill: #2e7d32; } .chart .removed { fill: #c62828; }
.share { width: 300px; height: 16px; vertical-align: middle; }
table { border-collapse: collapse; width: 100%; font-size: 13px; }
th, td { text-align: left; padding: 3px 8px; border-bottom: 1px solid var(--line); }
th { background: var(--bg); font-weight: 600; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
.legend span { display: inline-block; margin-right: 14px; font-size: 12px; }
.legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px;
  vertical-align: -1px; border-radius: 2px; }
.panels { display: grid; grid-template-columns: 1fr 1fr; gap: 24px; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0; }
dt { color: var(--muted); } dd { margin: 0; }
.badge { display: inline-block; padding: 0 8px; border-radius: 10px; font-size: 12px;
  color: #fff; font-weight: 600; }
.ok { background: var(--ok); } .warning { background: var(--warn); }
.error { background: var(--bad); } .info { background: var(--muted); }
ul.warnings { margin: 6px 0 0; padding-left: 18px; color: var(--warn); }
details summary { cursor: pointer; color: var(--muted); margin: 6px 0; }
footer { color: var(--muted); font-size: 12px; padding: 0 32px 24px; }
"""


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _card(value: str, label: str, **data: object) -> str:
    return f'<div class="card"{svg.attrs(data)}><b>{_e(value)}</b><span>{_e(label)}</span></div>'


def _table(
    headers: Sequence[tuple[str, bool]], rows: Iterable[tuple[dict[str, object], list[str]]]
) -> str:
    """A table; ``headers`` are (title, numeric); each row is (its data attributes, cells)."""
    head = "".join(f"<th{' class=n' if n else ''}>{_e(h)}</th>" for h, n in headers)
    body = []
    for data, cells in rows:
        tds = "".join(
            f"<td{' class=n' if n else ''}>{_e(c)}</td>"
            for (_, n), c in zip(headers, cells, strict=True)
        )
        body.append(f"<tr{svg.attrs(data)}>{tds}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _count(n: int | None) -> str:
    return "-" if n is None else f"{n:,}"


def _files(n: int) -> str:
    return f"{n:,} file{'' if n == 1 else 's'}"


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def _summary(r: TableReport) -> str:
    f = r.files
    s = r.check.summary() if r.check is not None else None
    cards = [
        _card(f"{r.version:,}", "version", **{"data-version": r.version}),
        _card(f"{f.num_files:,}", "live files", **{"data-num-files": f.num_files}),
        _card(human_size(f.total_bytes), "total size", **{"data-total-bytes": f.total_bytes}),
        _card(f"{f.rows:,}", "rows (from statistics)", **{"data-rows": f.rows}),
        _card(
            f"{f.small_files:,}",
            f"small files (< {human_size(f.small_file_size)})",
            **{"data-small-files": f.small_files},
        ),
        _card(
            f"{f.num_partitions:,}" if f.partition_columns else "-",
            "partitions",
            **{"data-partitions": f.num_partitions},
        ),
        _card(
            _percent(f.dv_files, f.num_files),
            "files with deletion vectors",
            **{"data-dv-files": f.dv_files},
        ),
        _card(f"{r.commits_total:,}", "commits in the log", **{"data-commits": r.commits_total}),
    ]
    if s is not None:
        cards.append(
            _card(
                f"{s['error']} / {s['warning']}",
                "check: errors / warnings",
                **{"data-errors": s["error"], "data-warnings": s["warning"]},
            )
        )
    return f'<section id="summary"><div class="cards">{"".join(cards)}</div></section>'


def _operation_colours(commits: Sequence[CommitSummary]) -> dict[str, str]:
    colours: dict[str, str] = {}
    for c in commits:
        if c.operation not in colours:
            colours[c.operation] = svg.PALETTE[len(colours) % len(svg.PALETTE)]
    return colours


def _commit_title(c: CommitSummary) -> str:
    removed = f"-{_files(c.files_removed)} ({human_size(c.bytes_removed)})"
    return (
        f"v{c.version} {c.operation} at {timestamp(c.timestamp)} by {c.engine}: "
        f"+{_files(c.files_added)} ({human_size(c.bytes_added)}), {removed}"
    )


def _timeline(r: TableReport) -> str:
    commits = r.commits
    if not commits:
        return '<section id="timeline"><h2>Commit timeline</h2><p>No commits.</p></section>'
    colours = _operation_colours(commits)
    files_bars = [
        svg.Bar(
            f"v{c.version}",
            c.files_added,
            c.files_removed,
            _commit_title(c),
            {"data-version": c.version},
            colours[c.operation],
        )
        for c in commits
    ]
    bytes_bars = [
        svg.Bar(
            f"v{c.version}",
            c.bytes_added,
            c.bytes_removed,
            _commit_title(c),
            {"data-version": c.version},
            colours[c.operation],
        )
        for c in commits
    ]
    files_chart = svg.diverging(files_bars, up_label="added", down_label="removed")
    bytes_chart = svg.diverging(
        bytes_bars, up_label="added", down_label="removed", scale=human_size
    )
    legend = "".join(
        f'<span><i style="background:{colour}"></i>{_e(op)}</span>'
        for op, colour in colours.items()
    )
    rows = []
    for c in reversed(commits):  # newest first, as history()
        data: dict[str, object] = {
            "class": "commit",
            "data-version": c.version,
            "data-timestamp": c.timestamp,
            "data-operation": c.operation,
            "data-engine": c.engine,
            "data-files-added": c.files_added,
            "data-bytes-added": c.bytes_added,
            "data-files-removed": c.files_removed,
            "data-bytes-removed": c.bytes_removed,
            "data-rows": c.rows,
            "data-dv-added": c.deletion_vectors_added,
            "data-rebased-over": c.rebased_over,
        }
        rows.append(
            (
                data,
                [
                    str(c.version),
                    timestamp(c.timestamp),
                    c.operation,
                    c.engine,
                    _count(c.files_added),
                    human_size(c.bytes_added),
                    _count(c.files_removed),
                    human_size(c.bytes_removed) + ("*" if c.removes_without_size else ""),
                    _count(c.rows),
                    _count(c.rebased_over),
                ],
            )
        )
    headers = [
        ("version", True),
        ("time (UTC)", False),
        ("operation", False),
        ("engine", False),
        ("+files", True),
        ("+bytes", True),
        ("-files", True),
        ("-bytes", True),
        ("rows", True),
        ("rebased over", True),
    ]
    shown = (
        f"the newest {len(commits):,} of {r.commits_total:,}"
        if len(commits) < r.commits_total
        else f"all {len(commits):,}"
    )
    writers = _table(
        [("engine (commitInfo.engineInfo)", False), ("commits", True), ("versions", False)],
        (
            (
                {"class": "writer", "data-engine": w.engine, "data-commits": w.commits},
                [w.engine, f"{w.commits:,}", f"{w.first_version}-{w.last_version}"],
            )
            for w in r.writers
        ),
    )
    return (
        '<section id="timeline"><h2>Commit timeline</h2>'
        f"<p>{shown} commits, oldest on the left. Files added (up) and removed (down) per "
        "version, then bytes; the strip under the bars is the operation. Hover a bar for "
        "its commit.</p>"
        f'<div class="legend">{legend}</div>'
        f"<h3>Files</h3>{files_chart}<h3>Bytes</h3>{bytes_chart}"
        f"<h3>Writers</h3>{writers}"
        f"<details open><summary>Commits, newest first (* : some removes record no size; "
        "rebased over: commits that landed between the writer's read and its commit)"
        f"</summary>{_table(headers, rows)}</details></section>"
    )


def _bin_label(b: SizeBin) -> str:
    if b.low == 0:
        return f"< {human_size(b.high)}"
    if b.high is None:
        return f">= {human_size(b.low)}"
    return f"{human_size(b.low)} - {human_size(b.high)}"


def _short(n: int) -> str:
    """1 KiB as ``1K``, 256 MiB as ``256M``: the histogram's axis labels."""
    return human_size(n).replace(".0 ", "").replace("iB", "").replace(" ", "")


def _bin_axis(b: SizeBin) -> str:
    if b.high is None:
        return f">={_short(b.low)}"
    return f"<{_short(b.high)}" if b.low == 0 else f"{_short(b.low)}-{_short(b.high)}"


def _sizes(f: FileSummary) -> str:
    columns = [
        svg.Column(
            _bin_axis(b),
            b.files,
            f"{_files(b.files)} of {_bin_label(b)}, {human_size(b.bytes)} in all",
            svg.SMALL if b.high is not None and b.high <= f.small_file_size else svg.NEUTRAL,
            {"data-low": b.low, "data-high": b.high, "data-files": b.files, "data-bytes": b.bytes},
        )
        for b in f.bins
    ]
    small = svg.share(f.small_files, f.num_files, colour=svg.SMALL, label="small files")
    facts = (
        f"<dl><dt>smallest / median / largest</dt><dd>{_e(human_size(f.min_size))} / "
        f"{_e(human_size(f.median_size))} / {_e(human_size(f.max_size))}</dd>"
        f"<dt>small files (below {_e(human_size(f.small_file_size))})</dt>"
        f"<dd>{f.small_files:,} of {f.num_files:,} ({_percent(f.small_files, f.num_files)}), "
        f"{_e(human_size(f.small_bytes))} {small}</dd>"
        f"<dt>files without a row count</dt><dd>{f.files_without_row_count:,}</dd></dl>"
    )
    return (
        '<section id="sizes"><h2>File sizes</h2>'
        "<p>Live files by size (bins of powers of four); orange bins are below the small-file "
        "size, which OPTIMIZE compacts.</p>"
        f"{svg.histogram(columns)}{facts}</section>"
    )


def _partitions(f: FileSummary) -> str:
    if not f.partition_columns:
        return (
            '<section id="partitions"><h2>Partitions</h2><p>The table is not partitioned.</p>'
            "</section>"
        )
    rows = [
        svg.Row(
            p.values or "(empty)",
            p.bytes,
            f"{human_size(p.bytes)}, {_files(p.files)}",
            f"{p.values}: {_files(p.files)}, {human_size(p.bytes)}, {_count(p.rows)} rows",
            {
                "data-values": p.values,
                "data-files": p.files,
                "data-bytes": p.bytes,
                "data-rows": p.rows,
            },
        )
        for p in f.partitions
    ]
    skew = "-" if f.skew is None else f"{f.skew:g}x"
    facts = (
        f"<dl><dt>partition columns</dt><dd>{_e(', '.join(f.partition_columns))}</dd>"
        f"<dt>partitions with live files</dt><dd>{f.num_partitions:,}</dd>"
        f"<dt>median / largest partition</dt><dd>{_e(human_size(f.partition_median_bytes))}"
        f" / {_e(human_size(f.partition_max_bytes))}</dd>"
        f'<dt>skew (largest / median)</dt><dd data-skew="{_e(f.skew)}">{_e(skew)}</dd></dl>'
    )
    listed = (
        f"the {len(f.partitions)} largest of {f.num_partitions:,}"
        if len(f.partitions) < f.num_partitions
        else f"all {f.num_partitions:,}"
    )
    return (
        '<section id="partitions"><h2>Partition skew</h2>'
        f"{facts}<h3>Bytes per partition ({listed})</h3>{svg.horizontal(rows)}</section>"
    )


def _warnings(warnings: list[str]) -> str:
    if not warnings:
        return '<p><span class="badge ok">healthy</span></p>'
    items = "".join(f"<li>{_e(w)}</li>" for w in warnings)
    return f'<p><span class="badge warning">attention</span></p><ul class="warnings">{items}</ul>'


def _checkpoints(c: CheckpointHealth) -> str:
    newest = "none" if c.checkpoint_version is None else f"version {c.checkpoint_version:,}"
    pointer = "missing" if c.last_checkpoint is None else f"version {c.last_checkpoint:,}"
    data = svg.attrs(
        {
            "data-ok": c.ok,
            "data-checkpoint-version": c.checkpoint_version,
            "data-commits-to-replay": c.commits_to_replay,
        }
    )
    return (
        f'<div id="checkpoints"{data}>'
        "<h3>Checkpoints</h3>"
        f"<dl><dt>newest checkpoint</dt><dd>{_e(newest)}"
        f"{'' if c.kind is None else _e(f' ({c.kind}, {human_size(c.size_bytes)})')}</dd>"
        f"<dt>_last_checkpoint</dt><dd>{_e(pointer)}</dd>"
        f"<dt>commits a reader replays</dt><dd>{c.commits_to_replay:,} "
        f"(delta.checkpointInterval: {c.interval})</dd>"
        f"<dt>checkpoints in the log</dt><dd>{c.checkpoints:,}</dd></dl>"
        f"{_warnings(c.warnings)}</div>"
    )


def _retention(r: RetentionHealth) -> str:
    oldest = "-" if r.oldest_version is None else f"version {r.oldest_version:,}"
    data = svg.attrs(
        {
            "data-ok": r.ok,
            "data-tombstones": r.tombstones,
            "data-vacuumable-files": r.vacuumable_files,
            "data-expired-log-files": r.expired_log_files,
        }
    )
    return (
        f'<div id="retention"{data}>'
        "<h3>Retention</h3>"
        f"<dl><dt>log retention</dt><dd>{_e(duration(r.log_retention_ms))}"
        f"{'' if r.expired_log_cleanup else ' (expired log cleanup off)'}</dd>"
        f"<dt>oldest version kept</dt><dd>{_e(oldest)} ({_e(timestamp(r.oldest_time))})</dd>"
        f"<dt>commit files</dt><dd>{r.commit_files:,}</dd>"
        f"<dt>log files past retention</dt><dd>{r.expired_log_files:,}</dd>"
        f"<dt>deleted-file retention</dt><dd>{_e(duration(r.deleted_file_retention_ms))}</dd>"
        f"<dt>removed files (tombstones)</dt><dd>{r.tombstones:,} "
        f"({_e(human_size(r.tombstone_bytes))})</dd>"
        f"<dt>VACUUM could delete</dt><dd>{r.vacuumable_files:,} "
        f"({_e(human_size(r.vacuumable_bytes))})</dd></dl>"
        f"{_warnings(r.warnings)}</div>"
    )


def _deletion_vectors(r: TableReport) -> str:
    f = r.files
    enabled = (r.configuration.get("delta.enableDeletionVectors") or "false").lower() == "true"
    data = svg.attrs({"data-dv-files": f.dv_files, "data-dv-rows-deleted": f.dv_rows_deleted})
    return (
        f'<section id="deletion-vectors"{data}>'
        "<h2>Deletion vectors</h2>"
        f"<dl><dt>enabled (delta.enableDeletionVectors)</dt><dd>{'yes' if enabled else 'no'}</dd>"
        f"<dt>files with a deletion vector</dt><dd>{f.dv_files:,} of {f.num_files:,} "
        f"({_percent(f.dv_files, f.num_files)}) "
        f"{svg.share(f.dv_files, f.num_files, label='files with deletion vectors')}</dd>"
        f"<dt>rows they hide</dt><dd>{f.dv_rows_deleted:,} of {f.dv_rows_in_files:,} rows in "
        f"those files ({_percent(f.dv_rows_deleted, f.dv_rows_in_files)}); "
        f"{_percent(f.dv_rows_deleted, f.rows)} of all rows</dd></dl></section>"
    )


def _findings(r: TableReport) -> str:
    if r.check is None:
        return '<section id="check"><h2>Check</h2><p>Not run (--no-check).</p></section>'
    s = r.check.summary()
    badge = "ok" if not s["error"] and not s["warning"] else ("error" if s["error"] else "warning")
    counts = (
        f'<p><span class="badge {badge}">{s["error"]} errors, {s["warning"]} warnings, '
        f"{s['info']} infos</span> checked {r.check.checked.get('commits', 0):,} commits, "
        f"{r.check.checked.get('checkpoints', 0):,} checkpoints, "
        f"{r.check.checked.get('live_files', 0):,} live files</p>"
    )
    findings = r.check.findings[:MAX_FINDINGS]
    table = _table(
        [("severity", False), ("version", True), ("code", False), ("message", False)],
        (
            (
                {
                    "class": "finding",
                    "data-severity": f.severity,
                    "data-code": f.code,
                    "data-version": f.version,
                },
                [f.severity, "-" if f.version is None else str(f.version), f.code, f.message],
            )
            for f in findings
        ),
    )
    more = (
        f"<p>... and {len(r.check.findings) - MAX_FINDINGS:,} more (deltalog check --json)</p>"
        if len(r.check.findings) > MAX_FINDINGS
        else ""
    )
    return f'<section id="check"><h2>Check</h2>{counts}{table if findings else ""}{more}</section>'


def render_html(report: TableReport) -> str:
    """The report as a self-contained HTML page."""
    r = report
    title = r.name or r.table
    p = r.protocol
    features = ", ".join([*(p["readerFeatures"] or []), *(p["writerFeatures"] or [])]) or "none"
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)} - deltalog report</title><style>{_CSS}</style></head>"
        f"<body{svg.attrs({'data-table': r.table, 'data-version': r.version})}>"
        f"<header><h1>{_e(title)}</h1>"
        f"<p>{_e(r.table)} - version {r.version:,} of {_e(timestamp(r.timestamp))}; protocol "
        f"reader {p['minReaderVersion']}, writer {p['minWriterVersion']}; features: "
        f"{_e(features)}</p></header><main>"
        f"{_summary(r)}{_timeline(r)}{_sizes(r.files)}{_partitions(r.files)}"
        f'<section id="health"><h2>Health</h2><div class="panels">'
        f"{_checkpoints(r.checkpoints)}{_retention(r.retention)}</div></section>"
        f"{_deletion_vectors(r)}{_findings(r)}</main>"
        f"<footer>Made by deltalog {_e(r.deltalog_version)} at "
        f"{_e(timestamp(r.generated_at))} (deltalog report). Self-contained: no script, "
        "nothing fetched.</footer></body></html>\n"
    )
