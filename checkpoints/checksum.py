"""The protocol's checksum of ``_last_checkpoint``: MD5 of a canonical form of the JSON."""

from __future__ import annotations

from typing import Any

_UNRESERVED = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~")


def _encode(text: str) -> str:
    return "".join(chr(b) if b in _UNRESERVED else f"%{b:02X}" for b in text.encode("utf-8"))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return f'"{_encode(value)}"'
    return str(value)


def _pairs(value: Any, path: list[str], out: list[tuple[bytes, str]]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _pairs(v, [*path, f'"{_encode(k)}"'], out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _pairs(v, [*path, str(i)], out)
    else:
        key = "+".join(path)
        out.append((key.encode("utf-8"), f"{key}={_scalar(value)}"))


def canonical_json(obj: dict[str, Any]) -> str:
    """Canonical form of a JSON object, the top-level ``checksum`` key left out."""
    out: list[tuple[bytes, str]] = []
    _pairs({k: v for k, v in obj.items() if k != "checksum"}, [], out)
    out.sort(key=lambda pair: pair[0])
    return ",".join(text for _, text in out)


def json_checksum(obj: dict[str, Any]) -> str:
    """The 32-character MD5 hex digest of :func:`canonical_json`."""
    import hashlib  # ~5 ms to import (OpenSSL): only when a checksum is checked

    return hashlib.md5(canonical_json(obj).encode("utf-8"), usedforsecurity=False).hexdigest()
