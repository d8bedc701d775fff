"""Turning existing Parquet files into ``add`` actions: where they are, and what is in them."""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable, Iterable
from typing import BinaryIO

from deltalog.errors import (
    DataFileNotFoundError,
    DuplicateFileError,
    InvalidPathError,
    PartitionValueError,
    SchemaMismatchError,
)
from deltalog.log.file_actions import scheme_prefix
from deltalog.log.snapshot import Snapshot
from deltalog.log.storage import TableStorage, storage_errors
from deltalog.logstores import FileStatus, LogFileNotFoundError, LogStore, scheme_of
from deltalog.logstores.local import local_path_from_uri
from deltalog.protocol.actions import AddFile, Metadata
from deltalog.protocol.parquet_types import check_file_types
from deltalog.protocol.paths import LOG_DIR, check_relative, encode_path
from deltalog.protocol.schema import StructField, StructType, type_from_arrow
from deltalog.stats.footers import build_add, compatible, read_footer
from deltalog.write.clustering import check_clustering_stats


def resolve(storage: TableStorage, given: str) -> tuple[str, str, str]:
    """Where a data file is: (path for the action, path for partition parsing, store location).

    A name is absolute only when it starts with ``/`` or is a URI (``scheme://...`` or
    ``file:...``); anything else, ``2024-01-01T10:00:00.parquet`` included, is relative to the
    table root. Paths inside the table become relative, compared after resolving symbolic links
    on a local store (so a file reached through another spelling of the root is the same
    file); absolute ones must be on the table's store (and, for object stores, in the table's
    bucket or container).

    A path inside the table may not pass through a name Delta treats as not data (see
    :func:`check_not_reserved`): ``_delta_log`` is refused before anything is read.

    Raises:
        InvalidPathError: The path escapes the table, is on another store, has a NUL, or lies in
            ``_delta_log`` or another hidden directory.
    """
    if "\x00" in given:
        raise InvalidPathError(f"path {given!r} has a NUL character")
    root = storage.root.rstrip("/")
    if given.startswith("/") or "://" in given or given.lower().startswith("file:"):
        if scheme_of(given) != scheme_of(storage.uri):
            raise InvalidPathError(f"{given!r} is not on the table's store ({storage.uri})")
        location = _location(given)
        inside = _inside(storage, location)
        if inside is not None:
            relative = check_not_reserved(check_relative(inside), given)
            return encode_path(relative), relative, storage.data_file(relative)
        check_not_reserved(location, given, inside=False)
        if "://" not in location:  # local absolute path outside the table
            return "file://" + encode_path(location), location, location
        if scheme_prefix(location) != scheme_prefix(root):
            raise InvalidPathError(f"{given!r} is outside the table's bucket or container")
        head = scheme_prefix(location)
        return head + encode_path(location[len(head) :]), location, location
    relative = check_not_reserved(check_relative(given), given)
    return encode_path(relative), relative, storage.data_file(relative)


def check_not_reserved(path: str, given: str, *, inside: bool = True) -> str:
    """``path`` (relative to the table root), unless a name on it is not for data files.

    Inside the table that is any directory or file name starting with ``_`` or ``.`` that is
    no Hive-style ``col=value`` partition directory: ``_delta_log`` (the log itself),
    ``_change_data`` (change data feed files), ``_delta_index``, and what delta-spark's VACUUM
    and Spark's file listing treat as hidden (``_temporary``, ``.staging``, ``_SUCCESS``...):
    a file there would never be vacuumed once removed. Outside the table (an absolute path)
    only ``_delta_log`` is refused: it is some table's log.

    Raises:
        InvalidPathError: Naming the offending segment.
    """
    for segment in path.replace("\\", "/").split("/"):
        if segment == LOG_DIR:
            raise InvalidPathError(
                f"{given!r} is in a {LOG_DIR} directory: the transaction log is not data; "
                "give the data files (or the directory a job wrote them to)"
            )
        if inside and segment[:1] in ("_", ".") and "=" not in segment:
            raise InvalidPathError(
                f"{given!r} passes through {segment!r}: Delta treats names starting with '_' "
                "or '.' (other than col=value partition directories) as not data (the log, "
                "change data, staging, markers), and VACUUM never deletes files there; move "
                "the data files elsewhere in the table"
            )
    return path


def _inside(storage: TableStorage, location: str) -> str | None:
    """``location`` relative to the table root, or ``None`` when it is outside the root."""
    root = storage.root.rstrip("/")
    if location.startswith(root + "/"):
        return location[len(root) + 1 :]
    if "://" in location or storage.store.local_path(root) is None:
        return None
    real_root, real = os.path.realpath(root), os.path.realpath(location)
    if real.startswith(real_root.rstrip("/") + "/"):
        return real[len(real_root.rstrip("/")) + 1 :]
    return None


def expand(storage: TableStorage, paths: Iterable[str]) -> list[tuple[str, FileStatus]]:
    """The data files behind ``paths``: a file stays, a directory becomes the files under it.

    Returns:
        ``(path, status)`` per data file: a given file path as given, a file found in a
        directory as its location on the store.

    A directory is read the way Spark reads an output directory: names starting with ``.``, or
    with ``_`` unless they hold ``=`` (``_SUCCESS``, ``_temporary``, ``_delta_log``), and
    ``.crc`` checksums are skipped, at any depth. A directory still holding ``_temporary``
    belongs to a Spark job that has not committed, and the table root itself is refused: its
    files include ones the table removed, which must not come back.

    Raises:
        InvalidPathError: A path escapes the table, is the table root, or is an uncommitted
            Spark output directory.
        DataFileNotFoundError: A path is neither a file nor a directory with data files.
    """
    out: list[tuple[str, FileStatus]] = []
    for given in paths:
        location = resolve(storage, given)[2]
        try:
            with storage_errors(f"cannot read {location}"):
                out.append((given, storage.store.stat(location)))
            continue
        except LogFileNotFoundError:
            pass
        directory = location.rstrip("/")
        table_root = storage.root.rstrip("/")
        if directory == table_root or table_root.startswith(directory + "/"):
            raise InvalidPathError(
                f"{given!r} is the table root or holds it; register the directory a Spark job "
                "wrote to (e.g. <table>/batch-0001), not the table itself"
            )
        inside = location[len(table_root) + 1 :] if location.startswith(table_root + "/") else ""
        segments = [seg for seg in inside.strip("/").split("/") if seg]
        if segments and all("=" in seg for seg in segments):
            raise InvalidPathError(
                f"{given!r} is a partition directory of the table: its files include ones the "
                "table removed; register the directory a Spark job wrote to instead"
            )
        try:
            with storage_errors(f"cannot list {location}"):
                listed = list(storage.store.list_tree(location))
        except LogFileNotFoundError as exc:
            raise DataFileNotFoundError(
                f"{given!r} does not exist on the table's store", path=given
            ) from exc
        base = location.rstrip("/") + "/"
        found = []
        for status in listed:
            below = status.path[len(base) :].split("/")
            if "_temporary" in below[:-1]:
                raise InvalidPathError(
                    f"{given!r} holds a _temporary directory: the Spark job writing it has not "
                    "committed (or failed); register it after the job succeeds"
                )
            if not any(_hidden(segment) for segment in below):
                found.append((status.path, status))
        if not found:
            raise DataFileNotFoundError(f"no data files under {given!r}", path=given)
        out.extend(found)
    return out


def _hidden(name: str) -> bool:
    """Whether Spark's file listing ignores ``name`` (markers, checksums, staging)."""
    return (
        name.startswith(".")
        or (name.startswith("_") and "=" not in name)
        or name.endswith((".crc", "._COPYING_"))
    )


def _location(uri: str) -> str:
    """``uri`` in its store's notation: a filesystem path for local files, else the URI."""
    if scheme_of(uri) == "file":
        with storage_errors(f"cannot resolve {uri}"):
            return local_path_from_uri(uri)
    return uri.rstrip("/")


def describe(
    storage: TableStorage,
    snapshot: Snapshot,
    files: Iterable[tuple[str, FileStatus]],
    *,
    data_change: bool,
    metadata: Metadata | None = None,
) -> list[AddFile]:
    """``add`` actions for Parquet files, with statistics and partition values from each file.

    Directories must already be expanded (:func:`expand`). Every file is checked
    (schema against the table, partition values from Hive-style
    directories) before any action is returned. ``metadata`` (a change staged in the same
    transaction) replaces the snapshot's schema, partitioning and configuration.

    Raises:
        SchemaMismatchError: A file's columns do not fit the table.
        PartitionValueError: A file's directories do not give valid partition values.
        InvalidPathError: A path escapes the table or is on another store.
        DuplicateFileError: A path is given twice.
        UnsupportedFeatureError: The table needs a writer feature deltalog lacks.
    """
    snapshot.check_writable()
    check_clustering_stats(snapshot)
    if metadata is None:
        schema, columns, config = (
            snapshot.schema,
            snapshot.partition_columns,
            snapshot.configuration,
        )
    else:
        schema = StructType.from_json_string(metadata.schema_string or "")
        columns, config = list(metadata.partition_columns), metadata.configuration
    seen: set[str] = set()
    adds = []
    store = storage.store
    for given, status in files:
        action_path, relative, location = resolve(storage, given)
        if action_path in seen:
            raise DuplicateFileError(f"{given!r} is given more than once")
        seen.add(action_path)
        try:
            with (
                storage_errors(f"cannot read {location}"),
                _open_sized(store, location, status.size) as fh,
            ):
                footer = read_footer(fh, location)
        except LogFileNotFoundError as exc:  # deleted since it was listed
            raise DataFileNotFoundError(f"{given!r} does not exist", path=given) from exc
        try:
            add = build_add(
                action_path=action_path,
                relative_for_partitions=relative,
                size=status.size,
                modification_time=status.modification_time,
                footer=footer,
                table=schema,
                partition_columns=columns,
                configuration=config,
                location=location,
                data_change=data_change,
            )
        except PartitionValueError as exc:
            if relative != location:  # inside the table: the directories are the problem
                raise
            raise InvalidPathError(
                f"{given!r} is outside the table root {storage.root}, and its directories do "
                f"not give the table's partition values ({exc}); put the file under the root"
            ) from exc
        adds.append(add)
    return adds


def data_schemas(
    storage: TableStorage,
    files: Iterable[tuple[str, FileStatus]],
    table: StructType,
    partition_columns: list[str],
) -> list[StructType]:
    """The Delta schema of each file's data columns, for merging into ``table``.

    A column whose file type the table column already accepts (an INT96 timestamp for a
    ``timestamp`` column, say) takes the table's type, so only real differences remain.
    Partition columns (which belong in directories, not files) are left out.

    Raises:
        UnsupportedParquetTypeError: A column has a type some Delta reader cannot read.
        SchemaMismatchError: A file is not Parquet, or has a type with no Delta equivalent.
        InvalidPathError: A path escapes the table or is on another store.
        DataFileNotFoundError: A file is gone.
    """
    by_lower = {f.name.lower(): f for f in table.fields}
    partitions = {c.lower() for c in partition_columns}
    out = []
    for given, status in files:
        location = resolve(storage, given)[2]
        store = storage.store
        try:
            with (
                storage_errors(f"cannot read {location}"),
                _open_sized(store, location, status.size) as fh,
            ):
                footer = read_footer(fh, location)
        except LogFileNotFoundError as exc:
            raise DataFileNotFoundError(f"{given!r} does not exist", path=given) from exc
        check_file_types(footer.metadata, footer.schema, location)
        fields = []
        for arrow_field in footer.schema:
            if arrow_field.name.lower() in partitions:
                continue
            try:
                file_type = type_from_arrow(arrow_field.type)
            except Exception as exc:
                raise SchemaMismatchError(
                    f"{location}: column {arrow_field.name!r}: {exc}", path=location
                ) from exc
            known = by_lower.get(arrow_field.name.lower())
            if known is not None and compatible(file_type, known.type, arrow_field.type):
                file_type = known.type
            fields.append(StructField(arrow_field.name, file_type, arrow_field.nullable))
        out.append(StructType(tuple(fields)))
    return out


@functools.cache
def _takes_size(open_input: Callable[..., BinaryIO]) -> bool:
    # Keyed by the function, not the class: a method replaced at run time (a wrapper, a test's
    # seam) is asked again rather than called with an argument it does not take.
    return "size" in inspect.signature(open_input).parameters


def _open_sized(store: LogStore, location: str, size: int) -> BinaryIO:
    """``store.open_input`` told the size the listing gave (a store that asks no size is not)."""
    if _takes_size(type(store).open_input):
        return store.open_input(location, size=size)
    return store.open_input(location)
