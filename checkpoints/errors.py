"""Errors raised by the checkpoint reader and writer.

::

    CheckpointError
    ├── CheckpointFormatError     a checkpoint or _last_checkpoint that cannot be parsed
    ├── IncompleteCheckpointError a part or sidecar of a checkpoint is missing
    └── LateCheckpointError       a V2 checkpoint's sidecars grew too old before it was published
"""

from __future__ import annotations


class CheckpointError(Exception):
    """Root of the checkpoint package's errors."""


class CheckpointFormatError(CheckpointError):
    """A checkpoint file or ``_last_checkpoint`` cannot be parsed."""


class IncompleteCheckpointError(CheckpointError):
    """A checkpoint part or sidecar file is missing."""


class LateCheckpointError(CheckpointError):
    """A V2 checkpoint's sidecars grew too old while it was written to be sure of them.

    Log cleanup deletes unreferenced sidecars past a certain age, deciding from the
    checkpoints it listed; a checkpoint published after that listing must not reference such
    a sidecar. The writer checks the ages before and after publishing; one that was paused
    too long raises this and never points ``_last_checkpoint`` at the checkpoint.

    Attributes:
        location: The top-level file, when it was published (complete, but not pointed at:
            the caller writes another checkpoint of the version and then deletes it);
            ``None`` when nothing was published.
    """

    def __init__(self, message: str, location: str | None = None) -> None:
        super().__init__(message)
        self.location = location
