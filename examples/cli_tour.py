"""The table docs/cli.md shows the ``deltalog`` command on, and the commands it runs.

``python examples/cli_tour.py DIR`` builds a small table at ``DIR/events`` (two days, three
appends, then one day replaced) and prints each command of the page with its output,
run from ``DIR`` as a user would. ``tests/cli/test_cli_docs.py`` runs the commands of the page
on this table and compares their output with the page's.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog import DeltaTable
from deltalog.cli import main

#: The commands docs/cli.md shows, run from the directory holding ``events``.
COMMANDS = [
    "deltalog describe events",
    "deltalog files events",
    "deltalog files events --stats",
    "deltalog files events --bytes --version 2",
    "deltalog files events --json --version 1",
    "deltalog history events",
    "deltalog history events --limit 1 --json",
    "deltalog check events",
    "deltalog report events -o report.html",
    "deltalog vacuum events --retain 0 --no-retention-check",
    "deltalog checkpoint events",
    "deltalog package-zip -o deltalog.zip",
]


def _parquet(root: Path, relative: str, ids: list[int], users: list[str | None]) -> str:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()), "user": users}), path)
    return relative


def build(root: Path) -> str:
    """Create the tour's table at ``root/events``; its location."""
    events = root / "events"
    schema = pa.schema([("id", pa.int64()), ("user", pa.string()), ("day", pa.string())])
    table = DeltaTable.create(str(events), schema, partition_by=["day"], name="events")
    table.append_files(
        [_parquet(events, "day=2026-11-20/part-0.parquet", [1, 2, 3], ["ann", "bob", None])]
    )
    table.append_files(
        [_parquet(events, "day=2026-11-21/part-0.parquet", list(range(10, 20)), ["cy"] * 10)]
    )
    table.append_files(
        [_parquet(events, "day=2026-11-21/part-1.parquet", [20, 21], ["dee", "eve"])]
    )
    table.overwrite_files(
        [_parquet(events, "day=2026-11-20/part-2.parquet", [1, 2], ["ann", "bob"])],
        predicate="day = '2026-11-20'",
    )
    return str(events)


def run(command: str) -> tuple[int, str]:
    """Run one ``deltalog ...`` command line in-process; its exit status and stdout."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(shlex.split(command)[1:])
    return status, out.getvalue()


def main_tour(directory: str | None = None) -> None:
    """Build the table in ``directory`` (default: a new temporary one) and show every command."""
    root = Path(directory or tempfile.mkdtemp(prefix="deltalog-tour-"))
    build(root)
    os.chdir(root)
    for command in COMMANDS:
        status, output = run(command)
        print(f"$ {command}\n{output}", end="" if output.endswith("\n") else "\n")
        if status:
            print(f"(exit status {status})")
        print()


if __name__ == "__main__":
    main_tour(sys.argv[1] if len(sys.argv) > 1 else None)
