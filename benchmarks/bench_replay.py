"""Log replay and checkpoint benchmark: deltalog against delta-rs (``deltalake``) side by side.

Usage::

    .venv/bin/python benchmarks/bench_replay.py [--quick] [--repeat N] [--workload NAME ...]
                                                [--out benchmarks/out] [--data DIR] [--profile]

Synthetic Delta logs (no data files) are generated once under ``<out>/data`` and reused while
their parameters match (a ``.bench_params.json`` marker in each table directory). Every
measurement runs in a fresh child process (``bench_replay.py --child ENGINE WORKLOAD PATH``)
that imports *both* libraries, then times only the operation with ``time.perf_counter`` and
reports its peak RSS (``VmHWM``) after the imports and after the operation. The parent keeps the
median of the repeats and prints / writes ``replay.json`` and ``replay.md`` to the out dir.

See ``benchmarks/README.md`` for what each workload does.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import scratch as scratch_dirs  # the sibling modules
from gen_replay import Workload, ensure_table
from harness import (
    ENGINES,
    ROOT,
    cpu,
    environment,
    fmt,
    fresh_copy,
    log,
    maxrss_kib,
    md_table,
    note_checkout_change,
    prime_main,
    prime_memory,
    text_table,
    warm,
)

CHILD_TIMEOUT_S = 3600


# --------------------------------------------------------------------------- workloads
def workloads(quick: bool) -> dict[str, Workload]:
    big, small = (100_000, 10_000) if quick else (1_000_000, 100_000)
    commits_a, commits_b = (100, 1_000) if quick else (1_000, 10_000)
    ws = [
        Workload("cp_1m", "checkpoint", files=big, time_target=0.25, rss_target=0.5),
        Workload("cp_100k", "checkpoint", files=small),
        Workload("json_1000x100", "json", commits=commits_a, per_commit=100),
        Workload("json_10000x1", "json", commits=commits_b, per_commit=1),
        Workload("write_cp_1m", "write_checkpoint", files=big),
    ]
    return {w.name: w for w in ws}


# --------------------------------------------------------------------------- child
def _ops(kind: str) -> dict[str, Callable[[str], dict[str, Any]]]:
    """The measured operation per engine; returns what it produced (checked afterwards)."""
    import deltalake

    import deltalog

    def dl_list(path: str) -> dict[str, Any]:
        t = deltalog.DeltaTable(path)
        paths = t.files(with_stats=False).column("path")
        return {"n_files": len(paths), "version": t.version()}

    def rs_list(path: str) -> dict[str, Any]:
        # get_add_actions() (an Arrow table) is cheaper than file_uris() (a list of 1M Python
        # strings): ~0.01s vs ~0.08s per 100k files on top of opening the table.
        dt = deltalake.DeltaTable(path)
        paths = dt.get_add_actions().column("path")
        return {"n_files": len(paths), "version": dt.version()}

    def dl_checkpoint(path: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        t = deltalog.DeltaTable(path)
        t1 = time.perf_counter()
        t.checkpoint()
        return {"open_seconds": t1 - t0, "version": t.version()}

    def rs_checkpoint(path: str) -> dict[str, Any]:
        t0 = time.perf_counter()
        dt = deltalake.DeltaTable(path)
        t1 = time.perf_counter()
        dt.create_checkpoint()
        return {"open_seconds": t1 - t0, "version": dt.version()}

    if kind == "write_checkpoint":
        return {"deltalog": dl_checkpoint, "delta-rs": rs_checkpoint}
    return {"deltalog": dl_list, "delta-rs": rs_list}


def child_main(engine: str, kind: str, path: str, verify: bool, profile: str | None) -> None:
    # Import both libraries (and what they import) before anything is measured, so both
    # engines start from the same baseline.
    import deltalake  # noqa: F401
    import orjson  # noqa: F401
    import pyarrow
    import pyarrow.compute
    import pyarrow.parquet  # noqa: F401

    import deltalog
    import deltalog.table  # noqa: F401  (``import deltalog`` alone is lazy: import it here)

    op = _ops(kind)[engine]
    rss_base = maxrss_kib()
    cpu0 = cpu()
    if profile:
        import cProfile

        prof = cProfile.Profile()
        t0 = time.perf_counter()
        prof.enable()
        result = op(path)
        prof.disable()
        seconds = time.perf_counter() - t0
        prof.dump_stats(profile)
    else:
        t0 = time.perf_counter()
        result = op(path)
        seconds = time.perf_counter() - t0
    cpu1 = cpu()
    rss_peak = maxrss_kib()
    user, system = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
    out: dict[str, Any] = {
        "engine": engine,
        "seconds": seconds,
        "cpu_seconds": user + system,
        "user_seconds": user,
        "sys_seconds": system,
        "rss_base_kib": rss_base,
        "rss_peak_kib": rss_peak,
        **result,
    }
    if kind == "write_checkpoint":
        version = result["version"]
        cp = Path(path) / "_delta_log" / f"{version:020d}.checkpoint.parquet"
        out["checkpoint_bytes"] = cp.stat().st_size
        if verify:  # after the measurement: the other engine must read the new checkpoint
            out["cross_check"] = _cross_check(engine, path, version)
    print(json.dumps(out), flush=True)


def _cross_check(engine: str, path: str, version: int) -> dict[str, Any]:
    import deltalake

    import deltalog

    last = json.loads((Path(path) / "_delta_log" / "_last_checkpoint").read_text())
    if engine == "deltalog":
        dt = deltalake.DeltaTable(path)
        seen = {"reader": "delta-rs", "version": dt.version(), "n_files": len(dt.file_uris())}
    else:
        t = deltalog.DeltaTable(path)
        seen = {
            "reader": "deltalog",
            "version": t.version(),
            "n_files": t.files().num_rows,
            "from_checkpoint": t.snapshot.checkpoint_version,
        }
    seen["last_checkpoint_version"] = last.get("version")
    return seen


# --------------------------------------------------------------------------- parent
PRIME_GIB = 3.0


def run_child(
    engine: str,
    w: Workload,
    path: Path,
    *,
    verify: bool = False,
    profile: str | None = None,
) -> dict[str, Any]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", engine, w.kind, str(path)]
    if verify:
        cmd.append("--verify")
    if profile:
        cmd += ["--profile-out", profile]
    prime_memory(PRIME_GIB)
    proc = subprocess.run(
        cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, cwd=str(ROOT), check=False
    )
    if proc.returncode != 0:
        return {"engine": engine, "error": proc.stderr[-4000:] or f"exit {proc.returncode}"}
    line = proc.stdout.strip().splitlines()[-1]
    res: dict[str, Any] = json.loads(line)
    if w.kind != "write_checkpoint" and res.get("n_files") != w.expected_files:
        res["error"] = f"listed {res.get('n_files')} files, expected {w.expected_files}"
    if res.get("version") != w.expected_version:
        res["error"] = f"read version {res.get('version')}, expected {w.expected_version}"
    cross = res.get("cross_check")
    if cross and (cross["n_files"], cross["version"]) != (w.expected_files, w.expected_version):
        res["error"] = f"checkpoint cross-check failed: {cross}"
    return res


def measure(w: Workload, table: Path, repeat: int, scratch_root: Path) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in ENGINES}
    for rep in range(repeat):
        order = ENGINES if rep % 2 == 0 else ENGINES[::-1]  # alternate who goes first
        for engine in order:
            if w.kind == "write_checkpoint":
                path = fresh_copy(table, scratch_root / f"{w.name}-{engine}")
            else:
                path = table
                warm(table)
            res = run_child(engine, w, path, verify=rep == 0)
            if w.kind == "write_checkpoint":
                shutil.rmtree(path, ignore_errors=True)
            runs[engine].append(res)
            if "error" in res:
                log(f"  {w.name} {engine} run {rep + 1}: ERROR\n{res['error']}")
            else:
                log(
                    f"  {w.name} {engine} run {rep + 1}: {res['seconds']:.3f}s, "
                    f"peak RSS {res['rss_peak_kib'] / 1024:.0f} MiB "
                    f"(base {res['rss_base_kib'] / 1024:.0f})"
                )
    summary: dict[str, Any] = {"workload": w.name, "description": w.describe(), "runs": runs}
    for engine in ENGINES:
        ok = [r for r in runs[engine] if "error" not in r]
        if not ok:
            summary[engine] = None
            continue
        med: dict[str, Any] = {
            "seconds": statistics.median(r["seconds"] for r in ok),
            "min_seconds": min(r["seconds"] for r in ok),
            "max_seconds": max(r["seconds"] for r in ok),
            "cpu_seconds": statistics.median(r["cpu_seconds"] for r in ok),
            "sys_seconds": statistics.median(r["sys_seconds"] for r in ok),
            "rss_peak_mib": statistics.median(r["rss_peak_kib"] for r in ok) / 1024,
            "rss_base_mib": statistics.median(r["rss_base_kib"] for r in ok) / 1024,
            "runs_ok": len(ok),
        }
        med["rss_delta_mib"] = med["rss_peak_mib"] - med["rss_base_mib"]
        if w.kind == "write_checkpoint":
            med["open_seconds"] = statistics.median(r["open_seconds"] for r in ok)
            med["checkpoint_seconds"] = med["seconds"] - med["open_seconds"]
            med["checkpoint_bytes"] = ok[0]["checkpoint_bytes"]
        summary[engine] = med
    dl, rs = summary["deltalog"], summary["delta-rs"]
    summary["time_target"] = w.time_target
    summary["rss_target"] = w.rss_target
    if dl and rs:
        summary["time_ratio"] = dl["seconds"] / rs["seconds"]
        summary["rss_ratio"] = dl["rss_peak_mib"] / rs["rss_peak_mib"]
        ok = summary["time_ratio"] <= w.time_target
        if w.rss_target is not None:
            ok = ok and summary["rss_ratio"] <= w.rss_target
        summary["pass"] = ok
    else:
        summary["time_ratio"] = summary["rss_ratio"] = None
        summary["pass"] = False
    return summary


def _target(s: dict[str, Any]) -> str:
    t = f"time<={s['time_target']}"
    return t + (f", RSS<={s['rss_target']}" if s["rss_target"] is not None else "")


def table_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    head = [
        "workload",
        "deltalog s",
        "delta-rs s",
        "ratio",
        "deltalog peak RSS MB",
        "delta-rs peak RSS MB",
        "RSS ratio",
        "target",
        "pass/fail",
    ]
    rows = []
    for s in results:
        dl, rs = s["deltalog"] or {}, s["delta-rs"] or {}
        rows.append(
            [
                s["workload"],
                fmt(dl.get("seconds"), ".3f"),
                fmt(rs.get("seconds"), ".3f"),
                fmt(s["time_ratio"], ".2f"),
                fmt(dl.get("rss_peak_mib"), ".0f"),
                fmt(rs.get("rss_peak_mib"), ".0f"),
                fmt(s["rss_ratio"], ".2f"),
                _target(s),
                "PASS" if s["pass"] else "FAIL",
            ]
        )
    return head, rows


def detail_rows(results: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    head = [
        "workload",
        "engine",
        "wall s",
        "min-max s",
        "cpu s (sys)",
        "RSS base MB",
        "RSS peak MB",
        "RSS delta MB",
        "open s",
        "checkpoint s",
    ]
    rows = []
    for s in results:
        for engine in ENGINES:
            m = s[engine]
            if m is None:
                rows.append([s["workload"], engine, "ERR", "", "", "", "", "", "", ""])
                continue
            rows.append(
                [
                    s["workload"],
                    engine,
                    f"{m['seconds']:.3f}",
                    f"{m['min_seconds']:.3f}-{m['max_seconds']:.3f}",
                    f"{m['cpu_seconds']:.3f} ({m['sys_seconds']:.3f})",
                    f"{m['rss_base_mib']:.0f}",
                    f"{m['rss_peak_mib']:.0f}",
                    f"{m['rss_delta_mib']:.0f}",
                    f"{m['open_seconds']:.3f}" if "open_seconds" in m else "",
                    f"{m['checkpoint_seconds']:.3f}" if "checkpoint_seconds" in m else "",
                ]
            )
    return head, rows


def profile_workload(w: Workload, table: Path, out_dir: Path, scratch_root: Path) -> str:
    """Run deltalog once under cProfile in a child; return the top cumulative entries."""
    import pstats

    prof_file = out_dir / f"profile_{w.name}.prof"
    if w.kind == "write_checkpoint":
        path = fresh_copy(table, scratch_root / f"{w.name}-profile")
    else:
        path = table
        warm(table)
    res = run_child("deltalog", w, path, profile=str(prof_file))
    if w.kind == "write_checkpoint":
        shutil.rmtree(path, ignore_errors=True)
    if "error" in res:
        return f"profile of {w.name} failed:\n{res['error']}"
    txt = out_dir / f"profile_{w.name}.txt"
    with txt.open("w") as fh:
        stats = pstats.Stats(str(prof_file), stream=fh)
        stats.strip_dirs().sort_stats("cumulative").print_stats(40)
        stats.sort_stats("tottime").print_stats(25)
    import io

    buf = io.StringIO()
    pstats.Stats(str(prof_file), stream=buf).sort_stats("cumulative").print_stats(15)
    return f"profile of {w.name} (deltalog, {res['seconds']:.3f}s under cProfile):\n" + (
        buf.getvalue().split("\n", 1)[-1].strip()
    )


def main(argv: list[str] | None = None) -> int:
    global PRIME_GIB
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--quick", action="store_true", help="10x smaller tables, 1 repeat (smoke test)")
    p.add_argument("--repeat", type=int, default=None, help="runs per engine (default 3; quick 1)")
    p.add_argument("--workload", nargs="+", metavar="NAME", help="only these workloads")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    p.add_argument("--data", type=Path, default=None, help="work dir (default <out>/data)")
    p.add_argument(
        "--profile", action="store_true", help="also run deltalog once under cProfile per workload"
    )
    p.add_argument(
        "--prime-gib",
        type=float,
        default=PRIME_GIB,
        help=f"GiB of memory to touch before each run (default {PRIME_GIB}; 0 disables)",
    )
    p.add_argument("--prime", type=float, default=None, help=argparse.SUPPRESS)
    p.add_argument("--child", nargs=3, metavar=("ENGINE", "KIND", "PATH"), help=argparse.SUPPRESS)
    p.add_argument("--verify", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--profile-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.prime is not None:
        prime_main(args.prime)
        return 0
    if args.child:
        engine, kind, path = args.child
        child_main(engine, kind, path, args.verify, args.profile_out)
        return 0

    PRIME_GIB = args.prime_gib
    all_ws = workloads(args.quick)
    names = args.workload or list(all_ws)
    unknown = [n for n in names if n not in all_ws]
    if unknown:
        p.error(f"unknown workload(s) {unknown}; choose from {list(all_ws)}")
    repeat = args.repeat or (1 if args.quick else 3)
    out_dir: Path = args.out.resolve()
    data_dir: Path = (args.data or out_dir / "data").resolve()
    scratch_root = data_dir / "_scratch"
    out_dir.mkdir(parents=True, exist_ok=True)
    data_dir.mkdir(parents=True, exist_ok=True)
    scratch_root.mkdir(exist_ok=True)

    env = environment()
    tables = {n: ensure_table(data_dir, all_ws[n], all_ws) for n in names}
    results = []
    for n in names:
        log(f"[run] {n}: {all_ws[n].describe()}, {repeat} run(s) per engine")
        results.append(measure(all_ws[n], tables[n], repeat, scratch_root))
    scratch_dirs.discard(scratch_root)

    head, rows = table_rows(results)
    dhead, drows = detail_rows(results)
    sizes = "; ".join(f"{n}: {all_ws[n].describe()}" for n in names)
    print()
    print(f"deltalog vs delta-rs, median of {repeat} run(s), fresh process per run")
    print(f"({'QUICK sizes' if args.quick else 'full sizes'}: {sizes})")
    print(text_table(head, rows))
    print()
    print(text_table(dhead, drows))

    note_checkout_change(env)
    payload = {
        "quick": args.quick,
        "repeat": repeat,
        "prime_gib": PRIME_GIB,
        "environment": env,
        "delta_rs_list_call": "deltalake.DeltaTable(path).get_add_actions().column('path')",
        "deltalog_list_call": "deltalog.DeltaTable(path).files(with_stats=False).column('path')",
        "workloads": {
            n: {**all_ws[n].params(), "description": all_ws[n].describe()} for n in names
        },
        "results": results,
    }
    if args.profile:
        profiles = {}
        for n in names:
            text = profile_workload(all_ws[n], tables[n], out_dir, scratch_root)
            profiles[n] = text
            print()
            print(text)
        payload["profiles"] = profiles
        scratch_dirs.discard(scratch_root)

    out_dir.mkdir(parents=True, exist_ok=True)
    stem = "replay_quick" if args.quick else "replay"
    (out_dir / f"{stem}.json").write_text(json.dumps(payload, indent=1))
    md = [
        f"# Replay benchmark: deltalog vs delta-rs{' (quick)' if args.quick else ''}",
        "",
        f"Median of {repeat} run(s) per engine, each in a fresh process; wall time of the "
        "operation only (imports excluded), peak RSS = the child's `VmHWM` (see README).",
        "",
        "Environment: " + ", ".join(f"{k} {v}" for k, v in env.items()),
        "",
        *[f"- `{n}`: {all_ws[n].describe()}" for n in names],
        "",
        md_table(head, rows),
        "",
        "Details (medians; RSS base = after importing both libraries):",
        "",
        md_table(dhead, drows),
        "",
    ]
    (out_dir / f"{stem}.md").write_text("\n".join(md))
    log(f"wrote {out_dir / (stem + '.json')} and {out_dir / (stem + '.md')}")
    errors = any(s[e] is None for s in results for e in ENGINES)
    return 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
