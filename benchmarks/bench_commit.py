"""Commit throughput benchmark: deltalog against delta-rs (``deltalake``) side by side.

Usage::

    .venv/bin/python benchmarks/bench_commit.py [--quick] [--repeat N] [--commits N]
                                                [--workload single|contention ...]
                                                [--out benchmarks/out] [--data DIR] [--profile]

Two workloads, both blind appends of pre-built add actions (no Parquet is read or written):

* ``single``: one writer commits one add per commit on a table at version ~100 and at version
  ~10,000 (the same master table copied for each engine), so the per-commit latency can be
  compared at both points.
* ``contention``: W writer processes x N commits each on one fresh table, released together by
  a ``multiprocessing`` barrier; afterwards the log is checked (every successful commit exactly
  once, no gaps, final version = number of successful commits).

Every measurement runs in a fresh child process (``bench_commit.py --child ...``) that imports
*both* libraries before anything is timed. The parent keeps the median over the repeats and
prints / writes ``commit.json`` and ``commit.md`` to the out dir (``commit_quick.*`` with
``--quick``). See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bench_replay as br  # the sibling module: table generation and report helpers
import scratch as scratch_dirs

ROOT = br.ROOT
ENGINES = br.ENGINES  # ("deltalog", "delta-rs")
GENERATOR_VERSION = 1  # bump when the generated layout changes: forces regeneration
MARKER = br.MARKER
CHILD_TIMEOUT_S = 900
BARRIER_TIMEOUT_S = 300
SINGLE_TARGET = 10.0  # goal: deltalog commits/s >= 10x delta-rs'
PARTITION_BY = '["part"]'
DEFAULT_PRIME_GIB = 1.0
BUSY_CORES = 0.2  # CPU other processes may use during a run before it is flagged as noisy


# --------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class Config:
    """Sizes of one benchmark run (full or ``--quick``)."""

    quick: bool
    repeat: int  # single-writer runs per engine and table version
    points: tuple[int, ...]  # single writer: head versions of the master tables
    commits: int  # single writer: commits measured per run
    shapes: tuple[tuple[int, int], ...]  # contention: (writers, commits per writer)
    contention_repeat: int
    workloads: tuple[str, ...] = ("single", "contention")


def make_config(
    quick: bool,
    repeat: int | None,
    contention_repeat: int | None,
    commits: int | None,
    workloads: list[str] | None,
) -> Config:
    """The run's sizes: full (the defaults) or ``--quick`` (a smoke test), with overrides."""
    if quick:
        points: tuple[int, ...] = (100, 10_000)
        shapes: tuple[tuple[int, int], ...] = ((8, 25), (10, 10), (8, 20))
        default_commits, default_repeat = 50, 1
    else:
        points = (100, 10_000)
        shapes = ((8, 250), (10, 50), (8, 100))
        default_commits, default_repeat = 200, 3
    return Config(
        quick=quick,
        repeat=repeat or default_repeat,
        points=points,
        commits=commits or default_commits,
        shapes=shapes,
        contention_repeat=contention_repeat or 1,
        workloads=tuple(workloads or ("single", "contention")),
    )


# --------------------------------------------------------------------------- tables
def _master_params(kind: str, version: int) -> dict[str, Any]:
    return {
        "generator": GENERATOR_VERSION,
        "replay_generator": br.GENERATOR_VERSION,
        "kind": kind,
        "version": version,
        "seed": br.SEED,
    }


def _verify_master(table: Path, version: int, n_files: int) -> dict[str, Any]:
    """Both engines must open the master table at ``version`` with ``n_files`` live files."""
    import deltalake

    import deltalog

    dl = deltalog.DeltaTable(str(table))
    rs = deltalake.DeltaTable(str(table))
    found = {
        "deltalog": (dl.version(), dl.snapshot.num_files),
        "delta-rs": (rs.version(), rs.get_add_actions().num_rows),
    }
    for engine, got in found.items():
        if got != (version, n_files):
            raise SystemExit(
                f"{table}: {engine} sees (version, files) {got}, want {version, n_files}"
            )
    return {k: list(v) for k, v in found.items()}


def ensure_master(data_dir: Path, kind: str, version: int) -> Path:
    """Generate (once) the master table a workload copies for every run.

    ``single``: versions 0..``version`` written as JSON commits with one add each (commit 0 also
    holds protocol (1, 2) and metaData: no table properties, partitioned by ``part``), plus a
    classic checkpoint of the head version written by deltalog and ``_last_checkpoint``, so the
    head has ``version + 1`` live files. ``contention``: commit 0 only (empty table).
    """
    name = f"commit_single_v{version}" if kind == "single" else "commit_empty"
    table = data_dir / name
    params = _master_params(kind, version)
    marker = br._read_marker(table)
    if marker is not None and marker.get("params") == params:
        return table
    if table.exists():
        shutil.rmtree(table)
    tmp = table.with_name(table.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    t0 = time.perf_counter()
    br._log(f"[gen] {name}: head version {version}")
    if kind == "single":
        br._gen_json_table(tmp, version + 1, 1)
        import deltalog

        deltalog.DeltaTable(str(tmp)).checkpoint()
        n_files = version + 1
    else:
        br._gen_json_table(tmp, 1, 0)
        n_files = 0
    tmp.rename(table)
    verified = _verify_master(table, version, n_files)
    (table / MARKER).write_text(json.dumps({"params": params, "verified": verified}, indent=1))
    br._log(f"[gen] {name}: done in {time.perf_counter() - t0:.1f}s, verified {verified}")
    return table


def fresh_copy(master: Path, scratch: Path) -> Path:
    """A private copy of ``master`` (marker left out), read once into the page cache.

    The copy is flushed to disk (``os.sync``) before the run: otherwise the first fsyncs of the
    measured commits (deltalog fsyncs, delta-rs does not) would also write back the copy.
    """
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(master, scratch, ignore=shutil.ignore_patterns(MARKER))
    br._warm(scratch)
    os.sync()
    return scratch


def code_fingerprint() -> str:
    """SHA-256 over the library's source files, so edits made during a run are noticed.

    ``git describe --dirty`` stays the same while a dirty tree keeps changing.
    """
    import hashlib

    h = hashlib.sha256()
    for package in ("deltalog", "logstores", "checkpoints"):
        for f in sorted((ROOT / package).rglob("*.py")):
            h.update(str(f.relative_to(ROOT)).encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _log_names(path: str) -> set[str]:
    return set(os.listdir(os.path.join(path, "_delta_log")))


def _checkpoint_versions(names: set[str]) -> list[int]:
    return sorted(int(n[:20]) for n in names if n.endswith(".checkpoint.parquet"))


def _add_columns(start: int, n: int, seed: int) -> dict[str, list[Any]]:
    """``n`` delta-spark-style adds (path, partition, size, mtime, ~150-byte stats)."""
    return br.add_columns(start, n, random.Random(seed))


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
        rows = zip(
            cols["path"],
            cols["partitionValues"],
            cols["size"],
            cols["modificationTime"],
            cols["stats"],
            strict=True,
        )
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
                for p, part, size, mtime, stats in rows
            ]
        else:
            from deltalake.transaction import AddAction

            self._adds = [
                AddAction(
                    path=p,
                    size=size,
                    partition_values={"part": part},
                    modification_time=mtime,
                    data_change=True,
                    stats=stats,
                )
                for p, part, size, mtime, stats in rows
            ]

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
    committer.prepare(_add_columns(start_files, n, br.SEED + 7))
    latencies: list[float] = []
    prof, thread_profiles = _start_profile() if profile else (None, [])
    cpu0 = br._cpu()
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
    cpu1 = br._cpu()
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
        "rss_peak_kib": br._maxrss_kib(),
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
        cols = _add_columns(writer * 1_000_000, n, br.SEED + 1000 + writer)
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
    errors: Counter[str] = Counter()
    samples: dict[str, str] = {}
    for w in got:
        errors.update(w["errors"])
        for k, v in w["error_samples"].items():
            samples.setdefault(k, v)
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
        "latency_ms": _lat_stats(lat),
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


# --------------------------------------------------------------------------- statistics
def _percentile(values: list[float], q: float) -> float:
    """Linear-interpolated percentile (``q`` in 0..100), as numpy's default."""
    xs = sorted(values)
    if not xs:
        return float("nan")
    pos = (len(xs) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def _lat_stats(ms: list[float]) -> dict[str, float]:
    if not ms:
        return {}
    return {
        "mean": statistics.fmean(ms),
        "p50": _percentile(ms, 50),
        "p99": _percentile(ms, 99),
        "max": max(ms),
    }


def summarize_single(run: dict[str, Any]) -> dict[str, Any]:
    """Per-run numbers of a single-writer run: commits/s and latency statistics."""
    lat = run["latencies_ms"]
    cps = set(run["checkpoints_written"])
    first = run["start_version"] + 1
    plain = [x for i, x in enumerate(lat) if first + i not in cps]
    out = {
        "commits_per_s": run["commits"] / run["seconds"],
        **_lat_stats(lat),
        "first_ms": lat[0],
        "plain_mean": statistics.fmean(plain) if plain else float("nan"),
        "checkpoint_mean": (
            statistics.fmean(run["checkpoint_commit_ms"])
            if run["checkpoint_commit_ms"]
            else float("nan")
        ),
        "n_checkpoints": len(run["checkpoints_written"]),
        "cpu_seconds": run["cpu_seconds"],
        "drain_ms": run.get("drain_seconds", 0.0) * 1000,
        "foreign_cores": run.get("foreign_cores", 0.0),
    }
    if "commit_ms" in run:
        out["commit_part_mean"] = statistics.fmean(run["commit_ms"])
        out["refresh_part_mean"] = statistics.fmean(run["refresh_ms"])
    return out


def _median_dicts(ds: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k in ds[0] if all(isinstance(d.get(k), int | float) for d in ds)]
    return {k: statistics.median(d[k] for d in ds) for k in keys}


# --------------------------------------------------------------------------- parent
def run_child(args: list[str], *, prime_gib: float, profile: str | None = None) -> dict[str, Any]:
    """Run one measurement in a fresh process; returns its JSON or ``{"error": ...}``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", *args]
    if profile:
        cmd += ["--profile-out", profile]
    br.prime_memory(prime_gib)
    busy0, ru0, t0 = _system_busy_s(), _children_cpu_s(), time.perf_counter()
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
            cwd=str(ROOT),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {CHILD_TIMEOUT_S}s"}
    if proc.returncode != 0:
        return {"error": proc.stderr[-4000:] or f"exit {proc.returncode}"}
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    # CPU time the whole machine spent outside this child (and its writers) meanwhile, in
    # cores: ~0 on an idle VM; 1 means another process kept one of the 2 cores busy.
    foreign = (_system_busy_s() - busy0) - (_children_cpu_s() - ru0)
    out["foreign_cores"] = max(foreign, 0.0) / (time.perf_counter() - t0)
    return out


def _system_busy_s() -> float:
    """Non-idle CPU seconds of the whole machine since boot (all cores, from /proc/stat)."""
    try:
        with open("/proc/stat") as fh:
            vals = [int(x) for x in fh.readline().split()[1:9]]
    except (OSError, ValueError):
        return 0.0
    busy = sum(vals) - vals[3] - vals[4]  # minus idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def _children_cpu_s() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def measure_single(
    cfg: Config, point: int, master: Path, scratch_root: Path, prime_gib: float
) -> dict[str, Any]:
    """Median over ``cfg.repeat`` runs per engine of ``cfg.commits`` commits from ``point``."""
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in ENGINES}
    for rep in range(cfg.repeat):
        order = ENGINES if rep % 2 == 0 else ENGINES[::-1]
        for engine in order:
            # Copies are deleted with the scratch directory at the end of the run, never just
            # before a measurement: on ext4 the files created soon after deleting thousands
            # cost up to 30x more (their inodes are passed over as recently deleted).
            path = fresh_copy(master, scratch_root / f"single-{point}-{engine}-{rep}")
            res = run_child(["single", engine, str(path), str(cfg.commits)], prime_gib=prime_gib)
            if "error" not in res:
                want = (point + cfg.commits, point + 1 + cfg.commits)
                if (res["end_version"], res["end_files"]) != want:
                    res["error"] = (
                        f"ended at (version, files) {res['end_version'], res['end_files']}"
                    )
                else:
                    res["summary"] = summarize_single(res)
            runs[engine].append(res)
            if "error" in res:
                br._log(f"  single v{point} {engine} run {rep + 1}: ERROR\n{res['error']}")
            else:
                s = res["summary"]
                br._log(
                    f"  single v{point} {engine} run {rep + 1}: "
                    f"{s['commits_per_s']:.0f} commits/s, "
                    f"p50 {s['p50']:.2f} ms, p99 {s['p99']:.2f} ms, "
                    f"checkpoints at {res['checkpoints_written']}"
                )
    out: dict[str, Any] = {"point": point, "commits": cfg.commits, "runs": runs}
    for engine in ENGINES:
        ok = [r["summary"] for r in runs[engine] if "error" not in r]
        out[engine] = _median_dicts(ok) if ok else None
        if ok:
            first_ok = next(r for r in runs[engine] if "error" not in r)
            out[engine]["checkpoint_versions"] = first_ok["checkpoints_written"]
            out[engine]["log_files_deleted"] = first_ok["log_files_deleted"]
    dl, rs = out["deltalog"], out["delta-rs"]
    out["ratio"] = dl["commits_per_s"] / rs["commits_per_s"] if dl and rs else None
    out["pass"] = out["ratio"] is not None and out["ratio"] >= SINGLE_TARGET
    for r in (r for rs_ in runs.values() for r in rs_):  # keep the JSON small: no raw splits
        r.pop("commit_ms", None)
        r.pop("refresh_ms", None)
    return out


def measure_contention(
    cfg: Config, shape: tuple[int, int], master: Path, scratch_root: Path, prime_gib: float
) -> dict[str, Any]:
    """One (or ``cfg.contention_repeat``) race(s) per engine on a fresh empty table."""
    writers, n = shape
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in ENGINES}
    for rep in range(cfg.contention_repeat):
        order = ENGINES if rep % 2 == 0 else ENGINES[::-1]
        for engine in order:
            path = fresh_copy(master, scratch_root / f"contention-{writers}x{n}-{engine}-{rep}")
            res = run_child(  # the copy stays until the end (see measure_single)
                ["contention", engine, str(path), str(writers), str(n)], prime_gib=prime_gib
            )
            runs[engine].append(res)
            if "error" in res:
                br._log(f"  contention {writers}x{n} {engine} run {rep + 1}: ERROR\n{res['error']}")
            else:
                br._log(
                    f"  contention {writers}x{n} {engine} run {rep + 1}: {res['seconds']:.1f}s, "
                    f"{res['committed']}/{res['attempted']} committed, {res['failed']} failed, "
                    f"retries {res['retries']}, check {'ok' if res['check']['ok'] else 'FAILED'}"
                    + (f", errors {res['errors']}" if res["errors"] else "")
                )
    out: dict[str, Any] = {"writers": writers, "commits_per_writer": n, "runs": runs}
    for engine in ENGINES:
        ok = [r for r in runs[engine] if "error" not in r]
        if not ok:
            out[engine] = None
            continue
        med = {
            "seconds": statistics.median(r["seconds"] for r in ok),
            "commits_per_s": statistics.median(r["commits_per_s"] or 0 for r in ok),
            "committed": statistics.median(r["committed"] for r in ok),
            "failed": statistics.median(r["failed"] for r in ok),
            "retries": (
                statistics.median(r["retries"] for r in ok) if engine == "deltalog" else None
            ),
            "p50_ms": statistics.median(r["latency_ms"]["p50"] for r in ok),
            "p99_ms": statistics.median(r["latency_ms"]["p99"] for r in ok),
            "checkpoints_written": statistics.median(r["checkpoints_written"] for r in ok),
            "lost": max(r["check"]["lost"] for r in ok),
            "check_ok": all(r["check"]["ok"] for r in ok),
            "final_version": ok[0]["check"]["final_version"],
            "expected_version": ok[0]["check"]["expected_version"],
            "runs_ok": len(ok),
            "errors": ok[0]["errors"],
            "foreign_cores": statistics.median(r.get("foreign_cores", 0.0) for r in ok),
        }
        out[engine] = med
    return out


def _f(x: float | None, spec: str) -> str:
    return "ERR" if x is None else format(x, spec)


def single_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Headline single-writer table: commits/s and latency per engine and table version."""
    head = [
        "table version",
        "deltalog commits/s",
        "delta-rs commits/s",
        "ratio",
        "deltalog mean / p50 / p99 ms",
        "delta-rs mean / p50 / p99 ms",
        "target",
        "pass/fail",
    ]
    rows = []
    for s in results:
        dl, rs = s["deltalog"] or {}, s["delta-rs"] or {}

        def lat(m: dict[str, Any]) -> str:
            if not m:
                return "ERR"
            return f"{m['mean']:.2f} / {m['p50']:.2f} / {m['p99']:.2f}"

        rows.append(
            [
                f"{s['point']:,} -> {s['point'] + s['commits']:,}",
                _f(dl.get("commits_per_s"), ".0f"),
                _f(rs.get("commits_per_s"), ".0f"),
                _f(s["ratio"], ".1f") + "x" if s["ratio"] is not None else "ERR",
                lat(dl),
                lat(rs),
                f">= {SINGLE_TARGET:.0f}x",
                "PASS" if s["pass"] else "FAIL",
            ]
        )
    return head, rows


def single_detail_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Per-engine single-writer details: checkpoints, their cost, the rest, CPU."""
    head = [
        "table version",
        "engine",
        "max ms",
        "first ms",
        "checkpoints written (versions)",
        "mean ms, checkpoint commits",
        "mean ms, other commits",
        "delta-rs commit + refresh ms",
        "wait for bg checkpoints ms",
        "cpu s (per run)",
        "other load (cores)",
    ]
    rows = []
    for s in results:
        for engine in ENGINES:
            m = s[engine]
            if m is None:
                rows.append([f"{s['point']:,}", engine, "ERR", "", "", "", "", "", "", "", ""])
                continue
            cps = m["checkpoint_versions"]
            cp_text = f"{len(cps)}" + (
                f" ({cps[0]}, {cps[1]}, ...)"
                if len(cps) > 2
                else f" ({', '.join(map(str, cps))})"
                if cps
                else ""
            )
            split = (
                f"{m['commit_part_mean']:.2f} + {m['refresh_part_mean']:.2f}"
                if "commit_part_mean" in m
                else ""
            )
            rows.append(
                [
                    f"{s['point']:,}",
                    engine,
                    f"{m['max']:.1f}",
                    f"{m['first_ms']:.1f}",
                    cp_text,
                    _f(m["checkpoint_mean"], ".2f"),
                    f"{m['plain_mean']:.2f}",
                    split,
                    f"{m['drain_ms']:.1f}" if engine == "deltalog" else "",
                    f"{m['cpu_seconds']:.2f}",
                    f"{m['foreign_cores']:.2f}",
                ]
            )
    return head, rows


def flat_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Latency growth from the smallest to the largest table version, per engine."""
    if len(results) < 2:
        return [], []
    lo, hi = results[0], results[-1]
    head = ["engine", f"mean ms at {lo['point']:,}", f"mean ms at {hi['point']:,}", "growth"]
    head += [f"p50 at {lo['point']:,}", f"p50 at {hi['point']:,}", "growth"]
    rows = []
    for engine in ENGINES:
        a, b = lo[engine], hi[engine]
        if not a or not b:
            rows.append([engine, "ERR", "ERR", "", "ERR", "ERR", ""])
            continue
        rows.append(
            [
                engine,
                f"{a['mean']:.2f}",
                f"{b['mean']:.2f}",
                f"{b['mean'] / a['mean']:.2f}x",
                f"{a['p50']:.2f}",
                f"{b['p50']:.2f}",
                f"{b['p50'] / a['p50']:.2f}x",
            ]
        )
    return head, rows


def contention_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    """Contention table: one row per shape and engine."""
    head = [
        "writers x commits",
        "engine",
        "wall s",
        "commits/s",
        "ratio",
        "committed",
        "failed",
        "retries",
        "p50 / p99 ms",
        "final version (expected)",
        "lost",
        "log check",
        "other load (cores)",
    ]
    rows = []
    for s in results:
        shape = f"{s['writers']} x {s['commits_per_writer']}"
        for engine in ENGINES:
            m = s[engine]
            if m is None:
                rows.append([shape, engine, "ERR", "", "", "", "", "", "", "", "", "ERR", ""])
                continue
            other = s["delta-rs"]
            ratio = (
                f"{m['commits_per_s'] / other['commits_per_s']:.1f}x"
                if engine == "deltalog" and other and other["commits_per_s"]
                else ""
            )
            rows.append(
                [
                    shape,
                    engine,
                    f"{m['seconds']:.1f}",
                    f"{m['commits_per_s']:.0f}",
                    ratio,
                    f"{m['committed']:.0f}/{s['writers'] * s['commits_per_writer']}",
                    f"{m['failed']:.0f}",
                    "n/a" if m["retries"] is None else f"{m['retries']:.0f}",
                    f"{m['p50_ms']:.1f} / {m['p99_ms']:.1f}",
                    f"{m['final_version']} ({m['expected_version']})",
                    f"{m['lost']}",
                    "ok" if m["check_ok"] else "FAILED",
                    f"{m['foreign_cores']:.2f}",
                ]
            )
    return head, rows


def profile_point(
    cfg: Config, point: int, master: Path, out_dir: Path, scratch_root: Path, prime_gib: float
) -> str:
    """Run deltalog's single-writer commits once under cProfile; return the top entries."""
    import io
    import pstats

    prof_file = out_dir / f"profile_commit_v{point}.prof"
    path = fresh_copy(master, scratch_root / f"profile-{point}")
    res = run_child(
        ["single", "deltalog", str(path), str(cfg.commits)],
        prime_gib=prime_gib,
        profile=str(prof_file),
    )
    shutil.rmtree(path, ignore_errors=True)
    if "error" in res:
        return f"profile at version {point} failed:\n{res['error']}"
    with (out_dir / f"profile_commit_v{point}.txt").open("w") as fh:
        fh.write(
            f"deltalog, {cfg.commits} commits from version {point}: main thread + "
            f"{res['profiled_threads']} background checkpoint thread(s), times summed\n"
        )
        stats = pstats.Stats(str(prof_file), stream=fh)
        stats.sort_stats("cumulative").print_stats(50)
        stats.sort_stats("tottime").print_stats(30)
    buf = io.StringIO()
    pstats.Stats(str(prof_file), stream=buf).sort_stats("cumulative").print_stats(25)
    return (
        f"profile: deltalog, {cfg.commits} commits from version {point} "
        f"({res['seconds']:.3f}s wall under cProfile; main thread + "
        f"{res['profiled_threads']} background checkpoint thread(s), times summed):\n"
        + buf.getvalue().split("\n", 1)[-1].strip()
    )


def main(argv: list[str] | None = None) -> int:
    """Parse the options, run the workloads, print and write the results."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="fewer commits, smaller races, 1 run")
    p.add_argument("--repeat", type=int, default=None, help="single-writer runs (default 3)")
    p.add_argument(
        "--contention-repeat", type=int, default=None, help="races per shape and engine (1)"
    )
    p.add_argument("--commits", type=int, default=None, help="single-writer commits per run")
    p.add_argument(
        "--workload", nargs="+", choices=["single", "contention"], help="only these workloads"
    )
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    p.add_argument("--data", type=Path, default=None, help="work dir (default <out>/data)")
    p.add_argument(
        "--profile", action="store_true", help="also profile deltalog's single writer (cProfile)"
    )
    p.add_argument(
        "--prime-gib",
        type=float,
        default=DEFAULT_PRIME_GIB,
        help=f"GiB of memory to touch before each run (default {DEFAULT_PRIME_GIB}; 0 disables)",
    )
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    p.add_argument("--profile-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.child:
        child_main(args.child, args.profile_out)
        return 0

    cfg = make_config(args.quick, args.repeat, args.contention_repeat, args.commits, args.workload)
    out_dir: Path = args.out.resolve()
    data_dir: Path = (args.data or out_dir / "data").resolve()
    scratch_root = data_dir / "_scratch_commit"
    out_dir.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    scratch_dirs.discard(scratch_root)  # an interrupted run's copies
    scratch_root.mkdir()
    t_begin = time.perf_counter()
    env = br.environment()
    env["code_sha256"] = code_fingerprint()
    env["loadavg_start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    busy0 = _system_busy_s()
    time.sleep(1.0)
    idle_check = _system_busy_s() - busy0  # this process sleeps: all of it is someone else's
    if idle_check > BUSY_CORES:
        br._log(
            f"WARNING: other processes are using {idle_check:.2f} cores right now: "
            "results will be noisy (each run's share is recorded as 'other load')"
        )

    single: list[dict[str, Any]] = []
    contention: list[dict[str, Any]] = []
    masters = {}
    if "single" in cfg.workloads:
        masters = {v: ensure_master(data_dir, "single", v) for v in cfg.points}
        for v in cfg.points:
            br._log(
                f"[run] single writer: {cfg.commits} commits from version {v}, {cfg.repeat} run(s)"
            )
            single.append(measure_single(cfg, v, masters[v], scratch_root, args.prime_gib))
    if "contention" in cfg.workloads:
        empty = ensure_master(data_dir, "contention", 0)
        for shape in cfg.shapes:
            br._log(f"[run] contention: {shape[0]} writers x {shape[1]} commits")
            contention.append(measure_contention(cfg, shape, empty, scratch_root, args.prime_gib))
    profiles: dict[str, str] = {}
    if args.profile and "single" in cfg.workloads:
        for v in cfg.points:
            text = profile_point(cfg, v, masters[v], out_dir, scratch_root, args.prime_gib)
            profiles[str(v)] = text
    scratch_dirs.discard(scratch_root)
    elapsed = time.perf_counter() - t_begin

    sections: list[tuple[str, tuple[list[str], list[list[str]]]]] = []
    if single:
        sections.append(
            (
                f"Single writer, blind appends of 1 add, median of {cfg.repeat} run(s) of "
                f"{cfg.commits} commits (latency per commit; delta-rs includes update_incremental)",
                single_rows(single),
            )
        )
        sections.append(("Single writer details (medians)", single_detail_rows(single)))
        fh, fr = flat_rows(single)
        if fh:
            sections.append(("Latency growth with the version count", (fh, fr)))
    if contention:
        sections.append(
            (
                "Contention: W writer processes released by one barrier, blind appends of 1 add "
                f"(median of {cfg.contention_repeat} race(s); retries = sum of tx.attempts - 1)",
                contention_rows(contention),
            )
        )
    print()
    print(f"deltalog vs delta-rs commit benchmark ({'QUICK' if cfg.quick else 'full'})")
    for title, (head, rows) in sections:
        print()
        print(title)
        print(br.text_table(head, rows))
    for text in profiles.values():
        print()
        print(text)

    end_commit = br.environment()["commit"]
    if end_commit != env["commit"]:
        br._log(f"WARNING: the checkout changed during the run: {env['commit']} -> {end_commit}")
        env["commit"] = f"{env['commit']} -> {end_commit} (changed during the run!)"
    end_code = code_fingerprint()
    if end_code != env["code_sha256"]:
        br._log("WARNING: deltalog/logstores/checkpoints sources changed during the run")
        env["code_sha256"] = f"{env['code_sha256']} -> {end_code} (changed during the run!)"
    env["loadavg_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    busy = [
        r["foreign_cores"]
        for s in single + contention
        for runs in s["runs"].values()
        for r in runs
        if r.get("foreign_cores", 0) > BUSY_CORES
    ]
    if busy:
        br._log(
            f"WARNING: during {len(busy)} run(s) other processes used > {BUSY_CORES} cores "
            f"(up to {max(busy):.2f} of {os.cpu_count()}): results are noisy"
        )
    env["busy_runs"] = len(busy)
    payload = {
        "quick": cfg.quick,
        "config": {
            "repeat": cfg.repeat,
            "points": cfg.points,
            "commits": cfg.commits,
            "shapes": cfg.shapes,
            "contention_repeat": cfg.contention_repeat,
            "prime_gib": args.prime_gib,
        },
        "environment": env,
        "elapsed_seconds": elapsed,
        "deltalog_commit_call": (
            "tx = table.transaction('WRITE', parameters={'mode': 'Append', 'partitionBy': ...}); "
            "tx.add(AddFile(...)); tx.commit()"
        ),
        "delta_rs_commit_call": (
            "dt.create_write_transaction([AddAction(...)], mode='append', schema=dt.schema(), "
            "partition_by=['part']); dt.update_incremental()"
        ),
        "single": single,
        "contention": contention,
        "profiles": profiles,
    }
    stem = "commit_quick" if cfg.quick else "commit"
    (out_dir / f"{stem}.json").write_text(json.dumps(payload, indent=1))
    md = [
        f"# Commit benchmark: deltalog vs delta-rs{' (quick)' if cfg.quick else ''}",
        "",
        "Environment: " + ", ".join(f"{k} {v}" for k, v in env.items()),
        f"Total run time {elapsed:.0f} s.",
    ]
    for title, (head, rows) in sections:
        md += ["", f"{title}:", "", br.md_table(head, rows)]
    md.append("")
    (out_dir / f"{stem}.md").write_text("\n".join(md))
    br._log(f"wrote {out_dir / (stem + '.json')} and {out_dir / (stem + '.md')} ({elapsed:.0f}s)")
    errors = any(s[e] is None for s in single + contention for e in ENGINES) or any(
        "error" in r for s in single + contention for rs in s["runs"].values() for r in rs
    )
    failed_checks = any(
        not r["check"]["ok"]
        for s in contention
        for rs in s["runs"].values()
        for r in rs
        if "check" in r
    )
    if failed_checks:
        br._log("ERROR: a contention run failed the log check (see 'check' in the JSON)")
    return 2 if errors or failed_checks else 0


if __name__ == "__main__":
    sys.exit(main())
