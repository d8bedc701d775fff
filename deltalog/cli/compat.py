"""``deltalog compat``: ask every engine about tables and say which one disagrees on what.

Only argparse is imported here; :mod:`deltalog.compat` is loaded when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ENGINES = ("deltalog", "delta-rs", "delta-spark", "kernel")

DESCRIPTION = (
    "For each table (and, with --versions, each of its versions) ask every engine "
    "available - deltalog, delta-rs, delta-spark (on the installed PySpark line), Delta Kernel "
    "(Java) - for the version, protocol and features, metadata, live files with sizes and "
    "partition values, row count, per-column checksums and history, and say which engine "
    "disagrees on what. Each engine runs in its own process. An engine that is not installed "
    "is skipped with a line saying how to get it (--require makes that a failure); a refusal "
    "listed as a known engine limitation (docs/compat.md) is not a disagreement. Exit status: "
    "0 all agree, 3 a disagreement, a crash, an unlisted refusal or a missing required "
    "engine, 2 a path that is no table or bad arguments."
)


def add_parser(command: Callable[..., argparse.ArgumentParser], sub: Any) -> None:
    """Register ``compat`` on ``sub`` through the CLI's ``_command`` factory."""
    parser = command(
        sub,
        "compat",
        "compare what every engine (deltalog, delta-rs, delta-spark, Kernel) sees of tables",
        DESCRIPTION,
        [],
    )
    parser.add_argument("tables", nargs="+", metavar="TABLE", help="table paths or URIs")
    parser.add_argument(
        "--engine",
        action="append",
        choices=ENGINES,
        help="ask only this engine (repeatable; default: all)",
    )
    parser.add_argument(
        "--require",
        action="append",
        default=[],
        choices=ENGINES,
        metavar="ENGINE",
        help="fail unless this engine runs (repeatable)",
    )
    parser.add_argument(
        "--versions",
        metavar="all|N,M",
        help="also compare older versions: all of them, or the listed ones",
    )
    parser.add_argument(
        "--write-probe",
        action="store_true",
        help="on a copy of each table, each engine appends in turn and every engine reads back",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    parser.add_argument(
        "--observations", action="store_true", help="with --json: every engine's full view"
    )
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    parser.add_argument(
        "--option",
        dest="storage_option",
        action="append",
        metavar="KEY=VALUE",
        help="storage option passed to every engine (repeatable)",
    )
    parser.add_argument(
        "--engine-command",
        action="append",
        default=[],
        metavar="NAME=COMMAND",
        help="an extra engine: a command run with {request} and {output} file names "
        "(see docs/compat.md for the format)",
    )
    parser.set_defaults(func=cmd_compat)


def _versions(text: str | None) -> str | list[int] | None:
    if text is None or text == "all":
        return text
    from deltalog.errors import InvalidInputError

    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InvalidInputError(f"--versions expects 'all' or N,M,...: {text!r}") from None


def cmd_compat(args: argparse.Namespace) -> int:
    """``deltalog compat``; its exit status is the report's."""
    import orjson

    from deltalog.compat import compare
    from deltalog.compat.engines import CommandEngine
    from deltalog.compat.render import to_json

    options: dict[str, str] = {}
    for pair in args.storage_option or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            from deltalog.errors import InvalidInputError

            raise InvalidInputError("--option expects KEY=VALUE (an argument has no '=')")
        options[key.strip()] = value
    engines: list[Any] | None = list(args.engine) if args.engine else None
    if args.engine_command:
        from deltalog.compat.registry import builtin_engines

        engines = (engines or list(builtin_engines())) + [
            CommandEngine.parse(spec) for spec in args.engine_command
        ]
    report = compare(
        args.tables,
        engines=engines,
        require=args.require,
        versions=_versions(args.versions),
        write_probe=args.write_probe,
        storage_options=options,
    )
    if args.junit:
        Path(args.junit).write_text(report.to_junit_xml())
    if args.json:
        doc = to_json(report.engines, report.tables, report.write_probe, args.observations)
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        print(report.render())
    return report.exit_code
