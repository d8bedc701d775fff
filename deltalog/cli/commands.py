"""The ``deltalog`` command line: parser, entry point and the small commands.

Every subcommand prints a readable report, or with ``--json`` exactly one JSON document on
stdout. Exit status (:data:`EXIT_CODES`): 0 done; 2 bad input, a corrupt table or a storage
failure (one line on stderr naming the error), and bad arguments; 3 ``check`` found problems at
or above ``--fail-on``; 130 interrupted. Anything unexpected is not caught: it is a bug, shows
its traceback and exits with 1.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

import deltalog
import deltalog.cli.text as text
from deltalog.errors import (
    CorruptLogError,
    DeltaLogError,
    InvalidInputError,
    StorageConfigurationError,
)
from deltalog.log.storage import TableStorage
from deltalog.logstores.options import recording_option_reads, redact_uri, safe_option_name
from deltalog.logstores.registry import is_builtin, scheme_of
from deltalog.table import DeltaTable

# Every command is a fresh process: each one imports what only it needs when it runs.
if TYPE_CHECKING:
    from deltalog.check import CheckReport

EXIT_OK = 0
EXIT_BUG = 1
EXIT_ERROR = 2
EXIT_FINDINGS = 3
EXIT_INTERRUPTED = 130
#: Exit status -> meaning (``deltalog --help`` and docs/cli.md list them).
EXIT_CODES: dict[int, str] = {
    EXIT_OK: "done (check: no finding at or above --fail-on)",
    EXIT_BUG: "an unexpected error, with its traceback: a bug in deltalog, please report it",
    EXIT_ERROR: "bad arguments or input, a table that is not there or is corrupt, a storage "
    "failure (one line on stderr: 'deltalog: error: <ErrorName>: <message>')",
    EXIT_FINDINGS: "check found problems at or above --fail-on; compat: engines disagree",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
}


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
    print(f"version:     {doc['version']}  ({text.timestamp(doc['timestamp'])})")
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
    size = doc["sizeInBytes"]
    print(f"files:       {doc['numFiles']}  ({text.human_size(size)}; {size:,} bytes)")
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


def cmd_describe(args: argparse.Namespace) -> None:
    """``deltalog describe``."""
    doc = _describe(_open(args))
    if args.json:
        _emit(doc)
    else:
        _print_describe(doc)


def cmd_files(args: argparse.Namespace) -> None:
    """``deltalog files``: streamed in batches (text mode reads statistics only for --stats)."""
    import deltalog.cli.files as files

    files.run(_open(args), args)


def cmd_history(args: argparse.Namespace) -> None:
    """``deltalog history``."""
    import deltalog.cli.history as history
    from deltalog.log.history import table_history

    entries = table_history(args.table, _options(args.option or []), args.limit)
    if args.json:
        _emit({"table": args.table, "history": entries})
        return
    for line in history.lines(entries):
        print(line)


def cmd_report(args: argparse.Namespace) -> None:
    """``deltalog report``: the table's page (or with --json its numbers)."""
    from deltalog.report import build_report, render_html  # loaded only for this command

    report = build_report(
        args.table,
        _options(args.option or []),
        commits=args.commits,
        small_file_size_bytes=args.small_file_size,
        check=not args.no_check,
        data_files=not args.no_data_files,
    )
    if args.json:
        _emit(report.to_json())
        return
    page = render_html(report)
    if args.output == "-":
        sys.stdout.write(page)
        return
    try:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(page)
    except OSError as exc:
        raise InvalidInputError(f"cannot write the report to {args.output}: {exc}") from exc
    found = ""
    if report.check is not None:
        s = report.check.summary()
        found = f"; check: {s['error']} errors, {s['warning']} warnings"
    print(
        f"wrote {args.output} ({text.human_size(len(page.encode()))}): version "
        f"{report.version}, {report.files.num_files:,} files, {len(report.commits):,} of "
        f"{report.commits_total:,} commits{found}"
    )


def cmd_package_zip(args: argparse.Namespace) -> None:
    """``deltalog package-zip``: the package as a zip for Spark's executors."""
    from deltalog.spark.shipping import package_zip  # needs the spark extra, as shipping does

    path = package_zip(args.output or f"deltalog-{deltalog.__version__}.zip")
    size = path.stat().st_size
    if args.json:
        _emit({"path": str(path), "size": size, "version": deltalog.__version__})
        return
    print(
        f"wrote {path} ({text.human_size(size)}): deltalog {deltalog.__version__} for Spark's "
        f"executors; ship it with spark-submit --py-files {path} (or "
        f"spark.sparkContext.addPyFile({str(path)!r})); the executors' Python needs pyarrow, "
        "orjson and pandas"
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
    from deltalog.check import check_table

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
        f"{result.num_files:,} file{'' if result.num_files == 1 else 's'} "
        f"({result.size_in_bytes:,} bytes) older than {hours:g} hours"
        f" (before {text.timestamp(result.delete_before_ms)}), "
        f"{len(result.log_temp_files)} log temp files"
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


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps each paragraph of a description; keeps indented lines (the exit codes) as written."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for paragraph in text.split("\n\n"):
            if "\n " in paragraph:
                paragraphs.append("\n".join(indent + line for line in paragraph.splitlines()))
            else:
                words = " ".join(paragraph.split())
                paragraphs.append(
                    textwrap.fill(words, width, initial_indent=indent, subsequent_indent=indent)
                )
        return "\n\n".join(paragraphs)


def _epilog() -> str:
    codes = "\n".join(
        textwrap.fill(meaning, 79, initial_indent=f"  {code:<4} ", subsequent_indent=" " * 7)
        for code, meaning in EXIT_CODES.items()
    )
    return f"exit status:\n{codes}\n\nSee docs/cli.md, and deltalog COMMAND --help."


def _table_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "table", help="table location: a path, file://, s3://, gs://, az://, abfs[s]://, ..."
    )


def _json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print one JSON document instead of text"
    )


def _version_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--version", type=int, metavar="N", help="read version N instead of the latest"
    )


def _command(
    sub: Any, name: str, summary: str, description: str, parents: list[argparse.ArgumentParser]
) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        name,
        parents=parents,
        help=summary,
        description=description,
        epilog=_epilog(),
        formatter_class=_HelpFormatter,
    )
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    parser = argparse.ArgumentParser(
        prog="deltalog",
        description="Inspect, check and maintain Delta tables (local paths, s3://, gs://, "
        "az://, ...). Each command reads the table's transaction log through deltalog's log "
        "stores; only vacuum --yes and checkpoint write to it.",
        epilog=_epilog(),
        formatter_class=_HelpFormatter,
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"deltalog {deltalog.__version__}",
        help="print deltalog's version and exit",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument(
        "-o",
        "--option",
        action="append",
        metavar="KEY=VALUE",
        help="storage option, e.g. -o s3.endpoint=http://127.0.0.1:9000 (repeatable); an "
        "option the table's store does not read is an error",
    )

    describe = _command(
        sub,
        "describe",
        "version, protocol, schema and size of a table",
        "Print a table's version and commit time, its protocol (reader and writer versions, "
        "features), id, partition columns, properties, schema, and the number and total size "
        "of its live files.",
        [store],
    )
    _table_argument(describe)
    _version_argument(describe)
    _json_argument(describe)
    describe.set_defaults(func=cmd_describe)

    listing = _command(
        sub,
        "files",
        "live data files: size, time, partition, path (--stats: statistics)",
        "List the live data files of a table as a table: size, modification time (UTC), "
        "partition values and path, then the number of files and their total size. --stats "
        "adds each file's row count and every column's minimum, maximum and null count from "
        "the log's statistics. --json gives every file with its statistics parsed.",
        [store],
    )
    _table_argument(listing)
    _version_argument(listing)
    listing.add_argument(
        "--stats",
        action="store_true",
        help="add the row count and min/max/null count of each column (reads the statistics)",
    )
    listing.add_argument(
        "--bytes", action="store_true", help="exact sizes in bytes instead of KiB, MiB, GiB"
    )
    _json_argument(listing)
    listing.set_defaults(func=cmd_files)

    commits = _command(
        sub,
        "history",
        "commits, newest first, with their operation metrics",
        "List the commits of a table, newest first: version, timestamp (UTC), operation, "
        "files added and removed, rows and bytes written (from the commit's operation "
        "metrics; - where the writer recorded none) and the operation's parameters. Only the "
        "commitInfo line of each listed commit is read.",
        [store],
    )
    _table_argument(commits)
    commits.add_argument(
        "--limit", type=int, metavar="N", help="only the N newest commits (default: all)"
    )
    _json_argument(commits)
    commits.set_defaults(func=cmd_history)

    check = _command(
        sub,
        "check",
        "validate the log, checkpoints and data files; exit 3 on findings",
        "Validate a table: contiguous versions, valid commits, checkpoints equal to "
        "replay, _last_checkpoint, data files present with their sizes, stats, features, "
        "paths. Exit status: 0 clean, 3 findings at or above --fail-on, 2 cannot check.",
        [store],
    )
    _table_argument(check)
    _json_argument(check)
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

    vacuum = _command(
        sub,
        "vacuum",
        "delete data files the table no longer needs (dry run unless --yes)",
        "Delete data files that the latest version does not reference and that "
        "are older than the retention (default: the table's delta.deletedFileRetentionDuration, "
        "one week unless set). Without --yes this is a dry run that lists what would go. "
        "A real run records VACUUM START and VACUUM END commits.",
        [store],
    )
    _table_argument(vacuum)
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
    _json_argument(vacuum)
    vacuum.set_defaults(func=cmd_vacuum)

    page = _command(
        sub,
        "report",
        "one self-contained HTML page: timeline, file sizes, partitions, health, findings",
        "Write one HTML page about the table, self-contained (inline SVG, no script, nothing "
        "fetched): the commit timeline (operation, files and bytes added and removed per "
        "version, engines), the file-size histogram and small files, partition skew, "
        "checkpoint and retention health, deletion vectors, and check's findings. Storage "
        "options are given with --option (-o is the output file here).",
        [],
    )
    _table_argument(page)
    page.add_argument(
        "-o",
        "--output",
        default="report.html",
        metavar="FILE",
        help="where to write the page (default: report.html; - for stdout)",
    )
    page.add_argument(
        "--commits",
        type=int,
        default=100,
        metavar="N",
        help="how many of the newest commits the timeline reads (default: 100)",
    )
    page.add_argument(
        "--small-file-size",
        type=int,
        metavar="BYTES",
        help="files below this size count as small (default: a quarter of the table's "
        "delta.targetFileSize, else 32 MiB)",
    )
    page.add_argument("--no-check", action="store_true", help="leave out check's findings (faster)")
    page.add_argument(
        "--no-data-files",
        action="store_true",
        help="run check on the log only, without listing the data files",
    )
    page.add_argument(
        "--option",
        action="append",
        metavar="KEY=VALUE",
        help="storage option, e.g. --option s3.endpoint=http://127.0.0.1:9000 (repeatable)",
    )
    _json_argument(page)
    page.set_defaults(func=cmd_report)

    shipping = _command(
        sub,
        "package-zip",
        "deltalog as a zip for Spark's executors (--py-files, addPyFile)",
        "Write the installed deltalog package as a zip for Spark's executors, to ship with "
        "spark-submit --py-files deltalog.zip or spark.sparkContext.addPyFile(...): PySpark "
        "puts only .zip, .egg and .jar files on the executors' Python path (not a .whl). The "
        "executors' Python still needs pyarrow, orjson and pandas. Needs the spark extra "
        "(PySpark) on this machine. See docs/cluster.md for the other ways.",
        [],
    )
    shipping.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="where to write the zip (default: deltalog-<version>.zip here)",
    )
    _json_argument(shipping)
    shipping.set_defaults(func=cmd_package_zip)

    checkpoint = _command(
        sub,
        "checkpoint",
        "write a checkpoint of the latest version",
        "Write a checkpoint of the table's latest version (<version>.checkpoint.parquet) and "
        "point _last_checkpoint at it, so readers replay from there instead of from the "
        "first commit. Prints its version, files, actions and size.",
        [store],
    )
    _table_argument(checkpoint)
    _json_argument(checkpoint)
    checkpoint.set_defaults(func=cmd_checkpoint)

    import deltalog.cli.compat as compat  # argparse only; the command loads deltalog.compat

    compat.add_parser(_command, sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``deltalog`` console script; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        _refuse_unused_options(args)
        status = args.func(args)
    except DeltaLogError as exc:
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        print(f"deltalog: error: {type(exc).__name__}: {message}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:
        return EXIT_OK
    except KeyboardInterrupt:
        print("deltalog: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return status if isinstance(status, int) else EXIT_OK
