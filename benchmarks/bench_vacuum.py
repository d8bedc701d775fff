"""VACUUM benchmark: deltalog against delta-rs (``deltalake``) on identical copies of one table.

Usage::

    .venv/bin/python benchmarks/bench_vacuum.py [--files 100000] [--removes 50000]
                                                [--repeat 1] [--out benchmarks/out]

The table (generated once under ``<out>/data``, reused while its parameters match) has
``--files`` live data files and ``--removes`` more that a commit removed long ago, all empty
files spread over 100 partition directories and last modified long ago; a checkpoint covers
the log. For each repeat, two fresh copies are made (``cp -a`` keeps the
modification times) and each engine vacuums its own copy in a child process that times only
opening the table and the vacuum (retention 0, retention check off, full listing):

* deltalog: ``DeltaTable(path).vacuum(0, dry_run=False, enforce_retention_duration=False)``;
* delta-rs: ``DeltaTable(path).vacuum(retention_hours=0, enforce_retention_duration=False,
  dry_run=False, full=True)``.

Both must delete exactly the removed files. The medians and their ratio (deltalog / delta-rs)
are printed and written to ``<out>/vacuum.json``.
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
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from a checkout without an installed package
    sys.path.insert(0, str(ROOT))

GENERATOR_VERSION = 1
MARKER = ".bench_params.json"
N_PARTITIONS = 100
OLD_S = 1_600_000_000  # file and removal times: long before any retention
SCHEMA_STRING = json.dumps(
    {
        "type": "struct",
        "fields": [
            {"name": "id", "type": "long", "nullable": True, "metadata": {}},
            {"name": "part", "type": "string", "nullable": True, "metadata": {}},
        ],
    },
    separators=(",", ":"),
)


def _line(action: dict[str, Any]) -> bytes:
    return json.dumps(action, separators=(",", ":")).encode() + b"\n"


def _path(i: int) -> str:
    return f"part={i % N_PARTITIONS:03d}/part-{i:07d}-{uuid.UUID(int=i)}.c000.snappy.parquet"


def generate(table: Path, files: int, removes: int) -> None:
    """Write the table: commit 0 (metadata), 1 (every add), 2 (the removes), checkpoint 2."""
    params = {"v": GENERATOR_VERSION, "files": files, "removes": removes}
    marker = table / MARKER
    if marker.exists() and json.loads(marker.read_text()) == params:
        return
    shutil.rmtree(table, ignore_errors=True)
    log = table / "_delta_log"
    log.mkdir(parents=True)
    for p in range(N_PARTITIONS):
        (table / f"part={p:03d}").mkdir()
    total = files + removes
    for i in range(total):
        path = table / _path(i)
        path.touch()
        os.utime(path, (OLD_S, OLD_S))
    info = {"timestamp": OLD_S * 1000, "operation": "WRITE", "operationParameters": {}}
    meta = {
        "id": str(uuid.UUID(int=total)),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": SCHEMA_STRING,
        "partitionColumns": ["part"],
        "configuration": {},
        "createdTime": OLD_S * 1000,
    }
    head = [{"commitInfo": info}, {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}]
    (log / f"{0:020d}.json").write_bytes(b"".join(map(_line, [*head, {"metaData": meta}])))
    with open(log / f"{1:020d}.json", "wb") as fh:
        fh.write(_line({"commitInfo": info}))
        for i in range(total):
            add = {
                "path": _path(i),
                "partitionValues": {"part": f"{i % N_PARTITIONS:03d}"},
                "size": 0,
                "modificationTime": OLD_S * 1000,
                "dataChange": True,
                "stats": '{"numRecords":0}',
            }
            fh.write(_line({"add": add}))
    with open(log / f"{2:020d}.json", "wb") as fh:
        fh.write(_line({"commitInfo": {**info, "operation": "DELETE"}}))
        for i in range(files, total):
            remove = {
                "path": _path(i),
                "deletionTimestamp": OLD_S * 1000,
                "dataChange": True,
                "extendedFileMetadata": True,
                "partitionValues": {"part": f"{i % N_PARTITIONS:03d}"},
                "size": 0,
            }
            fh.write(_line({"remove": remove}))
    for version in range(3):
        os.utime(log / f"{version:020d}.json", (OLD_S + version, OLD_S + version))
    from deltalog import DeltaTable

    DeltaTable(str(table), background_checkpoints=False).checkpoint()
    marker.write_text(json.dumps(params))


def child(engine: str, table: str) -> None:
    """Open and vacuum ``table`` with ``engine``; print seconds and files deleted as JSON."""
    import deltalake

    from deltalog import DeltaTable

    start = time.perf_counter()
    if engine == "deltalog":
        result = DeltaTable(table, background_checkpoints=False).vacuum(
            0, dry_run=False, enforce_retention_duration=False
        )
        deleted = result.num_files
    else:
        rs = deltalake.DeltaTable(table)
        deleted = len(
            rs.vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False, full=True)
        )
    seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "deleted": deleted}))


def _count_data_files(table: Path) -> int:
    return sum(len(names) for d, _, names in os.walk(table) if "_delta_log" not in d) - 1


def run_one(engine: str, source: Path, work: Path) -> dict[str, Any]:
    copy = work / engine
    subprocess.run(["rm", "-rf", str(copy)], check=True)
    subprocess.run(["cp", "-a", str(source), str(copy)], check=True)  # keeps modification times
    out = subprocess.run(
        [sys.executable, __file__, "--child", engine, str(copy)],
        check=True,
        capture_output=True,
        text=True,
    )
    doc: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    doc["remaining"] = _count_data_files(copy)
    shutil.rmtree(copy)
    return doc


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--removes", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    parser.add_argument("--child", nargs=2, metavar=("ENGINE", "TABLE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return 0
    source = args.out / "data" / f"vacuum_f{args.files}_r{args.removes}"
    began = time.perf_counter()
    generate(source, args.files, args.removes)
    print(f"table ready in {time.perf_counter() - began:.1f}s: {source}", flush=True)
    work = args.out / "work"
    work.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict[str, Any]]] = {"deltalog": [], "delta-rs": []}
    for r in range(args.repeat):
        for engine in ("deltalog", "delta-rs") if r % 2 == 0 else ("delta-rs", "deltalog"):
            doc = run_one(engine, source, work)
            runs[engine].append(doc)
            print(f"{engine:9} run {r + 1}: {doc}", flush=True)
            if doc["deleted"] != args.removes or doc["remaining"] != args.files:
                print(f"{engine} deleted the wrong files", file=sys.stderr)
                return 1
    medians = {e: statistics.median(d["seconds"] for d in docs) for e, docs in runs.items()}
    ratio = medians["deltalog"] / medians["delta-rs"]
    summary = {
        "files": args.files,
        "removes": args.removes,
        "repeat": args.repeat,
        "deltalog_s": round(medians["deltalog"], 3),
        "delta_rs_s": round(medians["delta-rs"], 3),
        "ratio": round(ratio, 3),
        "cpus": os.cpu_count(),
    }
    (args.out / "vacuum.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
