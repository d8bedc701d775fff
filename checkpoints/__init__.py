"""Parquet checkpoints: read classic, multi-part and V2 checkpoints; write classic and V2 ones.

Installed as ``deltalog.checkpoints``. Knows the checkpoint schema, Arrow and a log store, not
transactions.
"""
