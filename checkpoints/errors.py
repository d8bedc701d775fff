"""Errors raised by the checkpoint reader and writer.

::

    CheckpointError
    ├── CheckpointFormatError     a checkpoint or _last_checkpoint that cannot be parsed
    └── IncompleteCheckpointError a part or sidecar of a checkpoint is missing
"""

from __future__ import annotations


class CheckpointError(Exception):
    """Root of the checkpoint package's errors."""


class CheckpointFormatError(CheckpointError):
    """A checkpoint file or ``_last_checkpoint`` cannot be parsed."""


class IncompleteCheckpointError(CheckpointError):
    """A checkpoint part or sidecar file is missing."""
