"""Keeping a table healthy: checkpoints after commits, log and sidecar cleanup, VACUUM.

May import :mod:`deltalog.write`, :mod:`deltalog.log` and below; never the table facade,
Spark or the CLI.
"""
