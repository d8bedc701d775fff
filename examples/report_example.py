"""Write the report of a small table from Python (docs/report.md shows this script).

Run: ``python examples/report_example.py [DIR]``; the page lands in ``DIR/report.html``.
"""

import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog import DeltaTable
from deltalog.report import build_report, render_html, write_report

root = Path(sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp())
events = root / "events"
table = DeltaTable.create(
    str(events),
    pa.schema([("id", pa.int64()), ("day", pa.string())]),
    partition_by=["day"],
)
for n, day in enumerate(["2026-11-20", "2026-11-21", "2026-11-21"]):
    (events / f"day={day}").mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.table({"id": list(range(n * 100, n * 100 + 50))}), events / f"day={day}/{n}.parquet"
    )
    table.append_files([f"day={day}/{n}.parquet"])

# One call: gather the numbers and write the page.
report = write_report(str(events), root / "report.html")
print(
    f"wrote {root / 'report.html'}: {report.files.num_files} files, {len(report.commits)} commits"
)

# Or in two steps: the model (its numbers; .to_json() for a script), then the page.
report = build_report(str(events), check=False, small_file_size_bytes=1 << 20)
print("small files:", report.files.small_files, "of", report.files.num_files)
print("checkpoint health:", "ok" if report.checkpoints.ok else report.checkpoints.warnings)
page = render_html(report)
assert page.startswith("<!DOCTYPE html>")
