"""Everyday log shapes (issue 16): deltalog against delta-rs (``deltalake``) side by side.

Usage::

    .venv/bin/python benchmarks/bench_shapes.py [--quick] [--repeat N] [--workload NAME ...]
                                                [--out benchmarks/out] [--data DIR]

Every row of issue 16's table, each measured in fresh child processes (one per engine and run,
so peak RSS is per engine): JSON logs written the way other writers write them (Python's
``json.dumps`` spacing, reversed key order with explicit nulls and commitInfo last, delta-spark's
compact field order), time travel, ``history()``, a 1M-file checkpoint listed with stats, commit
latency on a 1M-file table against a 1,000-file one, the single-writer ``append_files`` rate, and
the CLI's ``files``/``check`` on the big table. Medians go to ``<out>/shapes.json`` and
``<out>/shapes.md`` (``shapes_quick.*`` with ``--quick``). See ``benchmarks/README.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for p in (str(ROOT), str(ROOT / "benchmarks")):
    if p not in sys.path:
        sys.path.insert(0, p)

import gen_replay  # noqa: E402
import scratch as scratch_dirs  # noqa: E402
from gen_shapes import FORMATS, tables, write_data_files  # noqa: E402
from harness import (  # noqa: E402
    environment,
    fresh_copy,
    log,
    maxrss_kib,
    md_table,
    prime_main,
    prime_memory,
    text_table,
    warm,
)


# --------------------------------------------------------------------------- workloads
@dataclass(frozen=True)
class Row:
    """One row of the table: two measured sides (``a`` is deltalog's)."""

    name: str
    description: str
    table: str  # key into the tables built by ``tables()``
    a: str  # op name, see ``OPS``
    b: str | None  # op of the baseline (delta-rs, or deltalog's API for CLI rows)
    baseline: str = "delta-rs"
    time_target: float | None = 0.5
    rss_target: float | None = 1.0
    args: dict[str, Any] = field(default_factory=dict)


def rows(quick: bool) -> list[Row]:
    """Every row of issue 16's table (``--quick``: 10x smaller)."""
    k = 10 if quick else 1
    big = 1_000_000 // k
    out = [
        Row(
            f"list_10x{100_000 // k}_{fmt}",
            f"open + list with stats, 10 commits x {100_000 // k:,} adds, format {fmt}",
            f"json10_{fmt}",
            "dl_list",
            "rs_list",
        )
        for fmt in FORMATS
    ]
    n = 10_000 // k
    out += [
        Row(
            f"travel_v50_100x{n}",
            f"time travel to v50 of 100 x {n:,} adds",
            "json100",
            "dl_travel",
            "rs_travel",
        ),
        Row(
            f"history_100x{n}",
            "history() after open (open not timed)",
            "json100",
            "dl_history",
            "rs_history",
        ),
        Row(
            f"history_limit10_100x{n}",
            "history(limit=10) after open",
            "json100",
            "dl_history10",
            "rs_history10",
        ),
        Row(
            f"open_history_100x{n}",
            "open + history()",
            "json100",
            "dl_open_history",
            "rs_open_history",
        ),
        Row(
            "cli_history_limit10",
            "CLI `history --limit 10` vs delta-rs open + history(10)",
            "json100",
            "cli_history10",
            "rs_open_history10",
            rss_target=None,
        ),
        Row(
            f"cp_{big}_stats",
            f"open + list {big:,} files from a checkpoint, with stats "
            "(files() vs get_add_actions(flatten=False))",
            "cp_big",
            "dl_list",
            "rs_list_nf",
            time_target=0.25,
            rss_target=0.5,
        ),
        Row(
            f"cp_{big}_typed",
            f"open + list {big:,} files with typed stats, checkpoint with JSON stats only "
            "(files(with_stats=False, flatten_stats=True) vs get_add_actions(flatten=True))",
            "cp_big",
            "dl_list_typed",
            "rs_list_flat",
            time_target=0.25,
            rss_target=0.5,
        ),
        Row(
            f"cp_{big}_struct_typed",
            "the same, checkpoint as delta-spark 4.4 writes it (stats + stats_parsed + "
            "partitionValues_parsed)",
            "cp_big_struct",
            "dl_list_typed",
            "rs_list_flat",
            time_target=0.25,
            rss_target=0.5,
        ),
        Row(
            f"cp_{big}_struct_stats",
            f"open + list {big:,} files with stats (files() vs get_add_actions(flatten=False)), "
            "checkpoint as delta-spark 4.4 writes it",
            "cp_big_struct",
            "dl_list",
            "rs_list_nf",
            time_target=0.25,
            rss_target=0.5,
        ),
        Row(
            f"cp_{big}_rs_stats",
            f"open + list {big:,} files with stats (files() vs get_add_actions(flatten=False)), "
            "checkpoint written by delta-rs (one row group)",
            "cp_big_rs",
            "dl_list",
            "rs_list_nf",
            time_target=0.25,
            rss_target=0.65,
        ),
        Row(
            f"cp_{big}_rs_typed",
            f"open + list {big:,} files with typed stats, checkpoint written by delta-rs "
            "(files(with_stats=False, flatten_stats=True) vs get_add_actions(flatten=True))",
            "cp_big_rs",
            "dl_list_typed",
            "rs_list_flat",
            time_target=0.5,
            rss_target=0.5,
        ),
        # Rows that only read run before the rows that write (in a full run the CLI row, run
        # after the V2 rows had written gigabytes, came out 2.19x against 1.60x alone).
        Row(
            f"cli_files_{big}",
            f"CLI `files` on {big:,} files vs the API listing the same (open + "
            "files(with_stats=False)), each a fresh `python` process, start-up and imports "
            "included on both sides",
            "cp_big",
            "cli_files",
            "api_files",
            baseline="API process",
            time_target=2.0,
            rss_target=None,
        ),
        # Before the V2 rows too: in a full run after them (gigabytes written, fsync slower for
        # minutes) it took 1.53 s instead of 1.28 s alone.
        Row(
            f"write_cp_{big}_struct",
            f"write the next checkpoint of that table ({big:,} files + 1 commit): deltalog "
            "carries stats_parsed over (parses the one new file's JSON), delta-rs "
            "create_checkpoint()",
            "cpw_big_struct",
            "dl_checkpoint",
            "rs_checkpoint",
            rss_target=None,
        ),
        # The small-table commit rows run before the 1M-file ones: those write gigabytes, and
        # fsync stays slower for minutes after (deltalog fsyncs twice per commit; delta-rs
        # does not), which would charge the benchmark's own I/O to the next rows.
        Row(
            "append_p50_1000",
            "blind append_files of 1 real file, 1,000-file table: p50 latency (deltalog's 1M-file "
            "p50 below must be ≤ 2x this)",
            "cp_small",
            "dl_append",
            "rs_append",
            time_target=None,
            rss_target=None,
            args={"commits": 100 if quick else 200, "rs_commits": 50 if quick else 200},
        ),
        Row(
            "append_rate_1000",
            "single-writer append_files rate, real file + footer stats, "
            "1,000-file table; delta-rs given prebuilt stats (ratio of time per commit)",
            "cp_small",
            "dl_append",
            "rs_append",
            time_target=0.1,
            rss_target=None,
            args={
                "commits": 100 if quick else 200,
                "rs_commits": 50 if quick else 200,
                "metric": "mean",
            },
        ),
        Row(
            f"append_p50_{big}",
            f"the same on a {big:,}-file table: p50 latency (ratio vs delta-rs)",
            "cp_big",
            "dl_append",
            "rs_append",
            time_target=None,
            rss_target=None,
            args={"commits": 100 if quick else 1000, "rs_commits": 3},
        ),
        *(
            Row(
                f"append_v2cp{suffix}_{big}",
                f"sustained append_files, {100 if quick else 1000} commits, {big:,}-file "
                "table, delta.checkpointPolicy=v2, default checkpoint interval, checkpoints "
                f"{how}: sidecar reuse vs DELTALOG_SIDECAR_REUSE=0 (mean time per commit, "
                "checkpoints included)",
                "cp_big_v2",
                "dl_append_v2",
                "dl_append_v2_noreuse",
                baseline="no reuse",
                time_target=None,
                rss_target=None,
                args={"commits": 100 if quick else 1000, "background": background},
            )
            for suffix, how, background in (
                ("", "on the background thread (only the newest due one when behind)", True),
                ("_inline", "inline, every due one written", False),
            )
        ),
        Row(
            f"cli_check_100x{n}",
            f"CLI `check --no-data-files` on 100 x {n:,} adds (no baseline)",
            "json100",
            "cli_check",
            None,
            baseline="-",
            time_target=None,
            rss_target=None,
        ),
    ]
    return out


# --------------------------------------------------------------------------- child ops
def _cli(args: list[str]) -> dict[str, Any]:
    """Run the CLI in its own interpreter; peak RSS is the CLI process's own ``VmHWM``."""
    return _python("from deltalog.cli import main\nsys.exit(main(sys.argv[1:]))\n", args)


def _python(body: str, args: list[str]) -> dict[str, Any]:
    """Run ``body`` in a fresh interpreter (output discarded); its own peak RSS (``VmHWM``)."""
    code = (
        "import atexit, sys\n"
        "def _hwm():\n"
        "    for l in open('/proc/self/status'):\n"
        "        if l.startswith('VmHWM:'): sys.stderr.write('VMHWM %s\\n' % l.split()[1])\n"
        "atexit.register(_hwm)\n" + body
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    hwm = [ln for ln in proc.stderr.splitlines() if ln.startswith("VMHWM ")]
    if proc.returncode > 3 or not hwm:  # check: 1-3 = findings
        raise RuntimeError(proc.stderr[-2000:])
    return {"rss_own_kib": int(hwm[-1].split()[1])}


def _latencies(commit: Callable[[int], None], n: int) -> tuple[list[float], float]:
    lat = []
    start = time.perf_counter()
    for i in range(n):
        t0 = time.perf_counter()
        commit(i)
        lat.append(time.perf_counter() - t0)
    return lat, time.perf_counter() - start


def _summary(lat: list[float], total: float, metric: str) -> dict[str, Any]:
    q = statistics.quantiles(lat, n=100) if len(lat) > 1 else lat * 99
    p50 = statistics.median(lat)
    return {
        "seconds": statistics.fmean(lat) if metric == "mean" else p50,
        "p50_ms": p50 * 1e3,
        "p99_ms": q[98] * 1e3,
        "max_ms": max(lat) * 1e3,
        "commits": len(lat),
        "commits_per_s": len(lat) / total,
    }


def _append_v2(path: str, args: dict[str, Any], *, reuse: bool) -> dict[str, Any]:
    """``append_files`` commits with the checkpoints' wall and CPU time (their thread's)."""
    import os

    import deltalog
    from deltalog.maintenance import after_commit as maintenance

    os.environ["DELTALOG_SIDECAR_REUSE"] = "1" if reuse else "0"
    cost = {"checkpoints": 0, "wall": 0.0, "cpu": 0.0}
    real = maintenance.write_snapshot_checkpoint

    def timed(storage: Any, snapshot: Any) -> Any:
        wall, cpu = time.perf_counter(), time.thread_time()
        try:
            return real(storage, snapshot)
        finally:
            cost["checkpoints"] += 1
            cost["wall"] += time.perf_counter() - wall
            cost["cpu"] += time.thread_time() - cpu

    maintenance.write_snapshot_checkpoint = timed  # type: ignore[assignment]
    n = args["commits"]
    rels = write_data_files(Path(path), n)
    # The data files (and the table copy) are written back before timing: an fsync on ext4
    # would otherwise flush them, charging set-up I/O to the first commits.
    os.sync()
    t = deltalog.DeltaTable(path, background_checkpoints=args["background"])
    t.files(with_stats=False)
    lat, total = _latencies(lambda i: t.append_files([rels[i]]) and None, n)
    w0 = time.perf_counter()
    t.wait_for_checkpoints()
    total += time.perf_counter() - w0
    out = _summary(lat, total, "mean")
    out["seconds"] = total / n  # sustained: the wait for the last checkpoints included
    sidecars = sum(1 for _ in (Path(path) / "_delta_log" / "_sidecars").iterdir())
    return {
        **out,
        "n_files": t.files(with_stats=False).num_rows,
        "checkpoints": cost["checkpoints"],
        "cp_wall_s": cost["wall"],
        "cp_cpu_s": cost["cpu"],
        "cp_wall_ms_per_commit": cost["wall"] / n * 1e3,
        "cp_cpu_ms_per_commit": cost["cpu"] / n * 1e3,
        "cp_wall_ms_each": cost["wall"] / max(1, cost["checkpoints"]) * 1e3,
        "cp_cpu_ms_each": cost["cpu"] / max(1, cost["checkpoints"]) * 1e3,
        "sidecar_files": sidecars,
    }


def op(name: str, path: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run the measured operation ``name``; returns ``seconds`` (timed inside) and extras."""
    import deltalake

    import deltalog

    t0 = time.perf_counter()
    if name == "dl_list":
        t = deltalog.DeltaTable(path)
        n = t.files().num_rows
        return {"seconds": time.perf_counter() - t0, "n_files": n}
    if name == "dl_checkpoint":
        t = deltalog.DeltaTable(path)
        t.checkpoint()
        return {"seconds": time.perf_counter() - t0, "version": t.version()}
    if name == "rs_checkpoint":
        dt = deltalake.DeltaTable(path)
        dt.create_checkpoint()
        return {"seconds": time.perf_counter() - t0, "version": dt.version()}
    if name == "dl_list_typed":
        t = deltalog.DeltaTable(path)
        n = t.files(with_stats=False, flatten_stats=True).num_rows
        return {"seconds": time.perf_counter() - t0, "n_files": n}
    if name == "rs_list_flat":
        n = deltalake.DeltaTable(path).get_add_actions(flatten=True).num_rows
        return {"seconds": time.perf_counter() - t0, "n_files": n}
    if name in ("rs_list", "rs_list_nf"):
        dt = deltalake.DeltaTable(path)
        n = dt.get_add_actions(flatten=False).num_rows
        return {"seconds": time.perf_counter() - t0, "n_files": n}
    if name == "dl_travel":
        n = deltalog.DeltaTable(path, version=50).files().num_rows
        return {"seconds": time.perf_counter() - t0, "n_files": n}
    if name == "rs_travel":
        n = deltalake.DeltaTable(path, version=50).get_add_actions(flatten=False).num_rows
        return {"seconds": time.perf_counter() - t0, "n_files": n}
    if name.startswith(("dl_history", "dl_open_history")):
        limit = 10 if name.endswith("10") else None
        t = deltalog.DeltaTable(path)
        t1 = time.perf_counter()
        h = t.history(limit=limit)
        start = t0 if "open" in name else t1
        return {"seconds": time.perf_counter() - start, "entries": len(h)}
    if name.startswith(("rs_history", "rs_open_history")):
        limit = 10 if name.endswith("10") else None
        dt = deltalake.DeltaTable(path)
        t1 = time.perf_counter()
        h = dt.history(limit)
        start = t0 if "open" in name else t1
        return {"seconds": time.perf_counter() - start, "entries": len(h)}
    if name == "cli_history10":
        extra = _cli(["history", path, "--limit", "10"])
        return {"seconds": time.perf_counter() - t0, **extra}
    if name == "cli_files":
        extra = _cli(["files", path])
        return {"seconds": time.perf_counter() - t0, **extra}
    if name == "api_files":
        listing = "import deltalog\ndeltalog.DeltaTable(sys.argv[1]).files(with_stats=False)\n"
        extra = _python(listing, [path])
        return {"seconds": time.perf_counter() - t0, **extra}
    if name == "cli_check":
        extra = _cli(["check", path, "--no-data-files"])
        return {"seconds": time.perf_counter() - t0, **extra}
    if name == "dl_append":
        n = args["commits"]
        rels = write_data_files(Path(path), n)
        # The data files (and the table copy) are written back before timing: an fsync on ext4
        # would otherwise flush them, charging set-up I/O to the first commits.
        os.sync()
        t = deltalog.DeltaTable(path)
        t.files(with_stats=False)
        lat, total = _latencies(lambda i: t.append_files([rels[i]]) and None, n)
        w0 = time.perf_counter()
        t.wait_for_checkpoints()
        total += time.perf_counter() - w0
        return {**_summary(lat, total, args.get("metric", "p50")), "n_files": t.files().num_rows}
    if name in ("dl_append_v2", "dl_append_v2_noreuse"):
        return _append_v2(path, args, reuse=name == "dl_append_v2")
    if name == "rs_append":
        n = args["rs_commits"]
        dt = deltalake.DeltaTable(path)
        schema = dt.schema()
        adds = gen_replay.delta_rs_adds(gen_replay.add_columns(10_000_000, n, random.Random(1)))

        def commit(i: int) -> None:
            dt.create_write_transaction(
                [adds[i]], mode="append", schema=schema, partition_by=["part"]
            )
            dt.update_incremental()

        lat, total = _latencies(commit, n)
        return _summary(lat, total, args.get("metric", "p50"))
    raise SystemExit(f"unknown op {name}")


def child_main(name: str, path: str, args: dict[str, Any]) -> None:
    import deltalake  # noqa: F401
    import orjson  # noqa: F401
    import pyarrow.compute
    import pyarrow.parquet  # noqa: F401

    import deltalog
    import deltalog.cli
    import deltalog.table  # noqa: F401

    with contextlib.suppress(ImportError):  # deltalog's open makes pyarrow import pandas
        import pandas  # noqa: F401  (see README): the same baseline for both engines

    base = maxrss_kib()
    cpu = time.process_time()
    res = op(name, path, args)
    res.setdefault("cpu_seconds", time.process_time() - cpu)  # all threads, the op's whole run
    res.update(rss_base_kib=base, rss_peak_kib=res.pop("rss_own_kib", None) or maxrss_kib())
    print(json.dumps(res), flush=True)


# --------------------------------------------------------------------------- parent
#: Files of a copy at least this big are deleted right after its run (see :func:`run`).
BIG_FILE = 1 << 20
_copies = itertools.count()


def _drop_big_files(root: Path) -> None:
    """Free a copy's disk space now (checkpoints, sidecars: few inodes); the rest stays."""
    for f in root.rglob("*"):
        if f.is_file() and f.stat().st_size >= BIG_FILE:
            f.unlink()


def run(
    name: str, table: Path, scratch: Path, args: dict[str, Any], prime: float
) -> dict[str, Any]:
    """One child run; append ops work on a fresh copy of the table.

    Copies are deleted only at the end of the run (their big files, few inodes, right away).
    Deleting thousands of files makes ext4 pass over their inodes for a while when it allocates
    new ones (its ``recently_deleted`` check): on this VM each file created soon after cost up
    to 0.7 ms instead of 0.02 ms, so a child appending right after the previous child's copy was
    deleted paid for the harness's clean-up, once per file it creates.
    """
    path = table
    if "append" in name or "checkpoint" in name:  # they write: each run on a fresh copy
        # Flushed (with whatever earlier rows wrote) before the run: otherwise deltalog's first
        # fsyncs would write it back too (delta-rs does not fsync), as bench_commit does.
        path = fresh_copy(table, scratch / f"{table.name}-{name}-{next(_copies)}", sync=True)
    else:
        warm(path)
    prime_memory(prime)
    cmd = [sys.executable, __file__, "--child", name, str(path), json.dumps(args)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, cwd=str(ROOT))
    if path != table:
        _drop_big_files(path)
    if proc.returncode != 0:
        return {"error": proc.stderr[-3000:]}
    out: dict[str, Any] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def measure(row: Row, table: Path, repeat: int, scratch: Path, prime: float) -> dict[str, Any]:
    sides = {"a": row.a, **({"b": row.b} if row.b else {})}
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in sides}
    for rep in range(repeat):
        order = list(sides) if rep % 2 == 0 else list(sides)[::-1]
        for side in order:
            res = run(sides[side], table, scratch, row.args, prime)
            runs[side].append(res)
            shown = res.get("error") or (
                f"{res['seconds']:.4f}s peak {res['rss_peak_kib'] / 1024:.0f} MiB"
            )
            log(f"  {row.name} {sides[side]} run {rep + 1}: {shown}")
    med: dict[str, Any] = {}
    for side, rs in runs.items():
        ok = [r for r in rs if "error" not in r]
        if not ok:
            med[side] = None
            continue
        med[side] = {
            key: statistics.median(r[key] for r in ok)
            for key in ok[0]
            if isinstance(ok[0][key], int | float) and all(key in r for r in ok)
        }
    a, b = med.get("a"), med.get("b")
    out: dict[str, Any] = {
        "row": row.name,
        "description": row.description,
        "runs": runs,
        "a": a,
        "b": b,
        "baseline": row.baseline,
        "time_target": row.time_target,
        "rss_target": row.rss_target,
    }
    if a and b:
        out["time_ratio"] = a["seconds"] / b["seconds"]
        out["rss_ratio"] = a["rss_peak_kib"] / b["rss_peak_kib"]
    return out


def _cell(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def table_lines(results: list[dict[str, Any]]) -> list[list[str]]:
    out = []
    for r in results:
        a, b = r["a"] or {}, r["b"] or {}
        tr, rr = r.get("time_ratio"), r.get("rss_ratio")
        verdict = []
        if r["time_target"] is not None and tr is not None:
            verdict.append(
                f"time ≤ {r['time_target']}: {'pass' if tr <= r['time_target'] else 'FAIL'}"
            )
        if r["rss_target"] is not None and rr is not None:
            verdict.append(
                f"RSS ≤ {r['rss_target']}: {'pass' if rr <= r['rss_target'] else 'FAIL'}"
            )
        extra = ""
        if "cp_wall_s" in a:
            extra = "; ".join(
                f"{label}: {side['commits_per_s']:.1f} commits/s, {side['checkpoints']:.0f} "
                f"checkpoints of {side['cp_wall_ms_each']:.0f} ms, checkpoint wall/CPU per commit "
                f"{side['cp_wall_ms_per_commit']:.1f}/{side['cp_cpu_ms_per_commit']:.1f} ms"
                for label, side in (("reuse", a), ("no reuse", b))
                if side
            )
        elif "p50_ms" in a:
            extra = (
                f"dl p50/p99/max {a['p50_ms']:.1f}/{a['p99_ms']:.1f}/{a['max_ms']:.0f} ms, "
                f"{a['commits_per_s']:.0f}/s; rs p50 {b.get('p50_ms', 0):.1f} ms, "
                f"{b.get('commits_per_s', 0):.1f}/s"
            )
        out.append(
            [
                r["row"],
                r["baseline"],
                _cell(a.get("seconds"), ".4f"),
                _cell(b.get("seconds"), ".4f"),
                _cell(tr, ".2f"),
                _cell(a.get("rss_peak_kib", 0) / 1024 if a else None, ".0f"),
                _cell(b.get("rss_peak_kib", 0) / 1024 if b else None, ".0f"),
                _cell(rr, ".2f"),
                "; ".join(verdict) or "-",
                extra,
            ]
        )
    return out


HEAD = [
    "row",
    "baseline",
    "deltalog s",
    "baseline s",
    "time ratio",
    "deltalog MiB",
    "baseline MiB",
    "RSS ratio",
    "target",
    "notes",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=3, metavar=("OP", "PATH", "ARGS"))
    ap.add_argument("--prime", type=float)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int)
    ap.add_argument("--workload", nargs="*")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out"))
    ap.add_argument("--data")
    ap.add_argument("--prime-gib", type=float, default=2.0)
    ap.add_argument("--profile", action="store_true", help="accepted for bench.sh; ignored")
    ns = ap.parse_args(argv)
    if ns.prime is not None:
        prime_main(ns.prime)
        return 0
    if ns.child:
        child_main(ns.child[0], ns.child[1], json.loads(ns.child[2]))
        return 0
    out = Path(ns.out)
    data = Path(ns.data) if ns.data else out / "data"
    data.mkdir(parents=True, exist_ok=True)
    repeat = ns.repeat or (1 if ns.quick else 3)
    selected = [
        r for r in rows(ns.quick) if not ns.workload or any(w in r.name for w in ns.workload)
    ]
    built = tables(data, ns.quick, {r.table for r in selected})
    scratch = out / "scratch"
    scratch_dirs.discard(scratch)  # an interrupted run's copies
    scratch.mkdir(parents=True)
    results = []
    try:
        for r in selected:
            log(f"[run] {r.name}: {r.description}")
            results.append(measure(r, built[r.table], repeat, scratch, ns.prime_gib))
    finally:
        scratch_dirs.discard(scratch)
    lines = table_lines(results)
    print(text_table(HEAD, lines))
    suffix = "_quick" if ns.quick else ""
    (out / f"shapes{suffix}.json").write_text(
        json.dumps({"results": results, "environment": environment(), "repeat": repeat}, indent=1)
    )
    (out / f"shapes{suffix}.md").write_text(md_table(HEAD, lines) + "\n")
    failed = any(r["a"] is None or (r["b"] is None and r.get("baseline") != "-") for r in results)
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
