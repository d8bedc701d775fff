"""Helpers shared by tests: write Parquet files into a table directory, read logs."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from deltalog import AddFile, DeltaTable


def write_parquet(root: str | Path, relative: str, table: pa.Table) -> str:
    """Write ``table`` to ``root/relative`` (directories created); return ``relative``."""
    path = Path(root) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return relative


def parquet_on_disk(root: str | Path) -> set[str]:
    """Every Parquet data file under a table directory (``_delta_log`` left out)."""
    out: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != "_delta_log"]
        out.update(os.path.join(dirpath, f) for f in filenames if f.endswith(".parquet"))
    return out


def log_names(root: str | Path) -> list[str]:
    """Sorted names in ``_delta_log`` (hidden temp files included, ``.crc`` checksums not)."""
    return sorted(n for n in os.listdir(Path(root) / "_delta_log") if not n.endswith(".crc"))


def write_commit(root: str | Path, version: int, lines: list[bytes]) -> None:
    """Write raw commit lines as ``version`` (for building broken logs by hand)."""
    log = Path(root) / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_bytes(b"\n".join(lines) + b"\n")


def write_append_log(root: str | Path, commits: int, *, interval: int = 10) -> None:
    """Write a table of ``commits`` one-file appends with a checkpoint every ``interval``.

    The commit JSON is written directly and the checkpoints from a snapshot advanced in
    memory (no data files, no replay per commit), so a 20,000-commit log takes seconds. The
    table is partitioned by ``p`` and every add carries statistics.
    """
    import orjson

    from deltalog.log.replay import advance, replay
    from deltalog.log.segment import list_log
    from deltalog.log.storage import TableStorage
    from deltalog.maintenance.checkpointing import write_snapshot_checkpoint
    from deltalog.protocol.actions import parse_actions

    fields = [
        {"name": n, "type": t, "nullable": True, "metadata": {}}
        for n, t in (("id", "long"), ("p", "string"))
    ]
    t0 = 1_700_000_000_000
    first = [
        {"commitInfo": {"timestamp": t0, "operation": "CREATE TABLE"}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {
            "metaData": {
                "id": "append-log",
                "format": {"provider": "parquet", "options": {}},
                "schemaString": orjson.dumps({"type": "struct", "fields": fields}).decode(),
                "partitionColumns": ["p"],
                "configuration": {"delta.checkpointInterval": str(interval)},
                "createdTime": t0,
            }
        },
    ]
    write_commit(root, 0, [orjson.dumps(a) for a in first])
    storage = TableStorage.open(str(root))
    snapshot = replay(storage, list_log(storage))
    for v in range(1, commits + 1):
        stats = {"numRecords": 1, "minValues": {"id": v}, "maxValues": {"id": v}}
        add = {
            "path": f"p={v % 7}/part-{v:06d}.parquet",
            "partitionValues": {"p": str(v % 7)},
            "size": 100 + v,
            "modificationTime": t0 + v,
            "dataChange": True,
            "stats": orjson.dumps(stats | {"nullCount": {"id": 0}}).decode(),
        }
        lines = [orjson.dumps({"commitInfo": {"timestamp": t0 + v}}), orjson.dumps({"add": add})]
        write_commit(root, v, lines)
        data = b"\n".join(lines) + b"\n"
        snapshot = advance(snapshot, [(v, parse_actions(data, version=v, path=""), t0 + v)])
        if v % interval == 0:
            write_snapshot_checkpoint(storage, snapshot)


def one_row_add(path: str) -> AddFile:
    """An ``add`` of a (not necessarily existing) one-row file, for log-level tests."""
    return AddFile(
        path=path,
        partition_values={},
        size=1,
        modification_time=0,
        data_change=True,
        stats='{"numRecords":1}',
    )


def put_data_file(table: DeltaTable, relative: str) -> str:
    """Create a placeholder data file at ``relative`` through the table's store; return it.

    For log-level tests whose commit must find its file: a blind append moved past commits log
    cleanup removed refuses to add a file that is gone (a vacuum among them may have taken it).
    """
    storage = table._storage
    storage.store.write(storage.data_file(relative), b"PAR1", overwrite=True)
    return relative


def commit_one(table: DeltaTable, path: str) -> int:
    """Commit one :func:`one_row_add` through a transaction; the version it landed at."""
    tx = table.transaction()
    tx.add(one_row_add(path))
    return tx.commit()


Z85_ALPHABET = (
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
)


def z85(data: bytes) -> str:
    """Z85-encode ``data`` (zero-padded to whole 4-byte groups), as deletion vectors spell it."""
    data += b"\0" * (-len(data) % 4)
    out = []
    for i in range(0, len(data), 4):
        value = int.from_bytes(data[i : i + 4], "big")
        out.append("".join(Z85_ALPHABET[value // 85**k % 85] for k in range(4, -1, -1)))
    return "".join(out)


def dv_json(i: int) -> dict[str, object]:
    """A deletion vector descriptor (``u`` storage, inline path), distinct for each ``i``."""
    return {
        "storageType": "u",
        "pathOrInlineDv": f"ab^-aqEH.-t@S}}K{{vb[{i}",
        "offset": 1,
        "sizeInBytes": 36,
        "cardinality": 2,
    }
