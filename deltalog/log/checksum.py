"""Version checksum files: ``_delta_log/<version>.crc``, as delta-spark writes them.

After a commit lands, the writer may add a small JSON file summarising the table at that
version: ``tableSizeBytes``, ``numFiles``, ``numMetadata``, ``numProtocol``, ``metadata``,
``protocol``, the commit's ``txnId`` and, on tables with in-commit timestamps,
``inCommitTimestampOpt``. A file-size histogram is read under either of its names
(``fileSizeHistogram``, or delta-spark's legacy ``histogramOpt``) and kept up to date when the
previous checksum has one.

A checksum is derived from the previous version's checksum plus this commit's actions, so it
costs O(actions) whatever the table's size; when there is none, from the snapshot the writer
read if that snapshot's files are in memory already (and no other commit landed in between);
otherwise no checksum is written. The checksums this process wrote last are remembered (a
checksum file is never overwritten, so a remembered one stays what the file holds), so a
writer committing repeatedly does not read back its own previous checksum. A checksum is
created only if absent, and any failure is logged:
a checksum never fails the commit it describes. Fields deltalog cannot keep exact cheaply
(``setTransactions``, ``domainMetadata``, ``allFiles``, deleted-record counts) are left out,
which readers treat as unknown.
"""

from __future__ import annotations

import bisect
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.logstores import FileAlreadyExistsError, LogFileNotFoundError
from deltalog.protocol.actions import Action, AddFile, CommitInfo, Metadata, Protocol, RemoveFile

_log = logging.getLogger(__name__)

_HISTOGRAM_KEYS = ("fileSizeHistogram", "histogramOpt")
_REMEMBERED = 64  # checksums this process wrote, by (log directory, version)


def checksum_name(version: int) -> str:
    """``<version>.crc``, zero-padded as commit files are."""
    return f"{version:020d}.crc"


@dataclass(frozen=True)
class VersionChecksum:
    """The fields of a ``.crc`` file deltalog reads and checks.

    Attributes:
        table_size_bytes: Total size of the live files.
        num_files: Number of live files.
        metadata: The ``metadata`` object as written.
        protocol: The ``protocol`` object as written.
        in_commit_timestamp: ``inCommitTimestampOpt``, when present.
        histogram: The file-size histogram (under either name), when present.
        raw: The whole JSON object.
    """

    table_size_bytes: int
    num_files: int
    metadata: dict[str, Any]
    protocol: dict[str, Any]
    in_commit_timestamp: int | None
    histogram: dict[str, Any] | None
    raw: dict[str, Any]

    @classmethod
    def from_body(cls, raw: dict[str, Any]) -> VersionChecksum:
        """The checksum a JSON object describes.

        Raises:
            ValueError: Required fields are missing or of the wrong type.
        """
        size, files = raw.get("tableSizeBytes"), raw.get("numFiles")
        metadata, protocol = raw.get("metadata"), raw.get("protocol")
        if not isinstance(size, int) or not isinstance(files, int):
            raise ValueError("tableSizeBytes and numFiles must be integers")
        if not isinstance(metadata, dict) or not isinstance(protocol, dict):
            raise ValueError("metadata and protocol must be objects")
        ict = raw.get("inCommitTimestampOpt")
        histogram = next((raw[k] for k in _HISTOGRAM_KEYS if isinstance(raw.get(k), dict)), None)
        return cls(
            table_size_bytes=size,
            num_files=files,
            metadata=metadata,
            protocol=protocol,
            in_commit_timestamp=ict if isinstance(ict, int) else None,
            histogram=histogram,
            raw=raw,
        )

    @classmethod
    def parse(cls, data: bytes) -> VersionChecksum:
        """Parse a ``.crc`` file.

        Raises:
            ValueError: Not JSON, or required fields are missing or of the wrong type.
        """
        try:
            raw = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise ValueError("not a JSON object")
        return cls.from_body(raw)


class _Remembered:
    """The last checksums this process wrote, by (log directory, version); thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[str, int], VersionChecksum] = OrderedDict()

    def get(self, storage: TableStorage, version: int) -> VersionChecksum | None:
        with self._lock:
            return self._items.get((storage.log_path, version))

    def put(self, storage: TableStorage, version: int, checksum: VersionChecksum) -> None:
        with self._lock:
            self._items[(storage.log_path, version)] = checksum
            while len(self._items) > _REMEMBERED:
                self._items.popitem(last=False)


_remembered = _Remembered()


def read_checksum(storage: TableStorage, version: int) -> VersionChecksum | None:
    """The checksum of ``version``, or ``None`` when there is none or it does not parse."""
    try:
        data = storage.read_log_file(checksum_name(version))
    except (LogFileNotFoundError, FileNotFoundError):
        return None
    try:
        return VersionChecksum.parse(data)
    except ValueError:
        _log.warning("ignoring unreadable checksum of version %d", version)
        return None


def _update_histogram(
    histogram: dict[str, Any],
    adds: Sequence[AddFile],
    removes: Sequence[RemoveFile],
    replaced: Sequence[int] = (),
) -> dict[str, Any] | None:
    """The histogram after this commit, or ``None`` when it cannot be kept exact."""
    bounds, counts, sizes = (
        histogram.get("sortedBinBoundaries"),
        histogram.get("fileCounts"),
        histogram.get("totalBytes"),
    )
    if not (isinstance(bounds, list) and isinstance(counts, list) and isinstance(sizes, list)):
        return None
    if not (len(bounds) == len(counts) == len(sizes)) or not bounds:
        return None
    counts, sizes = list(counts), list(sizes)
    changes = [(a.size, 1) for a in adds] + [(r.size or 0, -1) for r in removes]
    changes += [(size, -1) for size in replaced]
    for size, sign in changes:
        at = bisect.bisect_right(bounds, size) - 1
        if at < 0:
            return None
        counts[at] += sign
        sizes[at] += sign * size
    return {"sortedBinBoundaries": bounds, "fileCounts": counts, "totalBytes": sizes}


def next_checksum(
    base: VersionChecksum | None,
    snapshot: Snapshot | None,
    actions: Sequence[Action],
    info: CommitInfo,
    replaced: Sequence[int] = (),
) -> dict[str, Any] | None:
    """The checksum after a commit of ``actions`` on ``base`` (else on ``snapshot``'s files).

    ``replaced`` holds the sizes of live files the commit's adds replace (re-added without a
    remove): those adds are not more files.

    Returns ``None`` when neither gives exact totals: no base, a snapshot whose files are not
    in memory, or a remove without its size.
    """
    adds = [a for a in actions if isinstance(a, AddFile)]
    removes = [a for a in actions if isinstance(a, RemoveFile)]
    if any(r.size is None for r in removes):
        return None
    new_metadata = next((a for a in actions if isinstance(a, Metadata)), None)
    new_protocol = next((a for a in actions if isinstance(a, Protocol)), None)
    histogram = None
    if base is not None:
        files, size = base.num_files, base.table_size_bytes
        metadata: dict[str, Any] = base.metadata
        protocol: dict[str, Any] = base.protocol
        if base.histogram is not None:
            histogram = _update_histogram(base.histogram, adds, removes, replaced)
    elif snapshot is not None and snapshot.file_state.is_merged:
        files, size = snapshot.num_files, snapshot.size_in_bytes
        metadata = snapshot.metadata.to_json_dict()
        protocol = snapshot.protocol.to_json_dict()
    else:
        return None
    files += len(adds) - len(removes) - len(replaced)
    size += sum(a.size for a in adds) - sum(r.size or 0 for r in removes) - sum(replaced)
    if files < 0 or size < 0:
        return None
    body: dict[str, Any] = {}
    if isinstance(info.extra.get("txnId"), str):
        body["txnId"] = info.extra["txnId"]
    body |= {
        "tableSizeBytes": size,
        "numFiles": files,
        "numMetadata": 1,
        "numProtocol": 1,
    }
    if info.in_commit_timestamp is not None:
        body["inCommitTimestampOpt"] = info.in_commit_timestamp
    body["metadata"] = new_metadata.to_json_dict() if new_metadata else metadata
    body["protocol"] = new_protocol.to_json_dict() if new_protocol else protocol
    if histogram is not None:
        body["histogramOpt"] = histogram
    return body


def write_checksum(storage: TableStorage, version: int, body: dict[str, Any]) -> bool:
    """Create ``<version>.crc`` unless it exists; ``False`` when it did."""
    try:
        # A hint (readers ignore a missing or unreadable one), so it need not be durable.
        storage.store.create_hint(storage.log_file(checksum_name(version)), orjson.dumps(body))
    except FileAlreadyExistsError:
        return False
    _remembered.put(storage, version, VersionChecksum.from_body(body))
    return True


def write_checksum_after(
    storage: TableStorage,
    version: int,
    actions: Sequence[Action],
    info: CommitInfo,
    read_snapshot: Snapshot,
    winners: Sequence[object],
    replaced: Sequence[int] = (),
) -> None:
    """Write the checksum of a commit that landed at ``version``; never raises.

    Args:
        storage: The table's storage.
        version: The committed version.
        actions: The commit's actions other than ``commitInfo``.
        info: Its ``commitInfo``.
        read_snapshot: The snapshot the transaction read (used only when no other commit
            landed in between and no checksum of ``version - 1`` exists).
        winners: Commits that landed between ``read_snapshot`` and ``version``.
        replaced: Sizes of the live files the commit's adds replace.
    """
    try:
        base = None
        if version > 0:
            base = _remembered.get(storage, version - 1)
            if base is None or base.metadata.get("id") != read_snapshot.metadata.id:
                base = read_checksum(storage, version - 1)  # (a table recreated at the path)
        snapshot = read_snapshot if not winners and read_snapshot.version == version - 1 else None
        body = next_checksum(base, snapshot, actions, info, replaced)
        if body is not None:
            write_checksum(storage, version, body)
    except Exception:  # a checksum is an optimisation: the commit stands without it
        _log.warning("could not write the checksum of version %d", version, exc_info=True)


def write_first_checksum(
    storage: TableStorage, info: CommitInfo, metadata: Metadata, protocol: Protocol
) -> None:
    """Write the checksum of a new table's version 0; never raises."""
    try:
        empty = VersionChecksum(
            0, 0, metadata.to_json_dict(), protocol.to_json_dict(), None, None, {}
        )
        body = next_checksum(empty, None, [], info)
        if body is not None:
            write_checksum(storage, 0, body)
    except Exception:  # a checksum is an optimisation: the table stands without it
        _log.warning("could not write the checksum of version 0", exc_info=True)
