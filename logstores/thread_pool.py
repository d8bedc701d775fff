"""Process-wide thread pools, created on first use and replaced in a forked child.

A forked child has none of its parent's threads: submitting to a pool the parent created would
wait forever there. Each pool is therefore forgotten in the child and made again when asked for.
"""

from __future__ import annotations

import os
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

_pools: dict[str, ThreadPoolExecutor] = {}
_lock = threading.Lock()


def shared_pool(name: str, workers: int) -> ThreadPoolExecutor:
    """The process's pool called ``name`` (its threads are named after it).

    Args:
        name: Which pool; the first call with a name decides its size.
        workers: Number of threads, when the pool is created by this call.
    """
    from concurrent.futures import ThreadPoolExecutor  # ~5 ms to import: only when used

    with _lock:
        pool = _pools.get(name)
        if pool is None:
            pool = _pools[name] = ThreadPoolExecutor(workers, thread_name_prefix=name)
        return pool


def _forget() -> None:
    global _pools, _lock
    _pools, _lock = {}, threading.Lock()


os.register_at_fork(after_in_child=_forget)
