"""A table's state at one version."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

import pyarrow as pa

from deltalog.actions import DomainMetadata, Metadata, Protocol, Txn
from deltalog.errors import InvalidSchemaError
from deltalog.schema import StructType


@dataclass(frozen=True)
class Snapshot:
    """Protocol, metadata and live files of a table at ``version``.

    Attributes:
        version: The table version.
        protocol: The protocol in force.
        metadata: The table metadata in force.
        files: Live logical files as an Arrow table (see ``replay.FILES_SCHEMA``).
        tombstones: Remove actions still kept as tombstones (``replay.TOMBSTONES_SCHEMA``).
        txns: Latest ``txn`` per application id.
        domains: Latest non-removed domain metadata per domain.
        timestamp: Commit time of ``version`` in ms (in-commit timestamp where the table has
            them, else the commit file's modification time).
        checkpoint_version: Version of the checkpoint the replay started from, if any.
    """

    version: int
    protocol: Protocol
    metadata: Metadata
    files: pa.Table
    tombstones: pa.Table
    txns: Mapping[str, Txn] = field(default_factory=dict)
    domains: Mapping[str, DomainMetadata] = field(default_factory=dict)
    timestamp: int = 0
    checkpoint_version: int | None = None

    @cached_property
    def schema(self) -> StructType:
        """The table schema.

        Raises:
            InvalidSchemaError: The metadata has no (or an invalid) schema string.
        """
        if not self.metadata.schema_string:
            raise InvalidSchemaError(f"table metadata at version {self.version} has no schema")
        return StructType.from_json_string(self.metadata.schema_string)

    @property
    def partition_columns(self) -> list[str]:
        """Partition column names, in order."""
        return list(self.metadata.partition_columns)

    @property
    def configuration(self) -> Mapping[str, str | None]:
        """Table properties."""
        return self.metadata.configuration

    @property
    def num_files(self) -> int:
        """Number of live logical files."""
        return int(self.files.num_rows)

    @property
    def size_in_bytes(self) -> int:
        """Total size of live files."""
        if not self.files.num_rows:
            return 0
        total = pa.compute.sum(self.files.column("size")).as_py()
        return int(total or 0)
