"""Spark integration: write DataFrames into Delta tables, committed by deltalog.

``deltalog.spark.write(df, uri, ...)`` is the drop-in for ``df.write.format("delta")``: Spark's
executors write the Parquet files and their statistics, the driver commits one transaction
through deltalog's log stores. Needs ``pip install 'deltalog[spark]'``.
"""

from deltalog.spark.write import StagedWrite, WriteResult, stage, write

__all__ = ["StagedWrite", "WriteResult", "stage", "write"]
