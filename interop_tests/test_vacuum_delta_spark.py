"""delta-spark reads a table after deltalog's VACUUM, and shows its VACUUM START/END commits.

deltalog writes a partitioned table through ``deltalog.spark.write``, replaces one partition
(the replaced files become removes), adds a file no commit names (a dead task's output), then
vacuums with a zero retention (the check overridden). delta-spark must read the same rows,
list the VACUUM commits in ``DESCRIBE HISTORY`` as its own, and its own ``VACUUM ... DRY RUN``
must find nothing left to delete.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from test_delta_spark import _sql_table, sort_rows, spark_frame, spark_history, spark_rows

import deltalog.spark
from deltalog import DeltaTable

DDL = "id long, p string"


def test_delta_spark_reads_the_table_after_deltalog_vacuum(
    delta_spark: Any, tmp_path: Path
) -> None:
    spark = delta_spark
    root = str(tmp_path / "vacuumed")
    rows = [{"id": i, "p": "ab"[i % 2]} for i in range(6)]
    deltalog.spark.write(spark_frame(spark, rows, DDL), root, partition_by=["p"])
    replaced = deltalog.spark.write(
        spark_frame(spark, [{"id": 10, "p": "a"}], DDL),
        root,
        mode="overwrite",
        replace_where="p = 'a'",
    )
    assert replaced.files_removed >= 1
    orphan = os.path.join(root, "p=b", "part-dead-task.parquet")
    with open(orphan, "wb") as f:
        f.write(b"not even parquet")
    # A dead task's file from a minute ago: older than the cutoff (now - 0 h) whatever the
    # filesystem clock's granularity (in one CI run its mtime was not before the cutoff).
    old = time.time() - 60
    os.utime(orphan, (old, old))

    table = DeltaTable(root)
    dry = table.vacuum(0, enforce_retention_duration=False)
    assert any(f.endswith("p=b/part-dead-task.parquet") for f in dry.files), dry.files
    assert len(dry.files) == replaced.files_removed + 1
    done = table.vacuum(0, dry_run=False, enforce_retention_duration=False)
    assert len(done.files) == len(dry.files)
    assert not os.path.exists(orphan)

    live = [{"id": 10, "p": "a"}, *[r for r in rows if r["p"] == "b"]]
    assert spark_rows(spark, root, ("id", "p")) == sort_rows(live, ("id", "p"))
    history = spark_history(spark, root, limit=2)
    assert [h["operation"] for h in history] == ["VACUUM END", "VACUUM START"]
    assert history[0]["operationMetrics"]["numDeletedFiles"] == str(len(done.files))
    assert history[1]["operationMetrics"]["numFilesToDelete"] == str(len(done.files))
    spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "false")
    try:
        left = spark.sql(f"VACUUM {_sql_table(root)} RETAIN 0 HOURS DRY RUN").collect()
    finally:
        spark.conf.set("spark.databricks.delta.retentionDurationCheck.enabled", "true")
    assert left == []
    assert not DeltaTable(root).check().findings
