"""Writing the log: transactions, conflict checks, the commit loop, staged files, table changes.

May import :mod:`deltalog.log` and below; never :mod:`deltalog.read`, :mod:`deltalog.check`,
maintenance, the table facade or Spark.
"""
