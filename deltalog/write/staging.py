"""Checks and metrics of the file actions a transaction stages, before they are committed."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

import pyarrow.compute as pc

from deltalog.arrow import values as av
from deltalog.errors import (
    AppendOnlyError,
    DuplicateFileError,
    FileNotInTableError,
    InvalidInputError,
    PartitionValueError,
)
from deltalog.log.file_actions import (
    canonical_path,
    canonical_path_chunks,
    canonical_paths,
    file_key,
)
from deltalog.log.replay import read_commit
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage
from deltalog.logstores import LogFileNotFoundError
from deltalog.protocol.actions import (
    Action,
    AddCDCFile,
    AddFile,
    Metadata,
    Protocol,
    RemoveFile,
    Txn,
)
from deltalog.protocol.column_mapping import is_mapped, physical_name
from deltalog.protocol.features import check_writable
from deltalog.protocol.partitions import parse_partition_value
from deltalog.protocol.paths import commit_name
from deltalog.protocol.schema import StructType
from deltalog.write.conflicts import ISOLATION_LEVELS, SNAPSHOT_ISOLATION, WRITE_SERIALIZABLE

_log = logging.getLogger("deltalog.write.transaction")


def drop_readds(
    adds: dict[str, AddFile], removes: dict[str, RemoveFile], described: set[str], prefix: str
) -> None:
    """Stage nothing for a file that is both removed and added back unchanged.

    A commit holding ``remove`` and ``add`` of the same path (and deletion vector) is read
    differently by engines (delta-rs drops the file, deltalog keeps it) and is a
    ``duplicate-file-action`` for ``check``. The file is live before and after, so the pair
    means no change for it, which is what delta-spark ends up with: neither is committed. A
    remove and an add with different deletion vectors stay (an update).

    Args:
        adds: Staged adds by file key (changed in place).
        removes: Staged removes by canonical path (changed in place).
        described: Keys of adds the caller described (changed in place).
        prefix: The table's scheme prefix.
    """
    for key, add in list(adds.items()):
        remove_key = canonical_path(add.path, prefix)
        remove = removes.get(remove_key)
        if remove is not None and file_key(remove.path, remove.dv_id, prefix) == key:
            del adds[key]
            del removes[remove_key]
            described.discard(key)


def removes_for(
    snapshot: Snapshot, paths: list[str], data_change: bool, prefix: str
) -> list[RemoveFile]:
    """``remove`` actions for live files of ``snapshot`` given by path, in the given order.

    Raises:
        FileNotInTableError: A path is not live in the snapshot.
    """
    files = snapshot.files
    wanted = canonical_paths(av.strings(paths), prefix)
    keys = canonical_path_chunks(files.column("path"), prefix)
    rows = files.filter(pc.is_in(keys, value_set=wanted))
    found = {canonical_path(p, prefix): i for i, p in enumerate(rows.column("path").to_pylist())}
    for path, key in zip(paths, wanted.to_pylist(), strict=True):
        if key not in found:
            raise FileNotInTableError(
                f"{path!r} is not a live file of the table at version {snapshot.version}",
                path=path,
            )
    now = int(time.time() * 1000)
    cols = rows.select(
        [
            "path",
            "partition_values",
            "size",
            "deletion_vector",
            "tags",
            "stats",
            "base_row_id",
            "default_row_commit_version",
        ]
    )
    by_key = {}
    for row in cols.to_pylist():
        dv = row["deletion_vector"]
        by_key[canonical_path(row["path"], prefix)] = RemoveFile(
            path=row["path"],
            deletion_timestamp=now,
            data_change=data_change,
            extended_file_metadata=True,
            partition_values=dict(row["partition_values"] or []),
            size=row["size"],
            tags=dict(row["tags"]) if row["tags"] else None,
            deletion_vector={k: v for k, v in dv.items() if v is not None} if dv else None,
            stats=row["stats"],
            base_row_id=row["base_row_id"],
            default_row_commit_version=row["default_row_commit_version"],
        )
    return [by_key[k] for k in wanted.to_pylist()]


def check_removes_everything(
    snapshot: Snapshot, removes: Mapping[str, RemoveFile], read_whole_table: bool, prefix: str
) -> None:
    """A metadata change that rewrites data must remove every live file it read.

    Raises:
        InvalidInputError: It does not.
    """
    live = canonical_paths(snapshot.paths(), prefix)
    removed = av.strings(list(removes))
    if not read_whole_table or not pc.all(pc.is_in(live, value_set=removed)).as_py():
        raise InvalidInputError(
            "the new metadata drops or retypes columns or changes partitioning; existing "
            "files would not match it. Read the whole table and remove every file in the "
            "same transaction (an overwrite)."
        )


def check_not_live(
    snapshot: Snapshot,
    adds: Mapping[str, AddFile],
    described: set[str],
    removes: Mapping[str, RemoveFile],
    prefix: str,
) -> None:
    """No described add may name a file that is live and not removed by the same commit.

    The snapshot's live path index is used (built once, then advanced commit by commit), so
    the check costs O(adds), not O(files in the table); a writer's first check scans instead
    (see ``PendingFiles.live_keys``).

    Raises:
        DuplicateFileError: Naming the first such file.
    """
    paths: dict[str, str] = {}
    for key, add in adds.items():
        if key in described:
            paths.setdefault(canonical_path(add.path, prefix), key)
    wanted = [path for path in paths if path not in removes]
    if not wanted:
        return
    live = snapshot.file_state.live_keys(wanted)
    for path in wanted:
        if path in live:
            raise DuplicateFileError(f"{adds[paths[path]].path!r} is already in the table")


def replaced_sizes(
    snapshot: Snapshot,
    adds: Mapping[str, AddFile],
    described: set[str],
    removes: Mapping[str, RemoveFile],
    prefix: str,
) -> list[int] | None:
    """Sizes of the live files that adds given as actions replace (re-add, no remove).

    Re-adding a live file replaces it (it is not one more file); the checksum's running
    totals need the replaced sizes. Described adds were checked not to be live
    (:func:`check_not_live`), so only the others are looked up, in the same live path index.
    ``None`` when an add names a live path with another deletion vector (both stay live: the
    totals are not worth guessing).
    """
    given = {
        canonical_path(add.path, prefix): key for key, add in adds.items() if key not in described
    }
    kept = {path: key for path, key in given.items() if path not in removes}
    if not kept:
        return []
    live = snapshot.file_state.live_keys(kept)
    hits = {path: key for path, key in kept.items() if path in live}
    if not hits:
        return []
    if any(live[path] != key for path, key in hits.items()):
        return None
    files = snapshot.raw_files  # sizes only: no statistics are loaded
    paths = canonical_path_chunks(files.column("path"), prefix)
    rows = files.filter(pc.is_in(paths, value_set=av.strings(list(hits))))
    return [int(size) for size in rows.column("size").to_pylist()]


def check_partition_values(
    snapshot: Snapshot, staged: Metadata | None, values: Mapping[str, str | None], path: str
) -> None:
    """Partition values of a described file must fit the (staged or current) metadata.

    Raises:
        PartitionValueError: Other columns than the table's, or an unparseable value.
    """
    metadata = staged or snapshot.metadata
    columns = metadata.partition_columns
    schema = (
        snapshot.schema
        if staged is None
        else StructType.from_json_string(staged.schema_string or "")
    )
    # A column-mapped table logs partition values by physical name.
    keys = {
        c: physical_name(schema.field(c)) if is_mapped(metadata.configuration) else c
        for c in columns
    }
    if set(values) != set(keys.values()):
        raise PartitionValueError(
            f"{path!r} has partition values for {sorted(values)}, the table is partitioned "
            f"by {list(columns)} (logged as {sorted(keys.values())})"
        )
    for name in columns:
        parse_partition_value(values[keys[name]], schema.field(name).type)


def isolation_level(actions: list[Action], explicit: str | None, snapshot: Snapshot) -> str:
    """The isolation level a commit of ``actions`` runs at.

    Only non-data-changing file actions: snapshot isolation. Else the transaction's own level,
    the table's ``delta.isolationLevel``, or WriteSerializable.
    """
    file_actions = [a for a in actions if isinstance(a, AddFile | RemoveFile | AddCDCFile)]
    if len(file_actions) == len(actions) and not any(a.data_change for a in file_actions):
        return SNAPSHOT_ISOLATION
    if explicit is not None:
        return explicit
    configured = snapshot.configuration.get("delta.isolationLevel")
    if configured is None:
        return WRITE_SERIALIZABLE
    if configured not in ISOLATION_LEVELS:
        _log.warning("unknown delta.isolationLevel %r; using Serializable", configured)
        return "Serializable"
    return configured


def find_txn_commit(storage: TableStorage, latest: int, txn: Txn) -> int:
    """The version whose commit holds ``txn``'s (app id, version), searched from ``latest`` down.

    ``latest`` when none does (an older version of the app's txn is found first, or the log
    was cleaned up).
    """
    version = latest
    while version >= 0:
        try:
            actions = read_commit(storage, commit_name(version), version)
        except LogFileNotFoundError:
            break
        for action in actions:
            if isinstance(action, Txn) and action.app_id == txn.app_id:
                if action.version == txn.version:
                    return version
                if action.version < txn.version:
                    return latest
        version -= 1
    return latest


def check_staged(
    snapshot: Snapshot,
    metadata: Metadata | None,
    protocol: Protocol | None,
    removes: Mapping[str, RemoveFile],
    *,
    domains: bool,
    rewrites_data: bool,
    read_whole_table: bool,
    prefix: str,
    enforced: frozenset[str] = frozenset(),
) -> None:
    """Refuse staged changes the table cannot take, before anything is written.

    Args:
        snapshot: The snapshot the transaction read.
        metadata: The staged ``metaData``, if any.
        protocol: The staged ``protocol``, if any.
        removes: The staged removes, by key.
        domains: Whether domain metadata is staged.
        rewrites_data: Whether the metadata change makes existing files unreadable.
        read_whole_table: Whether the transaction read the whole table.
        prefix: The table root's scheme prefix, as removes are keyed.
        enforced: Writer features the caller enforces itself (see ``Transaction.enforced``).

    Raises:
        UnsupportedFeatureError: deltalog cannot write the (new) protocol.
        AppendOnlyError: A data-changing remove on an append-only table.
        InvalidInputError: Domain metadata without the ``domainMetadata`` feature.
        SchemaMismatchError: A metadata change that needs every file removed, without that.
    """
    new_metadata = metadata or snapshot.metadata
    new_protocol = protocol or snapshot.protocol
    if metadata is None and protocol is None:
        snapshot.check_writable(enforced)
    else:
        check_writable(new_protocol, new_metadata, enforced)
    removes_data = any(r.data_change for r in removes.values())
    if removes_data and str(new_metadata.configuration.get("delta.appendOnly")).lower() == "true":
        raise AppendOnlyError(
            "the table is append-only (delta.appendOnly=true); it cannot remove data"
        )
    if domains and "domainMetadata" not in (new_protocol.writer_features or ()):
        raise InvalidInputError(
            "the table protocol lacks the 'domainMetadata' writer feature; stage a protocol "
            "upgrade with update_protocol() to write domain metadata"
        )
    if rewrites_data:
        check_removes_everything(snapshot, removes, read_whole_table, prefix)
