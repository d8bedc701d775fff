"""Writing Python data to a table without Spark: ``deltalog.write_table`` and what it stages.

:mod:`deltalog.writer.api` holds ``write_table`` (delta-rs's ``write_deltalake`` names and
modes), :mod:`deltalog.writer.staged` the staged write both it and ``deltalog.spark`` commit, and
:mod:`deltalog.writer.replace_rows` the overwrite of the rows a predicate on data columns
selects. The data files themselves are written by :mod:`deltalog.write.data_writer`.

A floor above the table facade (it opens and creates tables) and below ``spark`` and the CLI.
"""
