"""Writing the log: transactions, conflict checks, the commit loop, staged files, table changes.

Writing data: the data writer (:mod:`~deltalog.write.data_writer`: Arrow batches in, Parquet
files and ``add`` actions out, statistics gathered while writing), the data it takes
(:mod:`~deltalog.write.input_data`), constraints, and the planner of the files a rewrite touches
(:mod:`~deltalog.write.rewrite_plan`), shared by ``deltalog.write_table``, Spark and DML.

May import :mod:`deltalog.log` and below; never :mod:`deltalog.read`, :mod:`deltalog.check`,
maintenance, the table facade or Spark.
"""
