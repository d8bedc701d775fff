"""What deltalog and delta-rs see of one table version, in the observation's shape.

Both run inside a probe process (:mod:`deltalog.compat.probe_main`), never in the caller's:
an engine that crashes takes only its own process down. An observation is a JSON object:

``version``; ``protocol`` (``minReaderVersion``, ``minWriterVersion``, ``readerFeatures``,
``writerFeatures``, features sorted, absent ones as ``[]``); ``schema`` (the parsed schema
string); ``partitionColumns``; ``configuration``; ``files`` (``path`` as the log holds it,
percent-encoded: :func:`relative_path` decodes it once; ``size``; ``partitionValues`` as
protocol strings), sorted by path; ``rows``;
``columns`` (:func:`deltalog.compat.canon.column_checksums`); ``history`` (``version``,
``operation``, ``inCommitTimestamp``), oldest first, of the latest version only (delta-rs
numbers the history of a time-travelled table from the loaded version down).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import unquote, urlparse

import orjson
import pyarrow as pa

from deltalog.compat.canon import column_checksums, partition_values


def relative_path(path: str, root: str) -> str:
    """A file's path as the log holds it (percent-encoded), decoded once, relative to the table.

    An absolute URI under the table root loses the root.
    """
    decoded = unquote(path)
    for base in {root, unquote(root)}:
        for prefix in (base, urlparse(base).path if "://" in base else f"file://{base}"):
            prefix = prefix.rstrip("/") + "/"
            if prefix != "/" and decoded.startswith(prefix):
                return decoded[len(prefix) :]
    return decoded


def protocol_view(
    reader: int, writer: int, rf: Iterable[str] | None, wf: Iterable[str] | None
) -> dict[str, Any]:
    """The protocol part of an observation."""
    return {
        "minReaderVersion": int(reader),
        "minWriterVersion": int(writer),
        "readerFeatures": sorted(rf or []),
        "writerFeatures": sorted(wf or []),
    }


def history_view(entries: Iterable[Mapping[str, Any]], upto: int) -> list[dict[str, Any]]:
    """The history part of an observation from commitInfo-like entries."""
    out = [
        {
            "version": int(e["version"]),
            "operation": e.get("operation"),
            "inCommitTimestamp": e.get("inCommitTimestamp"),
        }
        for e in entries
        if e.get("version") is not None and int(e["version"]) <= upto
    ]
    return sorted(out, key=lambda e: e["version"])


def observe_deltalog(
    uri: str, version: int | None, storage_options: Mapping[str, str] | None
) -> dict[str, Any]:
    """Deltalog's observation of ``uri`` at ``version`` (latest when ``None``)."""
    from deltalog.table import DeltaTable

    table = DeltaTable(uri, version=version, storage_options=dict(storage_options or {}))
    protocol = table.protocol()
    metadata = table.metadata()
    files = [
        {
            "path": f["path"],
            "size": f["size"],
            "partitionValues": dict(f["partition_values"] or []),
        }
        for f in table.files(with_stats=False).to_pylist()
    ]
    data = table.to_pyarrow_table()
    return {
        "version": table.version(),
        "protocol": protocol_view(
            protocol.min_reader_version,
            protocol.min_writer_version,
            protocol.reader_features,
            protocol.writer_features,
        ),
        "schema": orjson.loads(metadata.schema_string or "null"),
        "partitionColumns": list(metadata.partition_columns),
        "configuration": dict(metadata.configuration),
        "files": files,
        "rows": data.num_rows,
        "columns": column_checksums(data),
        **({"history": history_view(table.history(), table.version())} if version is None else {}),
    }


def observe_delta_rs(
    uri: str, version: int | None, storage_options: Mapping[str, str] | None
) -> dict[str, Any]:
    """delta-rs's (the ``deltalake`` package's) observation of ``uri`` at ``version``."""
    from deltalake import DeltaTable, QueryBuilder

    table = DeltaTable(uri, version=version, storage_options=dict(storage_options or {}) or None)
    protocol = table.protocol()
    metadata = table.metadata()
    adds = pa.table(table.get_add_actions(flatten=False))
    parts = adds.column("partition").to_pylist() if "partition" in adds.column_names else None
    files = []
    for i, f in enumerate(adds.select(["path", "size_bytes"]).to_pylist()):
        files.append(
            {
                "path": f["path"],
                "size": f["size_bytes"],
                "partitionValues": dict((parts[i] if parts else None) or {}),
            }
        )
    schema = orjson.loads(table.schema().to_json())
    for f in files:  # typed values -> protocol strings here: JSON has no decimals
        f["partitionValues"] = partition_values(f["partitionValues"], schema)
    reader = QueryBuilder().register("t", table).execute('SELECT * FROM "t"')
    data = pa.table(reader)
    return {
        "version": table.version(),
        "protocol": protocol_view(
            protocol.min_reader_version,
            protocol.min_writer_version,
            protocol.reader_features,
            protocol.writer_features,
        ),
        "schema": schema,
        "partitionColumns": list(metadata.partition_columns),
        "configuration": dict(metadata.configuration),
        "files": files,
        "rows": data.num_rows,
        "columns": column_checksums(data),
        **({"history": history_view(table.history(), table.version())} if version is None else {}),
    }
