"""Long-run soak: W writer processes x N commits with checkpoints and log cleanup running.

Usage::

    .venv/bin/python benchmarks/soak.py [--store local|s3-dynamodb|both] [--writers 8]
                                        [--commits 2000] [--rs-commits N]
                                        [--log-retention "interval 1 seconds"]
                                        [--out benchmarks/out/soak-{store}.json]

Not part of CI (minutes to tens of minutes). For every store a fresh table is created with
``delta.checkpointInterval=10`` and a short ``delta.logRetentionDuration``, so the writers'
post-commit maintenance writes checkpoints *and* deletes expired log files while the other
writers keep committing. W spawned writer processes, released together by a
``multiprocessing.Barrier``, each commit N blind appends of one unique ``AddFile`` (every
``--txn-every``-th commit also sets ``txn(soak-w<W>, i)``). Per commit the writer records the
returned version, ``tx.attempts``, the latency and any exception; the writers also count the
checkpoints they wrote and the log files their cleanups deleted (by wrapping the two functions
``deltalog.maintenance`` calls, in the writer processes only).

Afterwards the table is opened fresh and checked: *lost* = commits that returned a version but
whose file is not live (must be 0); no version returned twice; final version = successful
commits (the create is version 0); every ``txn`` at the writer's last successful value;
``deltalog.check.check_table`` finds no error (skipped with a note while that module does not
exist); on the local store delta-rs must see the same version and files.

On the local store the same race is run with delta-rs (``deltalake``) on its own table with
the same properties, side by side. delta-rs is not run on S3 + DynamoDB: delta-rs dropped
compatibility with delta-spark's ``S3DynamoDBLogStore`` (its own locking provider uses another
DynamoDB layout), and S3 without a locking provider is not safe for concurrent writers.
``s3-dynamodb`` runs against moto in server mode on 127.0.0.1 (``tests/servers/harness.py``).

See ``benchmarks/README.md`` ("Soak").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import queue
import resource
import shutil
import statistics
import sys
import threading
import time
import traceback
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import bench_commit as bc  # siblings: percentiles, CPU accounting
import bench_replay as br  # environment, logging; puts the checkout on sys.path

ROOT = br.ROOT
TESTS = ROOT / "tests"
BARRIER_TIMEOUT_S = 600
DEFAULT_RETENTION = "interval 1 seconds"
STATS = '{"numRecords":1}'
TXN_PREFIX = "soak-w"
MONITOR_PERIOD_S = 0.5  # local store: how often the parent samples _delta_log (observation)


# --------------------------------------------------------------------------- writer processes
def _instrument() -> dict[str, Any]:
    """Count this process's checkpoints and cleanups; capture deltalog's warnings.

    ``Maintenance._run`` calls ``write_snapshot_checkpoint`` and ``run_cleanup`` through the
    ``deltalog.maintenance`` module globals, so wrapping those names sees every checkpoint and
    cleanup the writer's table object runs (on its background thread). Nothing else changes.
    """
    import deltalog.maintenance as maintenance

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


def _deltalog_writer(
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


def _delta_rs_writer(
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


# --------------------------------------------------------------------------- helpers
def _proc_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a live process (``/proc/<pid>/stat``), 0 if unknown."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _self_cpu_s() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _dist(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    p = bc._percentile
    return {
        "mean": statistics.fmean(values),
        "p50": p(values, 50),
        "p90": p(values, 90),
        "p99": p(values, 99),
        "p99.9": p(values, 99.9),
        "max": max(values),
    }


def _histogram(values: list[int]) -> dict[str, int]:
    """Counts in power-of-two buckets: 0, 1, 2-3, 4-7, ..."""
    out: Counter[str] = Counter()
    for v in values:
        if v <= 1:
            out[str(v)] += 1
        else:
            lo = 1 << (v.bit_length() - 1)
            out[f"{lo}-{2 * lo - 1}"] += 1
    return dict(sorted(out.items(), key=lambda kv: int(kv[0].split("-")[0])))


def _log_version(name: str) -> int | None:
    head = name[:20]
    return int(head) if len(name) > 20 and head.isdigit() else None


class LogMonitor:
    """Samples a local ``_delta_log`` every ``period`` seconds (observation, not sync).

    Every log file lives at least ``delta.logRetentionDuration`` (1 s), so sampling every 0.5 s
    sees each checkpoint and commit file; this counts delta-rs' checkpoints and cleanup, which
    cannot be instrumented, and cross-checks deltalog's own counts.
    """

    def __init__(self, log_dir: str, period: float = MONITOR_PERIOD_S) -> None:
        self.log_dir = log_dir
        self.period = period
        self.seen: set[str] = set()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-monitor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                self.seen.update(os.listdir(self.log_dir))
                self.samples += 1
            except OSError:
                pass
            if self._stop.wait(self.period):
                return

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.seen.update(os.listdir(self.log_dir))


# --------------------------------------------------------------------------- one race
def run_race(
    engine: str,
    uri: str,
    options: dict[str, str],
    writers: int,
    n: int,
    txn_every: int,
    background: bool,
    timeout_s: float,
    local_log_dir: str | None,
    server_pid: int | None,
) -> dict[str, Any]:
    """Spawn the writers, release them together, collect what they report."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(writers + 1)
    results: Any = ctx.Queue()
    if engine == "deltalog":
        procs = [
            ctx.Process(
                target=_deltalog_writer,
                args=(uri, options, w, n, txn_every, background, barrier, results),
            )
            for w in range(writers)
        ]
    else:
        procs = [
            ctx.Process(target=_delta_rs_writer, args=(uri, w, n, txn_every, barrier, results))
            for w in range(writers)
        ]
    for p in procs:
        p.start()
    monitor = LogMonitor(local_log_dir) if local_log_dir else None
    if monitor:
        monitor.start()
    load_start = _loadavg()
    with contextlib.suppress(threading.BrokenBarrierError):  # a writer crashed: it reports
        barrier.wait(timeout=BARRIER_TIMEOUT_S)
    t0 = time.monotonic()
    busy0, kids0, self0 = bc._system_busy_s(), bc._children_cpu_s(), _self_cpu_s()
    server0 = _proc_cpu_s(server_pid) if server_pid else 0.0
    got: list[dict[str, Any]] = []
    deadline = t0 + timeout_s
    next_note = t0 + 60
    while len(got) < writers:
        try:
            got.append(results.get(timeout=1.0))
        except queue.Empty:
            now = time.monotonic()
            if now > deadline or not any(p.is_alive() for p in procs):
                break
            if now > next_note:
                br._log(f"  ... {now - t0:.0f}s, {len(got)}/{writers} writers done")
                next_note = now + 60
    for p in procs:
        p.join(timeout=60)
        if p.is_alive():
            p.kill()
            p.join()
    wall_end = time.monotonic()
    server_cpu = (_proc_cpu_s(server_pid) - server0) if server_pid else 0.0
    busy = bc._system_busy_s() - busy0
    ours = (bc._children_cpu_s() - kids0) + (_self_cpu_s() - self0) + server_cpu
    if monitor:
        monitor.stop()
    crashes = [w["crash"] for w in got if "crash" in w]
    if crashes or len(got) < writers:
        raise RuntimeError(
            f"{engine}: {writers - len(got)} writer(s) did not report; crashes:\n"
            + "\n".join(crashes)
        )
    got.sort(key=lambda w: w["writer"])
    return {
        "t0": t0,
        "writers": got,
        "loadavg_start": load_start,
        "loadavg_end": _loadavg(),
        "cpu_seconds_benchmark": ours,
        "cpu_seconds_server": server_cpu,
        "other_load_cores": max(busy - ours, 0.0) / max(wall_end - t0, 1e-9),
        "monitor_seen": sorted(monitor.seen) if monitor else None,
        "monitor_samples": monitor.samples if monitor else 0,
    }


# --------------------------------------------------------------------------- summary + checks
def _timeline(t0: float, ends: list[float], lat: list[float], wall: float) -> list[dict[str, Any]]:
    """The run cut into 10 equal time slices: commits/s and latency percentiles in each."""
    if wall <= 0 or not ends:
        return []
    slices: list[list[float]] = [[] for _ in range(10)]
    for end, ms in zip(ends, lat, strict=True):
        k = min(int((end - t0) / wall * 10), 9)
        slices[max(k, 0)].append(ms)
    return [
        {
            "slice": i,
            "commits": len(s),
            "commits_per_s": len(s) / (wall / 10),
            "p50_ms": bc._percentile(s, 50) if s else None,
            "p99_ms": bc._percentile(s, 99) if s else None,
        }
        for i, s in enumerate(slices)
    ]


def summarize(engine: str, race: dict[str, Any], n: int, retention_ms: int) -> dict[str, Any]:
    """Commit counts, failures, retries, latency, throughput from the writers' reports.

    ``retention_ms``: commits that took at least this long are counted: log retention assumes
    that no transaction lives longer than it (a writer whose snapshot is older than the
    retention can find its next version cleaned up and write into it).
    """
    ws = race["writers"]
    t0 = race["t0"]
    wall = max(w["end"] for w in ws) - t0
    commits_wall = max(w["commits_end"] for w in ws) - t0
    lat = [x for w in ws for x in w["latency_ms"]]
    ends = [x for w in ws for x in w["ends"]]
    if engine == "deltalog":
        ok_flags = [v >= 0 for w in ws for v in w["versions"]]
    else:
        ok_flags = [x for w in ws for x in w["ok"]]
    errors: Counter[str] = Counter()
    samples: dict[str, str] = {}
    for w in ws:
        errors.update(w["errors"])
        for k, v in w["error_samples"].items():
            samples.setdefault(k, v)
    successes = sum(ok_flags)
    out: dict[str, Any] = {
        "engine": engine,
        "writers": len(ws),
        "commits_per_writer": n,
        "attempted": len(ws) * n,
        "successes": successes,
        "failures": len(ok_flags) - successes,
        "failures_by_type": dict(errors),
        "failure_samples": samples,
        "wall_s": wall,
        "commits_wall_s": commits_wall,
        "commits_per_s": successes / wall if wall > 0 else None,
        "latency_ms": _dist(lat),
        "latency_ms_successful": _dist([x for x, ok in zip(lat, ok_flags, strict=True) if ok]),
        "commits_slower_than_retention": sum(1 for x in lat if x >= retention_ms),
        "timeline": _timeline(t0, ends, lat, commits_wall),
        "per_writer_s": [w["end"] - w["start"] for w in ws],
        "loadavg_start": race["loadavg_start"],
        "loadavg_end": race["loadavg_end"],
        "other_load_cores": race["other_load_cores"],
        "cpu_seconds_benchmark": race["cpu_seconds_benchmark"],
        "cpu_seconds_server": race["cpu_seconds_server"],
    }
    if engine == "deltalog":
        attempts = [a for w in ws for a in w["attempts"]]
        retries = [max(a - 1, 0) for a in attempts]
        out["retries_total"] = sum(retries)
        out["retries_per_commit"] = {
            "mean": statistics.fmean(retries),
            "p50": bc._percentile(retries, 50),
            "p99": bc._percentile(retries, 99),
            "max": max(retries),
            "histogram": _histogram(retries),
        }
        out["no_ops"] = sum(w["no_ops"] for w in ws)
        cps = [c for w in ws for c in w["checkpoints"]]
        cleanups = [c for w in ws for c in w["cleanups"]]
        deleted = [d for w in ws for d in w["deleted"]]
        cp_ms = [c[2] for c in cps]
        due = (successes // 10) if successes else 0
        out["maintenance"] = {
            "checkpoints_written": len(cps),
            "checkpoints_due": due,
            "checkpoint_ms": _dist(cp_ms),
            "checkpoint_files_max": max((c[3] for c in cps), default=0),
            "checkpoints_per_writer": [len(w["checkpoints"]) for w in ws],
            "cleanup_runs": len(cleanups),
            "cleanup_runs_deleting": sum(1 for c in cleanups if c[1]),
            "cleanup_ms": _dist([c[2] for c in cleanups]),
            "deleted_reported": len(deleted),
            "deleted_unique": len(set(deleted)),
            "deleted_commits": len({d for d in deleted if d.endswith(".json")}),
            "deleted_checkpoints": len({d for d in deleted if ".checkpoint." in d}),
            "first_deletion_s": min((c[0] - t0 for c in cleanups if c[1]), default=None),
            "warnings": dict(sum((Counter(w["warnings"]) for w in ws), Counter())),
            "warning_samples": {k: v for w in ws for k, v in w["warning_samples"].items()},
        }
    if race["monitor_seen"] is not None:
        seen = race["monitor_seen"]
        names = [n for n in seen if _log_version(n) is not None]  # no temp files
        out["monitor"] = {
            "samples": race["monitor_samples"],
            "checkpoints_seen": len({n for n in names if ".checkpoint." in n}),
            "commits_seen": len({n for n in names if n.endswith(".json") and len(n) == 25}),
        }
    return out


def _list_log(uri: str, options: dict[str, str]) -> list[str]:
    from deltalog.storage import TableStorage

    return [s.name for s in TableStorage.open(uri, options).list_log()]


def verify(
    engine: str,
    uri: str,
    options: dict[str, str],
    race: dict[str, Any],
    n: int,
    local_path: str | None,
    txn_every: int,
) -> dict[str, Any]:
    """Open the table fresh and check it against what the writers reported."""
    import deltalog

    ws = race["writers"]
    ok_paths: list[str] = []
    failed_paths: list[str] = []
    returned: Counter[int] = Counter()
    for w in ws:
        flags = [v >= 0 for v in w["versions"]] if engine == "deltalog" else w["ok"]
        for i, good in enumerate(flags):
            (ok_paths if good else failed_paths).append(f"w{w['writer']}/c{i}.parquet")
        if engine == "deltalog":
            returned.update(v for v in w["versions"] if v >= 0)
    t0 = time.perf_counter()
    table = deltalog.DeltaTable(uri, storage_options=options)
    open_s = time.perf_counter() - t0
    final = table.version()
    live = set(table.snapshot.paths().to_pylist())
    lost = [p for p in ok_paths if p not in live]
    landed = [p for p in failed_paths if p in live]
    unknown = sorted(live - set(ok_paths) - set(failed_paths))
    expected_version = len(ok_paths) + len(landed)
    names = _list_log(uri, options)
    commit_versions = sorted(
        v for x in names if x.endswith(".json") and (v := _log_version(x)) is not None
    )
    checkpoint_versions = sorted(
        {v for x in names if ".checkpoint." in x and (v := _log_version(x)) is not None}
    )
    txns = {a: t.version for a, t in table.snapshot.txns.items()}
    want_txns = {
        f"{TXN_PREFIX}{w['writer']}": w["last_txn"] for w in ws if w["last_txn"] is not None
    }
    out: dict[str, Any] = {
        "open_fresh_s": open_s,
        "final_version": final,
        "expected_version": expected_version,
        "live_files": len(live),
        "lost": len(lost),
        "lost_sample": lost[:10],
        "failed_but_landed": len(landed),
        "failed_but_landed_sample": landed[:10],
        "unknown_live_files": len(unknown),
        "txns_ok": all(txns.get(a) == v for a, v in want_txns.items()),
        "txns": {"found": txns, "want": want_txns} if txn_every else {},
        "log_files_remaining": len(names),
        "oldest_commit_remaining": commit_versions[0] if commit_versions else None,
        "commits_remaining": len(commit_versions),
        "checkpoints_remaining": checkpoint_versions,
        "commit_gap_after_oldest": (
            sorted(set(range(commit_versions[0], final + 1)) - set(commit_versions))[:10]
            if commit_versions
            else []
        ),
    }
    problems = []
    if lost:
        problems.append(f"{len(lost)} lost commit(s)")
    if landed:
        problems.append(f"{len(landed)} failed commit(s) landed anyway")
    if unknown:
        problems.append(f"{len(unknown)} unknown live file(s)")
    if final != expected_version:
        problems.append(f"final version {final} != expected {expected_version}")
    if len(live) != expected_version:
        problems.append(f"{len(live)} live files != {expected_version}")
    if out["commit_gap_after_oldest"]:
        problems.append(f"gap in the remaining commits: {out['commit_gap_after_oldest']}")
    if not out["txns_ok"]:
        problems.append("txn versions differ from the writers' last successful ones")
    if engine == "deltalog":
        dup = sorted(v for v, c in returned.items() if c > 1)
        unclaimed = sorted(set(range(1, final + 1)) - set(returned))
        out["versions_returned_twice"] = dup[:20]
        out["versions_returned_twice_count"] = len(dup)
        out["versions_not_returned"] = unclaimed[:20]
        out["versions_not_returned_count"] = len(unclaimed)
        if dup:
            problems.append(f"{len(dup)} version(s) returned to two writers")
        if len(unclaimed) != len(landed):
            problems.append(f"{len(unclaimed)} version(s) no writer was told of")
    if local_path is not None:
        import deltalake

        rs = deltalake.DeltaTable(local_path)
        rs_live = set(rs.get_add_actions().column("path").to_pylist())
        out["delta_rs_view"] = {"version": rs.version(), "files": len(rs_live)}
        if rs.version() != final or rs_live != live:
            problems.append(f"delta-rs sees version {rs.version()} with {len(rs_live)} files")
    try:
        from deltalog.check import check_table
    except ImportError as exc:
        out["check_table"] = {"skipped": f"deltalog.check not available yet ({exc})"}
        br._log("  NOTE: deltalog.check does not exist yet: check_table skipped")
    else:
        report = check_table(uri, options, data_files=False)
        out["check_table"] = {
            "ok": report.ok,
            "clean": report.clean,
            "version": report.version,
            "findings": [
                {
                    "code": f.code,
                    "severity": f.severity,
                    "message": f.message[:300],
                    "version": f.version,
                    "path": f.path,
                }
                for f in report.findings[:50]
            ],
            "n_findings": len(report.findings),
        }
        if not report.ok:
            problems.append(f"check_table: {sorted(report.codes())}")
    out["problems"] = problems
    out["ok"] = not problems
    return out


# --------------------------------------------------------------------------- stores
def table_configuration(retention: str) -> dict[str, str]:
    return {
        "delta.checkpointInterval": "10",
        "delta.logRetentionDuration": retention,
        "delta.enableExpiredLogCleanup": "true",
    }


def create_table(uri: str, options: dict[str, str], retention: str) -> None:
    import pyarrow as pa

    import deltalog

    deltalog.DeltaTable.create(
        uri,
        pa.schema([("id", pa.int64())]),
        configuration=table_configuration(retention),
        storage_options=options,
    )


def one_engine(
    engine: str,
    uri: str,
    options: dict[str, str],
    args: argparse.Namespace,
    n: int,
    local_path: str | None,
    server_pid: int | None,
) -> dict[str, Any]:
    create_table(uri, options, args.log_retention)
    br._log(f"[run] {engine}: {args.writers} writers x {n} commits on {uri}")
    race = run_race(
        engine,
        uri,
        options,
        args.writers,
        n,
        args.txn_every,
        not args.foreground_checkpoints,
        args.timeout,
        os.path.join(local_path, "_delta_log") if local_path else None,
        server_pid,
    )
    from deltalog.config import parse_interval_ms

    summary = summarize(engine, race, n, parse_interval_ms(args.log_retention))
    br._log(
        f"  {engine}: {summary['successes']}/{summary['attempted']} committed in "
        f"{summary['wall_s']:.1f}s, verifying"
    )
    summary["check"] = verify(engine, uri, options, race, n, local_path, args.txn_every)
    if engine == "delta-rs" and "monitor" in summary:
        mon = summary["monitor"]
        summary["maintenance"] = {
            "checkpoints_written": mon["checkpoints_seen"],
            "deleted_commits": mon["commits_seen"] - summary["check"]["commits_remaining"],
            "note": "observed by sampling _delta_log every 0.5 s (delta-rs is not instrumented)",
        }
    return summary


def run_store(store: str, args: argparse.Namespace) -> dict[str, Any]:
    """Everything for one store; returns the report."""
    env = br.environment()
    env["code_sha256"] = bc.code_fingerprint()
    env["loadavg_start"] = _loadavg()
    t_begin = time.perf_counter()
    report: dict[str, Any] = {
        "store": store,
        "config": {
            "writers": args.writers,
            "commits_per_writer": args.commits,
            "delta_rs_commits_per_writer": args.rs_commits or args.commits,
            "table_properties": table_configuration(args.log_retention),
            "txn_every": args.txn_every,
            "background_checkpoints": not args.foreground_checkpoints,
        },
        "environment": env,
    }
    run_id = uuid.uuid4().hex[:8]
    data_dir = (args.data or ROOT / "benchmarks" / "out" / "data").resolve()
    server = None
    paths: list[tuple[str, Path]] = []
    try:
        if store == "local":
            data_dir.mkdir(parents=True, exist_ok=True)
            dl_path = data_dir / f"soak-local-deltalog-{run_id}"
            paths.append(("deltalog", dl_path))
            report["deltalog"] = one_engine(
                "deltalog", str(dl_path), {}, args, args.commits, str(dl_path), None
            )
            if not args.no_delta_rs:
                rs_path = data_dir / f"soak-local-delta-rs-{run_id}"
                paths.append(("delta-rs", rs_path))
                report["delta-rs"] = one_engine(
                    "delta-rs",
                    str(rs_path),
                    {},
                    args,
                    args.rs_commits or args.commits,
                    str(rs_path),
                    None,
                )
        else:
            sys.path.insert(0, str(TESTS))
            import boto3
            from servers import fixtures, harness

            server_logs = data_dir / f"soak-server-logs-{run_id}"
            server = harness.start_moto(server_logs)
            boto3.client(
                "s3",
                endpoint_url=server.endpoint,
                region_name="us-east-1",
                aws_access_key_id="testing",
                aws_secret_access_key="testing",
            ).create_bucket(Bucket=fixtures.BUCKET)
            options = fixtures.s3_options(server.endpoint, "dynamodb")
            report["moto_endpoint"] = server.endpoint
            uri = f"s3://{fixtures.BUCKET}/soak-{run_id}"
            report["deltalog"] = one_engine(
                "deltalog", uri, options, args, args.commits, None, server.process.pid
            )
            report["delta-rs"] = {
                "skipped": (
                    "delta-rs is not run on S3 + DynamoDB: it dropped compatibility with "
                    "delta-spark's S3DynamoDBLogStore (its locking provider uses another "
                    "DynamoDB layout), and S3 without a locking provider is unsafe for "
                    "concurrent writers"
                )
            }
    finally:
        if server is not None:
            server.stop()
            if report.get("deltalog", {}).get("check", {}).get("ok", False) and not args.keep:
                shutil.rmtree(server_logs, ignore_errors=True)  # ~2 MB per minute of requests
            else:
                br._log(f"  moto's log: {server_logs}")
        for engine, p in paths:
            check = report.get(engine, {}).get("check", {})
            checked = "skipped" not in check.get("check_table", {})  # keep it to check later
            judged = engine == "deltalog"  # delta-rs' findings are reported, not judged
            if (check.get("ok", False) or not judged) and checked and not args.keep:
                shutil.rmtree(p, ignore_errors=True)
            elif p.exists():
                br._log(f"  kept {p}")
    dl, rs = report.get("deltalog"), report.get("delta-rs")
    if dl and rs and "latency_ms" in rs:
        report["ratios"] = {
            "note": "deltalog / delta-rs (latency: lower is better for deltalog)",
            **{
                f"latency_{k}": dl["latency_ms"][k] / rs["latency_ms"][k]
                for k in ("p50", "p90", "p99", "max")
            },
            "throughput_deltalog_over_delta_rs": (
                dl["commits_per_s"] / rs["commits_per_s"] if rs["commits_per_s"] else None
            ),
            "same_commit_count": dl["commits_per_writer"] == rs["commits_per_writer"],
        }
    end_code = bc.code_fingerprint()
    if end_code != env["code_sha256"]:
        br._log("WARNING: deltalog/logstores/checkpoints sources changed during the run")
        env["code_sha256"] = f"{env['code_sha256']} -> {end_code} (changed during the run!)"
    env["loadavg_end"] = _loadavg()
    report["elapsed_s"] = time.perf_counter() - t_begin
    return report


# --------------------------------------------------------------------------- printing
def _ms(d: dict[str, float], k: str) -> str:
    return f"{d[k]:.1f}" if k in d else "-"


def print_report(report: dict[str, Any]) -> None:
    cfg = report["config"]
    print()
    print(
        f"Soak on {report['store']}: {cfg['writers']} writers, properties "
        f"{cfg['table_properties']}, txn every {cfg['txn_every']} commits, "
        f"{'background' if cfg['background_checkpoints'] else 'foreground'} checkpoints"
    )
    head = [
        "engine",
        "writers x commits",
        "ok",
        "failed",
        "lost",
        "retries (mean / p99 / max per commit)",
        "latency p50 / p90 / p99 / max ms",
        "commits/s",
        "wall s",
        "checkpoints",
        "log files deleted",
        "oldest version left",
        "final version",
        "check",
        "loadavg start / end",
        "other load",
    ]
    rows = []
    for engine in ("deltalog", "delta-rs"):
        s = report.get(engine)
        if not s or "skipped" in s:
            continue
        c, lat, m = s["check"], s["latency_ms"], s.get("maintenance", {})
        r = s.get("retries_per_commit")
        deleted = (
            f"{m['deleted_unique']} ({m['deleted_commits']} commits, "
            f"{m['deleted_checkpoints']} checkpoints)"
            if "deleted_unique" in m
            else f"~{m.get('deleted_commits', '?')} commits (sampled)"
        )
        rows.append(
            [
                engine,
                f"{s['writers']} x {s['commits_per_writer']}",
                str(s["successes"]),
                str(s["failures"]),
                str(c["lost"]),
                f"{s['retries_total']} ({r['mean']:.2f} / {r['p99']:.0f} / {r['max']})"
                if r
                else "n/a",
                " / ".join(_ms(lat, k) for k in ("p50", "p90", "p99", "max")),
                f"{s['commits_per_s']:.0f}",
                f"{s['wall_s']:.1f}",
                str(m.get("checkpoints_written", "?")),
                deleted,
                str(c["oldest_commit_remaining"]),
                f"{c['final_version']} ({c['expected_version']})",
                "ok" if c["ok"] else "FAILED: " + "; ".join(c["problems"]),
                f"{s['loadavg_start'][0]:.2f} / {s['loadavg_end'][0]:.2f}",
                f"{s['other_load_cores']:.2f}",
            ]
        )
    print(br.text_table(head, rows))
    for engine in ("deltalog", "delta-rs"):
        s = report.get(engine)
        if not s:
            continue
        if "skipped" in s:
            print(f"{engine}: skipped: {s['skipped']}")
            continue
        if s["failures_by_type"]:
            print(f"{engine} failures by type: {s['failures_by_type']}")
            for k, v in s["failure_samples"].items():
                print(f"  {k}: {v[:200]}")
        ct = s["check"].get("check_table", {})
        if "skipped" in ct:
            print(f"{engine} check_table: skipped ({ct['skipped']})")
        elif ct:
            print(
                f"{engine} check_table: ok={ct['ok']} clean={ct['clean']} "
                f"findings={[(f['severity'], f['code']) for f in ct['findings'][:10]]}"
            )
        if s["commits_slower_than_retention"]:
            print(
                f"{engine}: {s['commits_slower_than_retention']} commit(s) took longer than "
                "delta.logRetentionDuration (log retention assumes no transaction does)"
            )
        m = s.get("maintenance", {})
        if m.get("warnings"):
            print(f"{engine} warnings logged by deltalog: {m['warnings']}")
        tl = s["timeline"]
        if tl:
            print(
                f"{engine} commits/s per tenth of the run: "
                + " ".join(f"{x['commits_per_s']:.0f}" for x in tl)
            )
            print(
                f"{engine} p99 ms per tenth of the run:    "
                + " ".join("-" if x["p99_ms"] is None else f"{x['p99_ms']:.0f}" for x in tl)
            )
    ratios = report.get("ratios")
    if ratios:
        fewer = "" if ratios["same_commit_count"] else " (delta-rs ran fewer commits per writer)"
        print(
            f"ratios deltalog / delta-rs: latency p50 {ratios['latency_p50']:.3f}, "
            f"p99 {ratios['latency_p99']:.3f}; throughput "
            f"{ratios['throughput_deltalog_over_delta_rs'] or float('nan'):.1f}x{fewer}"
        )


# --------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--store", choices=["local", "s3-dynamodb", "both"], default="local")
    p.add_argument("--writers", type=int, default=8)
    p.add_argument("--commits", type=int, default=2000, help="commits per writer")
    p.add_argument(
        "--rs-commits", type=int, default=None, help="delta-rs commits per writer (default: same)"
    )
    p.add_argument("--no-delta-rs", action="store_true", help="local: skip the delta-rs race")
    p.add_argument(
        "--log-retention",
        default=DEFAULT_RETENTION,
        help=f"delta.logRetentionDuration of the table (default {DEFAULT_RETENTION!r})",
    )
    p.add_argument(
        "--txn-every", type=int, default=10, help="set txn(app_id, i) every N commits (0: never)"
    )
    p.add_argument(
        "--foreground-checkpoints",
        action="store_true",
        help="DeltaTable(background_checkpoints=False): checkpoints inside commit()",
    )
    p.add_argument(
        "--out",
        default=str(ROOT / "benchmarks" / "out" / "soak-{store}.json"),
        help="report path; {store} is replaced by the store name",
    )
    p.add_argument("--data", type=Path, default=None, help="local tables (default <out>/data)")
    p.add_argument("--keep", action="store_true", help="keep the local tables afterwards")
    p.add_argument("--timeout", type=float, default=3 * 3600, help="seconds per race at most")
    args = p.parse_args(argv)

    stores = ["local", "s3-dynamodb"] if args.store == "both" else [args.store]
    status = 0
    for store in stores:
        report = run_store(store, args)
        print_report(report)
        out = Path(args.out.replace("{store}", store))
        if args.store == "both" and "{store}" not in args.out:
            out = out.with_name(f"{out.stem}-{store}{out.suffix}")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1))
        br._log(f"wrote {out} ({report['elapsed_s']:.0f}s)")
        if not report["deltalog"]["check"]["ok"]:  # delta-rs' findings are reported, not judged
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
