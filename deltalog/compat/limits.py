"""Known engine limitations: listed refusals and differences are not disagreements.

Known engine limitations: a refusal or difference listed here is reported as known, not as
a disagreement (docs/compat.md lists them).

A :class:`Limitation` matches an engine's refusal of a table version when the table uses the
``feature`` (a regular expression matching a reader or writer table feature's whole name;
``None``: any table) and the refusal's message
matches ``pattern``; with ``field`` set it instead explains a difference of that field in which
the engine is alone, when both values are equal after its ``equalise``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Limitation:
    """One known limitation of one engine."""

    engine: str
    feature: str | None
    pattern: str
    reason: str
    field: str | None = None
    #: For a difference: both values through this must be equal (what the engine changes).
    equalise: Callable[[Any], Any] | None = None
    #: For a difference: it applies only to tables where this holds of the engines' raw
    #: observations (engine -> observation, as the probes wrote them).
    where: Callable[[Mapping[str, Mapping[str, Any]]], bool] | None = None
    #: For a difference: like ``equalise``, also given the engines' raw observations.
    equalise_in: Callable[[Any, Mapping[str, Mapping[str, Any]]], Any] | None = None

    def matches(self, engine: str, features: Iterable[str], message: str) -> bool:
        """Whether this limitation applies.

        Whether this limitation explains ``engine``'s ``message`` on a table with
        ``features``.
        """
        if engine != self.engine:
            return False
        if not self.uses(features):
            return False
        return re.search(self.pattern, message, re.IGNORECASE | re.DOTALL) is not None

    def uses(self, features: Iterable[str]) -> bool:
        """Whether a table with ``features`` has this limitation's feature."""
        return self.feature is None or any(re.fullmatch(self.feature, f) for f in features)


def _schema_as_kernel_writes_it(value: Any) -> Any:
    """A schema with collation names upper-cased and no ``tableVersion`` in type changes."""
    if isinstance(value, list):
        return [_schema_as_kernel_writes_it(v) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    for key, item in value.items():
        if key == "__COLLATIONS" and isinstance(item, dict):
            out[key] = {k: str(v).upper() for k, v in item.items()}
        elif key == "delta.typeChanges" and isinstance(item, list):
            out[key] = [
                {k: v for k, v in change.items() if k != "tableVersion"}
                if isinstance(change, dict)
                else change
                for change in item
            ]
        else:
            out[key] = _schema_as_kernel_writes_it(item)
    return out


def _has_empty_partition_value(raw: Mapping[str, Mapping[str, Any]]) -> bool:
    """Whether an engine saw a file with an empty string as a partition value."""
    return any(
        value == ""
        for observation in raw.values()
        for f in observation.get("files") or []
        if isinstance(f, Mapping)
        for value in (f.get("partitionValues") or {}).values()
    )


def _nulls_and_values_together(value: Any) -> Any:
    """Per column, non-null and null counts added up (an empty string's checksum is 0)."""
    if not isinstance(value, dict):
        return value
    return {
        name: (c.get("count", 0) + c.get("nulls", 0), c.get("crc")) if isinstance(c, dict) else c
        for name, c in value.items()
    }


_TIMESTAMPS = ("timestamp", "timestamp_ntz")


def _timestamp_checksums_dropped(value: Any, raw: Mapping[str, Mapping[str, Any]]) -> Any:
    """The columns view without the checksums of top-level timestamp columns."""
    if not isinstance(value, dict):
        return value
    timestamps = {
        f.get("name")
        for observation in raw.values()
        if isinstance(observation.get("schema"), Mapping)
        for f in observation["schema"].get("fields") or []
        if isinstance(f, Mapping) and f.get("type") in _TIMESTAMPS
    }
    return {
        name: {k: v for k, v in c.items() if k != "crc"}
        if name in timestamps and isinstance(c, dict)
        else c
        for name, c in value.items()
    }


#: The list (see the module docstring); a test keeps docs/compat.md's table in step.
KNOWN: tuple[Limitation, ...] = (
    Limitation(
        "delta-rs",
        "vacuumProtocolCheck",
        r"Unsupported table features required: \[VacuumProtocolCheck\]",
        "delta-rs does not support the vacuumProtocolCheck feature",
    ),
    Limitation(
        "delta-rs",
        "typeWidening(-preview)?",
        r"Unsupported table features required: \[TypeWidening(Preview)?\]",
        "delta-rs does not support the typeWidening(-preview) feature",
    ),
    Limitation(
        "delta-spark",
        "typeWidening(-preview)?",
        r"DELTA_UNSUPPORTED_TYPE_CHANGE_IN_PREVIEW",
        "delta-spark 3.x reads only the type changes of the typeWidening preview "
        "(delta-spark 4.0 and later read them all)",
    ),
    Limitation(
        "kernel",
        "variantType(-preview)?",
        r"variant is not supported",
        "Delta Kernel's default engine does not read variant columns",
    ),
    Limitation(
        "delta-spark",
        "variantType(-preview)?",
        r"ArrowInvalid|variant",
        "the delta-spark probe cannot collect variant columns as Arrow (Spark reads them)",
    ),
    Limitation(
        "kernel",
        "collations(-preview)?",
        "",
        "Kernel upper-cases collation names in the schema (spark.UTF8_LCASE -> SPARK.UTF8_LCASE)",
        field="schema",
        equalise=_schema_as_kernel_writes_it,
    ),
    Limitation(
        "kernel",
        "typeWidening(-preview)?",
        "",
        "Kernel drops tableVersion from the schema's delta.typeChanges",
        field="schema",
        equalise=_schema_as_kernel_writes_it,
    ),
    Limitation(
        "deltalog",
        "variantType(-preview)?",
        r"type 'variant' has no Arrow equivalent",
        "deltalog cannot read variant columns (no Arrow type)",
    ),
    Limitation(
        "deltalog",
        None,
        "",
        "deltalog reads an empty string partition value as null, as the protocol says; "
        "delta-spark, Kernel and delta-rs read an empty string",
        field="columns",
        equalise=_nulls_and_values_together,
        where=_has_empty_partition_value,
    ),
    Limitation(
        "delta-rs",
        None,
        "",
        "delta-rs reads an INT96 timestamp outside the nanosecond range (before 1677 or after "
        "2262; Spark writes INT96) wrapped around: timestamp checksums may differ",
        field="columns",
        equalise_in=_timestamp_checksums_dropped,
    ),
)


def explain(
    engine: str,
    features: Iterable[str],
    message: str,
    known: Iterable[Limitation] = KNOWN,
) -> Limitation | None:
    """The limitation that explains ``engine``'s refusal with ``message``."""
    names = list(features)
    for limitation in known:
        if limitation.field is None and limitation.matches(engine, names, message):
            return limitation
    return None


def explain_difference(
    engine: str,
    features: Iterable[str],
    field: str,
    value: Any,
    others: Any,
    known: Iterable[Limitation] = KNOWN,
    raw: Mapping[str, Mapping[str, Any]] | None = None,
) -> Limitation | None:
    """The limitation that explains ``engine`` alone seeing ``value``, the rest ``others``.

    It does when both are equal after its ``equalise`` (and its ``where`` holds of ``raw``,
    the engines' observations as their probes wrote them).
    """
    names = list(features)
    for lim in known:
        if lim.field != field or lim.engine != engine:
            continue
        if lim.where is not None and (raw is None or not lim.where(raw)):
            continue
        if not lim.uses(names):
            continue
        if lim.equalise is not None and lim.equalise(value) == lim.equalise(others):
            return lim
        if (
            lim.equalise_in is not None
            and raw is not None
            and lim.equalise_in(value, raw) == lim.equalise_in(others, raw)
        ):
            return lim
    return None
