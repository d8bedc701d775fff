"""One small thread pool for log work that releases the GIL: reading commits, parsing them.

Shared by the whole process and created on first use. A process forked after the pool was
used gets a new one: the parent's threads do not exist in the child, and submitting to the
parent's pool there would wait forever.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

#: Threads of the pool: enough to overlap reads with parsing on a small machine.
WORKERS = 4

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def worker_pool() -> ThreadPoolExecutor:
    """The process's pool (see the module docstring)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(WORKERS, thread_name_prefix="deltalog-log")
        return _pool


def _forget() -> None:
    global _pool, _lock
    _pool, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget)
