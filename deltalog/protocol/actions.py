"""Delta log actions: one frozen dataclass per action, JSON through orjson.

Field names are the protocol's camelCase names in snake_case; serialisation writes them in the
order delta-spark writes them, omits ``None``, and appends any field this version of deltalog
does not know (kept in ``extra``) so that a read-modify-write round trip loses nothing.
"""

from __future__ import annotations

import dataclasses
import mmap
import re
import reprlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, TypeVar, Union, get_args, get_origin, get_type_hints

import orjson

from deltalog.errors import EmptyCommitError, MalformedCommitError
from deltalog.protocol.property_keys import TableProperties

JSON = Any
_A = TypeVar("_A", bound="Action")
_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)
#: Deepest nesting of objects and arrays in a log line; orjson writes no deeper, so every line
#: that parses can be written back.
MAX_DEPTH = 254


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def _checker(tp: Any) -> Callable[[Any], bool]:
    """Build a predicate that tells whether a decoded JSON value fits annotation ``tp``."""
    origin = get_origin(tp)
    if origin is Annotated:  # Annotated[type, check]: the check alone decides
        return get_args(tp)[1]  # type: ignore[no-any-return]
    if tp is Any:
        return lambda v: True
    if origin is Union or type(tp).__name__ == "UnionType":
        options = [_checker(a) for a in get_args(tp)]
        return lambda v: any(c(v) for c in options)
    if tp is type(None):
        return lambda v: v is None
    if tp is bool:
        return lambda v: isinstance(v, bool)
    if tp is int:  # a Delta int or long: it must fit Arrow's int64
        return lambda v: _is_int(v, _INT64)
    if tp is str:
        return lambda v: isinstance(v, str)
    if origin is dict:
        _, value_tp = get_args(tp)
        vc = _checker(value_tp)
        return lambda v: (
            isinstance(v, dict) and all(isinstance(k, str) and vc(x) for k, x in v.items())
        )
    if origin is list:
        (item_tp,) = get_args(tp)
        ic = _checker(item_tp)
        return lambda v: isinstance(v, list) and all(ic(x) for x in v)
    raise TypeError(f"unsupported annotation {tp!r}")  # pragma: no cover - programming error


def _is_int(v: Any, bounds: tuple[int, int]) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and bounds[0] <= v <= bounds[1]


#: The type of each deletion vector field, as in the checkpoint schema (others are kept as is).
_DV_FIELDS: dict[str, Callable[[Any], bool]] = {
    "storageType": lambda v: isinstance(v, str),
    "pathOrInlineDv": lambda v: isinstance(v, str),
    "offset": lambda v: _is_int(v, _INT32),
    "sizeInBytes": lambda v: _is_int(v, _INT32),
    "cardinality": lambda v: _is_int(v, _INT64),
    "maxRowIndex": lambda v: _is_int(v, _INT64),
}


#: Fields every deletion vector has: without them it has no identity (``uniqueId``).
DV_REQUIRED_FIELDS = ("storageType", "pathOrInlineDv", "sizeInBytes", "cardinality")


def _is_deletion_vector(v: Any) -> bool:
    return (
        isinstance(v, dict)
        and all(v.get(name) is not None for name in DV_REQUIRED_FIELDS)
        and all(v.get(name) is None or check(v[name]) for name, check in _DV_FIELDS.items())
    )


#: A deletion vector descriptor, kept as parsed JSON.
DeletionVectorJSON = Annotated[dict[str, Any], _is_deletion_vector]


def _is_format(v: Any) -> bool:
    if not isinstance(v, dict) or not isinstance(v.get("provider"), str | None):
        return False
    options = v.get("options")
    return options is None or (
        isinstance(options, dict) and all(isinstance(x, str | None) for x in options.values())
    )


#: ``metaData.format``: the provider and its options (a checkpoint stores them as a map).
FormatJSON = Annotated[dict[str, Any], _is_format]


@dataclass(frozen=True, slots=True)
class Action:
    """Base of every action. ``KEY`` is the action's name in the log (``"add"`` ...)."""

    KEY: ClassVar[str] = ""
    _SPEC: ClassVar[tuple[tuple[str, str, Callable[[Any], bool], bool], ...]] = ()

    def to_json_dict(self) -> dict[str, JSON]:
        """The action's body as delta-spark orders it (``None`` fields omitted)."""
        body: dict[str, JSON] = {}
        for attr, json_name, _, _ in _spec(type(self)):
            value = getattr(self, attr)
            if value is not None:
                body[json_name] = value
        extra: dict[str, JSON] = getattr(self, "extra", {})
        for k, v in extra.items():
            body.setdefault(k, v)
        return body

    def to_line(self) -> bytes:
        """One line of a commit file, without the newline."""
        return orjson.dumps({self.KEY: self.to_json_dict()})

    @classmethod
    def from_json_dict(cls: type[_A], body: Mapping[str, JSON]) -> _A:
        """Build the action from its JSON body.

        Raises:
            MalformedCommitError: A required field is missing or a field has the wrong type.
        """
        kwargs: dict[str, Any] = {}
        known = set()
        for attr, json_name, check, required in _spec(cls):
            known.add(json_name)
            value = body.get(json_name)
            if value is None:
                if required:
                    raise MalformedCommitError(f"{cls.KEY}: missing required field {json_name!r}")
                continue
            if not check(value):
                raise MalformedCommitError(
                    f"{cls.KEY}: field {json_name!r} has an invalid value {reprlib.repr(value)}"
                )
            kwargs[attr] = value
        extra = {k: v for k, v in body.items() if k not in known}
        if extra:
            kwargs["extra"] = extra
        return cls(**kwargs)


_SPECS: dict[type, tuple[tuple[str, str, Callable[[Any], bool], bool], ...]] = {}


def _spec(cls: type) -> tuple[tuple[str, str, Callable[[Any], bool], bool], ...]:
    spec = _SPECS.get(cls)
    if spec is None:
        hints = get_type_hints(cls, include_extras=True)
        rows = []
        for f in dataclasses.fields(cls):
            if f.name == "extra":
                continue
            required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
            rows.append((f.name, _camel(f.name), _checker(hints[f.name]), required))
        spec = _SPECS[cls] = tuple(rows)
    return spec


def _extra() -> dict[str, JSON]:
    return {}


@dataclass(frozen=True, slots=True)
class DeletionVector:
    """A deletion vector descriptor (kept as parsed JSON in file actions)."""

    storage_type: str
    path_or_inline_dv: str
    size_in_bytes: int
    cardinality: int
    offset: int | None = None

    @staticmethod
    def unique_id(dv: Mapping[str, JSON] | None) -> str | None:
        """The protocol's ``uniqueId`` of a descriptor, or ``None`` without one."""
        if not dv:
            return None
        base = f"{dv.get('storageType', '')}{dv.get('pathOrInlineDv', '')}"
        offset = dv.get("offset")
        return base if offset is None else f"{base}@{offset}"


@dataclass(frozen=True, slots=True)
class AddFile(Action):
    """``add``: a logical file joins the table."""

    KEY: ClassVar[str] = "add"
    path: str
    partition_values: dict[str, str | None]
    size: int
    modification_time: int
    data_change: bool
    stats: str | None = None
    tags: dict[str, str | None] | None = None
    deletion_vector: DeletionVectorJSON | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    clustering_provider: str | None = None
    extra: dict[str, JSON] = field(default_factory=_extra)

    @property
    def dv_id(self) -> str | None:
        """Unique id of the deletion vector, part of the file's key."""
        return DeletionVector.unique_id(self.deletion_vector)


@dataclass(frozen=True, slots=True)
class RemoveFile(Action):
    """``remove``: a logical file leaves the table and stays as a tombstone until it expires."""

    KEY: ClassVar[str] = "remove"
    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = None
    partition_values: dict[str, str | None] | None = None
    size: int | None = None
    tags: dict[str, str | None] | None = None
    deletion_vector: DeletionVectorJSON | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None
    stats: str | None = None
    extra: dict[str, JSON] = field(default_factory=_extra)

    @property
    def dv_id(self) -> str | None:
        """Unique id of the deletion vector, part of the file's key."""
        return DeletionVector.unique_id(self.deletion_vector)


@dataclass(frozen=True, slots=True)
class AddCDCFile(Action):
    """``cdc``: a change-data file for this version (never part of the table's data)."""

    KEY: ClassVar[str] = "cdc"
    path: str
    partition_values: dict[str, str | None]
    size: int
    tags: dict[str, str | None] | None = None
    data_change: bool = False
    extra: dict[str, JSON] = field(default_factory=_extra)


def _format() -> dict[str, JSON]:
    return {"provider": "parquet", "options": {}}


@dataclass(frozen=True, slots=True)
class Metadata(Action):
    """``metaData``: schema, partitioning and configuration of the table."""

    KEY: ClassVar[str] = "metaData"
    id: str
    schema_string: str | None = None
    name: str | None = None
    description: str | None = None
    format: FormatJSON = field(default_factory=_format)
    partition_columns: list[str] = field(default_factory=list)
    configuration: dict[str, str | None] = field(default_factory=dict)
    created_time: int | None = None
    extra: dict[str, JSON] = field(default_factory=_extra)

    def __post_init__(self) -> None:
        # Its delta.* keys are read in any case, as delta-spark matches them (property_keys).
        if type(self.configuration) is not TableProperties:
            object.__setattr__(self, "configuration", TableProperties(self.configuration))

    def to_json_dict(self) -> dict[str, JSON]:
        """Body in delta-spark's order: id, name, description, format, schemaString, ..."""
        body: dict[str, JSON] = {"id": self.id}
        if self.name is not None:
            body["name"] = self.name
        if self.description is not None:
            body["description"] = self.description
        body["format"] = self.format
        if self.schema_string is not None:
            body["schemaString"] = self.schema_string
        body["partitionColumns"] = self.partition_columns
        body["configuration"] = self.configuration
        if self.created_time is not None:
            body["createdTime"] = self.created_time
        for k, v in self.extra.items():
            body.setdefault(k, v)
        return body


@dataclass(frozen=True, slots=True)
class Protocol(Action):
    """``protocol``: reader/writer versions and, from 3/7, named table features."""

    KEY: ClassVar[str] = "protocol"
    min_reader_version: int
    min_writer_version: int
    reader_features: list[str] | None = None
    writer_features: list[str] | None = None
    extra: dict[str, JSON] = field(default_factory=_extra)


@dataclass(frozen=True, slots=True)
class CommitInfo(Action):
    """``commitInfo``: free-form provenance; every field is kept as written."""

    KEY: ClassVar[str] = "commitInfo"
    extra: dict[str, JSON] = field(default_factory=_extra)

    @classmethod
    def from_json_dict(cls, body: Mapping[str, JSON]) -> CommitInfo:
        """Keep the body as is."""
        return cls(extra=dict(body))

    def to_json_dict(self) -> dict[str, JSON]:
        """The body as given."""
        return dict(self.extra)

    @property
    def timestamp(self) -> int | None:
        """Commit time in ms since the epoch, when recorded."""
        ts = self.extra.get("timestamp")
        return ts if isinstance(ts, int) and not isinstance(ts, bool) else None

    @property
    def in_commit_timestamp(self) -> int | None:
        """The in-commit timestamp, when the table uses them."""
        ts = self.extra.get("inCommitTimestamp")
        return ts if isinstance(ts, int) and not isinstance(ts, bool) else None

    @property
    def operation(self) -> str | None:
        """The operation name, e.g. ``WRITE``."""
        op = self.extra.get("operation")
        return op if isinstance(op, str) else None


@dataclass(frozen=True, slots=True)
class Txn(Action):
    """``txn``: the latest version an application committed, for idempotent writes."""

    KEY: ClassVar[str] = "txn"
    app_id: str
    version: int
    last_updated: int | None = None
    extra: dict[str, JSON] = field(default_factory=_extra)


@dataclass(frozen=True, slots=True)
class DomainMetadata(Action):
    """``domainMetadata``: configuration owned by a named domain."""

    KEY: ClassVar[str] = "domainMetadata"
    domain: str
    configuration: str
    removed: bool = False
    extra: dict[str, JSON] = field(default_factory=_extra)


@dataclass(frozen=True, slots=True)
class CheckpointMetadata(Action):
    """``checkpointMetadata``: the header row of a V2 checkpoint."""

    KEY: ClassVar[str] = "checkpointMetadata"
    version: int
    tags: dict[str, str | None] | None = None
    extra: dict[str, JSON] = field(default_factory=_extra)


@dataclass(frozen=True, slots=True)
class Sidecar(Action):
    """``sidecar``: a V2 checkpoint's pointer to a Parquet file of file actions."""

    KEY: ClassVar[str] = "sidecar"
    path: str
    size_in_bytes: int
    modification_time: int
    tags: dict[str, str | None] | None = None
    extra: dict[str, JSON] = field(default_factory=_extra)


@dataclass(frozen=True, slots=True)
class UnknownAction(Action):
    """An action this version of deltalog does not know; kept verbatim for round trips."""

    key: str = ""
    body: JSON = None

    def to_line(self) -> bytes:
        """The original line."""
        return orjson.dumps({self.key: self.body})


ACTION_TYPES: dict[str, type[Action]] = {
    t.KEY: t
    for t in (
        AddFile,
        RemoveFile,
        AddCDCFile,
        Metadata,
        Protocol,
        CommitInfo,
        Txn,
        DomainMetadata,
        CheckpointMetadata,
        Sidecar,
    )
}

_BLANK = re.compile(rb"^\s*$")
_NO_ACTION = re.compile(rb"\s*\Z")


def parse_action(obj: JSON) -> Action:
    """Turn one decoded JSON line into an action.

    Raises:
        MalformedCommitError: The line is not an object with exactly one non-null action.
    """
    if not isinstance(obj, dict):
        raise MalformedCommitError("a log line must be a JSON object")
    present = [(k, v) for k, v in obj.items() if v is not None]
    if len(present) != 1:
        raise MalformedCommitError(
            f"a log line must hold exactly one action, found {[k for k, _ in present]}"
        )
    key, body = present[0]
    action_type = ACTION_TYPES.get(key)
    if action_type is None:
        return UnknownAction(key=key, body=body)
    if not isinstance(body, dict):
        raise MalformedCommitError(f"action {key!r} must be a JSON object")
    return action_type.from_json_dict(body)


def _too_deep(obj: JSON) -> bool:
    """Whether objects and arrays nest deeper than :data:`MAX_DEPTH` (walked without recursion)."""
    stack = [(obj, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            if depth > MAX_DEPTH:
                return True
            stack += [(child, depth + 1) for child in value]
    return False


def parse_line(line: bytes) -> Action:
    """Parse one log line.

    Raises:
        orjson.JSONDecodeError: The line is not JSON.
        MalformedCommitError: The line is not a valid action, or nests deeper than
            :data:`MAX_DEPTH`.
    """
    obj = orjson.loads(line)
    if line.count(b"{") + line.count(b"[") > MAX_DEPTH and _too_deep(obj):
        raise MalformedCommitError(f"a log line must not nest deeper than {MAX_DEPTH} levels")
    return parse_action(obj)


def parse_actions(
    data: bytes, *, version: int | None = None, path: str | None = None
) -> list[Action]:
    """Parse newline-delimited actions (a commit file or a JSON checkpoint).

    Raises:
        MalformedCommitError: A line is not UTF-8, not JSON, or not a valid action; the error
            names the version, path and line number.
    """
    out: list[Action] = []
    for lineno, line in enumerate(data.split(b"\n"), start=1):
        if _BLANK.match(line):
            continue
        try:
            out.append(parse_line(line))
        except orjson.JSONDecodeError as exc:
            reason = "not UTF-8" if _not_utf8(line) else f"not JSON ({exc})"
            raise MalformedCommitError(
                f"{path or 'commit'} line {lineno}: {reason}", version=version, path=path
            ) from exc
        except MalformedCommitError as exc:
            raise MalformedCommitError(
                f"{path or 'commit'} line {lineno}: {exc}", version=version, path=path
            ) from exc
    return out


def require_actions(data: bytes | mmap.mmap, *, version: int, path: str) -> None:
    """Refuse a commit file that holds no action (0 bytes, or only blank lines).

    delta-spark and the Delta kernel read such a file as a commit that changes nothing; a
    writer never commits nothing, though, so the file is a write that was lost (and with it
    whatever the commit added or removed). deltalog refuses to guess.

    Raises:
        EmptyCommitError: Naming the version and the path.
    """
    if _NO_ACTION.match(data):
        raise EmptyCommitError(
            f"{path}: commit {version} holds no action ({len(data)} bytes); its write was "
            "lost, so the table state from this version on cannot be known",
            version=version,
            path=path,
        )


def _not_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def serialize_actions(actions: Iterable[Action]) -> bytes:
    """Newline-delimited JSON of ``actions``, each line ending in a newline."""
    return b"".join(a.to_line() + b"\n" for a in actions)
