"""Checking ``<version>.crc`` files against the replayed table state.

A checksum states the number of live files, their total size, the metadata and the protocol
at its version (:mod:`deltalog.log.checksum`). Each one found is compared with replay: its file
count, metadata id and protocol always; its total size for the newest
:data:`SIZE_CHECKS` checksums (summing sizes costs O(files), so checking every checksum of a
long history would make the check quadratic).
"""

from __future__ import annotations

from deltalog.check.findings import Findings
from deltalog.check.state import TableState
from deltalog.log.checksum import VersionChecksum
from deltalog.log.storage import TableStorage
from deltalog.logstores import LogFileNotFoundError
from deltalog.protocol.actions import Protocol

#: How many of the newest checksums have their ``tableSizeBytes`` checked.
SIZE_CHECKS = 50


def _features(body: dict[str, object], key: str) -> set[str]:
    value = body.get(key)
    return {str(v) for v in value} if isinstance(value, list) else set()


def check_checksum(
    storage: TableStorage,
    version: int,
    name: str,
    state: TableState,
    findings: Findings,
    *,
    check_size: bool,
) -> bool:
    """Compare ``name`` (the checksum of ``version``) with ``state``; ``False`` if unreadable."""
    path = storage.log_file(name)
    try:
        data = storage.read_log_file(name)
    except LogFileNotFoundError:
        return False  # removed by log cleanup after the listing
    try:
        crc = VersionChecksum.parse(data)
    except ValueError as exc:
        findings.report("bad-checksum", f"checksum of version {version}: {exc}", version, path)
        return False
    problems = []
    if crc.num_files != len(state.files):
        problems.append(f"numFiles {crc.num_files}, replay has {len(state.files)}")
    if check_size:
        size = sum(f.size for f in state.files.values())
        if crc.table_size_bytes != size:
            problems.append(f"tableSizeBytes {crc.table_size_bytes}, replay has {size}")
    if state.metadata is not None and crc.metadata.get("id") != state.metadata.id:
        problems.append(f"metadata id {crc.metadata.get('id')!r}, replay has {state.metadata.id!r}")
    if state.protocol is not None and not _same_protocol(crc.protocol, state.protocol):
        problems.append(f"protocol {crc.protocol}, replay has {state.protocol.to_json_dict()}")
    if problems:
        findings.report(
            "checksum-mismatch",
            f"checksum of version {version} disagrees with replay: {'; '.join(problems)}",
            version,
            path,
        )
    return True


def _same_protocol(body: dict[str, object], protocol: Protocol) -> bool:
    return (
        body.get("minReaderVersion") == protocol.min_reader_version
        and body.get("minWriterVersion") == protocol.min_writer_version
        and _features(body, "readerFeatures") == set(protocol.reader_features or ())
        and _features(body, "writerFeatures") == set(protocol.writer_features or ())
    )
