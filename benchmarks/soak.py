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
``deltalog.maintenance.after_commit`` calls, in the writer processes only).

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
import os
import queue
import shutil
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from harness import (
    ROOT,
    children_cpu_s,
    code_fingerprint,
    environment,
    log,
    note_code_change,
    proc_cpu_s,
    self_cpu_s,
    system_busy_s,
    text_table,
)
from soak_checks import summarize, verify
from soak_writers import BARRIER_TIMEOUT_S, delta_rs_writer, deltalog_writer

TESTS = ROOT / "tests"
DEFAULT_RETENTION = "interval 1 seconds"
MONITOR_PERIOD_S = 0.5  # local store: how often the parent samples _delta_log (observation)


# --------------------------------------------------------------------------- helpers
def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


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
                target=deltalog_writer,
                args=(uri, options, w, n, txn_every, background, barrier, results),
            )
            for w in range(writers)
        ]
    else:
        procs = [
            ctx.Process(target=delta_rs_writer, args=(uri, w, n, txn_every, barrier, results))
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
    busy0, kids0, self0 = system_busy_s(), children_cpu_s(), self_cpu_s()
    server0 = proc_cpu_s(server_pid) if server_pid else 0.0
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
                log(f"  ... {now - t0:.0f}s, {len(got)}/{writers} writers done")
                next_note = now + 60
    for p in procs:
        p.join(timeout=60)
        if p.is_alive():
            p.kill()
            p.join()
    wall_end = time.monotonic()
    server_cpu = (proc_cpu_s(server_pid) - server0) if server_pid else 0.0
    busy = system_busy_s() - busy0
    ours = (children_cpu_s() - kids0) + (self_cpu_s() - self0) + server_cpu
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
    log(f"[run] {engine}: {args.writers} writers x {n} commits on {uri}")
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
    from deltalog.protocol.config import parse_interval_ms

    summary = summarize(engine, race, n, parse_interval_ms(args.log_retention))
    log(
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
    env = environment()
    env["code_sha256"] = code_fingerprint()
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
                log(f"  moto's log: {server_logs}")
        for engine, p in paths:
            check = report.get(engine, {}).get("check", {})
            checked = "skipped" not in check.get("check_table", {})  # keep it to check later
            judged = engine == "deltalog"  # delta-rs' findings are reported, not judged
            if (check.get("ok", False) or not judged) and checked and not args.keep:
                shutil.rmtree(p, ignore_errors=True)
            elif p.exists():
                log(f"  kept {p}")
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
    note_code_change(env)
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
    print(text_table(head, rows))
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
        log(f"wrote {out} ({report['elapsed_s']:.0f}s)")
        if not report["deltalog"]["check"]["ok"]:  # delta-rs' findings are reported, not judged
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
