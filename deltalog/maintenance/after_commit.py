"""Work after a commit: a checkpoint every ``delta.checkpointInterval`` versions, then log cleanup.

The commit is durable before any of this starts, and none of it can fail the commit: a
checkpoint only speeds up later reads. By default the work runs on a background thread, so a
writer's next commit does not wait for a Parquet file of the whole table to be written. The
thread is not a daemon: the interpreter (or a multiprocessing child) waits for a checkpoint in
flight before exiting, so one is never cut off half-written. When commits arrive faster than
checkpoints can be written, only the newest due version is checkpointed.
"""

from __future__ import annotations

import logging
import threading

from deltalog.log.clock import now_ms
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.maintenance.checkpointing import write_snapshot_checkpoint
from deltalog.maintenance.retention import run_cleanup
from deltalog.protocol.config import checkpoint_interval, expired_log_cleanup, log_retention_ms
from deltalog.protocol.property_keys import TableProperties

_log = logging.getLogger(__name__)


class Maintenance:
    """Post-commit checkpoints and log cleanup for one table object.

    Args:
        storage: The table's storage.
        background: Run on a background thread (``False``: inside ``after_commit``).
    """

    def __init__(self, storage: TableStorage, *, background: bool) -> None:
        self._storage = storage
        self._background = background
        self._cond = threading.Condition()
        self._pending: Snapshot | None = None
        self._worker: threading.Thread | None = None
        # (retention, time): automatic cleanup cannot delete anything before that time.
        self._cleanup_due = (-1, 0)

    def after_commit(self, snapshot: Snapshot) -> None:
        """Schedule the work ``snapshot`` (just committed) calls for, if any; never raises."""
        try:
            self._schedule(snapshot)
        except Exception:  # the commit has landed; nothing here may turn it into a failure
            _log.warning("cannot schedule a checkpoint of %d", snapshot.version, exc_info=True)

    def _schedule(self, snapshot: Snapshot) -> None:
        if snapshot.version % checkpoint_interval(snapshot.configuration) != 0:
            return
        if not self._background:
            self._run(snapshot)
            return
        with self._cond:
            if self._pending is None or snapshot.version > self._pending.version:
                self._pending = snapshot
            if self._worker is None:
                self._worker = threading.Thread(
                    target=self._drain, name=f"deltalog-checkpoint {self._storage.uri}"
                )
                self._worker.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until scheduled work is done; ``False`` if ``timeout`` (seconds) ran out."""
        with self._cond:
            return self._cond.wait_for(
                lambda: self._pending is None and self._worker is None, timeout
            )

    def _drain(self) -> None:
        while True:
            with self._cond:
                snapshot = self._pending
                self._pending = None
                if snapshot is None:
                    # Cleared under the same lock that found nothing pending: after_commit
                    # either saw this worker with its snapshot still to come, or no worker.
                    self._worker = None
                    self._cond.notify_all()
                    return
            try:
                self._run(snapshot)
            except BaseException:
                with self._cond:
                    self._worker = None
                    self._pending = None
                    self._cond.notify_all()
                raise

    def _run(self, snapshot: Snapshot) -> None:
        try:
            write_snapshot_checkpoint(self._storage, snapshot)
            config = TableProperties(snapshot.configuration)
            retention, now = log_retention_ms(config), now_ms()
            if expired_log_cleanup(config) and (
                retention != self._cleanup_due[0] or now >= self._cleanup_due[1]
            ):
                _, due = run_cleanup(self._storage, config)
                self._cleanup_due = (retention, due)
        except Exception:  # the commit is durable already; a checkpoint is an optimisation
            _log.warning("checkpoint of version %d failed", snapshot.version, exc_info=True)
