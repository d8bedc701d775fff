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
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import scratch as scratch_dirs  # the sibling modules
from commit_child import CHILD_TIMEOUT_S, child_main
from gen_commit import ensure_master
from harness import (
    ENGINES,
    ROOT,
    children_cpu_s,
    code_fingerprint,
    environment,
    fmt,
    fresh_copy,
    lat_stats,
    log,
    md_table,
    note_checkout_change,
    note_code_change,
    prime_memory,
    system_busy_s,
    text_table,
)

SINGLE_TARGET = 10.0  # goal: deltalog commits/s >= 10x delta-rs'
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


# --------------------------------------------------------------------------- statistics
def summarize_single(run: dict[str, Any]) -> dict[str, Any]:
    """Per-run numbers of a single-writer run: commits/s and latency statistics."""
    lat = run["latencies_ms"]
    cps = set(run["checkpoints_written"])
    first = run["start_version"] + 1
    plain = [x for i, x in enumerate(lat) if first + i not in cps]
    out = {
        "commits_per_s": run["commits"] / run["seconds"],
        **lat_stats(lat),
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
    prime_memory(prime_gib)
    busy0, ru0, t0 = system_busy_s(), children_cpu_s(), time.perf_counter()
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
    foreign = (system_busy_s() - busy0) - (children_cpu_s() - ru0)
    out["foreign_cores"] = max(foreign, 0.0) / (time.perf_counter() - t0)
    return out


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
            path = fresh_copy(master, scratch_root / f"single-{point}-{engine}-{rep}", sync=True)
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
                log(f"  single v{point} {engine} run {rep + 1}: ERROR\n{res['error']}")
            else:
                s = res["summary"]
                log(
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
            path = fresh_copy(
                master, scratch_root / f"contention-{writers}x{n}-{engine}-{rep}", sync=True
            )
            res = run_child(  # the copy stays until the end (see measure_single)
                ["contention", engine, str(path), str(writers), str(n)], prime_gib=prime_gib
            )
            runs[engine].append(res)
            if "error" in res:
                log(f"  contention {writers}x{n} {engine} run {rep + 1}: ERROR\n{res['error']}")
            else:
                log(
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
                fmt(dl.get("commits_per_s"), ".0f"),
                fmt(rs.get("commits_per_s"), ".0f"),
                fmt(s["ratio"], ".1f") + "x" if s["ratio"] is not None else "ERR",
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
                    fmt(m["checkpoint_mean"], ".2f"),
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
    path = fresh_copy(master, scratch_root / f"profile-{point}", sync=True)
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
    env = environment()
    env["code_sha256"] = code_fingerprint()
    env["loadavg_start"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    busy0 = system_busy_s()
    time.sleep(1.0)
    idle_check = system_busy_s() - busy0  # this process sleeps: all of it is someone else's
    if idle_check > BUSY_CORES:
        log(
            f"WARNING: other processes are using {idle_check:.2f} cores right now: "
            "results will be noisy (each run's share is recorded as 'other load')"
        )

    single: list[dict[str, Any]] = []
    contention: list[dict[str, Any]] = []
    masters = {}
    if "single" in cfg.workloads:
        masters = {v: ensure_master(data_dir, "single", v) for v in cfg.points}
        for v in cfg.points:
            log(f"[run] single writer: {cfg.commits} commits from version {v}, {cfg.repeat} run(s)")
            single.append(measure_single(cfg, v, masters[v], scratch_root, args.prime_gib))
    if "contention" in cfg.workloads:
        empty = ensure_master(data_dir, "contention", 0)
        for shape in cfg.shapes:
            log(f"[run] contention: {shape[0]} writers x {shape[1]} commits")
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
        print(text_table(head, rows))
    for text in profiles.values():
        print()
        print(text)

    note_checkout_change(env)
    note_code_change(env)
    env["loadavg_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    busy = [
        r["foreign_cores"]
        for s in single + contention
        for runs in s["runs"].values()
        for r in runs
        if r.get("foreign_cores", 0) > BUSY_CORES
    ]
    if busy:
        log(
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
        md += ["", f"{title}:", "", md_table(head, rows)]
    md.append("")
    (out_dir / f"{stem}.md").write_text("\n".join(md))
    log(f"wrote {out_dir / (stem + '.json')} and {out_dir / (stem + '.md')} ({elapsed:.0f}s)")
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
        log("ERROR: a contention run failed the log check (see 'check' in the JSON)")
    return 2 if errors or failed_checks else 0


if __name__ == "__main__":
    sys.exit(main())
