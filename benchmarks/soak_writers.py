"""The soak's writer processes: deltalog's (instrumented) and delta-rs', one per spawned process.

Each commits N blind appends of one unique file (every ``txn_every``-th also sets a ``txn``),
waits at the barrier before the first, and puts one report on the results queue: the version
each commit returned (or its failure), ``tx.attempts``, latencies, and for deltalog the
checkpoints and cleanups its post-commit maintenance ran (:func:`_instrument`). See ``soak.py``.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections import Counter
from typing import Any

BARRIER_TIMEOUT_S = 600
STATS = '{"numRecords":1}'
TXN_PREFIX = "soak-w"


def _instrument() -> dict[str, Any]:
    """Count this process's checkpoints and cleanups; capture deltalog's warnings.

    ``Maintenance._run`` calls ``write_snapshot_checkpoint`` and ``run_cleanup`` through the
    ``deltalog.maintenance.after_commit`` module globals, so wrapping those names sees every
    checkpoint and
    cleanup the writer's table object runs (on its background thread). Nothing else changes.
    """
    import deltalog.maintenance.after_commit as maintenance

    rec: dict[str, Any] = {
        "checkpoints": [],  # (version, end monotonic, ms, live files)
        "cleanups": [],  # (end monotonic, files deleted, ms)
        "deleted": [],  # names
        "warnings": Counter(),
        "warning_samples": {},
    }
    write_cp, cleanup = maintenance.write_snapshot_checkpoint, maintenance.run_cleanup

    def counted_checkpoint(storage: Any, snapshot: Any) -> Any:
        t0 = time.perf_counter()
        out = write_cp(storage, snapshot)
        rec["checkpoints"].append(
            (snapshot.version, time.monotonic(), (time.perf_counter() - t0) * 1000,
             snapshot.num_files)
        )  # fmt: skip
        return out

    def counted_cleanup(storage: Any, configuration: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        deleted, due = cleanup(storage, configuration, **kwargs)
        rec["cleanups"].append((time.monotonic(), len(deleted), (time.perf_counter() - t0) * 1000))
        rec["deleted"].extend(deleted)
        return deleted, due

    maintenance.write_snapshot_checkpoint = counted_checkpoint  # type: ignore[assignment]
    maintenance.run_cleanup = counted_cleanup  # type: ignore[assignment]

    class Capture(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            key = f"{record.name}: {record.msg}"
            if record.exc_info and record.exc_info[0] is not None:
                key += f" [{record.exc_info[0].__name__}]"
            rec["warnings"][key] += 1
            rec["warning_samples"].setdefault(key, record.getMessage()[:300])

    logger = logging.getLogger("deltalog")
    logger.addHandler(Capture(level=logging.WARNING))
    logging.getLogger("logstores").addHandler(Capture(level=logging.WARNING))
    return rec


def deltalog_writer(
    uri: str,
    options: dict[str, str],
    writer: int,
    n: int,
    txn_every: int,
    background: bool,
    barrier: Any,
    results: Any,
) -> None:  # runs in a spawned process
    try:
        import deltalog
        from deltalog import AddFile

        rec = _instrument()
        table = deltalog.DeltaTable(uri, storage_options=options, background_checkpoints=background)
        adds = [
            AddFile(
                path=f"w{writer}/c{i}.parquet",
                partition_values={},
                size=1,
                modification_time=0,
                data_change=True,
                stats=STATS,
            )
            for i in range(n)
        ]
        params = {"mode": "Append", "partitionBy": "[]"}
        app_id = f"{TXN_PREFIX}{writer}"
        versions: list[int] = []
        attempts: list[int] = []
        latency: list[float] = []
        ends: list[float] = []
        errors: Counter[str] = Counter()
        samples: dict[str, str] = {}
        no_ops = 0
        last_txn = None
        barrier.wait(timeout=BARRIER_TIMEOUT_S)
        t_start = time.monotonic()
        for i in range(n):
            t0 = time.perf_counter()
            tx = table.transaction("WRITE", parameters=params)
            try:
                tx.add(adds[i])
                with_txn = txn_every > 0 and i % txn_every == 0
                if with_txn:
                    tx.set_transaction(app_id, i)
                version = tx.commit()
                no_ops += bool(tx.no_op)
                if with_txn:
                    last_txn = i
            except Exception as exc:  # a failed commit is a result, not a crash
                version = -1
                key = type(exc).__name__
                errors[key] += 1
                samples.setdefault(key, str(exc)[:400])
                try:  # as a real writer would: start the next one from the newest version
                    table.update()
                except Exception as again:
                    errors[f"update after failure: {type(again).__name__}"] += 1
            latency.append((time.perf_counter() - t0) * 1000)
            ends.append(time.monotonic())
            versions.append(version)
            attempts.append(tx.attempts)
        t_commits = time.monotonic()
        table.wait_for_checkpoints()  # background checkpoints count in the wall time
        t_end = time.monotonic()
        results.put(
            {
                "writer": writer,
                "versions": versions,
                "attempts": attempts,
                "latency_ms": latency,
                "ends": ends,
                "errors": dict(errors),
                "error_samples": samples,
                "no_ops": no_ops,
                "last_txn": last_txn,
                "start": t_start,
                "commits_end": t_commits,
                "end": t_end,
                "checkpoints": rec["checkpoints"],
                "cleanups": rec["cleanups"],
                "deleted": rec["deleted"],
                "warnings": dict(rec["warnings"]),
                "warning_samples": rec["warning_samples"],
            }
        )
    except BaseException:
        results.put({"writer": writer, "crash": traceback.format_exc()[-4000:]})
        raise


def delta_rs_writer(
    uri: str, writer: int, n: int, txn_every: int, barrier: Any, results: Any
) -> None:  # runs in a spawned process
    try:
        import deltalake
        from deltalake import CommitProperties, Transaction
        from deltalake.transaction import AddAction

        dt = deltalake.DeltaTable(uri)
        schema = dt.schema()
        adds = [
            AddAction(
                path=f"w{writer}/c{i}.parquet",
                size=1,
                partition_values={},
                modification_time=0,
                data_change=True,
                stats=STATS,
            )
            for i in range(n)
        ]
        app_id = f"{TXN_PREFIX}{writer}"
        ok: list[bool] = []
        latency: list[float] = []
        ends: list[float] = []
        errors: Counter[str] = Counter()
        samples: dict[str, str] = {}
        last_txn = None
        barrier.wait(timeout=BARRIER_TIMEOUT_S)
        t_start = time.monotonic()
        for i in range(n):
            with_txn = txn_every > 0 and i % txn_every == 0
            props = (
                CommitProperties(app_transactions=[Transaction(app_id, i)]) if with_txn else None
            )
            t0 = time.perf_counter()
            try:
                dt.create_write_transaction(
                    [adds[i]], mode="append", schema=schema, commit_properties=props
                )
                ok.append(True)
                if with_txn:
                    last_txn = i
            except Exception as exc:
                ok.append(False)
                key = type(exc).__name__
                errors[key] += 1
                samples.setdefault(key, str(exc)[:400])
            try:  # delta-rs does not move the object to the version it wrote
                dt.update_incremental()
            except Exception as exc:
                errors[f"update_incremental: {type(exc).__name__}"] += 1
                samples.setdefault(f"update_incremental: {type(exc).__name__}", str(exc)[:400])
            latency.append((time.perf_counter() - t0) * 1000)
            ends.append(time.monotonic())
        t_end = time.monotonic()
        results.put(
            {
                "writer": writer,
                "ok": ok,
                "latency_ms": latency,
                "ends": ends,
                "errors": dict(errors),
                "error_samples": samples,
                "last_txn": last_txn,
                "start": t_start,
                "commits_end": t_end,
                "end": t_end,
            }
        )
    except BaseException:
        results.put({"writer": writer, "crash": traceback.format_exc()[-4000:]})
        raise
