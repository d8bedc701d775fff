"""Helpers shared by tests: write Parquet files into a table directory, read logs."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def write_parquet(root: str | Path, relative: str, table: pa.Table) -> str:
    """Write ``table`` to ``root/relative`` (directories created); return ``relative``."""
    path = Path(root) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return relative


def log_names(root: str | Path) -> list[str]:
    """Sorted names in ``_delta_log`` (hidden temp files included)."""
    return sorted(os.listdir(Path(root) / "_delta_log"))


def write_commit(root: str | Path, version: int, lines: list[bytes]) -> None:
    """Write raw commit lines as ``version`` (for building broken logs by hand)."""
    log = Path(root) / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_bytes(b"\n".join(lines) + b"\n")
