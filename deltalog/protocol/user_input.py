"""Checks of values callers pass to the public API, so that bad ones fail with a named error.

Everything here raises :class:`~deltalog.errors.InvalidInputError` (or a subclass) before
anything is written, instead of the ``TypeError``/``ValueError``/orjson error the value would
cause deeper down.
"""

from __future__ import annotations

import dataclasses
import reprlib
import warnings
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import orjson

from deltalog.errors import ConflictingOptionsError, InvalidInputError, MalformedCommitError
from deltalog.protocol.actions import Action, AddCDCFile, AddFile, RemoveFile

#: Range of a Delta ``long``.
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
_T = TypeVar("_T")


def renamed_keyword(function: str, name: str, value: _T, old_name: str, old_value: _T) -> _T:
    """The value of keyword ``name``, also accepted under its deprecated spelling ``old_name``.

    One concept has one spelling across the API (``predicate=`` for an overwrite's predicate,
    as delta-rs spells it); an old spelling keeps working for a while and warns.

    Args:
        function: The public function, for messages (``"DeltaTable.overwrite_files"``).
        name: The keyword's name.
        value: What was passed as ``name`` (``None``: not given).
        old_name: The deprecated spelling.
        old_value: What was passed as ``old_name`` (``None``: not given).

    Raises:
        ConflictingOptionsError: Both spellings were given.
    """
    if old_value is None:
        return value
    if value is not None:
        raise ConflictingOptionsError(
            f"{function}: {name}= and its deprecated spelling {old_name}= were both given; "
            f"give {name}= only",
            option=name,
        )
    warnings.warn(
        f"{function}({old_name}=...) is deprecated; use {name}=... (the same value)",
        DeprecationWarning,
        stacklevel=3,
    )
    return old_value


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
    if not _plain_add(action):
        try:
            body = action.to_json_dict()
            type(action).from_json_dict(orjson.loads(orjson.dumps(body)))
        except (MalformedCommitError, TypeError, orjson.JSONEncodeError) as exc:
            raise InvalidInputError(
                f"invalid {action.KEY} action for {action.path!r}: {exc}"
            ) from exc
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


#: ``AddFile``'s fields as :func:`_plain_add` knows them (a new field turns the fast path off).
_ADD_FIELDS = (
    "path", "partition_values", "size", "modification_time", "data_change", "stats", "tags",
    "deletion_vector", "base_row_id", "default_row_commit_version", "clustering_provider",
    "extra",
)  # fmt: skip
_ADD_FAST = tuple(f.name for f in dataclasses.fields(AddFile)) == _ADD_FIELDS


def _plain_add(action: AddFile | AddCDCFile | RemoveFile) -> bool:
    """Whether ``action`` is an ``AddFile`` whose JSON round trip cannot fail.

    True only when every field already has the exact type (no subclass) that the round trip in
    :func:`check_file_action` would give it and that the protocol allows: ASCII ``str`` (orjson
    refuses some non-ASCII strings, e.g. lone surrogates), ``int`` within a ``long``, ``bool``,
    maps of ``str`` to ``str``/``None``, no deletion vector and no unknown fields. Everything
    else takes the round trip. Adds a caller builds by the thousand skip two JSON conversions.
    """
    if not _ADD_FAST or type(action) is not AddFile or action.extra:
        return False
    if action.deletion_vector is not None or type(action.data_change) is not bool:
        return False
    if not (_ascii(action.path) and _long(action.size) and _long(action.modification_time)):
        return False
    if not _plain_map(action.partition_values) or not (
        action.tags is None or _plain_map(action.tags)
    ):
        return False
    return all(v is None or _ascii(v) for v in (action.stats, action.clustering_provider)) and all(
        v is None or _long(v) for v in (action.base_row_id, action.default_row_commit_version)
    )


def _ascii(value: object) -> bool:
    return type(value) is str and value.isascii()


def _long(value: object) -> bool:
    return type(value) is int and LONG_MIN <= value <= LONG_MAX


def _plain_map(value: object) -> bool:
    return type(value) is dict and all(
        _ascii(k) and (v is None or _ascii(v)) for k, v in value.items()
    )


def check_uri(uri: object) -> str:
    """``uri`` as a non-empty string.

    Raises:
        InvalidInputError: It is not one.
    """
    if not isinstance(uri, str):
        raise InvalidInputError(f"a table URI must be a str, not {type(uri).__name__}")
    if not uri:
        raise InvalidInputError("a table URI cannot be empty")
    return uri


def check_options(options: object) -> dict[str, str] | None:
    """Store options as a ``str`` to ``str`` dict (``None`` stays ``None``).

    Values may be secrets: only keys and types are ever named.

    Raises:
        InvalidInputError: Not a mapping, or a key or value that is not a ``str``.
    """
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise InvalidInputError(
            f"storage options must be a mapping of str to str, not {type(options).__name__}"
        )
    for key, value in options.items():
        if not isinstance(key, str):
            raise InvalidInputError(f"storage option names must be str, not {type(key).__name__}")
        if not isinstance(value, str):
            raise InvalidInputError(
                f"storage option {key!r} must be a str, not {type(value).__name__}"
            )
    return dict(options)


def check_mapping(value: object, what: str) -> Mapping[Any, Any]:
    """``value`` if it is a mapping (``None`` becomes an empty one).

    Raises:
        InvalidInputError: Naming ``what``.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{what} must be a mapping, not {type(value).__name__}")
    return value


def as_items(given: object, kinds: tuple[type, ...], what: str, **flags: object) -> list[Any]:
    """One item of ``kinds``, or an iterable of them, as a list.

    Args:
        given: What the caller passed.
        kinds: The types an item may have.
        what: Names the argument in errors.
        flags: Keyword arguments of the same call that must be ``bool`` (``data_change``).

    Raises:
        InvalidInputError: Something else, naming ``what``, or a flag that is not a bool.
    """
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise InvalidInputError(f"{name} must be a bool, not {type(flag).__name__}")
    if isinstance(given, kinds):
        return [given]
    if isinstance(given, str | bytes | Mapping) or not isinstance(given, Iterable):
        raise InvalidInputError(f"{what}: expected {_names(kinds)} or a list of them")
    items = list(given)
    for item in items:
        if not isinstance(item, kinds):
            raise InvalidInputError(f"{what}: expected {_names(kinds)}, not {type(item).__name__}")
    return items


def check_action(action: object, kind: type[Action]) -> None:
    """Refuse an action of another type, or one whose fields the log could not hold.

    Raises:
        InvalidInputError: Naming the action.
    """
    if not isinstance(action, kind):
        raise InvalidInputError(f"expected a {kind.__name__}, not {type(action).__name__}")
    try:
        kind.from_json_dict(orjson.loads(orjson.dumps(action.to_json_dict())))
    except (MalformedCommitError, TypeError, orjson.JSONEncodeError) as exc:
        raise InvalidInputError(f"invalid {kind.KEY} action: {exc}") from exc


def _names(kinds: tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in kinds)
