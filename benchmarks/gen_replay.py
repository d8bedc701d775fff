"""The synthetic Delta logs the replay rows read, and the add layout every benchmark shares.

Tables without data files: schema ``id long, value double, name string, part string``,
partitioned by ``part`` (100 values), protocol (1, 2); every add has a delta-spark-style path,
``partitionValues``, size, mtime, ``dataChange`` and a ~150-byte ``stats`` JSON string
(:func:`add_columns`). Generation is deterministic (fixed seed); each table directory gets a
``.bench_params.json`` marker and is reused while the parameters match (:func:`ensure_table`).
``bench_commit`` (``gen_commit``) and ``bench_shapes`` (``gen_shapes``) build their tables from
these pieces too. See ``benchmarks/README.md``.
"""

from __future__ import annotations

import json
import random
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness import MARKER, log

# Bump when the generated layout changes: forces regeneration. 2: checkpoints written by
# deltalog keep null counts for the optional fields of adds (the reader skips those columns).
GENERATOR_VERSION = 2

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


# --------------------------------------------------------------------------- tables
@dataclass(frozen=True)
class Workload:
    """A replay workload's table (what :func:`ensure_table` builds) and its row's targets."""

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


# --------------------------------------------------------------------------- generation


def protocol() -> dict[str, Any]:
    return {"minReaderVersion": 1, "minWriterVersion": 2}


def metadata(table_id: str) -> dict[str, Any]:
    return {
        "id": table_id,
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA_STRING,
        "partitionColumns": ["part"],
        "configuration": {},
        "createdTime": BASE_TS,
    }


def commit_info(version: int, n_adds: int, operation: str = "WRITE") -> dict[str, Any]:
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


def add_rows(cols: dict[str, list[Any]]) -> Iterator[tuple[str, str, int, int, str]]:
    """(path, part, size, modificationTime, stats) of each add in :func:`add_columns`' output."""
    return zip(
        cols["path"],
        cols["partitionValues"],
        cols["size"],
        cols["modificationTime"],
        cols["stats"],
        strict=True,
    )


def add_dicts(cols: dict[str, list[Any]]) -> Iterator[dict[str, Any]]:
    """The adds as log actions (``{"add": {...}}``), for JSON commits."""
    for path, part, size, mtime, stats in add_rows(cols):
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


def delta_rs_adds(cols: dict[str, list[Any]]) -> list[Any]:
    """The adds as delta-rs ``AddAction`` objects, to commit with ``create_write_transaction``."""
    from deltalake.transaction import AddAction

    return [
        AddAction(
            path=p,
            size=size,
            partition_values={"part": part},
            modification_time=mtime,
            data_change=True,
            stats=stats,
        )
        for p, part, size, mtime, stats in add_rows(cols)
    ]


def write_commit(log_dir: Path, version: int, actions: list[dict[str, Any]]) -> None:
    import orjson

    data = b"".join(orjson.dumps(a) + b"\n" for a in actions)
    (log_dir / f"{version:020d}.json").write_bytes(data)


def adds_table(cols: dict[str, list[Any]]) -> Any:
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


def gen_checkpoint_table(table: Path, n: int) -> None:
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
    write_commit(
        log_dir,
        0,
        [
            {"commitInfo": commit_info(0, n)},
            {"protocol": protocol()},
            {"metaData": metadata(table_id)},
        ],
    )
    t0 = time.perf_counter()
    adds = adds_table(add_columns(0, n, rng))
    content = CheckpointContent(
        version=0,
        actions=[("protocol", protocol()), ("metaData", metadata(table_id))],
        adds=adds,
    )
    write_checkpoint(LocalLogStore(fsync=False), str(log_dir), content)
    size = (log_dir / f"{0:020d}.checkpoint.parquet").stat().st_size
    log(f"  checkpoint: {n:,} adds, {size / 2**20:.1f} MiB in {time.perf_counter() - t0:.1f}s")


def gen_json_table(table: Path, commits: int, per_commit: int) -> None:
    log_dir = table / "_delta_log"
    log_dir.mkdir(parents=True)
    rng = random.Random(SEED)
    table_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    for v in range(commits):
        actions: list[dict[str, Any]] = [{"commitInfo": commit_info(v, per_commit)}]
        if v == 0:
            actions += [{"protocol": protocol()}, {"metaData": metadata(table_id)}]
        actions += add_dicts(add_columns(v * per_commit, per_commit, rng))
        write_commit(log_dir, v, actions)


def gen_write_cp_table(table: Path, n: int, source: Path) -> None:
    """A copy of a checkpoint table of ``n`` files plus commit 1 with one more add."""
    shutil.copytree(source, table, ignore=shutil.ignore_patterns(MARKER))
    rng = random.Random(SEED + 1)
    actions: list[dict[str, Any]] = [{"commitInfo": commit_info(1, 1)}]
    actions += add_dicts(add_columns(n, 1, rng))
    write_commit(table / "_delta_log", 1, actions)


def read_marker(table: Path) -> dict[str, Any] | None:
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
    marker = read_marker(table)
    if marker is not None and marker.get("params") == params:
        return table
    if table.exists():
        shutil.rmtree(table)
    log(f"[gen] {w.name}: {w.describe()} -> {table}")
    t0 = time.perf_counter()
    tmp = table.with_name(table.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    if w.kind == "checkpoint":
        gen_checkpoint_table(tmp, w.files)
    elif w.kind == "json":
        gen_json_table(tmp, w.commits, w.per_commit)
    else:
        source_w = Workload(f"cp_n{w.files}", "checkpoint", files=w.files)
        source = ensure_table(data_dir, source_w, all_ws)
        gen_write_cp_table(tmp, w.files, source)
    tmp.rename(table)
    verified = _verify_table(table, w)
    (table / MARKER).write_text(json.dumps({"params": params, "verified": verified}, indent=1))
    log(f"[gen] {w.name}: done in {time.perf_counter() - t0:.1f}s, verified {verified}")
    return table
