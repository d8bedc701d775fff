"""The writer's clock, in the unit the log records times in.

Commit timestamps, in-commit timestamps, retention cutoffs and leases all read the clock here,
so a test can move one function instead of several.
"""

from __future__ import annotations

import time


def now_ms() -> int:
    """Wall-clock time in milliseconds since the epoch, as the log records it."""
    return int(time.time() * 1000)
