"""Names in ``_delta_log`` and the encoding of data file paths in actions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote, unquote

from deltalog.errors import InvalidPathError

LOG_DIR = "_delta_log"
LAST_CHECKPOINT = "_last_checkpoint"
SIDECAR_DIR = "_sidecars"

_LOG_FILE = re.compile(
    r"^(?P<version>\d{20})\."
    r"(?:(?P<commit>json)"
    r"|checkpoint\.(?:(?P<classic>parquet)"
    r"|(?P<part>\d{10})\.(?P<parts>\d{10})\.parquet"
    r"|(?P<uuid>[0-9A-Fa-f-]{36})\.(?P<v2fmt>json|parquet)))$"
)
# Characters kept as they are in an action's path: RFC 2396 unreserved and path characters.
_SAFE = "/!$&'()*+,;=:@-._~"

LogFileKind = Literal["commit", "checkpoint", "multipart", "v2checkpoint"]


@dataclass(frozen=True, slots=True)
class LogFileName:
    """A parsed ``_delta_log`` file name."""

    name: str
    version: int
    kind: LogFileKind
    part: int = 1
    parts: int = 1


def commit_name(version: int) -> str:
    """``00000000000000000042.json``."""
    return f"{version:020d}.json"


def checkpoint_name(version: int) -> str:
    """``00000000000000000042.checkpoint.parquet``."""
    return f"{version:020d}.checkpoint.parquet"


def parse_log_name(name: str) -> LogFileName | None:
    """Classify a file name found in ``_delta_log``; ``None`` for anything else."""
    m = _LOG_FILE.match(name)
    if not m:
        return None
    version = int(m["version"])
    if m["commit"]:
        return LogFileName(name, version, "commit")
    if m["classic"]:
        return LogFileName(name, version, "checkpoint")
    if m["part"]:
        return LogFileName(name, version, "multipart", int(m["part"]), int(m["parts"]))
    return LogFileName(name, version, "v2checkpoint")


def encode_path(relative: str) -> str:
    """Percent-encode a relative data file path for ``add.path`` (non-ASCII kept as is).

    A ``:`` in the first segment is encoded too, so that ``a:b.parquet`` is never read as a URI
    with scheme ``a``.
    """
    if relative.isascii():  # one call: the same as quoting character by character
        encoded = quote(relative, safe=_SAFE)
    else:
        encoded = "".join(c if ord(c) > 127 else quote(c, safe=_SAFE) for c in relative)
    head, sep, tail = encoded.partition("/")
    return head.replace(":", "%3A") + sep + tail


def decode_path(path: str) -> str:
    """Decode an action's path into the file's actual relative path or URI."""
    return unquote(path) if "%" in path else path


def normalize_path(path: str) -> str:
    """``path`` without empty and ``.`` segments, as Hadoop's ``Path`` reads it.

    ``a//b``, ``./a/b``, ``a/./b`` and ``a/b/`` are all ``a/b`` (and ``/x//y`` is ``/x/y``):
    every engine opens the same file for them, so every comparison of locations must see one.
    ``..`` segments stay as they are (the filesystem resolves them; paths with them are never
    deleted, see :func:`check_action_path`).
    """
    if not (
        "//" in path or "/." in path or path.endswith("/") or path.startswith("./") or path == "."
    ):
        return path  # the common case, decided without splitting
    joined = "/".join(s for s in path.split("/") if s not in ("", "."))
    return "/" + joined if path.startswith("/") else joined


def has_scheme(path: str) -> bool:
    """Whether ``path`` is an absolute URI such as ``s3://b/k`` or ``file:/x``."""
    head, sep, _ = path.partition(":")
    return (
        bool(sep)
        and len(head) > 1
        and head[0].isalpha()
        and head.replace("+", "").replace("-", "").replace(".", "").isalnum()
    )


def check_relative(path: str) -> str:
    """Refuse a relative path that is empty, absolute, or leaves the table root.

    Returns:
        The path, normalised to ``/`` separators without ``./`` segments.

    Raises:
        InvalidPathError: The path escapes the table or is not relative.
    """
    if "\x00" in path:
        raise InvalidPathError(f"path {path!r} has a NUL character")
    if not path or path.startswith("/") or "://" in path or path.lower().startswith("file:"):
        raise InvalidPathError(f"expected a path relative to the table root, got {path!r}")
    segments = [s for s in path.replace("\\", "/").split("/") if s not in ("", ".")]
    if any(s == ".." for s in segments) or not segments:
        raise InvalidPathError(f"path {path!r} escapes the table root")
    return "/".join(segments)


#: Schemes that address the same store under another name (Hadoop's S3 connectors).
_SCHEME_FAMILY = {"s3a": "s3", "s3n": "s3"}


def scheme_family(scheme: str) -> str:
    """The store a URI scheme names: ``s3a`` and ``s3n`` are ``s3``."""
    return _SCHEME_FAMILY.get(scheme.lower(), scheme.lower())


def _split_location(location: str) -> tuple[str, str, str]:
    """``(scheme family, authority, path)`` of an absolute location or a table root.

    ``/x/y``, ``file:/x/y`` and ``file:///x/y`` are all ``("file", "", "/x/y")``;
    ``s3a://b/k`` is ``("s3", "b", "/k")``.
    """
    if location.startswith("/") or not has_scheme(location):
        return "file", "", location
    scheme, _, rest = location.partition(":")
    family = scheme_family(scheme)
    authority = ""
    if rest.startswith("//"):
        authority, _, tail = rest[2:].partition("/")
        rest = "/" + tail
    if family == "file" and authority == "localhost":
        authority = ""
    return family, authority, "/" + rest.lstrip("/")


def check_action_path(path: str, root: str) -> bool:
    """Refuse an ``add``/``remove`` path that could reach files another table or account owns.

    No path may have ``..`` segments (after percent-decoding). An absolute path (``s3://b/k``,
    ``/x``, ``file:/x``) must be on the table's store and in its bucket, container or account.

    Args:
        path: The path as logged (percent-encoded).
        root: The table root, in the store's notation.

    Returns:
        Whether the path is absolute and outside the table root: allowed (shallow clones refer
        to another table's files this way) but worth reporting.

    Raises:
        InvalidPathError: The path is empty, has ``..`` segments, or is on another store,
            bucket or account.
    """
    decoded = decode_path(path)
    if not decoded:
        raise InvalidPathError("a file action has an empty path")
    if "\x00" in decoded:
        raise InvalidPathError(f"path {path!r} has a NUL character")
    if any(s == ".." for s in decoded.replace("\\", "/").split("/")):
        raise InvalidPathError(f"path {path!r} has '..' segments: it could leave the table")
    if not (path.startswith("/") or has_scheme(path)):  # absolute as logged, not once decoded
        return False
    family, authority, where = _split_location(decoded)
    root_family, root_authority, root_path = _split_location(root)
    if (family, authority) != (root_family, root_authority):
        raise InvalidPathError(f"path {path!r} is on another store, bucket or account")
    return not normalize_path(where).startswith(root_path.rstrip("/") + "/")
