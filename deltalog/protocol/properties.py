"""Validation of the ``delta.*`` table properties deltalog knows, as delta-spark validates them.

delta-spark refuses a table property whose value does not parse (``delta.appendOnly = yes``),
or breaks its rule (``delta.checkpointInterval = 0``), when a table is created or its metadata
changes. :func:`check_properties` does the same; ``deltalog check`` reports what
:func:`property_problems` finds on existing tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from deltalog.errors import InvalidInputError, InvalidPropertyError
from deltalog.protocol.config import parse_interval_ms
from deltalog.protocol.property_keys import (
    CONSTRAINT_PREFIX,
    FEATURE_PREFIX,
    PROTOCOL_KEYS,
    UNIVERSAL_FORMAT_CONFIG_PREFIX,
    canonical_key,
    find_key,
)

_BOOLEAN = ("true", "false")


def _boolean(value: str) -> str | None:
    # Scala's String.toBoolean: "true" or "false" in any case, nothing else (no blanks).
    return None if value.lower() in _BOOLEAN else "must be true or false"


def _int_at_least(minimum: int) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        try:
            number = int(value)
        except ValueError:
            return f"must be an integer >= {minimum}"
        if number < minimum or value.strip() != value:
            return f"must be an integer >= {minimum}"
        return None

    return check


def _interval(value: str) -> str | None:
    try:
        parse_interval_ms(value)
    except InvalidInputError:
        return "must be an interval such as 'interval 30 days'"
    return None


def _one_of(*allowed: str) -> Callable[[str], str | None]:
    def check(value: str) -> str | None:
        return None if value in allowed else f"must be one of {list(allowed)}"

    return check


#: Known properties and their rules (delta-spark's DeltaConfigs).
RULES: dict[str, Callable[[str], str | None]] = {
    "delta.appendOnly": _boolean,
    "delta.checkpointInterval": _int_at_least(1),
    "delta.logRetentionDuration": _interval,
    "delta.deletedFileRetentionDuration": _interval,
    "delta.enableExpiredLogCleanup": _boolean,
    "delta.isolationLevel": _one_of("Serializable", "WriteSerializable"),
    "delta.enableChangeDataFeed": _boolean,
    "delta.enableDeletionVectors": _boolean,
    "delta.enableInCommitTimestamps": _boolean,
    "delta.enableRowTracking": _boolean,
    "delta.checkpoint.writeStatsAsJson": _boolean,
    "delta.checkpoint.writeStatsAsStruct": _boolean,
    "delta.dataSkippingNumIndexedCols": _int_at_least(-1),
    "delta.randomizeFilePrefixes": _boolean,
    "delta.randomPrefixLength": _int_at_least(1),
    "delta.columnMapping.mode": _one_of("none", "name", "id"),
    "delta.columnMapping.maxColumnId": _int_at_least(0),
    "delta.checkpointPolicy": _one_of("classic", "v2"),
}


def canonical_properties(
    configuration: Mapping[str, str], previous: Mapping[str, str | None] | None = None
) -> dict[str, str]:
    """Table properties to store, their ``delta.*`` keys spelt as Delta does, as delta-spark sets.

    A known ``delta.*`` key in any case takes its proper spelling (``delta.appendonly`` becomes
    ``delta.appendOnly``); ``delta.constraints.*`` and keys outside ``delta.`` are kept as
    given, ``delta.universalFormat.config.*`` keys lowered. A ``delta.*`` key that Delta does not
    define is refused, as delta-spark refuses it, unless ``previous`` (the properties in force)
    already holds it with that value: a table another engine wrote keeps its keys.

    Raises:
        InvalidPropertyError: An unknown ``delta.*`` key; a protocol property
            (``delta.feature.*``, ``delta.minReaderVersion``, ``delta.minWriterVersion``,
            ``delta.ignoreProtocolDefaults``), which deltalog does not take as a property; or one
            key given twice in different cases with different values.
    """
    out: dict[str, str] = {}
    seen: dict[str, str] = {}  # each key's proper spelling -> the key stored for it
    kept: set[str] = set()  # keys carried over from ``previous`` in another spelling
    for key, value in configuration.items():
        stored = _stored_key(key, value, previous or {})
        proper = canonical_key(stored) or stored
        carried = stored != proper
        if proper in seen:
            first = seen[proper]
            if out[first] == value or carried:
                continue
            if first not in kept:
                raise InvalidPropertyError(
                    f"table property {proper} is given twice (in different cases) with "
                    f"different values: {out[first]!r} and {value!r}"
                )
            del out[first]  # a new value replaces the one in force under another spelling
        seen[proper] = stored
        out[stored] = value
        if carried:
            kept.add(stored)
    return out


def _stored_key(key: str, value: str, previous: Mapping[str, str | None]) -> str:
    lowered = key.lower()
    if not lowered.startswith("delta.") or lowered.startswith(CONSTRAINT_PREFIX):
        return key
    if find_key(previous, key) == key and previous[key] == value:
        return key  # in force already, as the table's writer spelt it
    if lowered.startswith(UNIVERSAL_FORMAT_CONFIG_PREFIX):
        return lowered
    known = canonical_key(key)
    if known in PROTOCOL_KEYS or lowered.startswith(FEATURE_PREFIX):
        raise InvalidPropertyError(
            f"table property {key} sets the protocol, which deltalog does not take from table "
            "properties: the protocol follows from the properties that enable features "
            "(delta.enableDeletionVectors=true, ...); upgrade an existing table's protocol with "
            "Transaction.update_protocol()"
        )
    if known is None:
        raise InvalidPropertyError(
            f"unknown table property {key}: Delta defines no such delta.* key (check its "
            "spelling; keys outside delta.* are free)"
        )
    return known


def property_problems(configuration: Mapping[str, str | None]) -> list[str]:
    """One message per known property whose value breaks its rule (case-insensitive keys)."""
    rules = {k.lower(): (k, rule) for k, rule in RULES.items()}
    out = []
    for key, value in configuration.items():
        known = rules.get(key.lower())
        if known is None or value is None:
            continue
        problem = known[1](value)
        if problem is not None:
            out.append(f"table property {known[0]} {problem}, not {value!r}")
    return out


def check_properties(configuration: Mapping[str, str | None]) -> None:
    """Refuse known ``delta.*`` properties with invalid values.

    Raises:
        InvalidPropertyError: Naming the first property and its rule.
    """
    problems = property_problems(configuration)
    if problems:
        raise InvalidPropertyError("; ".join(problems))
