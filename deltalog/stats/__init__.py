"""Statistics and predicates: add actions from Parquet footers, typed stats, data skipping.

May import :mod:`deltalog.protocol`, :mod:`deltalog.arrow`, :mod:`deltalog.errors` and the
checkpoint reader's helpers; never the log, writers or maintenance.
"""
