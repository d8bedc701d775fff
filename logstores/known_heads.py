"""What an external-store writer already knows about a table's newest commit, and until when.

Before it claims version N, delta-spark's ``BaseExternalLogStore`` checks that ``N.json`` does
not exist and that commit N-1 is complete (two existence checks and an entry read). A writer
that has just seen commit N-1 complete, with no entry for any later version, knows both
already: N-1 stays complete, and an entry for N created since then is still in the external
store, so the conditional put of N's entry refuses N exactly as the existence check of
``N.json`` would. That holds while such an entry cannot have expired: a complete entry lives
``ttl_seconds`` from its completion, which came after the moment the writer saw N-1 as newest.
:class:`KnownHeads` keeps that moment per table and answers for half the lifetime (the other
half absorbs clock skew between the writers that stamp expiry times).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class KnownHeads:
    """Per table: the newest commit seen complete, and when nothing newer had an entry yet.

    Args:
        ttl_seconds: Lifetime of complete entries in the external store.
        clock: Monotonic seconds (a seam for tests).
    """

    def __init__(self, ttl_seconds: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl_seconds = ttl_seconds
        self._clock = clock
        self._heads: dict[str, tuple[int, float]] = {}
        self._lock = threading.Lock()

    def now(self) -> float:
        """The clock's time, to pass to :meth:`note` later."""
        return self._clock()

    def note(self, table_path: str, version: int, since: float) -> None:
        """Commit ``version`` is complete, and no later version had an entry at ``since``."""
        with self._lock:
            known = self._heads.get(table_path)
            if known is None or (version, since) > known:
                self._heads[table_path] = (version, since)

    def forget(self, table_path: str) -> None:
        """Drop what is known about ``table_path`` (its next commit checks again)."""
        with self._lock:
            self._heads.pop(table_path, None)

    def follows(self, table_path: str, version: int) -> bool:
        """Whether ``version`` is known to come right after a complete commit, with no entry."""
        with self._lock:
            known = self._heads.get(table_path)
        if known is None or known[0] != version - 1:
            return False
        return self._clock() - known[1] < self.ttl_seconds / 2
