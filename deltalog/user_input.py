"""Checks of values callers pass to the public API, so that bad ones fail with a named error.

Everything here raises :class:`~deltalog.errors.InvalidInputError` (or a subclass) before
anything is written, instead of the ``TypeError``/``ValueError``/orjson error the value would
cause deeper down.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any

import orjson

from deltalog.actions import AddCDCFile, AddFile, RemoveFile
from deltalog.errors import InvalidInputError, MalformedCommitError

#: Range of a Delta ``long``.
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


def is_long(value: object) -> bool:
    """Whether ``value`` is an ``int`` (not a ``bool``) that fits a Delta ``long``."""
    return isinstance(value, int) and not isinstance(value, bool) and LONG_MIN <= value <= LONG_MAX


def check_version_number(value: object, what: str) -> int:
    """``value`` as a non-negative table or application version.

    Raises:
        InvalidInputError: It is not an int, is negative, or does not fit a ``long``.
    """
    if not is_long(value) or value < 0:  # type: ignore[operator]
        raise InvalidInputError(f"{what} must be a non-negative int, not {reprlib.repr(value)}")
    assert isinstance(value, int)
    return value


def check_json(value: Mapping[str, Any], what: str) -> None:
    """Refuse a mapping that cannot be written as JSON (objects, huge ints, non-str keys).

    Raises:
        InvalidInputError: Naming ``what``.
    """
    try:
        orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise InvalidInputError(f"{what} cannot be written as JSON: {exc}") from exc


def check_file_action(action: AddFile | AddCDCFile | RemoveFile) -> None:
    """Refuse a file action given by a caller that the log could not hold or read back.

    Every field must have the type the protocol gives it, ``size`` and ``modificationTime``
    must not be negative, and ``stats`` must be a JSON object.

    Raises:
        InvalidInputError: Naming the field.
    """
    try:
        body = action.to_json_dict()
        type(action).from_json_dict(orjson.loads(orjson.dumps(body)))
    except (MalformedCommitError, TypeError, orjson.JSONEncodeError) as exc:
        raise InvalidInputError(f"invalid {action.KEY} action for {action.path!r}: {exc}") from exc
    for name in ("size", "modification_time"):
        value = getattr(action, name, None)
        if value is not None and value < 0:
            raise InvalidInputError(f"{action.KEY} {action.path!r}: {name} cannot be negative")
    stats = getattr(action, "stats", None)
    if stats is not None:
        try:
            parsed = orjson.loads(stats)
        except orjson.JSONDecodeError as exc:
            raise InvalidInputError(f"{action.KEY} {action.path!r}: stats is not JSON") from exc
        if not isinstance(parsed, dict):
            raise InvalidInputError(f"{action.KEY} {action.path!r}: stats is not a JSON object")
        records = parsed.get("numRecords")
        if records is not None and (not is_long(records) or records < 0):
            raise InvalidInputError(
                f"{action.KEY} {action.path!r}: stats.numRecords must be a non-negative integer"
            )
