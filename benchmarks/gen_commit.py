"""The master tables of the commit benchmark, generated once and copied for every run.

Built from ``gen_replay``'s JSON commits (the same add layout as the replay tables) and reused
while their parameters match. See ``benchmarks/README.md`` ("Commit throughput").
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import gen_replay
from harness import MARKER, log

GENERATOR_VERSION = 1  # bump when the generated layout changes: forces regeneration


def _master_params(kind: str, version: int) -> dict[str, Any]:
    return {
        "generator": GENERATOR_VERSION,
        "replay_generator": gen_replay.GENERATOR_VERSION,
        "kind": kind,
        "version": version,
        "seed": gen_replay.SEED,
    }


def _verify_master(table: Path, version: int, n_files: int) -> dict[str, Any]:
    """Both engines must open the master table at ``version`` with ``n_files`` live files."""
    import deltalake

    import deltalog

    dl = deltalog.DeltaTable(str(table))
    rs = deltalake.DeltaTable(str(table))
    found = {
        "deltalog": (dl.version(), dl.snapshot.num_files),
        "delta-rs": (rs.version(), rs.get_add_actions().num_rows),
    }
    for engine, got in found.items():
        if got != (version, n_files):
            raise SystemExit(
                f"{table}: {engine} sees (version, files) {got}, want {version, n_files}"
            )
    return {k: list(v) for k, v in found.items()}


def ensure_master(data_dir: Path, kind: str, version: int) -> Path:
    """Generate (once) the master table a workload copies for every run.

    ``single``: versions 0..``version`` written as JSON commits with one add each (commit 0 also
    holds protocol (1, 2) and metaData: no table properties, partitioned by ``part``), plus a
    classic checkpoint of the head version written by deltalog and ``_last_checkpoint``, so the
    head has ``version + 1`` live files. ``contention``: commit 0 only (empty table).
    """
    name = f"commit_single_v{version}" if kind == "single" else "commit_empty"
    table = data_dir / name
    params = _master_params(kind, version)
    marker = gen_replay.read_marker(table)
    if marker is not None and marker.get("params") == params:
        return table
    if table.exists():
        shutil.rmtree(table)
    tmp = table.with_name(table.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    t0 = time.perf_counter()
    log(f"[gen] {name}: head version {version}")
    if kind == "single":
        gen_replay.gen_json_table(tmp, version + 1, 1)
        import deltalog

        deltalog.DeltaTable(str(tmp)).checkpoint()
        n_files = version + 1
    else:
        gen_replay.gen_json_table(tmp, 1, 0)
        n_files = 0
    tmp.rename(table)
    verified = _verify_master(table, version, n_files)
    (table / MARKER).write_text(json.dumps({"params": params, "verified": verified}, indent=1))
    log(f"[gen] {name}: done in {time.perf_counter() - t0:.1f}s, verified {verified}")
    return table
