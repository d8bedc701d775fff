"""deltalog writer processes for the S3 + DynamoDB mixed-engine tests (``spawn`` targets).

:func:`paced_writer` appends like ``test_cloud_concurrency``'s writers (one real one-row Parquet
file per commit, ``x = 1000 * writer + seq`` in partition ``p=<writer>``), but its commit
``seq`` first waits until delta-spark has made ``seq - 1`` commit attempts, so that the engines
overlap whatever their speeds; it reports each attempt on ``progress`` for the other direction.
:func:`killed_after_entry` dies by SIGKILL right after its DynamoDB entry is written, before
the temp file is copied to the commit file.
"""

from __future__ import annotations

import logging
import os
import signal
import time
import traceback
from typing import Any

from test_cloud_concurrency import Commit, Report, _Collect, _commit

from deltalog import DeltaTable
from deltalog.logstores import open_store
from deltalog.logstores.external import ExternalCoordinatedLogStore

BARRIER_TIMEOUT = 900.0
GATE_TIMEOUT = 600.0
CRASH_WRITER = 7


def paced_writer(
    uri: str,
    options: dict[str, str],
    writer: int,
    barrier: Any,
    results: Any,
    rounds: int,
    spark_attempts: Any,
    cond: Any,
    progress: Any,
) -> None:
    """Writer process: wait on ``barrier``, then ``rounds`` appends paced by ``spark_attempts``.

    ``spark_attempts`` (a shared int, guarded by ``cond``) counts delta-spark's finished
    appends; each of ours puts ``writer`` on ``progress``. One :class:`Report` goes on
    ``results``.
    """
    collect = _Collect()
    for name in ("deltalog", "logstores", "checkpoints"):
        logging.getLogger(name).addHandler(collect)
    commits: list[Commit] = []
    failures: list[str] = []
    crashed = None
    done = False
    seconds = 0.0
    try:
        store, root = open_store(uri, options)
        table = DeltaTable(uri, storage_options=options)
        barrier.wait(timeout=BARRIER_TIMEOUT)
        start = time.perf_counter()
        for seq in range(rounds):
            try:
                with cond:
                    if not cond.wait_for(
                        lambda s=seq: spark_attempts.value >= s - 1, timeout=GATE_TIMEOUT
                    ):
                        raise TimeoutError(f"delta-spark made {spark_attempts.value} appends")
                commits.append(_commit(table, store, root, writer, seq))
            except Exception as exc:
                failures.append(f"seq {seq}: {type(exc).__qualname__}: {exc}"[:500])
            finally:
                progress.put(writer)
        seconds = time.perf_counter() - start
        done = table.wait_for_checkpoints(timeout=120)
    except BaseException:  # reported to the parent; aborting releases the others
        barrier.abort()
        crashed = traceback.format_exc()
    results.put(Report(writer, commits, failures, collect.messages, done, seconds, crashed))


def killed_after_entry(uri: str, options: dict[str, str]) -> None:
    """Process: append (writer :data:`CRASH_WRITER`, seq 0); SIGKILL once the entry is written."""

    def fault(self: ExternalCoordinatedLogStore, at: str) -> None:
        if at == "entry_written":
            os.kill(os.getpid(), signal.SIGKILL)

    ExternalCoordinatedLogStore._fault = fault  # type: ignore[method-assign]
    store, root = open_store(uri, options)
    table = DeltaTable(uri, storage_options=options, background_checkpoints=False)
    _commit(table, store, root, CRASH_WRITER, 0)
    os._exit(3)  # not reached when the kill happens
