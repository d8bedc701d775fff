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
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import scratch as scratch_dirs  # the sibling module

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without an installed package
    sys.path.insert(0, str(ROOT))

ENGINES = ("deltalog", "delta-rs")
# Bump when the generated layout changes: forces regeneration. 2: checkpoints written by
# deltalog keep null counts for the optional fields of adds (the reader skips those columns).
GENERATOR_VERSION = 2
MARKER = ".bench_params.json"
CHILD_TIMEOUT_S = 3600
N_PARTITIONS = 100
BASE_TS = 1_700_000_000_000  # ms; commit/file timestamps start here
SEED = 20261120

SCHEMA_STRING = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "value", "type": "double", "nullable": True, "metadata": {}},
            {"name": "name", "type": "string", "nullable": True, "metadata": {}},
            {"name": "part", "type": "string", "nullable": True, "metadata": {}},
        ],
    },
    separators=(",", ":"),
)


# --------------------------------------------------------------------------- workloads
@dataclass(frozen=True)
class Workload:
    name: str
    kind: str  # "checkpoint", "json" or "write_checkpoint"
    files: int = 0  # checkpoint / write_checkpoint: add files in the checkpoint
    commits: int = 0  # json: number of commits
    per_commit: int = 0  # json: adds per commit
    time_target: float = 0.5
    rss_target: float | None = None

    @property
    def table_dir(self) -> str:
        """Directory name of the generated table: the parameters, so sizes never collide."""
        if self.kind == "json":
            return f"json_c{self.commits}_a{self.per_commit}"
        if self.kind == "checkpoint":
            return f"cp_n{self.files}"
        return f"cpw_n{self.files}"

    @property
    def expected_files(self) -> int:
        if self.kind == "json":
            return self.commits * self.per_commit
        if self.kind == "checkpoint":
            return self.files
        return self.files + 1

    @property
    def expected_version(self) -> int:
        if self.kind == "json":
            return self.commits - 1
        return 0 if self.kind == "checkpoint" else 1

    def params(self) -> dict[str, Any]:
        return {
            "generator": GENERATOR_VERSION,
            "kind": self.kind,
            "files": self.files,
            "commits": self.commits,
            "per_commit": self.per_commit,
            "partitions": N_PARTITIONS,
            "seed": SEED,
        }

    def describe(self) -> str:
        if self.kind == "json":
            return f"{self.commits} JSON commits x {self.per_commit} adds, no checkpoint"
        if self.kind == "checkpoint":
            return f"{self.files:,} adds in one classic checkpoint (version 0)"
        return f"write a checkpoint of {self.files + 1:,} files (checkpoint 0 + 1 JSON commit)"


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


# --------------------------------------------------------------------------- generation
def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _protocol() -> dict[str, Any]:
    return {"minReaderVersion": 1, "minWriterVersion": 2}


def _metadata(table_id: str) -> dict[str, Any]:
    return {
        "id": table_id,
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA_STRING,
        "partitionColumns": ["part"],
        "configuration": {},
        "createdTime": BASE_TS,
    }


def _commit_info(version: int, n_adds: int, operation: str = "WRITE") -> dict[str, Any]:
    info: dict[str, Any] = {
        "timestamp": BASE_TS + version * 1000,
        "operation": operation,
        "operationParameters": {"mode": "Append", "partitionBy": '["part"]'},
        "isolationLevel": "Serializable",
        "isBlindAppend": True,
        "operationMetrics": {
            "numFiles": str(n_adds),
            "numOutputRows": str(n_adds * 1000),
            "numOutputBytes": str(n_adds * 1_000_000),
        },
        "engineInfo": "bench_replay",
        "txnId": str(uuid.UUID(int=version + 1, version=4)),
    }
    if version > 0:
        info["readVersion"] = version - 1
    return info


def add_columns(start: int, n: int, rng: random.Random) -> dict[str, list[Any]]:
    """Columns of ``n`` add actions numbered from ``start`` (camelCase, checkpoint layout).

    Stats are ~150-byte JSON strings with numRecords/minValues/maxValues/nullCount for the three
    data columns; paths look like delta-spark's ``part=17/part-00000-<uuid>-c000.snappy.parquet``.
    """
    paths: list[str] = []
    parts: list[str] = []
    sizes: list[int] = []
    mtimes: list[int] = []
    stats: list[str] = []
    getrandbits = rng.getrandbits
    for i in range(start, start + n):
        part = str(i % N_PARTITIONS)
        u = uuid.UUID(int=getrandbits(128), version=4)
        paths.append(f"part={part}/part-{i % 100_000:05d}-{u}-c000.snappy.parquet")
        parts.append(part)
        sizes.append(1_000_000 + getrandbits(26))
        mtimes.append(BASE_TS + i)
        records = 1000 + (i * 7919) % 9000
        lo = i * 10_000
        stats.append(
            f'{{"numRecords":{records},"minValues":{{"id":{lo},"value":{(i % 997) / 7:.4f},'
            f'"name":"a{i % 9973:05d}"}},"maxValues":{{"id":{lo + records - 1},'
            f'"value":{(i % 997) / 7 + 1000:.4f},"name":"z{i % 9967:05d}"}},'
            f'"nullCount":{{"id":0,"value":{i % 3},"name":{i % 5}}}}}'
        )
    return {
        "path": paths,
        "partitionValues": parts,  # one partition column: "part"
        "size": sizes,
        "modificationTime": mtimes,
        "stats": stats,
    }


def _add_dicts(cols: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    for path, part, size, mtime, stats in zip(
        cols["path"],
        cols["partitionValues"],
        cols["size"],
        cols["modificationTime"],
        cols["stats"],
        strict=True,
    ):
        yield {
            "add": {
                "path": path,
                "partitionValues": {"part": part},
                "size": size,
                "modificationTime": mtime,
                "dataChange": True,
                "stats": stats,
            }
        }


def _write_commit(log_dir: Path, version: int, actions: list[dict[str, Any]]) -> None:
    import orjson

    data = b"".join(orjson.dumps(a) + b"\n" for a in actions)
    (log_dir / f"{version:020d}.json").write_bytes(data)


def _adds_table(cols: dict[str, list[Any]]) -> Any:
    import pyarrow as pa

    n = len(cols["path"])
    keys = pa.array(["part"] * n, pa.string())
    items = pa.array(cols["partitionValues"], pa.string())
    offsets = pa.array(range(0, n + 1), pa.int32())
    pvs = pa.MapArray.from_arrays(offsets, keys, items)
    return pa.table(
        {
            "path": pa.array(cols["path"], pa.string()),
            "partitionValues": pvs,
            "size": pa.array(cols["size"], pa.int64()),
            "modificationTime": pa.array(cols["modificationTime"], pa.int64()),
            "dataChange": pa.array([True] * n, pa.bool_()),
            "stats": pa.array(cols["stats"], pa.string()),
        }
    )


def _gen_checkpoint_table(table: Path, n: int) -> None:
    """Commit 0 (commitInfo, protocol, metaData) and a classic checkpoint of version 0 holding
    protocol, metaData and ``n`` adds, plus ``_last_checkpoint``.

    Commit 0's JSON does not repeat the adds: a reader given a checkpoint at version V never
    reads commits <= V, as after a log cleanup.
    """
    from deltalog.checkpoints.writer import CheckpointContent, write_checkpoint
    from deltalog.logstores import LocalLogStore

    log_dir = table / "_delta_log"
    log_dir.mkdir(parents=True)
    rng = random.Random(SEED)
    table_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    _write_commit(
        log_dir,
        0,
        [
            {"commitInfo": _commit_info(0, n)},
            {"protocol": _protocol()},
            {"metaData": _metadata(table_id)},
        ],
    )
    t0 = time.perf_counter()
    adds = _adds_table(add_columns(0, n, rng))
    content = CheckpointContent(
        version=0,
        actions=[("protocol", _protocol()), ("metaData", _metadata(table_id))],
        adds=adds,
    )
    write_checkpoint(LocalLogStore(fsync=False), str(log_dir), content)
    size = (log_dir / f"{0:020d}.checkpoint.parquet").stat().st_size
    _log(f"  checkpoint: {n:,} adds, {size / 2**20:.1f} MiB in {time.perf_counter() - t0:.1f}s")


def _gen_json_table(table: Path, commits: int, per_commit: int) -> None:
    log_dir = table / "_delta_log"
    log_dir.mkdir(parents=True)
    rng = random.Random(SEED)
    table_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    for v in range(commits):
        actions: list[dict[str, Any]] = [{"commitInfo": _commit_info(v, per_commit)}]
        if v == 0:
            actions += [{"protocol": _protocol()}, {"metaData": _metadata(table_id)}]
        actions += _add_dicts(add_columns(v * per_commit, per_commit, rng))
        _write_commit(log_dir, v, actions)


def _gen_write_cp_table(table: Path, n: int, source: Path) -> None:
    """A copy of a checkpoint table of ``n`` files plus commit 1 with one more add."""
    shutil.copytree(source, table, ignore=shutil.ignore_patterns(MARKER))
    rng = random.Random(SEED + 1)
    actions: list[dict[str, Any]] = [{"commitInfo": _commit_info(1, 1)}]
    actions += _add_dicts(add_columns(n, 1, rng))
    _write_commit(table / "_delta_log", 1, actions)


def _read_marker(table: Path) -> dict[str, Any] | None:
    try:
        out: dict[str, Any] = json.loads((table / MARKER).read_text())
        return out
    except (OSError, ValueError):
        return None


def _verify_table(table: Path, w: Workload) -> dict[str, Any]:
    """Open the generated table with both engines; both must see every file at the version."""
    import deltalake

    import deltalog

    dl = deltalog.DeltaTable(str(table))
    rs = deltalake.DeltaTable(str(table))
    found = {
        "deltalog": (dl.version(), dl.files().num_rows),
        "delta-rs": (rs.version(), len(rs.file_uris())),
    }
    want = (w.expected_version, w.expected_files)
    for engine, got in found.items():
        if got != want:
            raise SystemExit(f"{table}: {engine} sees (version, files) {got}, expected {want}")
    return {k: list(v) for k, v in found.items()}


def ensure_table(data_dir: Path, w: Workload, all_ws: dict[str, Workload]) -> Path:
    """Generate ``w``'s table unless a complete one with the same parameters exists."""
    table = data_dir / w.table_dir
    params = w.params()
    marker = _read_marker(table)
    if marker is not None and marker.get("params") == params:
        return table
    if table.exists():
        shutil.rmtree(table)
    _log(f"[gen] {w.name}: {w.describe()} -> {table}")
    t0 = time.perf_counter()
    tmp = table.with_name(table.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    if w.kind == "checkpoint":
        _gen_checkpoint_table(tmp, w.files)
    elif w.kind == "json":
        _gen_json_table(tmp, w.commits, w.per_commit)
    else:
        source_w = Workload(f"cp_n{w.files}", "checkpoint", files=w.files)
        source = ensure_table(data_dir, source_w, all_ws)
        _gen_write_cp_table(tmp, w.files, source)
    tmp.rename(table)
    verified = _verify_table(table, w)
    (table / MARKER).write_text(json.dumps({"params": params, "verified": verified}, indent=1))
    _log(f"[gen] {w.name}: done in {time.perf_counter() - t0:.1f}s, verified {verified}")
    return table


def _warm(table: Path) -> None:
    """Read the log once so every measurement starts with it in the page cache."""
    for p in (table / "_delta_log").iterdir():
        if p.is_file():
            with p.open("rb") as fh:
                while fh.read(1 << 24):
                    pass


# --------------------------------------------------------------------------- child
def _maxrss_kib() -> int:
    """Peak resident set size of this process in KiB.

    ``VmHWM`` from ``/proc/self/status``, not ``getrusage().ru_maxrss``: Linux carries
    ``ru_maxrss`` over ``execve`` from the pre-exec image, and with ``vfork``/``posix_spawn`` that
    image is the *parent's*, so a child would report at least the parent's peak. ``VmHWM``
    belongs to the new address space and starts from zero at exec.
    """
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)  # KiB on Linux


def _cpu() -> tuple[float, float]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime, ru.ru_stime


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
    rss_base = _maxrss_kib()
    cpu0 = _cpu()
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
    cpu1 = _cpu()
    rss_peak = _maxrss_kib()
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


def prime_main(gib: float) -> None:
    """Write to ``gib`` GiB of fresh anonymous memory, then exit (see :func:`prime_memory`)."""
    import mmap

    n = int(gib * 2**30)
    chunk = bytes(64 * 2**20)
    m = mmap.mmap(-1, n)
    for _ in range(n // len(chunk)):
        m.write(chunk)
    m.close()


def prime_memory(gib: float) -> None:
    """Touch and free ``gib`` GiB in a throwaway process before a measurement.

    On a VM whose guest memory is backed lazily by the host (Firecracker here), the first touch
    of a guest page costs ~3 ms/MB of *system* time; later touches of the same page do not.
    Which pages a child gets is luck, so without this a 1.6 GB replay varied from 0.8 s to 4 s.
    Freed pages are reused first, so priming more than the largest child's peak makes runs
    stable and charges neither engine for the host's lazy allocation.
    """
    if gib > 0:
        subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--prime", str(gib)],
            check=True,
            timeout=600,
        )


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


def _fresh_copy(master: Path, scratch: Path) -> Path:
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(master, scratch, ignore=shutil.ignore_patterns(MARKER))
    _warm(scratch)
    return scratch


def measure(w: Workload, table: Path, repeat: int, scratch_root: Path) -> dict[str, Any]:
    runs: dict[str, list[dict[str, Any]]] = {e: [] for e in ENGINES}
    for rep in range(repeat):
        order = ENGINES if rep % 2 == 0 else ENGINES[::-1]  # alternate who goes first
        for engine in order:
            if w.kind == "write_checkpoint":
                path = _fresh_copy(table, scratch_root / f"{w.name}-{engine}")
            else:
                path = table
                _warm(table)
            res = run_child(engine, w, path, verify=rep == 0)
            if w.kind == "write_checkpoint":
                shutil.rmtree(path, ignore_errors=True)
            runs[engine].append(res)
            if "error" in res:
                _log(f"  {w.name} {engine} run {rep + 1}: ERROR\n{res['error']}")
            else:
                _log(
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


def _fmt(x: float | None, spec: str) -> str:
    return "ERR" if x is None else format(x, spec)


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
                _fmt(dl.get("seconds"), ".3f"),
                _fmt(rs.get("seconds"), ".3f"),
                _fmt(s["time_ratio"], ".2f"),
                _fmt(dl.get("rss_peak_mib"), ".0f"),
                _fmt(rs.get("rss_peak_mib"), ".0f"),
                _fmt(s["rss_ratio"], ".2f"),
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


def text_table(head: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    line = lambda r: " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True))  # noqa: E731
    return "\n".join([line(head), "-+-".join("-" * w for w in widths), *map(line, rows)])


def md_table(head: list[str], rows: list[list[str]]) -> str:
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def environment() -> dict[str, Any]:
    import deltalake
    import orjson
    import pyarrow

    import deltalog

    try:
        head = subprocess.run(
            ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        head = ""
    return {
        "commit": head or "unknown",
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "deltalog": deltalog.__version__,
        "deltalake": deltalake.__version__,
        "pyarrow": pyarrow.__version__,
        "orjson": orjson.__version__,
    }


def profile_workload(w: Workload, table: Path, out_dir: Path, scratch_root: Path) -> str:
    """Run deltalog once under cProfile in a child; return the top cumulative entries."""
    import pstats

    prof_file = out_dir / f"profile_{w.name}.prof"
    if w.kind == "write_checkpoint":
        path = _fresh_copy(table, scratch_root / f"{w.name}-profile")
    else:
        path = table
        _warm(table)
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
        _log(f"[run] {n}: {all_ws[n].describe()}, {repeat} run(s) per engine")
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

    end_commit = environment()["commit"]
    if end_commit != env["commit"]:
        _log(f"WARNING: the checkout changed during the run: {env['commit']} -> {end_commit}")
        env["commit"] = f"{env['commit']} -> {end_commit} (changed during the run!)"
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
    _log(f"wrote {out_dir / (stem + '.json')} and {out_dir / (stem + '.md')}")
    errors = any(s[e] is None for s in results for e in ENGINES)
    return 2 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
