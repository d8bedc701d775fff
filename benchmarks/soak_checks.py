"""The soak's results: summaries of what the writers reported, and the table checked after.

:func:`summarize` turns the writers' reports into counts, latency distributions, retries and
maintenance numbers; :func:`verify` opens the table fresh and checks it against them (nothing
lost, no version returned twice, ``txn`` versions, ``check_table``, delta-rs' view on the local
store). See ``soak.py`` and ``benchmarks/README.md`` ("Soak").
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from typing import Any

from harness import log, merge_errors, percentile
from soak_writers import TXN_PREFIX


# --------------------------------------------------------------------------- summary
def _dist(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    p = percentile
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
            "p50_ms": percentile(s, 50) if s else None,
            "p99_ms": percentile(s, 99) if s else None,
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
    errors, samples = merge_errors(ws)
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
            "p50": percentile(retries, 50),
            "p99": percentile(retries, 99),
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


# --------------------------------------------------------------------------- checks
def _list_log(uri: str, options: dict[str, str]) -> list[str]:
    from deltalog.log.storage import TableStorage

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
        log("  NOTE: deltalog.check does not exist yet: check_table skipped")
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
