"""Statistics and predicates: add actions from Parquet footers, typed stats, data skipping.

Also the ``stats`` JSON layout every writer shares (:mod:`~deltalog.stats.stats_json`) and
predicates from pyarrow expressions (:mod:`~deltalog.stats.arrow_expression`).

May import :mod:`deltalog.protocol`, :mod:`deltalog.arrow`, :mod:`deltalog.errors` and the
checkpoint reader's helpers; never the log, writers or maintenance.
"""
