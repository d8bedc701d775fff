"""Moved to :mod:`deltalog.writer.staged` (``deltalog.write_table`` stages writes too)."""

from deltalog.writer.staged import StagedWrite, WriteResult

__all__ = ["StagedWrite", "WriteResult"]
