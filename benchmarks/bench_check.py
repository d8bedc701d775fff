"""``deltalog check`` against the length of the retained history (issue 15 item 13).

Usage::

    .venv/bin/python benchmarks/bench_check.py [--commits 2500 5000 10000 20000]
                                               [--interval 10] [--data DIR]

Each table is ``N`` one-file appends (partitioned, with statistics) and a checkpoint every
``--interval`` commits, written directly as log files (``tests/tableutil.write_append_log``,
no data files). The check runs without the data-file listing (``data_files=False``): what is
timed is the log walk, commits and checkpoints. Before the fix every checkpoint row was checked
again at every checkpoint (quadratic); now time should grow linearly with ``N``, apart from
reading each checkpoint once in Arrow.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:  # run from a checkout
        sys.path.insert(0, str(extra))

from tableutil import write_append_log  # noqa: E402

from deltalog.check import check_table  # noqa: E402


def main() -> None:
    """Build each table, check it, print one line per size."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, nargs="+", default=[2500, 5000, 10000, 20000])
    parser.add_argument("--interval", type=int, default=10)
    parser.add_argument("--data", type=Path, default=None, help="keep the tables here")
    args = parser.parse_args()
    base = args.data or Path(tempfile.mkdtemp(prefix="bench_check_"))
    columns = ["commits", "checkpoints", "checkpoint rows", "rows checked one by one"]
    print("| " + " | ".join([*columns, "build s", "check s"]) + " |")
    print("|---:|---:|---:|---:|---:|---:|")
    try:
        for n in args.commits:
            root = base / f"appends-{n}-{args.interval}"
            started = time.perf_counter()
            if not (root / "_delta_log").is_dir():
                write_append_log(root, n, interval=args.interval)
            built = time.perf_counter() - started
            started = time.perf_counter()
            report = check_table(str(root), data_files=False)
            took = time.perf_counter() - started
            assert report.ok, report.findings
            checkpoints = n // args.interval
            rows = args.interval * checkpoints * (checkpoints + 1) // 2
            checked = report.checked["checkpoint_rows_checked"]
            print(f"| {n} | {checkpoints} | {rows} | {checked} | {built:.1f} | {took:.2f} |")
    finally:
        if args.data is None:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
