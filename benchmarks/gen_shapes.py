"""The tables of the everyday-shapes rows (``bench_shapes.py``), generated once and reused.

JSON logs written the way other writers write them (:func:`encode`), the replay benchmark's
checkpoint tables (``gen_replay``) and copies of them rewritten as delta-spark 4.4 lays out a
checkpoint (``stats_parsed``) or moved to V2 checkpoints, and the small Parquet data files the
append rows commit. :func:`tables` builds what the selected rows need. See
``benchmarks/README.md`` ("Everyday log shapes").
"""

from __future__ import annotations

import json
import random
import shutil
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gen_replay
from harness import MARKER, log

GENERATOR_VERSION = 1
FORMATS = ("spark", "spaced", "reordered")
_OPTIONAL_NULLS = ("tags", "deletionVector", "baseRowId", "defaultRowCommitVersion")


# --------------------------------------------------------------------------- generation
def _reverse(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _reverse(obj[k]) for k in reversed(list(obj))}
    return obj


def encode(action: dict[str, Any], fmt: str) -> bytes:
    """One log line as a writer in format ``fmt`` would write it.

    ``spark``: compact, delta-spark's field order, nulls absent (what deltalog writes).
    ``spaced``: Python's ``json.dumps`` default separators (``{"add": {"path": ...}}``).
    ``reordered``: compact, every object's keys in reverse order, explicit ``null`` for the
    optional add fields.
    """
    import orjson

    if fmt == "spark":
        return orjson.dumps(action)
    if fmt == "spaced":
        return json.dumps(action).encode()
    body = dict(action)
    if "add" in body:
        body["add"] = {**body["add"], **dict.fromkeys(_OPTIONAL_NULLS)}
    return orjson.dumps(_reverse(body))


def write_json_table(table: Path, commits: int, per_commit: int, fmt: str) -> None:
    """``commits`` commits of ``per_commit`` adds; commitInfo last in ``reordered``."""
    log = table / "_delta_log"
    log.mkdir(parents=True)
    rng = random.Random(gen_replay.SEED)
    table_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
    for v in range(commits):
        actions: list[dict[str, Any]] = []
        if v == 0:
            actions += [
                {"protocol": gen_replay.protocol()},
                {"metaData": gen_replay.metadata(table_id)},
            ]
        actions += gen_replay.add_dicts(gen_replay.add_columns(v * per_commit, per_commit, rng))
        info = {"commitInfo": gen_replay.commit_info(v, per_commit)}
        actions = [*actions, info] if fmt == "reordered" else [info, *actions]
        (log / f"{v:020d}.json").write_bytes(b"".join(encode(a, fmt) + b"\n" for a in actions))


def ensure(data: Path, name: str, params: dict[str, Any], build: Callable[[Path], None]) -> Path:
    """A generated table, reused while its parameters match."""
    table = data / name
    params = {"generator": GENERATOR_VERSION, **params}
    try:
        if json.loads((table / MARKER).read_text()) == params:
            return table
    except (OSError, ValueError):
        pass
    shutil.rmtree(table, ignore_errors=True)
    tmp = table.with_name(table.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    t0 = time.perf_counter()
    build(tmp)
    tmp.rename(table)
    (table / MARKER).write_text(json.dumps(params))
    log(f"[gen] {name} in {time.perf_counter() - t0:.1f}s")
    return table


def checkpoint_table(data: Path, n: int) -> Path:
    """bench_replay's checkpoint table of ``n`` adds (version 0)."""
    w = gen_replay.Workload(f"cp_n{n}", "checkpoint", files=n)
    return gen_replay.ensure_table(data, w, {})


def write_struct_stats_table(source: Path, table: Path) -> None:
    """A copy of ``source`` whose checkpoint is laid out as delta-spark 4.4 writes one.

    delta-spark writes ``delta.checkpoint.writeStatsAsStruct`` by default: after ``stats`` the
    ``add`` struct holds ``partitionValues_parsed`` and ``stats_parsed`` (typed statistics).
    The rewrite goes row group by row group, keeping the source's row groups.
    """
    import pyarrow as pa
    import pyarrow.json as pj
    import pyarrow.parquet as pq

    bounds = pa.struct([("id", pa.int64()), ("value", pa.float64()), ("name", pa.string())])
    counts = pa.struct([("id", pa.int64()), ("value", pa.int64()), ("name", pa.int64())])
    typed = pa.struct(
        [
            ("numRecords", pa.int64()),
            ("minValues", bounds),
            ("maxValues", bounds),
            ("nullCount", counts),
        ]
    )
    shutil.copytree(source, table, ignore=shutil.ignore_patterns(MARKER))
    (path,) = (table / "_delta_log").glob("*.checkpoint.parquet")
    reader = pq.ParquetFile(path)
    writer = None
    tmp = path.with_suffix(".tmp")
    for group in range(reader.metadata.num_row_groups):
        t = reader.read_row_group(group)
        add = t.column("add").combine_chunks()
        stats = add.field("stats")
        lines = "\n".join(s if s is not None else "{}" for s in stats.to_pylist()).encode()
        options = pj.ParseOptions(explicit_schema=pa.schema(list(typed)))
        parsed = pj.read_json(pa.BufferReader(lines), parse_options=options).combine_chunks()
        stats_parsed = pa.StructArray.from_arrays(
            [parsed.column(f.name).chunk(0) for f in typed],
            fields=list(typed),
            mask=stats.is_null(),
        )
        parts = [
            None if m is None else dict(m)["part"] for m in add.field("partitionValues").to_pylist()
        ]
        pv_parsed = pa.StructArray.from_arrays(
            [pa.array(parts, pa.string())], names=["part"], mask=add.is_null()
        )
        fields = [add.type.field(i) for i in range(add.type.num_fields)]
        fields += [
            pa.field("partitionValues_parsed", pv_parsed.type),
            pa.field("stats_parsed", typed),
        ]
        children = [add.field(i) for i in range(add.type.num_fields)] + [pv_parsed, stats_parsed]
        rebuilt = pa.StructArray.from_arrays(children, fields=fields, mask=add.is_null())
        t = t.set_column(t.schema.get_field_index("add"), "add", rebuilt)
        if writer is None:
            writer = pq.ParquetWriter(tmp, t.schema, compression="snappy")
        writer.write_table(t, row_group_size=max(1, t.num_rows))
    assert writer is not None
    writer.close()
    tmp.replace(path)


def write_rs_checkpoint_table(source: Path, table: Path) -> None:
    """A copy of ``source`` plus one commit, checkpointed by delta-rs at that version.

    delta-rs writes its checkpoint as one row group (uncompressed, dictionary-encoded), the
    layout deltalog reads column by column side by side.
    """
    import deltalake

    n = int(json.loads((source / MARKER).read_text())["params"]["files"])
    gen_replay.gen_write_cp_table(table, n, source)
    deltalake.DeltaTable(str(table)).create_checkpoint()


def write_v2_table(source: Path, table: Path) -> None:
    """A copy of ``source`` moved to ``delta.checkpointPolicy=v2``, with a V2 checkpoint.

    Version ``n+1`` adds the ``v2Checkpoint`` feature and the property; the checkpoint of it is
    written with sidecars of :data:`deltalog.maintenance.sidecar_reuse.MAX_SIDECAR_ADDS` adds.
    """
    import deltalog
    from deltalog.protocol.actions import Protocol

    shutil.copytree(source, table, ignore=shutil.ignore_patterns(MARKER))
    t = deltalog.DeltaTable(str(table))
    old = t.protocol()
    writer = {"appendOnly", "invariants", *(old.writer_features or ()), "v2Checkpoint"}
    reader = {*(old.reader_features or ()), "v2Checkpoint"}
    with t.transaction("SET TBLPROPERTIES") as tx:
        tx.update_protocol(Protocol(3, 7, sorted(reader), sorted(writer)))
        tx.update_metadata(configuration={"delta.checkpointPolicy": "v2"})
    t.checkpoint()


def write_data_files(table: Path, count: int) -> list[str]:
    """``count`` small Parquet files (10 rows, the bench schema) under ``part=K/``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = []
    for i in range(count):
        part = i % gen_replay.N_PARTITIONS
        rel = f"part={part}/bench-{i:06d}-{uuid.uuid4()}.parquet"
        (table / f"part={part}").mkdir(exist_ok=True)
        rows = pa.table(
            {
                "id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                "value": pa.array([float(j) for j in range(10)], pa.float64()),
                "name": pa.array([f"n{j}" for j in range(10)], pa.string()),
            }
        )
        pq.write_table(rows, table / rel)
        out.append(rel)
    return out


def tables(data: Path, quick: bool, needed: set[str]) -> dict[str, Path]:
    """The tables named in ``needed`` (the ``table`` keys of the rows), built when missing."""
    k = 10 if quick else 1
    out: dict[str, Path] = {}
    for fmt in FORMATS:
        key = f"json10_{fmt}"
        if key in needed:
            n = 100_000 // k
            out[key] = ensure(
                data,
                f"shape_json_c10_a{n}_{fmt}",
                {"n": n, "fmt": fmt},
                lambda t, n=n, fmt=fmt: write_json_table(t, 10, n, fmt),
            )
    if "json100" in needed:
        n = 10_000 // k
        out["json100"] = ensure(
            data, f"shape_json_c100_a{n}", {"n": n}, lambda t: write_json_table(t, 100, n, "spark")
        )
    if "cp_big" in needed:
        out["cp_big"] = checkpoint_table(data, 1_000_000 // k)
    derived = {
        "cp_big_struct": ("struct", write_struct_stats_table),
        "cp_big_v2": ("v2", write_v2_table),
        "cp_big_rs": ("rs", write_rs_checkpoint_table),
    }
    for key, (suffix, write) in derived.items():  # copies of cp_big, rewritten
        if key in needed:
            big = 1_000_000 // k
            source = checkpoint_table(data, big)
            out[key] = ensure(
                data,
                f"cp_n{big}_{suffix}",
                {"n": big, "generator": gen_replay.GENERATOR_VERSION},
                lambda t, write=write, source=source: write(source, t),
            )
    if "cpw_big_struct" in needed:  # the struct table plus one commit, to checkpoint again
        big = 1_000_000 // k
        source = tables(data, quick, {"cp_big_struct"})["cp_big_struct"]
        out["cpw_big_struct"] = ensure(
            data,
            f"cpw_n{big}_struct",
            {"n": big, "generator": gen_replay.GENERATOR_VERSION},
            lambda t: gen_replay.gen_write_cp_table(t, big, source),
        )
    if "cp_small" in needed:
        out["cp_small"] = checkpoint_table(data, 1000)
    return out
