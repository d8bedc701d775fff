"""``_delta_log/_last_checkpoint``: the pointer to a recent checkpoint."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from .checksum import json_checksum
from .errors import CheckpointFormatError


@dataclass(frozen=True, slots=True)
class LastCheckpoint:
    """Parsed ``_last_checkpoint``.

    Attributes:
        version: Version the checkpoint represents.
        size: Number of actions (rows) in the checkpoint.
        parts: Number of parts of a multi-part checkpoint, else ``None``.
        size_in_bytes: Total size of the checkpoint files.
        num_of_add_files: Number of ``add`` rows.
        extra: Every other field, kept as written (``checkpointSchema``, ``checksum``,
            ``v2Checkpoint``).
    """

    version: int
    size: int | None = None
    parts: int | None = None
    size_in_bytes: int | None = None
    num_of_add_files: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _int_field(obj: dict[str, Any], name: str, *, required: bool = False) -> int | None:
    value = obj.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise CheckpointFormatError(f"_last_checkpoint: {name!r} must be a non-negative integer")
    return value


def parse_last_checkpoint(data: bytes) -> LastCheckpoint:
    """Parse the content of ``_last_checkpoint``.

    Raises:
        CheckpointFormatError: The content is not a JSON object with a valid ``version``, or
            its ``checksum`` does not match.
    """
    try:
        obj = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise CheckpointFormatError(f"_last_checkpoint is not JSON: {exc}") from exc
    if not isinstance(obj, dict):
        raise CheckpointFormatError("_last_checkpoint must be a JSON object")
    checksum = obj.get("checksum")
    if checksum is not None and checksum != json_checksum(obj):
        raise CheckpointFormatError("_last_checkpoint checksum does not match its content")
    version = _int_field(obj, "version", required=True)
    assert version is not None
    known = {"version", "size", "parts", "sizeInBytes", "numOfAddFiles"}
    return LastCheckpoint(
        version=version,
        size=_int_field(obj, "size"),
        parts=_int_field(obj, "parts"),
        size_in_bytes=_int_field(obj, "sizeInBytes"),
        num_of_add_files=_int_field(obj, "numOfAddFiles"),
        extra={k: v for k, v in obj.items() if k not in known},
    )


def count_problems(hint: LastCheckpoint, *, adds: int, rows: int, v2: bool) -> list[str]:
    """How the counts ``hint`` records disagree with the checkpoint of its version.

    Args:
        hint: ``_last_checkpoint``, naming the checkpoint compared.
        adds: The checkpoint's ``add`` rows.
        rows: All its rows (actions).
        v2: Whether it is a V2 checkpoint with sidecars (``size`` then counts differently).

    Returns:
        One message per disagreement; empty when they agree.
    """
    problems: list[str] = []
    if hint.num_of_add_files is not None and hint.num_of_add_files != adds:
        problems.append(f"numOfAddFiles is {hint.num_of_add_files}, the checkpoint has {adds}")
    if not v2 and hint.size is not None and hint.size != rows:
        problems.append(f"size is {hint.size}, the checkpoint has {rows} actions")
    return problems
