"""Row tracking (the ``rowTracking`` writer feature): fresh row ids and row commit versions.

While a table's protocol supports ``rowTracking`` (and ``delta.rowTrackingSuspended`` is not
``true``), every ``add`` a writer commits gets ``baseRowId`` (above the table's high-water mark,
advanced by the file's ``numRecords``) and ``defaultRowCommitVersion`` (the commit's version),
and the commit carries the ``delta.rowTracking`` domain metadata with the new
``rowIdHighWaterMark``. Both depend on the version the commit lands at, so they are assigned
for each attempt (:func:`assign`). A ``remove`` keeps the ``baseRowId`` and
``defaultRowCommitVersion`` of the ``add`` it removes.

Row ids survive a rewrite only through materialised row-id columns in the rewritten files;
deltalog does not write them, so rewrites of row-tracking tables are refused
(:func:`refuse_rewrite`).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable, Mapping, Sequence

import orjson

from deltalog.errors import MissingRowCountError, RowTrackingRewriteError, UnsupportedFeatureError
from deltalog.protocol.actions import (
    Action,
    AddFile,
    DomainMetadata,
    Metadata,
    Protocol,
    RemoveFile,
)
from deltalog.stats.num_records import num_records

DOMAIN = "delta.rowTracking"
ENABLE = "delta.enableRowTracking"
SUSPENDED = "delta.rowTrackingSuspended"
ROW_ID_COLUMN = "delta.rowTracking.materializedRowIdColumnName"
COMMIT_VERSION_COLUMN = "delta.rowTracking.materializedRowCommitVersionColumnName"


def supported(protocol: Protocol, metadata: Metadata) -> bool:
    """Whether writers must assign row ids: the feature is supported and not suspended."""
    return (
        protocol.min_writer_version >= 7
        and "rowTracking" in (protocol.writer_features or ())
        and str(metadata.configuration.get(SUSPENDED, "false")).lower() != "true"
    )


def high_water_mark(domains: Mapping[str, DomainMetadata], default: int = -1) -> int:
    """The table's ``rowIdHighWaterMark`` (``default`` when no row id was assigned yet)."""
    domain = domains.get(DOMAIN)
    if domain is None or domain.removed:
        return default
    try:
        value = orjson.loads(domain.configuration).get("rowIdHighWaterMark")
    except (orjson.JSONDecodeError, AttributeError):
        return default
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def high_water_mark_after(actions: Iterable[Action], current: int) -> int:
    """The high-water mark after a commit with ``actions`` (``current`` if it sets none)."""
    for action in actions:
        if isinstance(action, DomainMetadata) and action.domain == DOMAIN and not action.removed:
            current = high_water_mark({DOMAIN: action}, current)
    return current


def _num_records(add: AddFile) -> int:
    n = num_records(add.stats)
    if n is not None:
        return n
    raise MissingRowCountError(
        f"{add.path!r} has no numRecords in its stats: the table tracks row ids (rowTracking), "
        "which are assigned from each file's row count",
        path=add.path,
    )


def check_row_counts(adds: Iterable[AddFile], recommits: Mapping[str, object]) -> None:
    """Refuse adds that will need fresh row ids but have no ``numRecords``.

    Raises:
        MissingRowCountError: Naming the first such file.
    """
    for add in adds:
        if add.base_row_id is None and add.path not in recommits:
            _num_records(add)


def recommitted(removes: Iterable[RemoveFile]) -> dict[str, AddFile | RemoveFile]:
    """Removes with row-tracking fields by path: a re-add of the same file keeps them."""
    return {r.path: r for r in removes if r.base_row_id is not None}


def assign(
    adds: Sequence[AddFile],
    version: int,
    high_water: int,
    previous: Mapping[str, AddFile | RemoveFile] | None = None,
) -> tuple[list[AddFile], DomainMetadata | None]:
    """Give ``adds`` row ids above ``high_water`` and ``version`` as their row commit version.

    An add that already has a ``baseRowId`` keeps it; one that recommits a file this commit
    removes (same path, e.g. with a new deletion vector) takes the removed entry's
    ``baseRowId`` and ``defaultRowCommitVersion`` (``previous``, by path).

    Returns:
        The adds, and the ``delta.rowTracking`` domain metadata to commit with them (``None``
        when no fresh row id was assigned).

    Raises:
        MissingRowCountError: An add needing fresh row ids has no ``numRecords``.
    """
    out: list[AddFile] = []
    mark = high_water
    fresh = False
    for add in adds:
        changes: dict[str, int] = {}
        before = (previous or {}).get(add.path)
        if add.base_row_id is None and before is not None and before.base_row_id is not None:
            changes["base_row_id"] = before.base_row_id
            kept = before.default_row_commit_version
            if add.default_row_commit_version is None and kept is not None:
                changes["default_row_commit_version"] = kept
        elif add.base_row_id is None:
            changes["base_row_id"] = mark + 1
            mark += _num_records(add)
            fresh = True
        if add.default_row_commit_version is None and "default_row_commit_version" not in changes:
            changes["default_row_commit_version"] = version
        out.append(dataclasses.replace(add, **changes) if changes else add)  # type: ignore[arg-type]
    if not fresh or mark <= high_water:
        return out, None
    config = orjson.dumps({"rowIdHighWaterMark": mark}).decode()
    return out, DomainMetadata(DOMAIN, config, False)


def refuse_rewrite(
    protocol: Protocol, metadata: Metadata, adds: Iterable[AddFile], removes: Iterable[RemoveFile]
) -> None:
    """Refuse a rewrite (files removed and re-added with ``dataChange=false``) that loses row ids.

    Raises:
        RowTrackingRewriteError: The table supports row tracking and the commit rewrites
            rows into new files without keeping their ``baseRowId``.
    """
    if not supported(protocol, metadata):
        return
    removes = list(removes)
    kept = recommitted(removes)
    rearranged = any(not r.data_change for r in removes)
    if rearranged and any(
        not a.data_change and a.base_row_id is None and a.path not in kept for a in adds
    ):
        raise RowTrackingRewriteError(
            "rewriting files of a row-tracking table would change its rows' row ids: deltalog "
            "does not write the materialised row-id columns that keep them stable "
            "(rowTracking); run the rewrite with delta-spark"
        )


def refuse_table_rewrite(
    protocol: Protocol, metadata: Metadata, *, operation: str = "compacting"
) -> None:
    """Refuse up front an operation that copies rows into new files on a row-tracking table.

    Args:
        protocol: The table's protocol.
        metadata: The table's metadata.
        operation: What copies rows, for the message (``"compacting"`` for OPTIMIZE).

    Raises:
        RowTrackingRewriteError: The table supports row tracking.
    """
    if supported(protocol, metadata):
        raise RowTrackingRewriteError(
            f"{operation} a row-tracking table would change its rows' row ids: deltalog does not "
            "write the materialised row-id columns that keep them stable (rowTracking); run "
            "it with delta-spark"
        )


def new_table_configuration(configuration: Mapping[str, str]) -> dict[str, str]:
    """``configuration`` of a new table, with materialised column names if it tracks rows."""
    config = dict(configuration)
    if str(config.get(ENABLE, "false")).lower() == "true":
        config.setdefault(ROW_ID_COLUMN, f"_row-id-col-{uuid.uuid4()}")
        config.setdefault(COMMIT_VERSION_COLUMN, f"_row-commit-version-col-{uuid.uuid4()}")
    return config


def check_enablement(previous: Metadata, new: Metadata) -> None:
    """Refuse turning row tracking on for an existing table (it needs a backfill).

    Raises:
        UnsupportedFeatureError: ``delta.enableRowTracking`` changes to ``true``.
    """

    def on(m: Metadata) -> bool:
        return str(m.configuration.get(ENABLE, "false")).lower() == "true"

    if on(new) and not on(previous):
        raise UnsupportedFeatureError(
            "enabling row tracking on an existing table needs a backfill of row ids, which "
            "deltalog does not do (rowTracking); create the table with it or use delta-spark",
            feature="rowTracking",
            operation="write",
        )
