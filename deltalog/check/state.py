"""The table state the checker replays, and its comparison with a checkpoint.

Unlike :mod:`deltalog.log.replay`, which keeps files columnar for speed, the checker keeps one
small record per live file: it must say which file, added in which version, is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from deltalog.check.findings import Findings
from deltalog.check.stats import physical_fields
from deltalog.errors import DeltaLogError, InvalidSchemaError
from deltalog.protocol.actions import Metadata, Protocol
from deltalog.protocol.schema import StructType

#: At most this many findings per kind of difference between a checkpoint and replay.
MISMATCH_LIMIT = 20


@dataclass(frozen=True, slots=True)
class LiveFile:
    """A live logical file: what a checkpoint must agree on, and where it was added."""

    path: str
    size: int
    partition_values: tuple[tuple[str, str | None], ...]
    version: int | None = field(default=None, compare=False)


@dataclass
class TableState:
    """The table as replay leaves it after one version.

    Attributes:
        files: Live files by reconciliation key (canonical path + deletion vector id).
        removed: Canonical paths of removed files still known (tombstones).
        fingerprints: Each live file's :func:`fingerprint`, by key: a checkpoint whose add
            rows have exactly these is known to agree with replay without a row being looked
            at again (what keeps ``check`` linear in the history).
    """

    protocol: Protocol | None = None
    metadata: Metadata | None = None
    files: dict[str, LiveFile] = field(default_factory=dict)
    fingerprints: dict[str, str] = field(default_factory=dict)
    removed: set[str] = field(default_factory=set)
    txns: dict[str, int] = field(default_factory=dict)
    domains: dict[str, str] = field(default_factory=dict)


#: Stands for a null in a :func:`fingerprint`.
NULL = "\x02"


def fingerprint(
    key: str, size: int, partition_values: Mapping[str, str | None], stats: str | None
) -> str:
    """One string for what a checkpoint's add row must repeat of a file's add action.

    The same as :func:`deltalog.check.checkpoints.arrow_fingerprints` computes for a
    checkpoint's rows: key, size, partition values in their order, and statistics.
    """
    values = "\x04".join(f"{k}\x03{NULL if v is None else v}" for k, v in partition_values.items())
    return f"{key}\x01{size}\x01{values}\x01{NULL if stats is None else stats}"


@dataclass(frozen=True, slots=True)
class Layout:
    """What partition values and statistics are checked against."""

    schema: StructType
    partition_columns: tuple[str, ...]
    physical: bool

    def partition_types(self) -> dict[str, Any]:
        """Partition column types by the key ``partitionValues`` uses."""
        return {
            key: f.type
            for key, f in physical_fields(self.schema, self.physical).items()
            if f.name in self.partition_columns
        }


class Layouts:
    """Layouts by metadata, each built (and its schema problems reported) once."""

    def __init__(self, findings: Findings) -> None:
        self._findings = findings
        self._cache: dict[tuple[str, str, str], Layout | None] = {}

    def of(self, metadata: Metadata, version: int, path: str) -> Layout | None:
        """The layout ``metadata`` defines; ``None`` (reported as bad-schema) if it has none."""
        mode = metadata.configuration.get("delta.columnMapping.mode") or "none"
        key = (metadata.schema_string or "", "\x00".join(metadata.partition_columns), mode)
        if key not in self._cache:
            self._cache[key] = self._build(metadata, mode != "none", version, path)
        return self._cache[key]

    def _build(self, metadata: Metadata, physical: bool, version: int, path: str) -> Layout | None:
        try:
            if not metadata.schema_string:
                raise InvalidSchemaError("metaData has no schemaString")
            schema = StructType.from_json_string(metadata.schema_string)
        except DeltaLogError as exc:
            self._findings.report("bad-schema", f"the schema does not parse: {exc}", version, path)
            return None
        missing = [c for c in metadata.partition_columns if c not in schema.names]
        if missing:
            self._findings.report(
                "bad-schema", f"partition columns {missing} are not in the schema", version, path
            )
            return None
        return Layout(schema, tuple(metadata.partition_columns), physical)


def compare_checkpoint(
    version: int,
    replayed: TableState,
    checkpoint: TableState,
    findings: Findings,
    *,
    same_files: bool = False,
) -> None:
    """Report every way checkpoint ``version`` differs from replay of the commits it covers.

    Args:
        version: The checkpoint's version.
        replayed: The state replay of the commits gives.
        checkpoint: The state the checkpoint gives.
        findings: Where differences go.
        same_files: The files are known to agree already (their fingerprints matched).
    """
    diffs: list[str] = []
    if _protocol_doc(replayed.protocol) != _protocol_doc(checkpoint.protocol):
        diffs.append("its protocol differs from the one replay gives")
    if _metadata_doc(replayed.metadata) != _metadata_doc(checkpoint.metadata):
        diffs.append("its metaData differs from the one replay gives")
    if replayed.txns != checkpoint.txns and not _expired_txns_only(replayed, checkpoint):
        diffs.append(f"its app ids {checkpoint.txns} differ from replay's {replayed.txns}")
    if replayed.domains != checkpoint.domains:
        diffs.append("its domain metadata differs from replay's")
    for message in diffs:
        findings.report("checkpoint-mismatch", f"checkpoint {version}: {message}", version, None)
    if same_files:
        return
    ours, theirs = replayed.files, checkpoint.files
    changed = sorted(k for k in ours.keys() & theirs.keys() if ours[k] != theirs[k])
    for keys, template in (
        (sorted(ours.keys() - theirs.keys()), "checkpoint {v} lacks live file {p!r}"),
        (sorted(theirs.keys() - ours.keys()), "checkpoint {v} has {p!r}, which is not live"),
        (changed, "checkpoint {v} has {p!r} with another size or partition values"),
    ):
        for key in keys[:MISMATCH_LIMIT]:
            path = (ours.get(key) or theirs[key]).path
            findings.report(
                "checkpoint-mismatch", template.format(v=version, p=path), version, path
            )
        if len(keys) > MISMATCH_LIMIT:
            findings.report(
                "checkpoint-mismatch",
                f"checkpoint {version}: {len(keys) - MISMATCH_LIMIT} more such files",
                version,
                None,
            )


def _expired_txns_only(replayed: TableState, checkpoint: TableState) -> bool:
    """The checkpoint lacks only app ids that ``delta.setTransactionRetentionDuration`` expired.

    Writers drop expired app ids from checkpoints; replay keeps only versions, not the
    ``lastUpdated`` times that decide expiry, so any subset is accepted when it is set.
    """
    configuration = replayed.metadata.configuration if replayed.metadata else {}
    return configuration.get("delta.setTransactionRetentionDuration") is not None and (
        checkpoint.txns.items() <= replayed.txns.items()
    )


def _protocol_doc(protocol: Protocol | None) -> Any:
    if protocol is None:
        return None
    return (
        protocol.min_reader_version,
        protocol.min_writer_version,
        sorted(protocol.reader_features or ()),
        sorted(protocol.writer_features or ()),
    )


def _metadata_doc(metadata: Metadata | None) -> Any:
    if metadata is None:
        return None
    try:
        schema = orjson.loads(metadata.schema_string or "null")
    except orjson.JSONDecodeError:
        schema = metadata.schema_string
    return (
        metadata.id,
        schema,
        list(metadata.partition_columns),
        dict(metadata.configuration or {}),
    )
