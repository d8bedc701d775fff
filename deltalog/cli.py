"""The ``deltalog`` command: inspect, check, checkpoint and vacuum a table.

Every subcommand prints a readable report, or with ``--json`` exactly one JSON document on
stdout. Errors print one line on stderr and exit with status 2 (bad input or corrupt table) or
1 (anything unexpected is not caught: it is a bug and shows its traceback). ``check`` exits
with 3 when it finds problems at or above ``--fail-on``.
"""

from __future__ import annotations

import argparse
import codecs
import datetime as dt
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

import orjson
import pyarrow as pa
import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.check import CheckReport, check_table
from deltalog.errors import (
    CorruptLogError,
    DeltaLogError,
    InvalidInputError,
    StorageConfigurationError,
)
from deltalog.log.history import table_history
from deltalog.log.storage import TableStorage
from deltalog.logstores.options import recording_option_reads, redact_uri, safe_option_name
from deltalog.logstores.registry import is_builtin, scheme_of
from deltalog.table import DeltaTable
from deltalog.worker_pool import worker_pool

EXIT_ERROR = 2


def _open(args: argparse.Namespace) -> DeltaTable:
    return DeltaTable(
        args.table,
        version=getattr(args, "version", None),
        storage_options=_options(getattr(args, "option", None) or []),
    )


def _options(pairs: list[str]) -> dict[str, str]:
    """``KEY=VALUE`` arguments as storage options."""
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            # The argument is not echoed: it may well be a secret typed with the wrong separator.
            raise InvalidInputError("--option expects KEY=VALUE (an argument has no '=')")
        options[key.strip()] = value
    return options


def _refuse_unused_options(args: argparse.Namespace) -> None:
    """Refuse ``-o`` options the table's store does not read: a typo must not pass unnoticed.

    The store is opened once with the options, recording the names it looks up (a library
    caller may share one dictionary with delta-rs; a command line has no such reason). Stores
    from plugins are not checked: they need not report what they read.

    Raises:
        StorageConfigurationError: Naming the options that do not apply.
    """
    options = _options(getattr(args, "option", None) or [])
    if not options or not is_builtin(args.table):
        return
    with recording_option_reads() as reads:
        TableStorage.open(args.table, options)
    unused = sorted(key for key in options if key.lower() not in reads)
    if unused:
        named = ", ".join(safe_option_name(key) for key in unused)
        known = ", ".join(sorted(name for name in reads if "." in name)) or "no options"
        raise StorageConfigurationError(
            f"storage option(s) {named} do not apply to {redact_uri(args.table)}: its "
            f"{scheme_of(args.table)} store reads {known}"
        )


def _ts(ms: Any) -> str:
    if not isinstance(ms, int) or isinstance(ms, bool):
        return "-"
    try:
        when = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    except (ValueError, OverflowError, OSError):  # out of datetime's range
        return f"{ms} ms"
    return when.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"


def _schema_json(schema_string: str | None) -> Any:
    """The table schema as JSON; a schema string that is not JSON is a corrupt log."""
    if not schema_string:
        return None
    try:
        parsed = orjson.loads(schema_string)
    except orjson.JSONDecodeError as exc:
        raise CorruptLogError(f"metaData.schemaString is not JSON: {exc}") from exc
    if not isinstance(parsed, dict):
        raise CorruptLogError("metaData.schemaString is not a JSON object")
    return parsed


def _describe(table: DeltaTable) -> dict[str, Any]:
    snap = table.snapshot
    p = snap.protocol
    m = snap.metadata
    return {
        "table": table.uri,
        "version": snap.version,
        "timestamp": snap.timestamp,
        "protocol": {
            "minReaderVersion": p.min_reader_version,
            "minWriterVersion": p.min_writer_version,
            "readerFeatures": p.reader_features,
            "writerFeatures": p.writer_features,
        },
        "metadata": {
            "id": m.id,
            "name": m.name,
            "description": m.description,
            "partitionColumns": m.partition_columns,
            "configuration": m.configuration,
            "createdTime": m.created_time,
            "schema": _schema_json(m.schema_string),
        },
        "numFiles": snap.num_files,
        "sizeInBytes": snap.size_in_bytes,
    }


def _print_describe(doc: dict[str, Any]) -> None:
    p, m = doc["protocol"], doc["metadata"]
    print(f"table:       {doc['table']}")
    print(f"version:     {doc['version']}  ({_ts(doc['timestamp'])})")
    features = ""
    if p["readerFeatures"] or p["writerFeatures"]:
        features = (
            f"  reader features: {', '.join(p['readerFeatures'] or []) or '-'};"
            f" writer features: {', '.join(p['writerFeatures'] or []) or '-'}"
        )
    print(f"protocol:    reader {p['minReaderVersion']}, writer {p['minWriterVersion']}{features}")
    print(f"id:          {m['id']}")
    if m["name"]:
        print(f"name:        {m['name']}")
    print(f"partitioned: {', '.join(m['partitionColumns']) or '(not partitioned)'}")
    print(f"files:       {doc['numFiles']}  ({doc['sizeInBytes']:,} bytes)")
    if m["configuration"]:
        print("properties:")
        for k, v in sorted(m["configuration"].items()):
            print(f"  {k} = {v}")
    print("schema:")
    fields = (m["schema"] or {}).get("fields", [])
    for f in fields if isinstance(fields, list) else []:
        if not isinstance(f, dict):
            continue
        t = f.get("type")
        shown = t if isinstance(t, str) else orjson.dumps(t).decode()
        null = "" if f.get("nullable", True) else " not null"
        print(f"  {f.get('name')}: {shown}{null}")


#: Rows converted and written at a time by ``files``: output streams, memory stays bounded.
_BATCH = 50_000
_FILE_COLUMNS = ["path", "size", "partition_values", "modification_time", "data_change", "stats"]
_MAX_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: Arrow and datetime format alike


def _batches(files: pa.Table) -> Iterator[pa.RecordBatch]:
    yield from files.to_batches(max_chunksize=_BATCH)


T = TypeVar("T")


def _ahead(make: Callable[[pa.RecordBatch], T], batches: Iterator[pa.RecordBatch]) -> Iterator[T]:
    """``make`` of each batch, in order, built by the worker pool a few batches ahead.

    Arrow's kernels release the GIL, so lines are built on other cores while the previous
    ones are written; at most :data:`_AHEAD` batches wait, so memory stays bounded.
    """
    pending: deque[Future[T]] = deque()
    for batch in batches:
        pending.append(worker_pool().submit(make, batch))
        if len(pending) > _AHEAD:
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


_AHEAD = 2


def _file_rows(batch: pa.RecordBatch) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = batch.select(_FILE_COLUMNS).to_pylist()
    for row in rows:
        row["partition_values"] = dict(row["partition_values"] or [])
    return rows


def _stamps(ms: pa.Array) -> pa.Array:
    """:func:`_ts` of each value, formatted by Arrow where every value is in its range.

    Constants are Arrow scalars (:mod:`deltalog.arrow.values`): a Python value handed to a
    kernel would make pyarrow import pandas, a fifth of the command's time on a big table.
    """
    in_range = pc.and_(pc.greater_equal(ms, av.int64(0)), pc.less_equal(ms, av.int64(_MAX_MS)))
    if len(ms) and pc.all(in_range).as_py():
        # Arrow's text form of a timestamp is _ts's without the zone: 2023-11-14 22:13:20.123
        # (a zone-aware cast would give the Z too, but looks the zone up row by row: 20x slower).
        text = ms.cast(pa.timestamp("ms")).cast(pa.string())
        joined = pc.binary_join_element_wise(text, av.string("Z"), av.string(""))
        return pc.fill_null(joined, av.string("-"))
    return pa.array([_ts(m) for m in ms.to_pylist()], pa.string())


_GROUP = 1000
_MAX_GROUPED = 10**12  # four groups of digits: enough for any file size in practice


def _sizes(sizes: pa.Array) -> pa.Array:
    """``f"{n:>12,}"`` of each size, built by Arrow kernels when every size is in range."""
    values = sizes.cast(pa.int64())
    if values.null_count or (
        len(values)
        and not pc.all(
            pc.and_(pc.greater_equal(values, av.int64(0)), pc.less(values, av.int64(_MAX_GROUPED)))
        ).as_py()
    ):
        return pa.array([f"{n:>12,}" for n in sizes.to_pylist()], pa.string())
    group = av.int64(_GROUP)
    groups = []  # least significant first: n % 1000, n // 1000 % 1000, ...
    rest = values
    for _ in range(4):
        groups.append(pc.subtract(rest, pc.multiply(pc.divide(rest, group), group)))
        rest = pc.divide(rest, group)
    plain = [g.cast(pa.string()) for g in groups]
    padded = [pc.utf8_lpad(t, width=3, padding="0") for t in plain]
    text = plain[0]
    for k in range(1, 4):  # with k+1 groups: the top one unpadded, the others padded
        joined = pc.binary_join_element_wise(plain[k], *reversed(padded[:k]), av.string(","))
        text = pc.if_else(pc.greater_equal(values, av.int64(_GROUP**k)), joined, text)
    return pc.utf8_lpad(text, width=12, padding=" ")


def _line_array(batch: pa.RecordBatch) -> pa.Array:
    """``files``'s text line of each row (newline included), built column by column."""
    stamps = _stamps(batch.column("modification_time"))
    pv = batch.column("partition_values")
    # A slice's offsets index the whole child arrays: pair them with the unsliced keys/items.
    pairs = pc.binary_join_element_wise(
        pv.keys, pc.fill_null(pv.items, av.string("None")), av.string("=")
    )
    parts = pc.binary_join(pa.ListArray.from_arrays(pv.offsets, pairs), av.string(","))
    return pc.binary_join_element_wise(
        _sizes(batch.column("size")),
        stamps,
        batch.column("path"),
        pc.binary_join_element_wise(
            pc.fill_null(parts, av.string("")), av.string("\n"), av.string("")
        ),
        av.string("  "),
    )


def _joined(lines: pa.Array) -> pa.Buffer:
    """The lines as one buffer (one copy, no Python object per line)."""
    if not len(lines):
        return pa.py_buffer(b"")
    whole = pc.binary_join(
        pa.ListArray.from_arrays(av.int32s([0, len(lines)]), lines), av.string("")
    )
    scalar = whole[0]
    assert isinstance(scalar, pa.StringScalar)
    buffer = scalar.as_buffer()
    return buffer if buffer is not None else pa.py_buffer(b"")


def _utf8(stream: Any) -> bool:
    """Whether ``stream`` encodes text as UTF-8 (then its bytes may be written directly)."""
    encoding = getattr(stream, "encoding", None)
    try:
        return isinstance(encoding, str) and codecs.lookup(encoding).name == "utf-8"
    except LookupError:
        return False


def _file_lines(batch: pa.RecordBatch) -> str:
    """``files``'s text lines of a batch."""
    return _joined(_line_array(batch)).to_pybytes().decode() if batch.num_rows else ""


def cmd_describe(args: argparse.Namespace) -> None:
    """``deltalog describe``."""
    doc = _describe(_open(args))
    if args.json:
        _emit(doc)
    else:
        _print_describe(doc)


def cmd_files(args: argparse.Namespace) -> None:
    """``deltalog files``: streamed in batches (text mode never reads statistics)."""
    table = _open(args)
    out = sys.stdout
    if args.json:
        head = orjson.dumps({"table": table.uri, "version": table.version()})[:-1]
        out.write(head.decode() + ',"files":[')
        sep = "\n"
        for batch in _batches(table.files()):
            for row in _file_rows(batch):
                out.write(sep + orjson.dumps(row).decode())
                sep = ",\n"
        out.write("\n]}\n")
        return
    files = table.files(with_stats=False)
    binary = getattr(out, "buffer", None) if _utf8(out) else None
    batches = (b for b in _batches(files) if b.num_rows)
    if binary is None:
        for text in _ahead(_file_lines, batches):
            out.write(text)
    else:
        for buffer in _ahead(lambda b: _joined(_line_array(b)), batches):
            out.flush()
            binary.write(buffer)
    out.write(f"{files.num_rows} files at version {table.version()}\n")


def cmd_history(args: argparse.Namespace) -> None:
    """``deltalog history``."""
    entries = table_history(args.table, _options(args.option or []), args.limit)
    if args.json:
        _emit({"table": args.table, "history": entries})
        return
    for e in entries:
        params = e.get("operationParameters") or {}
        shown = ", ".join(f"{k}={v}" for k, v in params.items() if v is not None)
        print(
            f"{e['version']:>6}  {_ts(e.get('timestamp'))}  {e.get('operation', '-'):<14} {shown}"
        )


def cmd_checkpoint(args: argparse.Namespace) -> None:
    """``deltalog checkpoint``."""
    table = _open(args)
    last = table.checkpoint()
    doc = {
        "table": table.uri,
        "version": last.version,
        "size": last.size,
        "sizeInBytes": last.size_in_bytes,
        "numOfAddFiles": last.num_of_add_files,
    }
    if args.json:
        _emit(doc)
    else:
        print(
            f"checkpoint of version {last.version}: {last.num_of_add_files} files, "
            f"{last.size} actions, {last.size_in_bytes:,} bytes"
        )


#: Findings of one code printed in text mode (``--json`` has them all).
_SHOWN_PER_CODE = 20


def _print_check(report: CheckReport) -> None:
    c = report.checked
    print(
        f"checked {report.table} up to version {report.version}: {c.get('commits', 0)} commits, "
        f"{c.get('checkpoints', 0)} checkpoints, {c.get('live_files', 0)} live files"
    )
    shown: dict[str, int] = {}
    for f in report.findings:
        shown[f.code] = shown.get(f.code, 0) + 1
        if shown[f.code] > _SHOWN_PER_CODE:
            continue
        version = "-" if f.version is None else f"v{f.version}"
        print(f"{f.severity.upper():<8} {version:>7}  {f.code}: {f.message}")
    for code, n in shown.items():
        if n > _SHOWN_PER_CODE:
            print(f"... and {n - _SHOWN_PER_CODE} more {code} (--json lists every finding)")
    s = report.summary()
    print(f"{s['error']} errors, {s['warning']} warnings, {s['info']} infos")


class _CheckProgress:
    """``check``'s progress on stderr (a terminal), from the first second on.

    A daemon thread redraws it twice a second with the elapsed time, so a long step still
    shows that the check is alive.
    """

    def __init__(self) -> None:
        self._start = time.monotonic()
        self._state = "starting"
        self._done = threading.Event()
        self._shown = False
        self._thread = threading.Thread(target=self._draw, name="deltalog-progress", daemon=True)
        self._thread.start()

    def __call__(self, step: str, done: int, total: int) -> None:
        self._state = f"{done:,} of {total:,} {step}"

    def _draw(self) -> None:
        if self._done.wait(1.0):
            return
        while True:
            elapsed = time.monotonic() - self._start
            sys.stderr.write(f"\r\033[Kchecking: {self._state} ({elapsed:.0f} s)")
            sys.stderr.flush()
            self._shown = True
            if self._done.wait(0.5):
                return

    def close(self) -> None:
        """Stop drawing and clear the progress line (if one was shown)."""
        self._done.set()
        self._thread.join()
        if self._shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def cmd_check(args: argparse.Namespace) -> int:
    """``deltalog check``."""
    progress = _CheckProgress() if not args.json and sys.stderr.isatty() else None
    try:
        report = check_table(
            args.table,
            _options(args.option or []),
            data_files=not args.no_data_files,
            progress=progress,
        )
    finally:
        if progress is not None:
            progress.close()
    if args.json:
        _emit(report.to_json())
    else:
        _print_check(report)
    return report.exit_code(args.fail_on)


#: Files listed by a text-mode vacuum (``--json`` has them all).
_SHOWN_FILES = 1000


def _stderr_progress(done: int, total: int) -> None:
    sys.stderr.write(f"\rdeleted {done:,} of {total:,} files")
    if done >= total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def cmd_vacuum(args: argparse.Namespace) -> None:
    """``deltalog vacuum``: a dry run unless ``--yes``."""
    table = _open(args)
    progress = _stderr_progress if (args.yes and sys.stderr.isatty() and not args.json) else None
    result = table.vacuum(
        args.retain,
        dry_run=not args.yes,
        mode="lite" if args.lite else "full",
        enforce_retention_duration=not args.no_retention_check,
        progress=progress,
    )
    if args.json:
        _emit({"table": table.uri, **result.to_json()})
        return
    for location in result.files[:_SHOWN_FILES]:
        print(location)
    if result.num_files > _SHOWN_FILES:
        print(f"... and {result.num_files - _SHOWN_FILES} more (--json lists every file)")
    hours = result.retention_ms / 3_600_000
    what = "would delete" if result.dry_run else "deleted"
    print(
        f"{result.mode} vacuum of {table.uri} at version {result.version} {what} "
        f"{result.num_files:,} files ({result.size_in_bytes:,} bytes) older than {hours:g} hours"
        f" (before {_ts(result.delete_before_ms)}), {len(result.log_temp_files)} log temp files"
    )
    if result.dry_run:
        print("dry run: nothing was deleted; run again with --yes to delete")
    else:
        print(
            f"recorded as versions {result.start_version} (VACUUM START) and "
            f"{result.end_version} (VACUUM END)"
        )


def _emit(doc: Any) -> None:
    sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(prog="deltalog", description="Inspect Delta tables.")
    sub = parser.add_subparsers(dest="command", required=True)
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument(
        "-o",
        "--option",
        action="append",
        metavar="KEY=VALUE",
        help="storage option, e.g. -o s3.commit_protocol=conditional-put (repeatable)",
    )

    describe = sub.add_parser(
        "describe", parents=[store], help="version, protocol, schema and size of a table"
    )
    describe.add_argument("table")
    describe.add_argument("--version", type=int)
    describe.add_argument("--json", action="store_true")
    describe.set_defaults(func=cmd_describe)

    files = sub.add_parser("files", parents=[store], help="live data files of a table")
    files.add_argument("table")
    files.add_argument("--version", type=int)
    files.add_argument("--json", action="store_true")
    files.set_defaults(func=cmd_files)

    history = sub.add_parser("history", parents=[store], help="commits, newest first")
    history.add_argument("table")
    history.add_argument("--limit", type=int)
    history.add_argument("--json", action="store_true")
    history.set_defaults(func=cmd_history)

    check = sub.add_parser(
        "check",
        parents=[store],
        help="validate the log, checkpoints and data files; exit 3 on findings",
        description="Validate a table: contiguous versions, valid commits, checkpoints equal to "
        "replay, _last_checkpoint, data files present with their sizes, stats, features, "
        "paths. Exit status: 0 clean, 3 findings at or above --fail-on, 2 cannot check.",
    )
    check.add_argument("table")
    check.add_argument("--json", action="store_true")
    check.add_argument(
        "--fail-on",
        choices=["error", "warning", "info"],
        default="error",
        help="lowest severity that makes the exit status 3 (default: error)",
    )
    check.add_argument(
        "--no-data-files",
        action="store_true",
        help="skip the data files (existence, sizes, orphans): check the log only",
    )
    check.set_defaults(func=cmd_check)

    vacuum = sub.add_parser(
        "vacuum",
        parents=[store],
        help="delete data files the table no longer needs (dry run unless --yes)",
        description="Delete data files that the latest version does not reference and that "
        "are older than the retention (default: the table's delta.deletedFileRetentionDuration, "
        "one week unless set). Without --yes this is a dry run that lists what would go. "
        "A real run records VACUUM START and VACUUM END commits.",
    )
    vacuum.add_argument("table")
    vacuum.add_argument(
        "--retain", type=float, metavar="HOURS", help="retention in hours (RETAIN n HOURS)"
    )
    vacuum.add_argument(
        "--yes",
        "--no-dry-run",
        dest="yes",
        action="store_true",
        help="really delete (default: dry run)",
    )
    vacuum.add_argument(
        "--lite",
        action="store_true",
        help="read removed files from the log instead of listing the table directory",
    )
    vacuum.add_argument(
        "--no-retention-check",
        action="store_true",
        help="allow a retention shorter than the table's (only when nothing else uses it)",
    )
    vacuum.add_argument("--json", action="store_true")
    vacuum.set_defaults(func=cmd_vacuum)

    checkpoint = sub.add_parser(
        "checkpoint", parents=[store], help="write a checkpoint of the latest version"
    )
    checkpoint.add_argument("table")
    checkpoint.add_argument("--json", action="store_true")
    checkpoint.set_defaults(func=cmd_checkpoint)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``deltalog`` console script."""
    args = build_parser().parse_args(argv)
    try:
        _refuse_unused_options(args)
        status = args.func(args)
    except DeltaLogError as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"deltalog: error: {type(exc).__name__}: {message}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return 0
    return status if isinstance(status, int) else 0


if __name__ == "__main__":
    sys.exit(main())
