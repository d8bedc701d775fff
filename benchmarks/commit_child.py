"""What the commit benchmark's measurement child runs: the committers and the two workloads.

``bench_commit.py --child single|contention ...`` calls :func:`child_main`, which prints one JSON
line for the parent. ``single`` times one writer's commits; ``contention`` starts spawned writer
processes (:func:`_writer_main`), releases them together and checks the log afterwards
(:func:`verify_contention`). See ``bench_commit.py`` and ``benchmarks/README.md``.
"""

from __future__ import annotations

import json
import os
import queue
import random
import sys
import time
import traceback
from collections import Counter
from typing import Any

import gen_replay
from harness import cpu, lat_stats, maxrss_kib, merge_errors

CHILD_TIMEOUT_S = 900
BARRIER_TIMEOUT_S = 300
PARTITION_BY = '["part"]'


# --------------------------------------------------------------------------- helpers
def _log_names(path: str) -> set[str]:
    return set(os.listdir(os.path.join(path, "_delta_log")))


def _checkpoint_versions(names: set[str]) -> list[int]:
    return sorted(int(n[:20]) for n in names if n.endswith(".checkpoint.parquet"))


def _add_columns(start: int, n: int, seed: int) -> dict[str, list[Any]]:
    """``n`` delta-spark-style adds (path, partition, size, mtime, ~150-byte stats)."""
    return gen_replay.add_columns(start, n, random.Random(seed))


def _import_both() -> None:
    """Import both libraries (and what they import) so both engines start equal."""
    import deltalake
    import deltalake.transaction  # noqa: F401
    import orjson  # noqa: F401
    import pyarrow
    import pyarrow.compute
    import pyarrow.parquet  # noqa: F401

    import deltalog
    import deltalog.table  # noqa: F401  (``import deltalog`` alone is lazy)


# --------------------------------------------------------------------------- committers
class Committer:
    """One engine's writer on one table: ``commit(i)`` appends pre-built add number ``i``.

    deltalog: ``tx = table.transaction("WRITE", parameters=...); tx.add(AddFile); tx.commit()``
    (the table object advances to the new version in memory). delta-rs:
    ``dt.create_write_transaction([AddAction], mode="append", ...)`` then
    ``dt.update_incremental()`` (delta-rs does not move the object to the version it wrote).
    """

    def __init__(self, engine: str, path: str) -> None:
        self.engine = engine
        self.path = path
        self.attempts = 0  # deltalog: sum of tx.attempts
        self.commit_s: list[float] = []  # delta-rs: create_write_transaction part of each commit
        self.refresh_s: list[float] = []  # delta-rs: update_incremental part
        self._adds: list[Any] = []
        if engine == "deltalog":
            import deltalog

            self._table = deltalog.DeltaTable(path)
            self._params = {"mode": "Append", "partitionBy": PARTITION_BY}
        elif engine == "delta-rs":
            import deltalake

            self._dt = deltalake.DeltaTable(path)
            self._schema = self._dt.schema()
        else:
            raise ValueError(f"unknown engine {engine!r}")

    def prepare(self, cols: dict[str, list[Any]]) -> None:
        """Build the engine's add actions from generated columns (before anything is timed)."""
        if self.engine == "deltalog":
            from deltalog import AddFile

            self._adds = [
                AddFile(
                    path=p,
                    partition_values={"part": part},
                    size=size,
                    modification_time=mtime,
                    data_change=True,
                    stats=stats,
                )
                for p, part, size, mtime, stats in gen_replay.add_rows(cols)
            ]
        else:
            self._adds = gen_replay.delta_rs_adds(cols)

    @property
    def paths(self) -> list[str]:
        """Paths of the pre-built adds, in commit order."""
        return [a.path for a in self._adds]

    def commit(self, i: int) -> int:
        """Commit add ``i`` as one blind append; returns the retries it took (deltalog)."""
        if self.engine == "deltalog":
            tx = self._table.transaction("WRITE", parameters=self._params)
            try:
                tx.add(self._adds[i])
                tx.commit()
            finally:
                self.attempts += tx.attempts
            return max(tx.attempts - 1, 0)
        t0 = time.perf_counter()
        try:
            self._dt.create_write_transaction(
                [self._adds[i]], mode="append", schema=self._schema, partition_by=["part"]
            )
        finally:
            t1 = time.perf_counter()
            self._dt.update_incremental()  # after a failure too: a real writer re-reads
            self.commit_s.append(t1 - t0)
            self.refresh_s.append(time.perf_counter() - t1)
        return 0

    def finish(self) -> float:
        """Wait for work the commits left running (deltalog's background checkpoints).

        Returns:
            Seconds waited. The caller counts them in the measured time: delta-rs writes its
            checkpoints inside the commit call, so both engines pay for theirs.
        """
        t0 = time.perf_counter()
        if self.engine == "deltalog":
            wait = getattr(self._table, "wait_for_checkpoints", None)
            if wait is not None:
                wait()
        return time.perf_counter() - t0

    def state(self) -> tuple[int, int]:
        """(version, live files) of the writer's table object (not timed)."""
        if self.engine == "deltalog":
            return self._table.version(), self._table.snapshot.num_files
        return self._dt.version(), self._dt.get_add_actions().num_rows


# --------------------------------------------------------------------------- child: single
def _start_profile() -> tuple[Any, list[Any]]:
    """A cProfile for this thread, and one for every thread started from now on.

    cProfile only sees the thread that enables it; deltalog writes its checkpoints on a
    background thread, so each new thread enables its own profiler on its first event.
    """
    import cProfile
    import threading

    thread_profiles: list[Any] = []

    def start_in_thread(*_: Any) -> None:
        sys.setprofile(None)
        p = cProfile.Profile()
        thread_profiles.append(p)
        p.enable()

    threading.setprofile(start_in_thread)
    return cProfile.Profile(), thread_profiles


def _save_profile(prof: Any, thread_profiles: list[Any], path: str) -> int:
    """Dump the main thread's profile merged with the other threads' (summed) to ``path``.

    Returns:
        How many other threads were profiled.
    """
    import pstats
    import threading

    threading.setprofile(None)
    stats = pstats.Stats(prof)
    for p in thread_profiles:
        stats.add(p)
    stats.dump_stats(path)
    return len(thread_profiles)


def single_child(engine: str, path: str, n: int, profile: str | None) -> dict[str, Any]:
    """Open the table, then time ``n`` commits one by one; prints nothing, returns the result."""
    _import_both()
    before = _log_names(path)
    committer = Committer(engine, path)  # opening the table is not measured
    start_version, start_files = committer.state()
    committer.prepare(_add_columns(start_files, n, gen_replay.SEED + 7))
    latencies: list[float] = []
    prof, thread_profiles = _start_profile() if profile else (None, [])
    cpu0 = cpu()
    t_start = time.perf_counter()
    if prof is not None:
        prof.enable()
    for i in range(n):
        t0 = time.perf_counter()
        committer.commit(i)
        latencies.append(time.perf_counter() - t0)
    drain = committer.finish()
    if prof is not None:
        prof.disable()
    seconds = time.perf_counter() - t_start
    cpu1 = cpu()
    profiled_threads = _save_profile(prof, thread_profiles, profile) if prof and profile else 0
    end_version, end_files = committer.state()
    after = _log_names(path)
    new_cps = _checkpoint_versions(after - before)
    first_version = start_version + 1
    cp_latency = [latencies[v - first_version] for v in new_cps if 0 <= v - first_version < n]
    out: dict[str, Any] = {
        "engine": engine,
        "start_version": start_version,
        "start_files": start_files,
        "end_version": end_version,
        "end_files": end_files,
        "commits": n,
        "seconds": seconds,
        "drain_seconds": drain,
        "cpu_seconds": (cpu1[0] - cpu0[0]) + (cpu1[1] - cpu0[1]),
        "sys_seconds": cpu1[1] - cpu0[1],
        "latencies_ms": [x * 1000 for x in latencies],
        "checkpoints_written": new_cps,
        "checkpoint_commit_ms": [x * 1000 for x in cp_latency],
        "log_files_deleted": len(before - after),
        "rss_peak_kib": maxrss_kib(),
        "profiled_threads": profiled_threads,
    }
    if engine == "deltalog":
        out["attempts"] = committer.attempts
    else:
        out["commit_ms"] = [x * 1000 for x in committer.commit_s]
        out["refresh_ms"] = [x * 1000 for x in committer.refresh_s]
    return out


# --------------------------------------------------------------------------- child: contention
def _writer_main(
    engine: str, path: str, writer: int, n: int, barrier: Any, results: Any
) -> None:  # runs in a spawned process
    try:
        _import_both()
        cols = _add_columns(writer * 1_000_000, n, gen_replay.SEED + 1000 + writer)
        # distinct, recognisable paths per writer
        cols["path"] = [p.replace("part-", f"part-w{writer:02d}-", 1) for p in cols["path"]]
        committer = Committer(engine, path)
        committer.prepare(cols)
        paths = committer.paths
        ok: list[str] = []
        failed: list[str] = []
        retries = 0
        errors: Counter[str] = Counter()
        samples: dict[str, str] = {}
        latencies: list[float] = []
        barrier.wait(timeout=BARRIER_TIMEOUT_S)
        t_start = time.monotonic()
        for i in range(n):
            t0 = time.perf_counter()
            try:
                retries += committer.commit(i)
                ok.append(paths[i])
            except Exception as exc:  # a failed commit is a result, not a crash
                failed.append(paths[i])
                key = type(exc).__name__
                errors[key] += 1
                samples.setdefault(key, str(exc)[:400])
            latencies.append(time.perf_counter() - t0)
        committer.finish()  # background checkpoints count in the wall time
        t_end = time.monotonic()
        if engine == "deltalog":
            retries = committer.attempts - n
        results.put(
            {
                "writer": writer,
                "ok": ok,
                "failed": failed,
                "retries": retries,
                "errors": dict(errors),
                "error_samples": samples,
                "latencies_ms": [x * 1000 for x in latencies],
                "start": t_start,
                "end": t_end,
            }
        )
    except BaseException:
        results.put({"writer": writer, "crash": traceback.format_exc()[-4000:]})
        raise


def _read_log(path: str) -> dict[str, Any]:
    """Every commit file of the table: versions present and the add paths per commit."""
    import orjson

    log_dir = os.path.join(path, "_delta_log")
    versions = sorted(
        int(n[:20]) for n in os.listdir(log_dir) if n.endswith(".json") and len(n) == 25
    )
    adds: Counter[str] = Counter()
    commits_with_adds = 0
    for v in versions:
        with open(os.path.join(log_dir, f"{v:020d}.json"), "rb") as fh:
            found = False
            for line in fh:
                if line.strip():
                    action = orjson.loads(line)
                    if "add" in action:
                        adds[action["add"]["path"]] += 1
                        found = True
            commits_with_adds += found
    return {"versions": versions, "adds": adds, "commits_with_adds": commits_with_adds}


def verify_contention(path: str, writers: list[dict[str, Any]]) -> dict[str, Any]:
    """Check the table after the race against what the writers reported.

    Every commit reported successful must be in the log exactly once and live in both engines'
    view; the log must have no gap and end at version = number of successful commits (the table
    starts at version 0). A commit reported failed whose file is in the log anyway is counted
    as ``failed_but_landed`` and fails the check too (its writer would retry it: a duplicate).
    """
    import deltalake

    import deltalog

    ok = [p for w in writers for p in w["ok"]]
    failed = [p for w in writers for p in w["failed"]]
    log = _read_log(path)
    versions = log["versions"]
    adds: Counter[str] = log["adds"]
    head = versions[-1] if versions else -1
    gaps = sorted(set(range(head + 1)) - set(versions))
    lost = [p for p in ok if adds[p] == 0]
    duplicated = [p for p, c in adds.items() if c > 1]
    failed_landed = [p for p in failed if adds[p] > 0]
    dl = deltalog.DeltaTable(path)
    dl_live = set(dl.snapshot.paths().to_pylist())
    rs = deltalake.DeltaTable(path)
    rs_live = set(rs.get_add_actions().column("path").to_pylist())
    want_live = set(ok) | set(failed_landed)
    result = {
        "expected_version": len(ok) + len(failed_landed),
        "final_version": head,
        "gaps": gaps[:10],
        "commits_with_adds": log["commits_with_adds"],
        "lost": len(lost),
        "lost_sample": lost[:5],
        "duplicated": len(duplicated),
        "failed_but_landed": len(failed_landed),
        "deltalog_view": [dl.version(), len(dl_live), dl_live == want_live],
        "delta_rs_view": [rs.version(), len(rs_live), rs_live == want_live],
    }
    result["ok"] = (
        head == result["expected_version"]
        and not gaps
        and not lost
        and not duplicated
        and not failed_landed
        and log["commits_with_adds"] == len(want_live)
        and dl.version() == head
        and rs.version() == head
        and dl_live == want_live
        and rs_live == want_live
    )
    return result


def contention_child(engine: str, path: str, n_writers: int, n: int) -> dict[str, Any]:
    """Start ``n_writers`` spawned writers, release them together, time until the last ends."""
    import multiprocessing as mp

    _import_both()
    before = _log_names(path)
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(n_writers + 1)
    results: Any = ctx.Queue()
    procs = [
        ctx.Process(target=_writer_main, args=(engine, path, w, n, barrier, results))
        for w in range(n_writers)
    ]
    for p in procs:
        p.start()
    barrier.wait(timeout=BARRIER_TIMEOUT_S)
    t0 = time.monotonic()
    got: list[dict[str, Any]] = []
    deadline = t0 + CHILD_TIMEOUT_S - 60
    while len(got) < n_writers:
        try:
            got.append(results.get(timeout=1.0))
        except queue.Empty:
            if time.monotonic() > deadline or not any(p.is_alive() for p in procs):
                break
    for p in procs:
        p.join(timeout=30)
        if p.is_alive():
            p.kill()
    crashes = [w["crash"] for w in got if "crash" in w]
    if crashes or len(got) < n_writers:
        raise SystemExit(
            f"{n_writers - len(got)} writer(s) did not report; crashes:\n" + "\n".join(crashes)
        )
    wall = max(w["end"] for w in got) - t0
    n_ok = sum(len(w["ok"]) for w in got)
    n_failed = sum(len(w["failed"]) for w in got)
    errors, samples = merge_errors(got)
    lat = [x for w in got for x in w["latencies_ms"]]
    check = verify_contention(path, got)
    after = _log_names(path)
    return {
        "engine": engine,
        "writers": n_writers,
        "commits_per_writer": n,
        "attempted": n_writers * n,
        "seconds": wall,
        "committed": n_ok,
        "failed": n_failed,
        "commits_per_s": n_ok / wall if wall > 0 else None,
        "retries": sum(w["retries"] for w in got) if engine == "deltalog" else None,
        "errors": dict(errors),
        "error_samples": samples,
        "latency_ms": lat_stats(lat),
        "per_writer_seconds": [w["end"] - w["start"] for w in got],
        "checkpoints_written": len(_checkpoint_versions(after - before)),
        "log_files_deleted": len(before - after),
        "check": check,
    }


def child_main(argv: list[str], profile: str | None) -> None:
    """Entry point of a measurement child; prints one JSON line."""
    kind, engine, path, *rest = argv
    if kind == "single":
        out = single_child(engine, path, int(rest[0]), profile)
    elif kind == "contention":
        out = contention_child(engine, path, int(rest[0]), int(rest[1]))
    else:
        raise SystemExit(f"unknown child kind {kind!r}")
    print(json.dumps(out), flush=True)
